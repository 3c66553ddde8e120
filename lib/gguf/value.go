package gguf

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueType is a GGUF metadata value type (gguf_type).
type ValueType uint32

// The GGUF value types, with their codes.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

// fixed byte size of each type on the wire; 0 for string and array.
var valueTypeSizes = [...]int{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// Valid reports whether t is a known value type.
func (t ValueType) Valid() bool { return int(t) < len(valueTypeNames) }

// String returns the short name: "u8", "i8", "u16", "i16", "u32", "i32", "f32",
// "bool", "string", "array", "u64", "i64", "f64"; "type(N)" for an unknown code.
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Size returns the encoded size of one value of type t, or 0 for string, array and
// unknown types (whose size depends on the value).
func (t ValueType) Size() int {
	if t.Valid() {
		return valueTypeSizes[t]
	}
	return 0
}

// ParseValueType is the inverse of ValueType.String.
func ParseValueType(s string) (ValueType, error) {
	for i, n := range valueTypeNames {
		if n == s {
			return ValueType(i), nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown value type %q", s)
}

// Value is one GGUF metadata value with its exact type: a scalar, a string, or an
// array of one element type (arrays of arrays hold a Value per element). The zero
// Value is invalid (IsValid reports false) and is refused by the writer. Values are
// immutable: constructors copy the slices they are given and accessors return copies
// or read-only views as documented.
type Value struct {
	typ  ValueType
	elem ValueType // element type, for arrays
	ok   bool
	bits uint64 // scalar numbers and bool: the value's bits, zero-extended
	str  string
	arr  any // []uint8 ... []float64, []bool, []string or []Value
}

// Uint8 returns a u8 value.
func Uint8(v uint8) Value { return Value{typ: TypeUint8, ok: true, bits: uint64(v)} }

// Int8 returns an i8 value.
func Int8(v int8) Value { return Value{typ: TypeInt8, ok: true, bits: uint64(uint8(v))} }

// Uint16 returns a u16 value.
func Uint16(v uint16) Value { return Value{typ: TypeUint16, ok: true, bits: uint64(v)} }

// Int16 returns an i16 value.
func Int16(v int16) Value { return Value{typ: TypeInt16, ok: true, bits: uint64(uint16(v))} }

// Uint32 returns a u32 value.
func Uint32(v uint32) Value { return Value{typ: TypeUint32, ok: true, bits: uint64(v)} }

// Int32 returns an i32 value.
func Int32(v int32) Value { return Value{typ: TypeInt32, ok: true, bits: uint64(uint32(v))} }

// Uint64 returns a u64 value.
func Uint64(v uint64) Value { return Value{typ: TypeUint64, ok: true, bits: v} }

// Int64 returns an i64 value.
func Int64(v int64) Value { return Value{typ: TypeInt64, ok: true, bits: uint64(v)} }

// Float32 returns an f32 value (its bits kept exactly, NaN payloads included).
func Float32(v float32) Value {
	return Value{typ: TypeFloat32, ok: true, bits: uint64(math.Float32bits(v))}
}

// Float64 returns an f64 value (its bits kept exactly).
func Float64(v float64) Value { return Value{typ: TypeFloat64, ok: true, bits: math.Float64bits(v)} }

// String returns a string value (any bytes; GGUF expects UTF-8).
func String(v string) Value { return Value{typ: TypeString, ok: true, str: v} }

// Bool returns a bool value (stored as one byte, 0 or 1).
func Bool(v bool) Value {
	var b uint64
	if v {
		b = 1
	}
	return Value{typ: TypeBool, ok: true, bits: b}
}

// Elem lists the Go element types of a non-nested GGUF array.
type Elem interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | uint64 | int64 | float32 | float64 | bool | string
}

// Array returns an array value of vs's element type (a copy of vs); a nil or empty
// slice gives an empty array of that element type.
func Array[T Elem](vs []T) Value {
	c := slices.Clone(vs)
	if c == nil {
		c = []T{}
	}
	return arrayValue(c)
}

// arrayValue wraps a typed slice without copying.
func arrayValue(a any) Value {
	v := Value{typ: TypeArray, ok: true, arr: a}
	switch a.(type) {
	case []uint8:
		v.elem = TypeUint8
	case []int8:
		v.elem = TypeInt8
	case []uint16:
		v.elem = TypeUint16
	case []int16:
		v.elem = TypeInt16
	case []uint32:
		v.elem = TypeUint32
	case []int32:
		v.elem = TypeInt32
	case []uint64:
		v.elem = TypeUint64
	case []int64:
		v.elem = TypeInt64
	case []float32:
		v.elem = TypeFloat32
	case []float64:
		v.elem = TypeFloat64
	case []bool:
		v.elem = TypeBool
	case []string:
		v.elem = TypeString
	case []Value:
		v.elem = TypeArray
	default:
		panic(fmt.Sprintf("gguf: arrayValue of %T", a)) // unreachable: internal callers only
	}
	return v
}

// NestedArray returns an array of arrays (element type "array"). The GGUF spec allows
// it, but llama.cpp cannot read it, so the writer refuses it; it exists so that such a
// file read by this package can be represented exactly. Every element must be a valid
// array value.
func NestedArray(vs []Value) (Value, error) {
	for i, e := range vs {
		if !e.ok || e.typ != TypeArray {
			return Value{}, fmt.Errorf("gguf: nested array element %d is %s, not an array", i, e.TypeName())
		}
	}
	c := slices.Clone(vs)
	if c == nil {
		c = []Value{}
	}
	return arrayValue(c), nil
}

// FromInterface converts the Go values Interface returns back into a Value: uint8,
// int8, uint16, int16, uint32, int32, uint64, int64, float32, float64, bool, string,
// slices of those, []Value for nested arrays, and Value itself. Other types (int,
// []any, ...) are errors, never guesses.
func FromInterface(x any) (Value, error) {
	switch v := x.(type) {
	case Value:
		if !v.ok {
			return Value{}, fmt.Errorf("gguf: invalid (zero) Value")
		}
		return v, nil
	case uint8:
		return Uint8(v), nil
	case int8:
		return Int8(v), nil
	case uint16:
		return Uint16(v), nil
	case int16:
		return Int16(v), nil
	case uint32:
		return Uint32(v), nil
	case int32:
		return Int32(v), nil
	case uint64:
		return Uint64(v), nil
	case int64:
		return Int64(v), nil
	case float32:
		return Float32(v), nil
	case float64:
		return Float64(v), nil
	case bool:
		return Bool(v), nil
	case string:
		return String(v), nil
	case []uint8:
		return Array(v), nil
	case []int8:
		return Array(v), nil
	case []uint16:
		return Array(v), nil
	case []int16:
		return Array(v), nil
	case []uint32:
		return Array(v), nil
	case []int32:
		return Array(v), nil
	case []uint64:
		return Array(v), nil
	case []int64:
		return Array(v), nil
	case []float32:
		return Array(v), nil
	case []float64:
		return Array(v), nil
	case []bool:
		return Array(v), nil
	case []string:
		return Array(v), nil
	case []Value:
		return NestedArray(v)
	}
	return Value{}, fmt.Errorf("gguf: no GGUF value type for Go type %T", x)
}

// IsValid reports whether v was made by a constructor or read from a file.
func (v Value) IsValid() bool { return v.ok }

// Type returns the value's GGUF type (TypeArray for arrays).
func (v Value) Type() ValueType { return v.typ }

// ElemType returns an array's element type (TypeArray for arrays of arrays); it is
// meaningless for other values.
func (v Value) ElemType() ValueType { return v.elem }

// TypeName returns the type as inspect shows it: "u32", "string", "array[string]",
// "array[array]"; "invalid" for the zero Value.
func (v Value) TypeName() string {
	if !v.ok {
		return "invalid"
	}
	if v.typ == TypeArray {
		return "array[" + v.elem.String() + "]"
	}
	return v.typ.String()
}

// Len returns an array's element count, 0 for other values.
func (v Value) Len() int {
	if !v.ok || v.typ != TypeArray {
		return 0
	}
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float32:
		return len(a)
	case []float64:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Index returns element i of an array as a Value. It panics if v is not an array or
// i is out of range, like a slice index.
func (v Value) Index(i int) Value {
	switch a := v.arr.(type) {
	case []uint8:
		return Uint8(a[i])
	case []int8:
		return Int8(a[i])
	case []uint16:
		return Uint16(a[i])
	case []int16:
		return Int16(a[i])
	case []uint32:
		return Uint32(a[i])
	case []int32:
		return Int32(a[i])
	case []uint64:
		return Uint64(a[i])
	case []int64:
		return Int64(a[i])
	case []float32:
		return Float32(a[i])
	case []float64:
		return Float64(a[i])
	case []bool:
		return Bool(a[i])
	case []string:
		return String(a[i])
	case []Value:
		return a[i]
	}
	panic("gguf: Index of a " + v.TypeName() + " value")
}

// Interface returns the value as the Go value of its exact type: uint8, int8, uint16,
// int16, uint32, int32, uint64, int64, float32, float64, bool or string for scalars;
// the matching slice for arrays ([]Value for arrays of arrays). Slices are copies.
// It returns nil for the zero Value. FromInterface is its inverse.
func (v Value) Interface() any {
	if !v.ok {
		return nil
	}
	switch v.typ {
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(uint8(v.bits))
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(uint16(v.bits))
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(uint32(v.bits))
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	case TypeFloat32:
		return math.Float32frombits(uint32(v.bits))
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	case TypeBool:
		return v.bits != 0
	case TypeString:
		return v.str
	}
	switch a := v.arr.(type) {
	case []uint8:
		return slices.Clone(a)
	case []int8:
		return slices.Clone(a)
	case []uint16:
		return slices.Clone(a)
	case []int16:
		return slices.Clone(a)
	case []uint32:
		return slices.Clone(a)
	case []int32:
		return slices.Clone(a)
	case []uint64:
		return slices.Clone(a)
	case []int64:
		return slices.Clone(a)
	case []float32:
		return slices.Clone(a)
	case []float64:
		return slices.Clone(a)
	case []bool:
		return slices.Clone(a)
	case []string:
		return slices.Clone(a)
	case []Value:
		return slices.Clone(a)
	}
	return nil
}

// AsUint64 returns an unsigned integer value (u8, u16, u32, u64) widened to uint64.
func (v Value) AsUint64() (uint64, bool) {
	switch v.typ {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		return v.bits, v.ok
	}
	return 0, false
}

// AsInt64 returns a signed integer value (i8, i16, i32, i64) widened to int64.
func (v Value) AsInt64() (int64, bool) {
	if !v.ok {
		return 0, false
	}
	switch v.typ {
	case TypeInt8:
		return int64(int8(uint8(v.bits))), true
	case TypeInt16:
		return int64(int16(uint16(v.bits))), true
	case TypeInt32:
		return int64(int32(uint32(v.bits))), true
	case TypeInt64:
		return int64(v.bits), true
	}
	return 0, false
}

// AsFloat64 returns an f32 or f64 value as a float64 (exactly; f32 widens losslessly).
func (v Value) AsFloat64() (float64, bool) {
	if !v.ok {
		return 0, false
	}
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// AsBool returns a bool value.
func (v Value) AsBool() (bool, bool) {
	return v.bits != 0, v.ok && v.typ == TypeBool
}

// AsString returns a string value.
func (v Value) AsString() (string, bool) {
	return v.str, v.ok && v.typ == TypeString
}

// Strings returns the elements of an array of strings (a copy).
func (v Value) Strings() ([]string, bool) {
	a, ok := v.arr.([]string)
	if !ok {
		return nil, false
	}
	return slices.Clone(a), true
}

// Equal reports whether v and o have the same type and the same bits (floats are
// compared by their bit patterns, so a NaN equals itself and -0 differs from +0).
func (v Value) Equal(o Value) bool {
	if v.ok != o.ok || v.typ != o.typ {
		return false
	}
	if !v.ok {
		return true
	}
	switch v.typ {
	case TypeString:
		return v.str == o.str
	case TypeArray:
		if v.elem != o.elem {
			return false
		}
		switch a := v.arr.(type) {
		case []uint8:
			return slices.Equal(a, o.arr.([]uint8))
		case []int8:
			return slices.Equal(a, o.arr.([]int8))
		case []uint16:
			return slices.Equal(a, o.arr.([]uint16))
		case []int16:
			return slices.Equal(a, o.arr.([]int16))
		case []uint32:
			return slices.Equal(a, o.arr.([]uint32))
		case []int32:
			return slices.Equal(a, o.arr.([]int32))
		case []uint64:
			return slices.Equal(a, o.arr.([]uint64))
		case []int64:
			return slices.Equal(a, o.arr.([]int64))
		case []float32:
			return slices.EqualFunc(a, o.arr.([]float32), func(x, y float32) bool {
				return math.Float32bits(x) == math.Float32bits(y)
			})
		case []float64:
			return slices.EqualFunc(a, o.arr.([]float64), func(x, y float64) bool {
				return math.Float64bits(x) == math.Float64bits(y)
			})
		case []bool:
			return slices.Equal(a, o.arr.([]bool))
		case []string:
			return slices.Equal(a, o.arr.([]string))
		case []Value:
			return slices.EqualFunc(a, o.arr.([]Value), Value.Equal)
		}
		return false
	}
	return v.bits == o.bits
}

// DefaultTextElems is the longest array String shows element by element.
const DefaultTextElems = 16

// String returns the exact textual form of the value (Text(DefaultTextElems)).
func (v Value) String() string { return v.Text(DefaultTextElems) }

// Text returns the exact textual form of the value, for inspect:
//
//   - integers in decimal; bools as true/false;
//   - floats as the shortest decimal that reads back to the same f32 or f64 ("0.1",
//     "-0", "1e+308"), infinities as "+Inf"/"-Inf", NaN as "NaN(0x7fc00001)" with the
//     bit pattern;
//   - strings as Go-quoted literals (strconv.Quote), so any byte sequence is shown
//     unambiguously;
//   - arrays of at most maxElems elements as "[a, b, c]" (recursively for arrays of
//     arrays), longer ones summarised as "[array of 32000 string]"; maxElems < 0
//     never summarises.
func (v Value) Text(maxElems int) string {
	var b strings.Builder
	v.appendText(&b, maxElems)
	return b.String()
}

func (v Value) appendText(b *strings.Builder, maxElems int) {
	if !v.ok {
		b.WriteString("<invalid>")
		return
	}
	switch v.typ {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		b.WriteString(strconv.FormatUint(v.bits, 10))
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		i, _ := v.AsInt64()
		b.WriteString(strconv.FormatInt(i, 10))
	case TypeFloat32:
		b.WriteString(formatFloat(float64(math.Float32frombits(uint32(v.bits))), 32, v.bits))
	case TypeFloat64:
		b.WriteString(formatFloat(math.Float64frombits(v.bits), 64, v.bits))
	case TypeBool:
		b.WriteString(strconv.FormatBool(v.bits != 0))
	case TypeString:
		b.WriteString(strconv.Quote(v.str))
	case TypeArray:
		n := v.Len()
		if maxElems >= 0 && n > maxElems {
			fmt.Fprintf(b, "[array of %d %s]", n, v.elem)
			return
		}
		b.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			v.Index(i).appendText(b, maxElems)
		}
		b.WriteByte(']')
	}
}

func formatFloat(f float64, bitSize int, bits uint64) string {
	switch {
	case math.IsNaN(f):
		if bitSize == 32 {
			return fmt.Sprintf("NaN(0x%08x)", uint32(bits))
		}
		return fmt.Sprintf("NaN(0x%016x)", bits)
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, bitSize)
}
