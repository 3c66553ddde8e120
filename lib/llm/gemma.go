package llm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// gemma is the code of Gemma 1, 2 and 3 (the converter's GemmaModel, Gemma2Model and
// Gemma3Model). Gemma's RMS norms scale by 1 + weight, so the converter adds 1 to every
// *norm.weight, in its own arithmetic: F32 for BF16 and F32 checkpoints (it widens
// BF16 before), F16 for F16 ones. Gemma 1 and 2 write their own hyperparameters (no
// rotary base; Gemma 2's soft-capping and sliding window); Gemma 3 writes the base
// converter's and then rewrites some with its defaults, drops the embedding rows past
// the tokenizer's vocabulary, and may come as the text tower of a multimodal model.
type gemma struct {
	plain
	version int
}

// gemma3Defaults are the values Gemma3Model.set_gguf_parameters writes for fields
// config.json does not give (transformers' Gemma3TextConfig has the same ones,
// gemma3TextDefaults).
var gemma3Defaults = map[string]any{
	"max_position_embeddings": json.Number("131072"), "num_attention_heads": json.Number("8"),
	"rms_norm_eps": json.Number("1e-06"), "head_dim": json.Number("256"), "num_key_value_heads": json.Number("4"),
}

func (g gemma) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a, c := cp.Arch.GGUF, cp.config
	var kvs []gguf.KV
	var err error
	// field is config.json with field in it: Gemma 3's converter has defaults for some.
	field := func(name string) config {
		if v, ok := gemma3Defaults[name]; ok && g.version == 3 && c[name] == nil {
			return config{name: v}
		}
		return c
	}
	u32 := func(key, name string) {
		if err != nil {
			return
		}
		var n int
		if n, _, err = field(name).int(name, true); err == nil {
			kvs = append(kvs, gguf.KV{Key: a + "." + key, Value: gguf.Uint32(uint32(n))})
		}
	}
	f32 := func(key, name string) {
		if err != nil {
			return
		}
		var f float64
		var ok bool
		if f, ok, err = field(name).float(name); err == nil && !ok {
			err = fmt.Errorf("config.json: %q is missing", name)
		}
		if err == nil {
			kvs = append(kvs, gguf.KV{Key: a + "." + key, Value: gguf.Float32(float32(f))})
		}
	}
	if g.version == 3 {
		// The base keys, then Gemma3Model's, which rewrite some in place (the writer
		// keeps a key where it was first written; see dedupe).
		kvs = base
		u32("context_length", "max_position_embeddings")
		u32("attention.head_count", "num_attention_heads")
		f32("attention.layer_norm_rms_epsilon", "rms_norm_eps")
		u32("attention.key_length", "head_dim")
		u32("attention.value_length", "head_dim")
		theta, terr := cp.Hparams.rope.floatOr("rope_theta", 1e6)
		if terr != nil {
			return nil, terr
		}
		kvs = append(kvs, gguf.KV{Key: a + ".rope.freq_base", Value: gguf.Float32(float32(theta))})
		if c["attn_logit_softcapping"] != nil {
			return nil, fmt.Errorf("config.json: Gemma 3 has no attn_logit_softcapping (it is %v)", c["attn_logit_softcapping"])
		}
		if truthy(c["final_logit_softcapping"]) {
			f32("final_logit_softcapping", "final_logit_softcapping")
		}
		if p, ok := c["sliding_window_pattern"].(json.Number); !ok || p.String() != "1" {
			u32("attention.sliding_window", "sliding_window")
		}
		u32("attention.head_count_kv", "num_key_value_heads")
		return kvs, err
	}
	u32("context_length", "max_position_embeddings")
	u32("embedding_length", "hidden_size")
	kvs = append(kvs, gguf.KV{Key: a + ".block_count", Value: gguf.Uint32(uint32(cp.Hparams.Layers))})
	u32("feed_forward_length", "intermediate_size")
	u32("attention.head_count", "num_attention_heads")
	kvs = append(kvs, gguf.KV{Key: a + ".attention.head_count_kv", Value: gguf.Uint32(uint32(cp.Hparams.KVHeads))})
	f32("attention.layer_norm_rms_epsilon", "rms_norm_eps")
	u32("attention.key_length", "head_dim")
	u32("attention.value_length", "head_dim")
	kvs = append(kvs, base[len(base)-1]) // general.file_type
	if g.version == 2 {
		f32("attn_logit_softcapping", "attn_logit_softcapping")
		f32("final_logit_softcapping", "final_logit_softcapping")
		u32("attention.sliding_window", "sliding_window")
	}
	return kvs, err
}

// Vocab adds what Gemma's set_vocab writes after the vocabulary: Gemma 1's second
// SpecialVocab for CodeGemma's tokens (of which only EOT, id 107 unless the tokenizer
// config names it, has a GGUF key), and add_space_prefix false where the vocabulary
// is SentencePiece.
func (g gemma) Vocab(cp *Checkpoint, kvs []gguf.KV) ([]gguf.KV, error) {
	_, spm := cp.files["tokenizer.model"]
	if g.version == 1 {
		more, err := infillVocab(cp.files, []specialID{{"prefix", 67}, {"suffix", 69}, {"middle", 68}, {"fsep", 70}, {"eot", 107}}, false)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, more...)
	}
	if spm {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Bool(false)})
	}
	return kvs, nil
}

// Transform adds 1 to the norms and, for Gemma 3, keeps only the embedding rows of the
// tokenizer's vocabulary.
func (g gemma) Transform(cp *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error) {
	switch {
	case strings.HasSuffix(info.Name, "norm.weight"):
		return normShift(info, r, 1)
	case g.version == 3 && info.Name == "token_embd.weight" && len(info.Shape) == 2:
		n, err := gemmaVocab(cp)
		if err != nil || n >= info.Shape[0] {
			return info, r, err
		}
		row, err := dtype.Size(info.DType, info.Shape[1:])
		if err != nil {
			return info, nil, tensor.Wrap(info.Name, err)
		}
		keep, drop := n*row, (info.Shape[0]-n)*row
		info.Shape = []int64{n, info.Shape[1]}
		if r != nil {
			r = &prefixReader{r: io.LimitReader(r, keep), rest: r, drop: drop}
		}
	}
	return info, r, nil
}

// HFConfig writes Gemma's own fields: its activation, rope_theta where the GGUF has
// none (Gemma 1 and 2 use transformers' default, 10000), the soft-capping and sliding
// window, the sliding layers' rotary base, and query_pre_attn_scalar as the head
// dimension, which GGUF does not record (llama.cpp scales queries by the head
// dimension too, except for Gemma 2 27B's shape, which it tells by size).
func (g gemma) HFConfig(cp *Checkpoint, k ggufKVs, cfg *jsonObject) error {
	cfg.set("hidden_act", "gelu_pytorch_tanh")
	cfg.set("hidden_activation", "gelu_pytorch_tanh")
	if _, ok := k.archFloat("rope.freq_base"); !ok {
		cfg.set("rope_theta", jsonFloat{10000, 64})
	}
	if n, ok := k.archUint("attention.key_length"); ok {
		cfg.set("query_pre_attn_scalar", n)
	}
	for _, f := range []struct{ key, field string }{
		{"attn_logit_softcapping", "attn_logit_softcapping"}, {"final_logit_softcapping", "final_logit_softcapping"},
		{"rope.freq_base_swa", "rope_local_base_freq"},
	} {
		if v, ok := k.archFloat(f.key); ok {
			cfg.set(f.field, v)
		}
	}
	if n, ok := k.archUint("attention.sliding_window"); ok {
		cfg.set("sliding_window", n)
	}
	return nil
}

// Untransform takes the 1 off the norms again: exact where adding it was (a BF16
// value below about 2^-16, or an F16 one with bits below 2^-10, lost them to the
// converter's rounding, which no inverse gives back).
func (g gemma) Untransform(cp *Checkpoint, info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error) {
	if strings.HasSuffix(info.Name, "norm.weight") {
		return normShift(info, r, -1)
	}
	return info, r, nil
}

// gemmaVocab is the number of tokens Gemma3Model keeps embedding rows for: the
// SentencePiece vocabulary as the converter builds it (vocab_size tokens), or
// tokenizer.json's vocabulary and added tokens.
func gemmaVocab(cp *Checkpoint) (int64, error) {
	if _, ok := cp.files["tokenizer.model"]; ok {
		return int64(cp.Hparams.Vocab), nil
	}
	tj, err := parseJSON("tokenizer.json", cp.files["tokenizer.json"])
	if err != nil {
		return 0, err
	}
	model, _ := tj["model"].(map[string]any)
	vocab, _ := model["vocab"].(map[string]any)
	added, _ := tj["added_tokens"].([]any)
	return int64(len(vocab) + len(added)), nil
}

// normShift adds delta to each value of a 1-D norm: in F32 for F32 and BF16 data
// (BF16 widened first, as the converter widens it before its modify_tensors), in F16
// arithmetic for F16 data (as torch adds to a half tensor: in float32, rounded to
// half). The norm is small and read whole.
func normShift(info container.TensorInfo, r io.Reader, delta float32) (container.TensorInfo, io.Reader, error) {
	if len(info.Shape) != 1 {
		return info, r, fmt.Errorf("tensor %q: a norm of shape %v, want one dimension", info.Name, info.Shape)
	}
	out := info
	switch info.DType {
	case dtype.F32, dtype.BF16:
		out.DType = dtype.F32
	case dtype.F16:
	default:
		return info, r, fmt.Errorf("tensor %q: a norm in %v, want F32, F16 or BF16", info.Name, info.DType)
	}
	if r == nil {
		return out, nil, nil
	}
	n := int(info.Shape[0])
	size := n * info.DType.Info().BlockBytes
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return info, nil, tensor.Wrap(info.Name, err)
	}
	res := make([]byte, n*out.DType.Info().BlockBytes)
	for i := 0; i < n; i++ {
		var v float32
		switch info.DType {
		case dtype.F32:
			v = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		case dtype.BF16:
			v = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		case dtype.F16:
			v = kernels.F16BitsToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
		v += delta
		if out.DType == dtype.F16 {
			binary.LittleEndian.PutUint16(res[2*i:], kernels.F32ToF16Bits(v))
		} else {
			binary.LittleEndian.PutUint32(res[4*i:], math.Float32bits(v))
		}
	}
	return out, bytes.NewReader(res), nil
}

// prefixReader gives the first bytes of a tensor (r, limited) and, at their end,
// reads and drops the rest, so the stream beneath moves on to the next tensor.
type prefixReader struct {
	r    io.Reader
	rest io.Reader
	drop int64
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err == io.EOF && p.drop > 0 {
		if _, derr := io.CopyN(io.Discard, p.rest, p.drop); derr != nil {
			return n, derr
		}
		p.drop = 0
	}
	return n, err
}
