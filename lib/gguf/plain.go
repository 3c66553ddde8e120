package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MetadataKey is the key under which apr keeps a GGUF file's version and KVs in an APR
// file's metadata (docs/FORMAT.md, "The LLM description"): the converters write it on
// import, export reads it back, and a Hugging Face checkpoint of a known architecture
// gets the KVs llama.cpp's converter writes.
const MetadataKey = "gguf"

// EncodeKVs returns the APR metadata form of a GGUF file's version and KVs (the value
// of Extra[MetadataKey]): {"version": N, "kv": {key: [position, type, value]}}. See the
// package documentation for the value forms.
func EncodeKVs(version uint32, kvs []KV) map[string]any {
	m := make(map[string]any, len(kvs))
	for i, kv := range kvs {
		m[kv.Key] = []any{int64(i), kv.Value.TypeName(), valueToAny(kv.Value)}
	}
	return map[string]any{"version": int64(version), "kv": m}
}

// DecodeKVs is the inverse of EncodeKVs: it rebuilds the version and the KVs, in their
// original order and with their exact types, from the metadata value x (as stored, or
// as MessagePack decoding returns it). Errors name the key.
func DecodeKVs(x any) (uint32, []KV, error) {
	top, ok := x.(map[string]any)
	if !ok {
		return 0, nil, fmt.Errorf("metadata %q: a %T, want a map", MetadataKey, x)
	}
	ver, err := PlainUint64(top["version"])
	if err != nil || (ver != 2 && ver != 3) {
		return 0, nil, fmt.Errorf("metadata %q: version %v, want 2 or 3", MetadataKey, top["version"])
	}
	raw, ok := top["kv"].(map[string]any)
	if !ok && top["kv"] != nil {
		return 0, nil, fmt.Errorf("metadata %q: kv is a %T, want a map", MetadataKey, top["kv"])
	}
	kvs := make([]KV, len(raw))
	for key, e := range raw {
		ent, ok := e.([]any)
		if !ok || len(ent) != 3 {
			return 0, nil, fmt.Errorf("metadata %q: key %q: want [position, type, value], got %v", MetadataKey, key, e)
		}
		pos, err := PlainUint64(ent[0])
		if err != nil || pos >= uint64(len(kvs)) {
			return 0, nil, fmt.Errorf("metadata %q: key %q: position %v is not in 0..%d", MetadataKey, key, ent[0], len(kvs)-1)
		}
		if kvs[pos].Value.IsValid() {
			return 0, nil, fmt.Errorf("metadata %q: keys %q and %q both claim position %d", MetadataKey, kvs[pos].Key, key, pos)
		}
		typ, _ := ent[1].(string)
		v, err := anyToValue(typ, ent[2], 0)
		if err != nil {
			return 0, nil, fmt.Errorf("metadata %q: key %q: %w", MetadataKey, key, err)
		}
		kvs[pos] = KV{Key: key, Value: v}
	}
	return uint32(ver), kvs, nil
}

// valueToAny converts a GGUF value to plain metadata values: integers, floats (a NaN
// as its text "NaN(0x7fc00001)", so that its bits survive), bools and strings; arrays
// as []any of those; arrays of arrays as []any of [type, value] pairs.
func valueToAny(v Value) any {
	if v.Type() != TypeArray {
		return scalarToAny(v)
	}
	n := v.Len()
	out := make([]any, n)
	if v.ElemType() == TypeArray {
		for i := range n {
			e := v.Index(i)
			out[i] = []any{e.TypeName(), valueToAny(e)}
		}
		return out
	}
	switch a := v.Interface().(type) {
	case []uint8:
		return anys(a, nil)
	case []int8:
		return anys(a, nil)
	case []uint16:
		return anys(a, nil)
	case []int16:
		return anys(a, nil)
	case []uint32:
		return anys(a, nil)
	case []int32:
		return anys(a, nil)
	case []uint64:
		return anys(a, nil)
	case []int64:
		return anys(a, nil)
	case []float32:
		return anys(a, f32ToAny)
	case []float64:
		return anys(a, f64ToAny)
	case []bool:
		return anys(a, nil)
	case []string:
		return anys(a, nil)
	}
	return out
}

// anys copies a typed GGUF array into []any, converting each element with conv when
// it is not nil (floats, whose NaN payloads must survive as text).
func anys[T any](a []T, conv func(T) any) []any {
	out := make([]any, len(a))
	for i, x := range a {
		if conv != nil {
			out[i] = conv(x)
		} else {
			out[i] = x
		}
	}
	return out
}

func scalarToAny(v Value) any {
	switch x := v.Interface().(type) {
	case float32:
		return f32ToAny(x)
	case float64:
		return f64ToAny(x)
	default:
		return x
	}
}

func f32ToAny(f float32) any {
	if f != f {
		return fmt.Sprintf("NaN(0x%08x)", math.Float32bits(f))
	}
	return f
}

func f64ToAny(f float64) any {
	if f != f {
		return fmt.Sprintf("NaN(0x%016x)", math.Float64bits(f))
	}
	return f
}

// anyToValue converts a plain metadata value of the named GGUF type back to a Value,
// refusing anything that does not fit the type exactly.
func anyToValue(typ string, x any, depth int) (Value, error) {
	if depth > 4 {
		return Value{}, fmt.Errorf("arrays nested deeper than 4")
	}
	if inner, ok := strings.CutPrefix(typ, "array["); ok && strings.HasSuffix(inner, "]") {
		inner = strings.TrimSuffix(inner, "]")
		xs, ok := x.([]any)
		if !ok && x != nil {
			return Value{}, fmt.Errorf("type %s: value is a %T, want a list", typ, x)
		}
		if inner == "array" {
			vs := make([]Value, len(xs))
			for i, e := range xs {
				pair, ok := e.([]any)
				if !ok || len(pair) != 2 {
					return Value{}, fmt.Errorf("element %d: want [type, value]", i)
				}
				t, _ := pair[0].(string)
				if !strings.HasPrefix(t, "array[") {
					return Value{}, fmt.Errorf("element %d: type %q is not an array type", i, t)
				}
				v, err := anyToValue(t, pair[1], depth+1)
				if err != nil {
					return Value{}, fmt.Errorf("element %d: %w", i, err)
				}
				vs[i] = v
			}
			return NestedArray(vs)
		}
		et, err := ParseValueType(inner)
		if err != nil || et == TypeArray {
			return Value{}, fmt.Errorf("unknown type %q", typ)
		}
		return ArrayOfPlain(et, xs)
	}
	t, err := ParseValueType(typ)
	if err != nil || t == TypeArray {
		return Value{}, fmt.Errorf("unknown type %q", typ)
	}
	g, err := scalarOf(t, x)
	if err != nil {
		return Value{}, err
	}
	return FromInterface(g)
}

// scalarOf converts x to the Go value of GGUF type t (uint8 for u8, ...).
func scalarOf(t ValueType, x any) (any, error) {
	bad := func() (any, error) { return nil, fmt.Errorf("value %v (%T) is not a %v", x, x, t) }
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		u, err := PlainUint64(x)
		if err != nil {
			return bad()
		}
		switch t {
		case TypeUint8:
			if u <= math.MaxUint8 {
				return uint8(u), nil
			}
		case TypeUint16:
			if u <= math.MaxUint16 {
				return uint16(u), nil
			}
		case TypeUint32:
			if u <= math.MaxUint32 {
				return uint32(u), nil
			}
		default:
			return u, nil
		}
		return bad()
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		i, err := PlainInt64(x)
		if err != nil {
			return bad()
		}
		switch t {
		case TypeInt8:
			if i >= math.MinInt8 && i <= math.MaxInt8 {
				return int8(i), nil
			}
		case TypeInt16:
			if i >= math.MinInt16 && i <= math.MaxInt16 {
				return int16(i), nil
			}
		case TypeInt32:
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				return int32(i), nil
			}
		default:
			return i, nil
		}
		return bad()
	case TypeFloat32:
		switch f := x.(type) {
		case float32:
			return f, nil
		case float64:
			if g := float32(f); float64(g) == f || (math.IsInf(f, 0) && math.IsInf(float64(g), 0)) {
				return g, nil
			}
		case string:
			if b, ok := nanBits(f, 8); ok && math.IsNaN(float64(math.Float32frombits(uint32(b)))) {
				return math.Float32frombits(uint32(b)), nil
			}
		}
		return bad()
	case TypeFloat64:
		switch f := x.(type) {
		case float64:
			return f, nil
		case float32:
			if f == f {
				return float64(f), nil
			}
		case string:
			if b, ok := nanBits(f, 16); ok && math.IsNaN(math.Float64frombits(b)) {
				return math.Float64frombits(b), nil
			}
		}
		return bad()
	case TypeBool:
		if b, ok := x.(bool); ok {
			return b, nil
		}
		return bad()
	case TypeString:
		if s, ok := x.(string); ok {
			return s, nil
		}
		return bad()
	}
	return bad()
}

// nanBits parses "NaN(0x...)" with exactly digits hex digits.
func nanBits(s string, digits int) (uint64, bool) {
	h, ok := strings.CutPrefix(s, "NaN(0x")
	if !ok || len(h) != digits+1 || h[digits] != ')' {
		return 0, false
	}
	b, err := strconv.ParseUint(h[:digits], 16, 64)
	return b, err == nil
}

// ArrayOfPlain builds an array of element type et from plain values xs (as
// MessagePack decoding returns them), checking that each fits the type.
func ArrayOfPlain(et ValueType, xs []any) (Value, error) {
	switch et {
	case TypeUint8:
		return typedArray[uint8](et, xs)
	case TypeInt8:
		return typedArray[int8](et, xs)
	case TypeUint16:
		return typedArray[uint16](et, xs)
	case TypeInt16:
		return typedArray[int16](et, xs)
	case TypeUint32:
		return typedArray[uint32](et, xs)
	case TypeInt32:
		return typedArray[int32](et, xs)
	case TypeUint64:
		return typedArray[uint64](et, xs)
	case TypeInt64:
		return typedArray[int64](et, xs)
	case TypeFloat32:
		return typedArray[float32](et, xs)
	case TypeFloat64:
		return typedArray[float64](et, xs)
	case TypeBool:
		return typedArray[bool](et, xs)
	case TypeString:
		return typedArray[string](et, xs)
	}
	return Value{}, fmt.Errorf("unknown element type %v", et)
}

func typedArray[T Elem](et ValueType, xs []any) (Value, error) {
	out := make([]T, len(xs))
	for i, x := range xs {
		g, err := scalarOf(et, x)
		if err != nil {
			return Value{}, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = g.(T)
	}
	return Array(out), nil
}

// PlainUint64 accepts any Go integer that is not negative.
func PlainUint64(x any) (uint64, error) {
	switch v := x.(type) {
	case uint8:
		return uint64(v), nil
	case uint16:
		return uint64(v), nil
	case uint32:
		return uint64(v), nil
	case uint64:
		return v, nil
	case uint:
		return uint64(v), nil
	}
	i, err := PlainInt64(x)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%v (%T) is not a non-negative integer", x, x)
	}
	return uint64(i), nil
}

// PlainInt64 accepts any Go integer that fits in int64.
func PlainInt64(x any) (int64, error) {
	switch v := x.(type) {
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), nil
		}
	case uint:
		if uint64(v) <= math.MaxInt64 {
			return int64(v), nil
		}
	}
	return 0, fmt.Errorf("%v (%T) is not an integer in the int64 range", x, x)
}
