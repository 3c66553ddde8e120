package ggufconv

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/apr-go/apr/lib/gguf"
)

// configToKVs turns a model config into typed GGUF KVs named prefix+key, keys sorted:
// integers become i64 (u64 above the int64 range), floats f64 (f32 stays f32), bools,
// strings, and lists of one of those kinds arrays of that type (an empty list an empty
// array[i64]). Maps and mixed lists have no GGUF form and are errors.
func configToKVs(prefix string, cfg map[string]any) ([]gguf.KV, error) {
	keys := slices.Sorted(maps.Keys(cfg))
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
	if i, err := gguf.PlainInt64(x); err == nil {
		return gguf.Int64(i), nil
	}
	if u, err := gguf.PlainUint64(x); err == nil {
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
			if _, err := gguf.PlainInt64(x); err != nil {
				et = gguf.TypeUint64
			}
		}
	}
	v, err := gguf.ArrayOfPlain(et, xs)
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
