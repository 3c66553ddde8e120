package model

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/apr-go/apr/lib/tensor"
)

// vectorTensor fetches tensors[name], which must be F32 of shape [n] (n >= 0; when
// want >= 0, n must equal want).
func vectorTensor(tensors map[string]tensor.Tensor, name string, want int64) ([]float32, error) {
	t, ok := tensors[name]
	if !ok {
		return nil, fmt.Errorf("missing tensor %q", name)
	}
	if len(t.Shape) != 1 {
		return nil, fmt.Errorf("tensor %q: shape %v, expected one dimension", name, t.Shape)
	}
	if want >= 0 && t.Shape[0] != want {
		return nil, fmt.Errorf("tensor %q: shape %v, expected [%d]", name, t.Shape, want)
	}
	return t.Float32s()
}

// checkOnlyTensors refuses a tensor not named in names.
func checkOnlyTensors(tensors map[string]tensor.Tensor, names ...string) error {
	for k := range tensors {
		if !slices.Contains(names, k) {
			return fmt.Errorf("unexpected tensor %q (expected only %v)", k, names)
		}
	}
	return nil
}

// configFloat reads a finite number from cfg[key]; def when absent.
func configFloat(cfg map[string]any, key string, def float64) (float64, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return def, nil
	}
	var f float64
	switch rv := reflect.ValueOf(v); {
	case rv.CanInt():
		f = float64(rv.Int())
	case rv.CanUint() && rv.Kind() != reflect.Uintptr:
		f = float64(rv.Uint())
	case rv.CanFloat():
		f = rv.Float()
	default:
		return 0, fmt.Errorf("config %q: %T, expected a number", key, v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("config %q: %v, expected a finite number", key, f)
	}
	return f, nil
}

// configInt reads a whole number in [0, max] from cfg[key]; def when absent. An
// integer of any width is taken, and a float64 without a fraction (not a float32).
func configInt(cfg map[string]any, key string, def, max int64) (int64, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return def, nil
	}
	var n int64
	switch rv := reflect.ValueOf(v); {
	case rv.CanInt():
		n = rv.Int()
	case rv.CanUint() && rv.Kind() != reflect.Uintptr:
		if rv.Uint() > math.MaxInt64 {
			return 0, fmt.Errorf("config %q: %d exceeds %d", key, rv.Uint(), max)
		}
		n = int64(rv.Uint())
	case rv.Kind() == reflect.Float64:
		x := rv.Float()
		if x != math.Trunc(x) || x < 0 || x > float64(max) {
			return 0, fmt.Errorf("config %q: %v, expected a whole number in [0,%d]", key, x, max)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("config %q: %T, expected a whole number", key, v)
	}
	if n < 0 || n > max {
		return 0, fmt.Errorf("config %q: %d, expected a whole number in [0,%d]", key, n, max)
	}
	return n, nil
}

// configBool reads a bool from cfg[key]; def when absent.
func configBool(cfg map[string]any, key string, def bool) (bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("config %q: %T, expected a bool", key, v)
	}
	return b, nil
}

func checkFeatures(x Matrix, want int) error {
	if err := x.check(); err != nil {
		return err
	}
	if x.Cols != want {
		return fmt.Errorf("input has %d features, the model expects %d", x.Cols, want)
	}
	return nil
}

func dot32(w []float32, row []float64) float64 {
	var s float64
	for j, v := range row {
		s += float64(w[j]) * v
	}
	return s
}
