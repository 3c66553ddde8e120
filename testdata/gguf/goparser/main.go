// Command goparser is a test-only peer for lib/gguf (TestPeerGoGGUFParser): it parses
// each GGUF file named on the command line with github.com/gpustack/gguf-parser-go and
// prints, as one JSON document, what that parser sees, in the shape that
// testdata/gguf/peer/dump.mjs prints for @huggingface/gguf, so that one comparison
// serves both peers: every KV with its value type, array element type and value, the
// tensor infos and the data section offset. Integers are decimal strings, floats the
// hex bit pattern of their float64 value (an f32 widens exactly).
//
// It is a module of its own so that the peer and its dependencies stay out of apr's
// go.mod; `go run .` in this directory fetches them through the module proxy.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	parser "github.com/gpustack/gguf-parser-go"
)

type kv struct {
	Key     string  `json:"key"`
	Type    uint32  `json:"type"`
	SubType *uint32 `json:"subType"`
	Value   any     `json:"value"`
}

type tensor struct {
	Name   string   `json:"name"`
	NDims  uint32   `json:"n_dims"`
	Shape  []string `json:"shape"`
	Dtype  uint32   `json:"dtype"`
	Offset string   `json:"offset"`
}

type view struct {
	Path             string   `json:"path"`
	Version          uint32   `json:"version"`
	TensorDataOffset string   `json:"tensorDataOffset"`
	KVs              []kv     `json:"kvs"`
	Tensors          []tensor `json:"tensors"`
}

func main() {
	var out []view
	for _, path := range os.Args[1:] {
		v, err := dump(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "goparser: %s: %v\n", path, err)
			os.Exit(1)
		}
		out = append(out, v)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "goparser:", err)
		os.Exit(1)
	}
}

func dump(path string) (view, error) {
	f, err := parser.ParseGGUFFile(path)
	if err != nil {
		return view{}, err
	}
	v := view{
		Path:             path,
		Version:          uint32(f.Header.Version),
		TensorDataOffset: strconv.FormatInt(f.TensorDataStartOffset, 10),
		KVs:              []kv{},
		Tensors:          []tensor{},
	}
	for _, e := range f.Header.MetadataKV {
		k := kv{Key: e.Key, Type: uint32(e.ValueType)}
		if a, ok := e.Value.(parser.GGUFMetadataKVArrayValue); ok {
			st := uint32(a.Type)
			k.SubType = &st
			if uint64(len(a.Array)) != a.Len {
				return view{}, fmt.Errorf("KV %q: %d of %d array elements read", e.Key, len(a.Array), a.Len)
			}
			elems := make([]any, len(a.Array))
			for i, x := range a.Array {
				if elems[i], err = norm(x); err != nil {
					return view{}, fmt.Errorf("KV %q element %d: %v", e.Key, i, err)
				}
			}
			k.Value = elems
		} else if k.Value, err = norm(e.Value); err != nil {
			return view{}, fmt.Errorf("KV %q: %v", e.Key, err)
		}
		v.KVs = append(v.KVs, k)
	}
	for _, t := range f.TensorInfos {
		shape := make([]string, len(t.Dimensions))
		for i, d := range t.Dimensions {
			shape[i] = strconv.FormatUint(d, 10)
		}
		v.Tensors = append(v.Tensors, tensor{t.Name, t.NDimensions, shape, uint32(t.Type), strconv.FormatUint(t.Offset, 10)})
	}
	return v, nil
}

// norm gives a value the normal form dump.mjs gives it: 8- to 32-bit integers as
// {"int", "bits"}, 64-bit integers as decimal strings, floats as {"bits"} (plus
// "int" when integral and not -0, as JavaScript numbers are), bools as "true"/"false".
func norm(x any) (any, error) {
	switch x := x.(type) {
	case uint8:
		return small(int64(x)), nil
	case int8:
		return small(int64(x)), nil
	case uint16:
		return small(int64(x)), nil
	case int16:
		return small(int64(x)), nil
	case uint32:
		return small(int64(x)), nil
	case int32:
		return small(int64(x)), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float32:
		return float(float64(x)), nil
	case float64:
		return float(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		return x, nil
	}
	return nil, fmt.Errorf("unexpected value of type %T", x)
}

func small(i int64) map[string]string {
	return map[string]string{"int": strconv.FormatInt(i, 10), "bits": bits(float64(i))}
}

func float(f float64) map[string]string {
	m := map[string]string{"bits": bits(f)}
	if f == math.Trunc(f) && !math.IsInf(f, 0) && !(f == 0 && math.Signbit(f)) {
		m["int"] = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return m
}

func bits(f float64) string { return strconv.FormatUint(math.Float64bits(f), 16) }
