package llm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// llama is the Llama family's code (the converter's LlamaModel, which Mistral's
// checkpoints also go through): {arch}.vocab_size and {arch}.rope.dimension_count after
// the base keys, and Llama 3.1's rope scaling, whose per-frequency factors the
// converter computes into an F32 rope_freqs.weight.
type llama struct{ plain }

func (llama) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a, h := cp.Arch.GGUF, cp.Hparams
	return append(base,
		gguf.KV{Key: a + ".vocab_size", Value: gguf.Uint32(uint32(h.Vocab))},
		gguf.KV{Key: a + ".rope.dimension_count", Value: gguf.Uint32(uint32(h.HeadDim))}), nil
}

func (llama) Generated(cp *Checkpoint) ([]tensor.Tensor, error) {
	if t, err := cp.Hparams.rope.typ(); err != nil || t != "llama3" {
		return nil, err
	}
	f, err := llama3RopeFreqs(cp.Hparams.rope, cp.Hparams.HeadDim)
	if err != nil {
		return nil, err
	}
	data := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return []tensor.Tensor{{Name: "rope_freqs.weight", DType: dtype.F32, Shape: []int64{int64(len(f))}, Data: data}}, nil
}

// llama3Params are the parameters of Llama 3.1's rope scaling.
type llama3Params struct {
	factor, low, high, orig float64
}

// recoverLlama3 finds the rope scaling parameters that make factors (a GGUF's
// rope_freqs.weight) over head dimension headDim with rotary base theta, so that a
// model from a GGUF file can be written back as a checkpoint whose config makes the
// same tensor again. Meta's parameters for every Llama 3.x (low 1, high 4, 8192
// positions) are tried first with the largest factor; else low is taken as 1 and high
// and the original context solved from two values of the blend. Whatever is found
// must reproduce every value bit for bit, or it is an error.
func recoverLlama3(factors []float32, headDim int, theta float64) (llama3Params, error) {
	if len(factors) != headDim/2 || len(factors) == 0 {
		return llama3Params{}, fmt.Errorf("rope_freqs.weight has %d values, want head_dim/2 = %d", len(factors), headDim/2)
	}
	f := float64(slices.Max(factors))
	try := []llama3Params{{f, 1, 4, 8192}}
	var band []int
	for i, v := range factors {
		if v != 1 && float64(v) != f {
			band = append(band, i)
		}
	}
	if len(band) >= 2 && f > 1 {
		// 1/v = 1/f + s(1 - 1/f) gives s; s(high-low) = orig/wavelen - low with low 1.
		s := func(i int) float64 { return (1/float64(factors[i]) - 1/f) / (1 - 1/f) }
		inv := func(i int) float64 { // 1/wavelen = freq/2π
			return 1 / (2 * math.Pi * math.Pow(theta, float64(2*i)/float64(headDim)))
		}
		i, j := band[0], band[len(band)-1]
		// s_i*H - orig*inv_i = -1, s_j*H - orig*inv_j = -1, with H = high-1.
		det := s(i)*(-inv(j)) - (-inv(i))*s(j)
		if det != 0 {
			h := (-1*(-inv(j)) - (-inv(i))*(-1)) / det
			orig := (s(i)*(-1) - (-1)*s(j)) / det
			// The shortest decimal that works: configs hold round numbers.
			for digits := 0; digits <= 6; digits++ {
				scale := math.Pow(10, float64(digits))
				try = append(try, llama3Params{f, 1, math.Round((1+h)*scale) / scale, math.Round(orig)})
			}
			try = append(try, llama3Params{f, 1, 1 + h, math.Round(orig)})
		}
	}
	for _, p := range try {
		r := rope{params: map[string]any{
			"rope_theta": json.Number(fmt.Sprint(theta)), "factor": json.Number(fmt.Sprint(p.factor)),
			"low_freq_factor": json.Number(fmt.Sprint(p.low)), "high_freq_factor": json.Number(fmt.Sprint(p.high)),
			"original_max_position_embeddings": json.Number(fmt.Sprint(p.orig)),
		}}
		if again, err := llama3RopeFreqs(r, headDim); err == nil && slices.Equal(again, factors) {
			return p, nil
		}
	}
	return llama3Params{}, fmt.Errorf("rope_freqs.weight: no Llama 3 rope scaling apr can write into config.json makes these factors again")
}

// Vocab adds what LlamaModel.set_vocab writes after the vocabulary for two
// vocabulary sizes: CodeLlama's (32016: a second SpecialVocab for its infill tokens,
// of which only EOT, id 32010, has a GGUF key) and Granite's small models' (49152:
// add_bos_token false). Keys written again keep their first place (dedupe).
func (llama) Vocab(cp *Checkpoint, kvs []gguf.KV) ([]gguf.KV, error) {
	switch cp.Hparams.Vocab {
	case 32016:
		more, err := infillVocab(cp.files, []specialID{{"prefix", 32007}, {"suffix", 32008}, {"middle", 32009}, {"eot", 32010}}, true)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, more...)
	case 49152:
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(false)})
	}
	return kvs, nil
}

// granite is IBM Granite 3's code (the converter's GraniteModel, a LlamaModel): Llama's
// keys without head_dim, which it ignores (so the rotary dimensions are
// hidden/heads), and its four multipliers as scales.
type granite struct{ llama }

func (g granite) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a := cp.Arch.GGUF
	var kvs []gguf.KV
	for _, kv := range base {
		if kv.Key != a+".attention.key_length" && kv.Key != a+".attention.value_length" {
			kvs = append(kvs, kv)
		}
	}
	h := cp.Hparams
	h.HeadDim = h.Hidden / h.Heads
	kvs = append(kvs,
		gguf.KV{Key: a + ".vocab_size", Value: gguf.Uint32(uint32(h.Vocab))},
		gguf.KV{Key: a + ".rope.dimension_count", Value: gguf.Uint32(uint32(h.HeadDim))})
	for _, s := range []struct{ key, field string }{
		{"attention.scale", "attention_multiplier"}, {"embedding_scale", "embedding_multiplier"},
		{"residual_scale", "residual_multiplier"}, {"logit_scale", "logits_scaling"},
	} {
		f, ok, err := cp.config.float(s.field)
		if err != nil {
			return nil, err
		}
		if ok && f != 0 { // the converter writes a multiplier only when it is truthy
			kvs = append(kvs, gguf.KV{Key: a + "." + s.key, Value: gguf.Float32(float32(f))})
		}
	}
	return kvs, nil
}

// HFConfig writes Granite's multipliers back from their scales.
func (granite) HFConfig(cp *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	for _, s := range []struct{ key, field string }{
		{"attention.scale", "attention_multiplier"}, {"embedding_scale", "embedding_multiplier"},
		{"residual_scale", "residual_multiplier"}, {"logit_scale", "logits_scaling"},
	} {
		if f, ok := g.archFloat(s.key); ok {
			cfg.set(s.field, f)
		}
	}
	return nil
}

// mistral3 is the text model of Mistral Small 3.1 and 3.2 (Mistral3ForConditionalGeneration:
// its text_config, its tensors under language_model., a vision tower left out), which
// the converter writes as Llama's under the architecture mistral3. The same class
// converts Ministral 3 (text model_type ministral3, with yarn keys of its own) and
// Mistral 4 (a mixture of experts), which apr does not yet: refused by name.
type mistral3 struct{ llama }

func (m mistral3) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	if t, _ := cp.config["model_type"].(string); t == "ministral3" || t == "mistral4" {
		return nil, fmt.Errorf("config.json: text model_type %q: apr converts Mistral 3's text model of model_type mistral only", t)
	}
	return m.llama.KVs(cp, base)
}
