package ggufconv

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/gguf"
)

// EncodeKVs returns the APR metadata form of a GGUF file's version and KVs (the value
// of Extra[KeyGGUF]): {"version": N, "kv": {key: [position, type, value]}}. See the
// package documentation for the value forms.
func EncodeKVs(version uint32, kvs []gguf.KV) map[string]any {
	m := make(map[string]any, len(kvs))
	for i, kv := range kvs {
		m[kv.Key] = []any{int64(i), kv.Value.TypeName(), valueToAny(kv.Value)}
	}
	return map[string]any{"version": int64(version), "kv": m}
}

// DecodeKVs is the inverse of EncodeKVs: it rebuilds the version and the KVs, in their
// original order and with their exact types, from the metadata value x (as stored, or
// as MessagePack decoding returns it). Errors name the key.
func DecodeKVs(x any) (uint32, []gguf.KV, error) {
	top, ok := x.(map[string]any)
	if !ok {
		return 0, nil, fmt.Errorf("metadata %q: a %T, want a map", KeyGGUF, x)
	}
	ver, err := toUint64(top["version"])
	if err != nil || (ver != 2 && ver != 3) {
		return 0, nil, fmt.Errorf("metadata %q: version %v, want 2 or 3", KeyGGUF, top["version"])
	}
	raw, ok := top["kv"].(map[string]any)
	if !ok && top["kv"] != nil {
		return 0, nil, fmt.Errorf("metadata %q: kv is a %T, want a map", KeyGGUF, top["kv"])
	}
	kvs := make([]gguf.KV, len(raw))
	for key, e := range raw {
		ent, ok := e.([]any)
		if !ok || len(ent) != 3 {
			return 0, nil, fmt.Errorf("metadata %q: key %q: want [position, type, value], got %v", KeyGGUF, key, e)
		}
		pos, err := toUint64(ent[0])
		if err != nil || pos >= uint64(len(kvs)) {
			return 0, nil, fmt.Errorf("metadata %q: key %q: position %v is not in 0..%d", KeyGGUF, key, ent[0], len(kvs)-1)
		}
		if kvs[pos].Value.IsValid() {
			return 0, nil, fmt.Errorf("metadata %q: keys %q and %q both claim position %d", KeyGGUF, kvs[pos].Key, key, pos)
		}
		typ, _ := ent[1].(string)
		v, err := anyToValue(typ, ent[2], 0)
		if err != nil {
			return 0, nil, fmt.Errorf("metadata %q: key %q: %w", KeyGGUF, key, err)
		}
		kvs[pos] = gguf.KV{Key: key, Value: v}
	}
	return uint32(ver), kvs, nil
}

// valueToAny converts a GGUF value to plain metadata values: integers, floats (a NaN
// as its text "NaN(0x7fc00001)", so that its bits survive), bools and strings; arrays
// as []any of those; arrays of arrays as []any of [type, value] pairs.
func valueToAny(v gguf.Value) any {
	if v.Type() != gguf.TypeArray {
		return scalarToAny(v)
	}
	n := v.Len()
	out := make([]any, n)
	if v.ElemType() == gguf.TypeArray {
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

func scalarToAny(v gguf.Value) any {
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
func anyToValue(typ string, x any, depth int) (gguf.Value, error) {
	if depth > 4 {
		return gguf.Value{}, fmt.Errorf("arrays nested deeper than 4")
	}
	if inner, ok := strings.CutPrefix(typ, "array["); ok && strings.HasSuffix(inner, "]") {
		inner = strings.TrimSuffix(inner, "]")
		xs, ok := x.([]any)
		if !ok && x != nil {
			return gguf.Value{}, fmt.Errorf("type %s: value is a %T, want a list", typ, x)
		}
		if inner == "array" {
			vs := make([]gguf.Value, len(xs))
			for i, e := range xs {
				pair, ok := e.([]any)
				if !ok || len(pair) != 2 {
					return gguf.Value{}, fmt.Errorf("element %d: want [type, value]", i)
				}
				t, _ := pair[0].(string)
				if !strings.HasPrefix(t, "array[") {
					return gguf.Value{}, fmt.Errorf("element %d: type %q is not an array type", i, t)
				}
				v, err := anyToValue(t, pair[1], depth+1)
				if err != nil {
					return gguf.Value{}, fmt.Errorf("element %d: %w", i, err)
				}
				vs[i] = v
			}
			return gguf.NestedArray(vs)
		}
		et, err := gguf.ParseValueType(inner)
		if err != nil || et == gguf.TypeArray {
			return gguf.Value{}, fmt.Errorf("unknown type %q", typ)
		}
		return arrayOf(et, xs)
	}
	t, err := gguf.ParseValueType(typ)
	if err != nil || t == gguf.TypeArray {
		return gguf.Value{}, fmt.Errorf("unknown type %q", typ)
	}
	g, err := scalarOf(t, x)
	if err != nil {
		return gguf.Value{}, err
	}
	return gguf.FromInterface(g)
}

// scalarOf converts x to the Go value of GGUF type t (uint8 for u8, ...).
func scalarOf(t gguf.ValueType, x any) (any, error) {
	bad := func() (any, error) { return nil, fmt.Errorf("value %v (%T) is not a %v", x, x, t) }
	switch t {
	case gguf.TypeUint8, gguf.TypeUint16, gguf.TypeUint32, gguf.TypeUint64:
		u, err := toUint64(x)
		if err != nil {
			return bad()
		}
		switch t {
		case gguf.TypeUint8:
			if u <= math.MaxUint8 {
				return uint8(u), nil
			}
		case gguf.TypeUint16:
			if u <= math.MaxUint16 {
				return uint16(u), nil
			}
		case gguf.TypeUint32:
			if u <= math.MaxUint32 {
				return uint32(u), nil
			}
		default:
			return u, nil
		}
		return bad()
	case gguf.TypeInt8, gguf.TypeInt16, gguf.TypeInt32, gguf.TypeInt64:
		i, err := toInt64(x)
		if err != nil {
			return bad()
		}
		switch t {
		case gguf.TypeInt8:
			if i >= math.MinInt8 && i <= math.MaxInt8 {
				return int8(i), nil
			}
		case gguf.TypeInt16:
			if i >= math.MinInt16 && i <= math.MaxInt16 {
				return int16(i), nil
			}
		case gguf.TypeInt32:
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				return int32(i), nil
			}
		default:
			return i, nil
		}
		return bad()
	case gguf.TypeFloat32:
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
	case gguf.TypeFloat64:
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
	case gguf.TypeBool:
		if b, ok := x.(bool); ok {
			return b, nil
		}
		return bad()
	case gguf.TypeString:
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

// arrayOf builds an array of element type et from xs.
func arrayOf(et gguf.ValueType, xs []any) (gguf.Value, error) {
	switch et {
	case gguf.TypeUint8:
		return typedArray[uint8](et, xs)
	case gguf.TypeInt8:
		return typedArray[int8](et, xs)
	case gguf.TypeUint16:
		return typedArray[uint16](et, xs)
	case gguf.TypeInt16:
		return typedArray[int16](et, xs)
	case gguf.TypeUint32:
		return typedArray[uint32](et, xs)
	case gguf.TypeInt32:
		return typedArray[int32](et, xs)
	case gguf.TypeUint64:
		return typedArray[uint64](et, xs)
	case gguf.TypeInt64:
		return typedArray[int64](et, xs)
	case gguf.TypeFloat32:
		return typedArray[float32](et, xs)
	case gguf.TypeFloat64:
		return typedArray[float64](et, xs)
	case gguf.TypeBool:
		return typedArray[bool](et, xs)
	case gguf.TypeString:
		return typedArray[string](et, xs)
	}
	return gguf.Value{}, fmt.Errorf("unknown element type %v", et)
}

func typedArray[T gguf.Elem](et gguf.ValueType, xs []any) (gguf.Value, error) {
	out := make([]T, len(xs))
	for i, x := range xs {
		g, err := scalarOf(et, x)
		if err != nil {
			return gguf.Value{}, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = g.(T)
	}
	return gguf.Array(out), nil
}

// toUint64 accepts any Go integer that is not negative.
func toUint64(x any) (uint64, error) {
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
	i, err := toInt64(x)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%v (%T) is not a non-negative integer", x, x)
	}
	return uint64(i), nil
}

// toInt64 accepts any Go integer that fits in int64.
func toInt64(x any) (int64, error) {
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

// configToKVs turns a model config into typed GGUF KVs named prefix+key, keys sorted:
// integers become i64 (u64 above the int64 range), floats f64 (f32 stays f32), bools,
// strings, and lists of one of those kinds arrays of that type (an empty list an empty
// array[i64]). Maps and mixed lists have no GGUF form and are errors.
func configToKVs(prefix string, cfg map[string]any) ([]gguf.KV, error) {
	keys := sortedKeys(cfg)
	var out []gguf.KV
	for _, k := range keys {
		v, err := configValue(cfg[k])
		if err != nil {
			return nil, fmt.Errorf("model config key %q: %w", k, err)
		}
		out = append(out, gguf.KV{Key: prefix + k, Value: v})
	}
	return out, nil
}

func configValue(x any) (gguf.Value, error) {
	switch v := x.(type) {
	case bool:
		return gguf.Bool(v), nil
	case string:
		return gguf.String(v), nil
	case float32:
		return gguf.Float32(v), nil
	case float64:
		return gguf.Float64(v), nil
	case []any:
		return configArray(v)
	}
	if i, err := toInt64(x); err == nil {
		return gguf.Int64(i), nil
	}
	if u, err := toUint64(x); err == nil {
		return gguf.Uint64(u), nil
	}
	return gguf.Value{}, fmt.Errorf("a %T has no GGUF form", x)
}

func configArray(xs []any) (gguf.Value, error) {
	if len(xs) == 0 {
		return gguf.Array([]int64{}), nil
	}
	first, err := configValue(xs[0])
	if err != nil || first.Type() == gguf.TypeArray {
		return gguf.Value{}, fmt.Errorf("list element 0: %v has no GGUF array form", xs[0])
	}
	et := first.Type()
	if et == gguf.TypeUint64 || et == gguf.TypeInt64 {
		// A list of integers is i64 unless one of them needs u64.
		et = gguf.TypeInt64
		for _, x := range xs {
			if _, err := toInt64(x); err != nil {
				et = gguf.TypeUint64
			}
		}
	}
	v, err := arrayOf(et, xs)
	if err != nil {
		return gguf.Value{}, fmt.Errorf("list of mixed types: %w", err)
	}
	return v, nil
}

// kvToConfig turns a GGUF value into a plain config value (the inverse of configValue).
func kvToConfig(v gguf.Value) any {
	if v.Type() != gguf.TypeArray {
		return plainScalar(v)
	}
	out := make([]any, v.Len())
	for i := range out {
		out[i] = kvToConfig(v.Index(i))
	}
	return out
}

func plainScalar(v gguf.Value) any {
	if i, ok := v.AsInt64(); ok {
		return i
	}
	if u, ok := v.AsUint64(); ok {
		if u <= math.MaxInt64 {
			return int64(u)
		}
		return u
	}
	return v.Interface()
}
