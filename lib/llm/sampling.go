package llm

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/gguf"
)

// samplingFields are the generation_config.json fields today's converter copies into
// general.sampling.* keys (gguf-py's Metadata.load), in the order it writes them, with
// the GGUF type of each: s a string, i an INT32, f a FLOAT32. penalty_repeat falls back
// to transformers' repetition_penalty.
var samplingFields = []struct {
	key, field, fallback string
	kind                 byte
}{
	{"sequence", "sequence", "", 's'},
	{"top_k", "top_k", "", 'i'},
	{"top_p", "top_p", "", 'f'},
	{"min_p", "min_p", "", 'f'},
	{"xtc_probability", "xtc_probability", "", 'f'},
	{"xtc_threshold", "xtc_threshold", "", 'f'},
	{"temp", "temperature", "", 'f'},
	{"penalty_last_n", "penalty_last_n", "", 'i'},
	{"penalty_repeat", "penalty_repeat", "repetition_penalty", 'f'},
	{"mirostat", "mirostat", "", 'i'},
	{"mirostat_tau", "mirostat_tau", "", 'f'},
	{"mirostat_eta", "mirostat_eta", "", 'f'},
}

// samplingKVs returns the general.sampling.* keys of the checkpoint's
// generation_config.json, as today's converter writes them. A file that is not a JSON
// object gives none, as the converter ignores it ("not all models have valid
// generation_config.json"); a field of the wrong kind, which would stop the converter,
// is an error naming it. A null field is absent, as in Python's dict.get.
func samplingKVs(files map[string][]byte) ([]gguf.KV, error) {
	raw, ok := files["generation_config.json"]
	if !ok {
		return nil, nil
	}
	gen, err := parseJSON("generation_config.json", raw)
	if err != nil {
		return nil, nil // as Python's json.load fails on it (not UTF-8, data after the object)
	}
	var kvs []gguf.KV
	for _, f := range samplingFields {
		v, field := gen[f.field], f.field
		if v == nil && f.fallback != "" {
			v, field = gen[f.fallback], f.fallback
		}
		if v == nil || f.kind == 'f' && nonFiniteNumber(v) {
			// A NaN or infinite sampling value is left out: the converter writes it,
			// and llama.cpp would take it as the sampler's default.
			continue
		}
		val, err := samplingValue(v, f.kind)
		if err != nil {
			return nil, fmt.Errorf("generation_config.json: %q is %v, expected %s", field, v, err)
		}
		kvs = append(kvs, gguf.KV{Key: "general.sampling." + f.key, Value: val})
	}
	return kvs, nil
}

// samplingValue converts a generation_config.json value as the converter's GGUF writer
// packs it: Python packs a bool as a number, and refuses a float as an INT32 and a
// number beyond FLOAT32's range.
func samplingValue(v any, kind byte) (gguf.Value, error) {
	if b, ok := v.(bool); ok {
		v = json.Number("0")
		if b {
			v = json.Number("1")
		}
	}
	switch kind {
	case 's':
		if s, ok := v.(string); ok {
			return gguf.String(s), nil
		}
		return gguf.Value{}, fmt.Errorf("a string")
	case 'i':
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
				return gguf.Int32(int32(i)), nil
			}
		}
		return gguf.Value{}, fmt.Errorf("a 32-bit integer")
	default:
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil && math.Abs(f) <= math.MaxFloat32 {
				return gguf.Float32(float32(f)), nil
			}
		}
		return gguf.Value{}, fmt.Errorf("a number within FLOAT32's range")
	}
}

// setSampling writes the general.sampling.* keys back as the generation_config.json
// fields they came from (penalty_repeat as transformers' repetition_penalty).
func (g ggufKVs) setSampling(gen *jsonObject) {
	for _, f := range samplingFields {
		key, field := "general.sampling."+f.key, f.field
		if f.fallback != "" {
			field = f.fallback
		}
		switch f.kind {
		case 's':
			if s, ok := g.str(key); ok {
				gen.set(field, s)
			}
		case 'i':
			if v, ok := g.h.Get(key); ok {
				if n, ok := v.AsInt64(); ok {
					gen.set(field, n)
				}
			}
		default:
			if x, ok := g.float(key); ok {
				gen.set(field, x)
			}
		}
	}
}
