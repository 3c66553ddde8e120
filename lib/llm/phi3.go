package llm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// phi3 is the code of Phi-3, Phi-3.5, Phi-4 and Phi-4-mini (the converter's
// Phi3MiniModel): fused Q/K/V and gate/up projections kept fused, its own set of
// hyperparameters (the rotary dimensions from partial_rotary_factor, the original
// context, the sliding window, 0 when none, which tells Phi-4 apart), and for the
// long-context models (LongRoPE, "su") the per-frequency factors as two F32 tensors,
// rope_factors_long and rope_factors_short, first in the file, with the attention
// factor written before any other key, where generate_extra_tensors writes it.
type phi3 struct{ plain }

// ropeDims is int(partial_rotary_factor * hidden) // heads, as the converter computes it,
// at most the head dimension (a negative or huge factor was written as a uint32 that
// wrapped around; the converter's writer refuses a negative one).
func (phi3) ropeDims(cp *Checkpoint) (int, error) {
	h := cp.Hparams
	pct, err := h.rope.floatOr("partial_rotary_factor", 1)
	if err != nil {
		return 0, err
	}
	p := pct * float64(h.Hidden)
	dims := 0
	if p >= 0 && p < math.MaxInt32 {
		dims = int(p) / h.Heads
	}
	if p < 0 || p >= math.MaxInt32 || dims > h.HeadDim {
		return 0, fmt.Errorf("config.json: %s %v gives int(%v x %d) / %d rotary dimensions a head, want 0 to the head dimension %d",
			h.rope.name("partial_rotary_factor"), pct, pct, h.Hidden, h.Heads, h.HeadDim)
	}
	return dims, nil
}

// origContext is original_max_position_embeddings, which must be there: a positive
// integer that fits GGUF's uint32 (-5 was written as 4294967291, 256.7 as 256, and 0
// made LongRoPE's attention factor NaN; the converter's writer refuses the first two
// and divides by it).
func (phi3) origContext(cp *Checkpoint) (int, error) {
	r := cp.Hparams.rope
	orig, ok, err := r.float("original_max_position_embeddings")
	if err == nil && !ok {
		err = fmt.Errorf("config.json: original_max_position_embeddings is missing (Phi-3 needs it)")
	}
	if err == nil && (orig < 1 || orig > math.MaxUint32 || orig != math.Trunc(orig)) {
		err = fmt.Errorf("config.json: %s is %v, expected a positive integer below 2^32", r.name("original_max_position_embeddings"), orig)
	}
	return int(orig), err
}

func (p phi3) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a, h, c := cp.Arch.GGUF, cp.Hparams, cp.config
	orig, err := p.origContext(cp)
	if err != nil {
		return nil, err
	}
	if !h.HasContext || !h.HasFFN || !h.HasRMSEps || !h.HasRopeTheta {
		return nil, fmt.Errorf("config.json: Phi-3 needs max_position_embeddings, intermediate_size, rms_norm_eps and rope_theta")
	}
	dims, err := p.ropeDims(cp)
	if err != nil {
		return nil, err
	}
	window, _, err := c.int("sliding_window", false) // null or absent: 0
	if err != nil {
		return nil, err
	}
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + "." + k, Value: gguf.Uint32(uint32(v))} }
	return []gguf.KV{
		u32("context_length", h.Context),
		u32("rope.scaling.original_context_length", orig),
		u32("embedding_length", h.Hidden),
		u32("feed_forward_length", h.FFN),
		u32("block_count", h.Layers),
		u32("attention.head_count", h.Heads),
		u32("attention.head_count_kv", h.KVHeads),
		{Key: a + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32(float32(h.RMSEps))},
		u32("rope.dimension_count", dims),
		{Key: a + ".rope.freq_base", Value: gguf.Float32(float32(h.RopeTheta))},
		base[len(base)-1], // general.file_type
		u32("attention.sliding_window", window),
	}, nil
}

// Generated are LongRoPE's factors, when the config has them (the 128k models).
func (p phi3) Generated(cp *Checkpoint) ([]tensor.Tensor, error) {
	r := cp.Hparams.rope
	long, short := r.params["long_factor"], r.params["short_factor"]
	if !truthy(long) {
		return nil, nil
	}
	typ, err := r.typ()
	if err != nil {
		return nil, err
	}
	orig, err := p.origContext(cp)
	if err != nil {
		return nil, err
	}
	scale := float64(cp.Hparams.Context) / float64(orig)
	var attn float64 = 1
	switch typ {
	case "su", "longrope":
		if scale > 1 {
			attn = math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))
		}
	case "yarn":
		if scale > 1 {
			attn = 0.1*math.Log(scale) + 1
		}
	default:
		return nil, fmt.Errorf("config.json: %s.rope_type %q is not a Phi-3 rope scaling (su, longrope, yarn)", r.field, typ)
	}
	if math.IsNaN(attn) || math.IsInf(attn, 0) {
		return nil, fmt.Errorf("config.json: max_position_embeddings %d over %s %d gives the attention factor %v",
			cp.Hparams.Context, r.name("original_max_position_embeddings"), orig, attn)
	}
	dims, err := p.ropeDims(cp)
	if err != nil {
		return nil, err
	}
	var out []tensor.Tensor
	for _, f := range []struct {
		name, field string
		v           any
	}{{"rope_factors_long.weight", "long_factor", long}, {"rope_factors_short.weight", "short_factor", short}} {
		list, ok := f.v.([]any)
		if !ok || 2*len(list) != dims {
			return nil, fmt.Errorf("config.json: %s.%s must be a list of %d numbers (rope.dimension_count/2)", r.field, f.field, dims/2)
		}
		data := make([]byte, 4*len(list))
		for i, x := range list {
			v, err := float32Field(fmt.Sprintf("%s.%s[%d]", r.field, f.field, i), x)
			if err != nil {
				return nil, err
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
		}
		out = append(out, tensor.Tensor{Name: f.name, DType: dtype.F32, Shape: []int64{int64(len(list))}, Data: data})
	}
	cp.earlyKVs = []gguf.KV{{Key: cp.Arch.GGUF + ".rope.scaling.attn_factor", Value: gguf.Float32(float32(attn))}}
	return out, nil
}

// HFConfig writes Phi-3's own fields from a GGUF: the original context, the partial
// rotary factor (rope.dimension_count x heads / hidden), the sliding window (0 is
// none) and LongRoPE's factors from the tensors read ahead (HFStream).
func (phi3) HFConfig(cp *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	if n, ok := g.archUint("rope.scaling.original_context_length"); ok {
		cfg.set("original_max_position_embeddings", n)
	}
	dims, ok := g.archUint("rope.dimension_count")
	hidden, ok2 := g.archUint("embedding_length")
	if ok && ok2 && hidden > 0 && int(dims)*cp.Hparams.Heads != int(hidden) {
		cfg.set("partial_rotary_factor", jsonFloat{float64(dims) * float64(cp.Hparams.Heads) / float64(hidden), 64})
	}
	if n, ok := g.archUint("attention.sliding_window"); ok && n > 0 {
		cfg.set("sliding_window", n)
	} else if ok {
		cfg.set("sliding_window", nil)
	}
	long, short := cp.computedData["rope_factors_long.weight"], cp.computedData["rope_factors_short.weight"]
	if long == nil {
		return nil
	}
	if short == nil {
		return fmt.Errorf("the GGUF has rope_factors_long.weight but no rope_factors_short.weight")
	}
	floats := func(v []float32) []jsonFloat {
		out := make([]jsonFloat, len(v))
		for i, x := range v {
			out[i] = jsonFloat{float64(x), 32}
		}
		return out
	}
	rs := jsonObject{}
	rs.set("long_factor", floats(long))
	rs.set("short_factor", floats(short))
	rs.set("type", "longrope")
	cfg.set("rope_scaling", rs)
	return nil
}
