package jsonobj

import (
	"reflect"
	"testing"
)

func TestDecode(t *testing.T) {
	got, err := Decode(`{"a": 3, "b": [1.5, {"c": -2}], "d": "x", "e": 1e3}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(3), "b": []any{1.5, map[string]any{"c": int64(-2)}}, "d": "x", "e": 1000.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode = %#v, want %#v", got, want)
	}
	for _, bad := range []string{``, `null`, `[1]`, `{} {}`, `{"a":`} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q): no error", bad)
		}
	}
}
