package llm

import (
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/gguf"
)

// rope is a checkpoint's rotary-embedding configuration as today's converter reads it
// (TextModel.__init__): config.json's rope_parameters (transformers 5) or else
// rope_scaling, with the top-level rope_theta, partial_rotary_factor and
// original_max_position_embeddings mirrored in where it lacks them, and "type" read as
// "rope_type"; where it holds a full_attention entry (one set per attention kind),
// that entry.
type rope struct {
	params map[string]any
	field  string // the config.json field the parameters came from, for errors
	// sliding are the parameters of the sliding-window layers (Gemma 2 and 3): the
	// sliding_attention entry, or the top-level local rotary base mirrored in.
	sliding map[string]any
	// from names the top-level config.json field a parameter was mirrored from
	// ("rope_theta" from "rope_theta", not rope_scaling.rope_theta), for errors.
	from map[string]string
}

// name is how config.json spells parameter key: the top-level field it was mirrored
// from, else field.key.
func (r rope) name(key string) string {
	if n, ok := r.from[key]; ok {
		return n
	}
	return r.field + "." + key
}

// localThetaNames are the fields the converter takes the sliding-window layers'
// rotary base from, first found first.
var localThetaNames = []string{"local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"}

// ropeThetaNames are the fields the converter takes the rotary base from, first found first.
var ropeThetaNames = []string{"global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"}

func parseRope(c config) (rope, error) {
	r := rope{params: map[string]any{}, field: "rope_parameters", from: map[string]string{}}
	src, has := c["rope_parameters"] // present but null counts, as in Python's dict.get
	if !has {
		src, r.field = c["rope_scaling"], "rope_scaling"
	}
	if src != nil {
		m, isMap := src.(map[string]any)
		if !isMap {
			return r, fmt.Errorf("config.json: %q is %v, expected an object or null", r.field, src)
		}
		r.params = m
		_, full := m["full_attention"]
		_, sliding := m["sliding_attention"]
		r.sliding, _ = m["sliding_attention"].(map[string]any)
		if full {
			f, ok := m["full_attention"].(map[string]any)
			if !ok {
				return r, fmt.Errorf("config.json: %s.full_attention is %v, expected an object", r.field, m["full_attention"])
			}
			r.params, r.field = f, r.field+".full_attention"
		}
		if full || sliding {
			return r, nil // the converter mirrors nothing into per-attention parameters
		}
	}
	mirror := func(key string, names ...string) {
		if _, has := r.params[key]; has {
			return
		}
		for _, n := range names {
			if v, has := c[n]; has {
				r.params[key], r.from[key] = v, n
				return
			}
		}
	}
	for _, n := range localThetaNames {
		if v, has := c[n]; has {
			if v != nil {
				r.sliding = map[string]any{"rope_theta": v}
				r.from["sliding_attention.rope_theta"] = n
			}
			break
		}
	}
	mirror("rope_theta", ropeThetaNames...)
	if _, has := r.params["rope_type"]; !has && r.params["type"] != nil {
		r.params["rope_type"], r.from["rope_type"] = r.params["type"], r.field+".type"
	}
	mirror("partial_rotary_factor", "partial_rotary_factor", "rope_pct", "rope_percent")
	mirror("original_max_position_embeddings", "original_max_position_embeddings")
	return r, nil
}

// float returns parameter key as a number; ok is false when it is absent or null.
func (r rope) float(key string) (float64, bool, error) {
	v := r.params[key]
	if v == nil {
		return 0, false, nil
	}
	f, err := float32Field(r.name(key), v)
	return f, err == nil, err
}

// slidingTheta is the sliding-window layers' rotary base, when the config gives one.
func (r rope) slidingTheta() (float64, bool, error) {
	s := rope{params: r.sliding, field: r.field + ".sliding_attention", from: map[string]string{}}
	if n, ok := r.from["sliding_attention.rope_theta"]; ok {
		s.from["rope_theta"] = n
	}
	return s.float("rope_theta")
}

// floatOr returns parameter key, or def when it is absent.
func (r rope) floatOr(key string, def float64) (float64, error) {
	f, ok, err := r.float(key)
	if !ok {
		f = def
	}
	return f, err
}

// typ is the scaling type ("" when none is given).
func (r rope) typ() (string, error) {
	v := r.params["rope_type"]
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("config.json: %s is %v, expected a string", r.name("rope_type"), v)
	}
	return s, nil
}

// scalingKVs are the rope.scaling.* keys of the base converter (after the head counts):
// linear and yarn scaling with their factors; "default", llama3 (whose factors are a
// tensor, llama3RopeFreqs) and Phi-3's LongRoPE (its own keys and tensors) give none. A type apr does not convert is an error, where
// the converter would only warn and write a model that runs without the scaling.
func (r rope) scalingKVs(arch string, llama3, longrope bool) ([]gguf.KV, error) {
	t, err := r.typ()
	if err != nil {
		return nil, err
	}
	var kvs []gguf.KV
	f32 := func(k string, v float64) {
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.scaling." + k, Value: gguf.Float32(float32(v))})
	}
	switch t {
	case "", "default":
		return nil, nil // the converter reads no factor (a NaN there is harmless)
	case "linear", "yarn":
		factor, hasFactor, err := r.float("factor")
		if err != nil {
			return nil, err
		}
		if !hasFactor {
			return nil, nil // the converter writes no scaling without a factor
		}
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.scaling.type", Value: gguf.String(t)})
		f32("factor", factor)
		if t == "linear" {
			return kvs, nil
		}
		orig, ok, err := r.float("original_max_position_embeddings")
		if err != nil {
			return nil, err
		}
		if !ok || orig < 0 || orig > math.MaxUint32 || orig != math.Trunc(orig) {
			return nil, fmt.Errorf("config.json: yarn rope scaling needs %s, a non-negative integer", r.name("original_max_position_embeddings"))
		}
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.scaling.original_context_length", Value: gguf.Uint32(uint32(orig))})
		for _, p := range []struct{ key, alt, name string }{
			{"extrapolation_factor", "", "yarn_ext_factor"}, {"attention_factor", "attn_factor", "yarn_attn_factor"},
			{"beta_fast", "", "yarn_beta_fast"}, {"beta_slow", "", "yarn_beta_slow"},
		} {
			v, ok, err := r.float(p.key)
			if !ok && err == nil && p.alt != "" {
				v, ok, err = r.float(p.alt)
			}
			if err != nil {
				return nil, err
			}
			if ok {
				f32(p.name, v)
			}
		}
		return kvs, nil
	case "llama3":
		if llama3 {
			return nil, nil
		}
	case "su", "longrope":
		if longrope { // the family's own keys and tensors say it (Phi-3)
			return nil, nil
		}
		if !truthy(r.params["long_factor"]) || !truthy(r.params["short_factor"]) {
			// Phi-3's converter would write the model without them, and warn of nothing
			return nil, fmt.Errorf("config.json: %s %q needs %s.long_factor and %s.short_factor, LongRoPE's per-frequency factors; they are missing or empty",
				r.name("rope_type"), t, r.field, r.field)
		}
	}
	return nil, fmt.Errorf("config.json: %s.rope_type %q is not a rope scaling apr converts for this family", r.field, t)
}

// llama3RopeFreqs computes the F32 rope_freqs.weight of Llama 3.1's rope scaling, with
// today's converter's arithmetic (LlamaModel.generate_extra_tensors, in torch float32):
// the head_dim/2 rotary frequencies base^(-2i/dim), and for each the factor by which
// its wavelength is stretched: 1 for short wavelengths, factor for long ones, and a
// smooth blend between. Torch divides a scalar by a tensor as reciprocal then product,
// and rounds the scalars to float32 first; both are copied here, because the blend's
// last bits depend on them.
func llama3RopeFreqs(r rope, headDim int) ([]float32, error) {
	var base, factor, low, high, old float64
	for _, p := range []struct {
		dst *float64
		key string
		def float64
	}{{&base, "rope_theta", 10000}, {&factor, "factor", 8}, {&low, "low_freq_factor", 1},
		{&high, "high_freq_factor", 4}, {&old, "original_max_position_embeddings", 8192}} {
		var err error
		if *p.dst, err = r.floatOr(p.key, p.def); err != nil {
			return nil, err
		}
	}
	if high == low {
		return nil, fmt.Errorf("config.json: %s: high_freq_factor and low_freq_factor are both %v (the blend divides by their difference)", r.field, low)
	}
	lowWavelen, highWavelen := float32(old/low), float32(old/high)
	out := make([]float32, 0, headDim/2)
	for i := 0; i < headDim; i += 2 {
		x := float32(i) / float32(headDim)
		freq := 1 / float32(math.Pow(float64(float32(base)), float64(x)))
		wavelen := (1 / freq) * float32(2*math.Pi)
		switch {
		case wavelen < highWavelen:
			out = append(out, 1)
		case wavelen > lowWavelen:
			out = append(out, float32(factor))
		default:
			smooth := ((1/wavelen)*float32(old) - float32(low)) / float32(high-low)
			out = append(out, 1/((1-smooth)/float32(factor)+smooth))
		}
	}
	return out, nil
}
