// Command genckpt writes small-mistral, the second Hugging Face checkpoint of lib/llm's
// tests, made by apr (the first, tiny-llama, comes from the fixtures): a
// MistralForCausalLM of other sizes than tiny-llama's, with multi-head attention (6 KV
// heads of 6), an explicit head_dim, tied embeddings (no lm_head), F16 weights in two
// shards with model.safetensors.index.json, a vocab_size (520) larger than the
// tokenizer's 512 pieces (the converter pads with [PADn]), add_eos_token true and no
// chat template. Weights are seeded pseudo-random values (std about 0.02), so the
// output is deterministic.
//
//	go run ./testdata/hf/genckpt -tokenizer testdata/hf/tiny-llama/tokenizer.model -o testdata/hf/small-mistral
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

const (
	vocab, hidden, ffn, layers, heads, headDim = 520, 192, 320, 3, 6, 32
)

const config = `{
  "architectures": [
    "MistralForCausalLM"
  ],
  "model_type": "mistral",
  "vocab_size": %d,
  "hidden_size": %d,
  "intermediate_size": %d,
  "num_hidden_layers": %d,
  "num_attention_heads": %d,
  "num_key_value_heads": %d,
  "head_dim": %d,
  "max_position_embeddings": 1024,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": null,
  "hidden_act": "silu",
  "tie_word_embeddings": true,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "torch_dtype": "float16"
}
`

const tokenizerConfig = `{
  "add_bos_token": true,
  "add_eos_token": true,
  "bos_token": "<s>",
  "eos_token": "</s>",
  "unk_token": "<unk>",
  "model_max_length": 1024,
  "tokenizer_class": "LlamaTokenizer"
}
`

func main() {
	tok := flag.String("tokenizer", "", "SentencePiece tokenizer.model to include")
	out := flag.String("o", "", "output directory (must not exist)")
	flag.Parse()
	if *tok == "" || *out == "" {
		log.Fatal("usage: genckpt -tokenizer FILE -o DIR")
	}
	spm, err := os.ReadFile(*tok)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	f16 := func(name string, shape ...int64) tensor.Tensor {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		b := make([]byte, 2*n)
		for i := range n {
			v := float32(rng.NormFloat64() * 0.02)
			if len(shape) == 1 {
				v = 1 + v // norms near one
			}
			binary.LittleEndian.PutUint16(b[2*i:], kernels.F32ToF16Bits(v))
		}
		return tensor.Tensor{Name: name, DType: dtype.F16, Shape: shape, Data: b}
	}
	ts := []tensor.Tensor{f16("model.embed_tokens.weight", vocab, hidden), f16("model.norm.weight", hidden)}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			f16(p+"input_layernorm.weight", hidden),
			f16(p+"post_attention_layernorm.weight", hidden),
			f16(p+"self_attn.q_proj.weight", heads*headDim, hidden),
			f16(p+"self_attn.k_proj.weight", heads*headDim, hidden),
			f16(p+"self_attn.v_proj.weight", heads*headDim, hidden),
			f16(p+"self_attn.o_proj.weight", hidden, heads*headDim),
			f16(p+"mlp.gate_proj.weight", ffn, hidden),
			f16(p+"mlp.up_proj.weight", ffn, hidden),
			f16(p+"mlp.down_proj.weight", hidden, ffn))
	}
	files := map[string]any{
		"config.json":             []byte(fmt.Sprintf(config, vocab, hidden, ffn, layers, heads, heads, headDim)),
		"tokenizer.model":         spm,
		"tokenizer_config.json":   []byte(tokenizerConfig),
		"special_tokens_map.json": []byte("{\n  \"bos_token\": \"<s>\",\n  \"eos_token\": \"</s>\",\n  \"unk_token\": \"<unk>\"\n}\n"),
		"generation_config.json":  []byte("{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2\n}\n"),
	}
	md := container.Metadata{Extra: map[string]any{stconv.KeyFiles: files}}
	s := stream.FromTensors(modeltype.Custom, md, ts)
	var total int64
	for _, t := range ts {
		total += int64(len(t.Data))
	}
	shard := int64(math.Ceil(float64(total) / 2))
	if err := stconv.ExportDir(*out, stconv.StreamSource(s), stconv.ExportOptions{ShardSize: shard}); err != nil {
		log.Fatal(err)
	}
}
