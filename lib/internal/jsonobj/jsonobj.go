// Package jsonobj decodes a JSON object into the plain values APR metadata holds:
// whole numbers as int64, other numbers as float64. It imports nothing of apr's.
package jsonobj

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode decodes s, which must be exactly one JSON object.
func Decode(s string) (map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("not a JSON object: null")
	}
	if d.More() {
		return nil, errors.New("not a single JSON object")
	}
	return plain(m).(map[string]any), nil
}

func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
	}
	return v
}
