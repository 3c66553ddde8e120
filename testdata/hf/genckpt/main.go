// Command genckpt writes Llama-shaped Hugging Face checkpoints of any size. With its
// defaults it writes small-mistral, the second checkpoint of lib/llm's tests, made by
// apr (the first, tiny-llama, comes from the fixtures): a
// MistralForCausalLM of other sizes than tiny-llama's, with multi-head attention (6 KV
// heads of 6), an explicit head_dim, tied embeddings (no lm_head), F16 weights in two
// shards with model.safetensors.index.json, a vocab_size (520) larger than the
// tokenizer's 512 pieces (the converter pads with [PADn]), add_eos_token true and no
// chat template. Weights are seeded pseudo-random values (std about 0.02), so the
// output is deterministic.
//
//	go run ./testdata/hf/genckpt -tokenizer testdata/hf/tiny-llama/tokenizer.model -o testdata/hf/small-mistral
//
// With -tokenizer DIR/tokenizer.json (a byte-level BPE tokenizer.json) the checkpoint
// ships that file and the tokenizer_config.json beside it instead of tokenizer.model,
// and config.json names no special token ids (the tokenizer config does);
// -arch Qwen2ForCausalLM adds Qwen2's Q, K and V biases. .ci/test-peers-gguf makes
// checkpoints of npm's real Llama 3, Qwen2.5 and Mistral-Nemo tokenizers that way.
//
// With -tokenizer qwen2-bpe it writes a small synthetic byte-level BPE tokenizer.json
// in Qwen2's form (bpe.go), with Qwen's special tokens and tokenizer_config.json, and
// -arch Qwen3ForCausalLM gives each layer Qwen3's q_norm and k_norm. -rope-scaling and
// -generation write config.json's rope_scaling and generation_config.json's fields.
//
// The benchmark (.ci/bench-llm) writes one of TinyLlama-1.1B's shape with flags:
// -arch LlamaForCausalLM -vocab 32000 -hidden 2048 -ffn 5632 -layers 22 -heads 32
// -kvheads 4 -headdim 0 -dtype bf16 -tied=false -shards 2.
package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stconv"
)

const config = `{
  "architectures": [
    "%s"
  ],
  "model_type": "%s",
  "vocab_size": %d,
  "hidden_size": %d,
  "intermediate_size": %d,
  "num_hidden_layers": %d,
  "num_attention_heads": %d,
  "num_key_value_heads": %d,%s
  "max_position_embeddings": 1024,
  "rms_norm_eps": 1e-06,
  "rope_theta": %s,%s
  "sliding_window": null,
  "hidden_act": "silu",
  "tie_word_embeddings": %t,%s%s
  "torch_dtype": "%s"
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
	tok := flag.String("tokenizer", "", "SentencePiece tokenizer.model, or BPE tokenizer.json (with the tokenizer_config.json beside it), to include")
	out := flag.String("o", "", "output directory (must not exist)")
	arch := flag.String("arch", "MistralForCausalLM", "config.json architecture")
	vocab := flag.Int64("vocab", 520, "vocab_size")
	hidden := flag.Int64("hidden", 192, "hidden_size")
	ffn := flag.Int64("ffn", 320, "intermediate_size")
	layers := flag.Int("layers", 3, "num_hidden_layers")
	heads := flag.Int64("heads", 6, "num_attention_heads")
	kvHeads := flag.Int64("kvheads", 6, "num_key_value_heads")
	headDimFlag := flag.Int64("headdim", 32, "head_dim written to config.json (0: none, hidden/heads)")
	dt := flag.String("dtype", "f16", "f16 or bf16")
	tied := flag.Bool("tied", true, "tie_word_embeddings (no lm_head)")
	shards := flag.Int64("shards", 2, "about how many shards (the last may be small)")
	ropeTheta := flag.String("rope-theta", "1000000.0", "rope_theta, as written in config.json")
	ropeScaling := flag.String("rope-scaling", "", "rope_scaling object written to config.json (JSON), none when empty")
	extra := flag.String("extra", "", "more config.json fields (a JSON object), written before torch_dtype")
	specials := flag.String("specials", "", "more special tokens (space-separated) after qwen2-bpe's own")
	tcExtra := flag.String("tokenizer-config", "", "more tokenizer_config.json fields (a JSON object), for a SentencePiece tokenizer")
	fp8 := flag.Bool("fp8", false, "the layers' linear weights in F8_E4M3 with [128, 128] block scales (weight_scale_inv, F32), as DeepSeek-V3 and the Qwen3 FP8 releases ship them; add quantization_config with -extra")
	mxfp4 := flag.Bool("mxfp4", false, "GptOssForCausalLM: experts as MXFP4 blocks and scales (U8), as OpenAI ships them")
	genConfig := flag.String("generation", `{"bos_token_id": 1, "eos_token_id": 2}`, "generation_config.json's fields (JSON)")
	experts := flag.Int("experts", 0, "routed experts a layer (0: a dense feed-forward network; GptOssForCausalLM needs them); config.json's expert fields come with -extra")
	moeFFN := flag.Int64("moe-ffn", 0, "each expert's intermediate size (0: -ffn)")
	sharedFFN := flag.Int64("shared-ffn", 0, "the shared experts' intermediate size, all of them together (0: none)")
	mla := flag.String("mla", "", "DeepSeek's multi-head latent attention: q_lora_rank,kv_lora_rank,qk_nope_head_dim,qk_rope_head_dim,v_head_dim (q_lora_rank 0: a plain q_proj)")
	dense := flag.Int("dense-layers", 0, "leading layers with a dense feed-forward network (DeepSeek's first_k_dense_replace)")
	mtp := flag.Int("mtp-layers", 0, "multi-token prediction layers after the model's (DeepSeek's num_nextn_predict_layers)")
	inShards := flag.Bool("stream", false, "draw the tensors in the shards' order (other weights than without), so the export streams them instead of spooling the whole checkpoint to a temporary file first: for checkpoints bigger than the disk's spare room")
	flag.Parse()
	headDim := *headDimFlag
	headDimJSON := fmt.Sprintf("\n  \"head_dim\": %d,", headDim)
	if headDim == 0 {
		headDim, headDimJSON = *hidden / *heads, ""
	}
	dtypes := map[string]struct {
		d     dtype.DType
		torch string
		enc   func(float32) uint16
	}{"f16": {dtype.F16, "float16", kernels.F32ToF16Bits}, "bf16": {dtype.BF16, "bfloat16", kernels.F32ToBF16Bits}}
	d, ok := dtypes[*dt]
	if !ok {
		log.Fatalf("-dtype %s: f16 or bf16", *dt)
	}
	if *tok == "" || *out == "" {
		log.Fatal("usage: genckpt -tokenizer FILE -o DIR")
	}
	var spm []byte
	var err error
	var bos, eos int
	if *tok == qwenBPE {
		spm, bos, eos = syntheticBPE(strings.Fields(*specials)...)
	} else if spm, err = os.ReadFile(*tok); err != nil {
		log.Fatal(err)
	}
	var specs []container.TensorInfo
	half := func(name string, shape ...int64) {
		specs = append(specs, container.TensorInfo{Name: name, DType: d.d, Shape: shape})
	}
	half("model.embed_tokens.weight", *vocab, *hidden)
	half("model.norm.weight", *hidden)
	if *arch == "Starcoder2ForCausalLM" {
		half("model.norm.bias", *hidden)
	}
	if !*tied {
		half("lm_head.weight", *vocab, *hidden)
	}
	if *mla != "" {
		var m [5]int64
		if _, err := fmt.Sscanf(*mla, "%d,%d,%d,%d,%d", &m[0], &m[1], &m[2], &m[3], &m[4]); err != nil {
			log.Fatalf("-mla %s: %v", *mla, err)
		}
		for l := range *layers + *mtp {
			deepseekLayer(half, fmt.Sprintf("model.layers.%d.", l), m, *heads, *hidden, *ffn, cmp.Or(*moeFFN, *ffn), *sharedFFN,
				*experts, l < *dense, l >= *layers, *arch == "DeepseekV3ForCausalLM")
		}
	}
	for l := range *layers {
		if *mla != "" {
			break
		}
		p := fmt.Sprintf("model.layers.%d.", l)
		if *arch != "Olmo2ForCausalLM" { // OLMo 2 normalizes after attention and feed-forward only
			half(p+"input_layernorm.weight", *hidden)
		}
		half(p+"post_attention_layernorm.weight", *hidden)
		if *arch == "Starcoder2ForCausalLM" { // biases everywhere, a GELU feed-forward of two projections
			half(p+"input_layernorm.bias", *hidden)
			half(p+"post_attention_layernorm.bias", *hidden)
			for _, x := range []struct {
				name     string
				out, in_ int64
			}{{"self_attn.q_proj", *heads * headDim, *hidden}, {"self_attn.k_proj", *kvHeads * headDim, *hidden},
				{"self_attn.v_proj", *kvHeads * headDim, *hidden}, {"self_attn.o_proj", *hidden, *heads * headDim},
				{"mlp.c_fc", *ffn, *hidden}, {"mlp.c_proj", *hidden, *ffn}} {
				half(p+x.name+".weight", x.out, x.in_)
				half(p+x.name+".bias", x.out)
			}
			continue
		}
		if *arch == "Glm4ForCausalLM" { // biased Q/K/V, fused gate/up, a norm after each sub-layer too
			half(p+"self_attn.q_proj.weight", *heads*headDim, *hidden)
			half(p+"self_attn.q_proj.bias", *heads*headDim)
			half(p+"self_attn.k_proj.weight", *kvHeads*headDim, *hidden)
			half(p+"self_attn.k_proj.bias", *kvHeads*headDim)
			half(p+"self_attn.v_proj.weight", *kvHeads*headDim, *hidden)
			half(p+"self_attn.v_proj.bias", *kvHeads*headDim)
			half(p+"self_attn.o_proj.weight", *hidden, *heads*headDim)
			half(p+"post_self_attn_layernorm.weight", *hidden)
			half(p+"mlp.gate_up_proj.weight", 2**ffn, *hidden)
			half(p+"mlp.down_proj.weight", *hidden, *ffn)
			half(p+"post_mlp_layernorm.weight", *hidden)
			continue
		}
		if *arch == "GptOssForCausalLM" { // biased attention with sinks, a biased router, fused biased experts
			for _, x := range []struct {
				name     string
				out, in_ int64
			}{{"self_attn.q_proj", *heads * headDim, *hidden}, {"self_attn.k_proj", *kvHeads * headDim, *hidden},
				{"self_attn.v_proj", *kvHeads * headDim, *hidden}, {"self_attn.o_proj", *hidden, *heads * headDim},
				{"mlp.router", int64(*experts), *hidden}} {
				half(p+x.name+".weight", x.out, x.in_)
				half(p+x.name+".bias", x.out)
			}
			half(p+"self_attn.sinks", *heads)
			// The experts are stored [experts, in, out], gate and up interleaved by row.
			if *mxfp4 { // 32 values a block: 16 bytes of E2M1 codes and one E8M0 exponent
				u8 := func(name string, shape ...int64) {
					specs = append(specs, container.TensorInfo{Name: name, DType: dtype.U8, Shape: shape})
				}
				u8(p+"mlp.experts.gate_up_proj_blocks", int64(*experts), 2**ffn, *hidden/32, 16)
				u8(p+"mlp.experts.gate_up_proj_scales", int64(*experts), 2**ffn, *hidden/32)
				half(p+"mlp.experts.gate_up_proj_bias", int64(*experts), 2**ffn)
				u8(p+"mlp.experts.down_proj_blocks", int64(*experts), *hidden, *ffn/32, 16)
				u8(p+"mlp.experts.down_proj_scales", int64(*experts), *hidden, *ffn/32)
				half(p+"mlp.experts.down_proj_bias", int64(*experts), *hidden)
				continue
			}
			half(p+"mlp.experts.gate_up_proj", int64(*experts), *hidden, 2**ffn)
			half(p+"mlp.experts.gate_up_proj_bias", int64(*experts), 2**ffn)
			half(p+"mlp.experts.down_proj", int64(*experts), *ffn, *hidden)
			half(p+"mlp.experts.down_proj_bias", int64(*experts), *hidden)
			continue
		}
		if *arch == "Phi3ForCausalLM" { // Q, K and V fused, gate and up fused
			half(p+"self_attn.qkv_proj.weight", (*heads+2**kvHeads)*headDim, *hidden)
			half(p+"self_attn.o_proj.weight", *hidden, *heads*headDim)
			half(p+"mlp.gate_up_proj.weight", 2**ffn, *hidden)
			half(p+"mlp.down_proj.weight", *hidden, *ffn)
			continue
		}
		half(p+"self_attn.q_proj.weight", *heads*headDim, *hidden)
		half(p+"self_attn.k_proj.weight", *kvHeads*headDim, *hidden)
		half(p+"self_attn.v_proj.weight", *kvHeads*headDim, *hidden)
		half(p+"self_attn.o_proj.weight", *hidden, *heads*headDim)
		if *experts > 0 {
			moeLayer(half, p, *arch, *experts, cmp.Or(*moeFFN, *ffn), *sharedFFN, *hidden)
		} else {
			half(p+"mlp.gate_proj.weight", *ffn, *hidden)
			half(p+"mlp.up_proj.weight", *ffn, *hidden)
			half(p+"mlp.down_proj.weight", *hidden, *ffn)
		}
		switch *arch {
		case "Qwen2ForCausalLM", "Qwen2MoeForCausalLM":
			half(p+"self_attn.q_proj.bias", *heads*headDim)
			half(p+"self_attn.k_proj.bias", *kvHeads*headDim)
			half(p+"self_attn.v_proj.bias", *kvHeads*headDim)
		case "Qwen3ForCausalLM", "Qwen3MoeForCausalLM":
			half(p+"self_attn.q_norm.weight", headDim)
			half(p+"self_attn.k_norm.weight", headDim)
		case "OlmoeForCausalLM": // q/k norms over the whole projection
			half(p+"self_attn.q_norm.weight", *heads*headDim)
			half(p+"self_attn.k_norm.weight", *kvHeads*headDim)
		case "Olmo2ForCausalLM": // q/k norms over the whole projection
			half(p+"post_feedforward_layernorm.weight", *hidden)
			half(p+"self_attn.q_norm.weight", *heads*headDim)
			half(p+"self_attn.k_norm.weight", *kvHeads*headDim)
		case "Gemma2ForCausalLM", "Gemma3ForCausalLM":
			half(p+"pre_feedforward_layernorm.weight", *hidden)
			half(p+"post_feedforward_layernorm.weight", *hidden)
			if *arch == "Gemma3ForCausalLM" {
				half(p+"self_attn.q_norm.weight", headDim)
				half(p+"self_attn.k_norm.weight", headDim)
			}
		}
	}
	if *fp8 { // every 2-D weight of a layer but a router: FP8, then its scale
		var out []container.TensorInfo
		for _, t := range specs {
			if len(t.Shape) != 2 || !strings.HasPrefix(t.Name, "model.layers.") || strings.HasSuffix(t.Name, ".mlp.gate.weight") { // routers stay BF16, as DeepSeek-V3 ships them
				out = append(out, t)
				continue
			}
			out = append(out, container.TensorInfo{Name: t.Name, DType: dtype.F8E4M3, Shape: t.Shape},
				container.TensorInfo{Name: t.Name + "_scale_inv", DType: dtype.F32, Shape: []int64{(t.Shape[0] + 127) / 128, (t.Shape[1] + 127) / 128}})
		}
		specs = out
	}
	model := strings.ToLower(strings.TrimSuffix(*arch, "ForCausalLM"))
	if t, ok := map[string]string{"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "deepseekv2": "deepseek_v2",
		"deepseekv3": "deepseek_v3", "gptoss": "gpt_oss"}[model]; ok {
		model = t // transformers' names
	}
	ids := "\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,"
	files := map[string]any{
		"tokenizer.model":         spm,
		"tokenizer_config.json":   []byte(withFields(tokenizerConfig, *tcExtra)),
		"special_tokens_map.json": []byte("{\n  \"bos_token\": \"<s>\",\n  \"eos_token\": \"</s>\",\n  \"unk_token\": \"<unk>\"\n}\n"),
		"generation_config.json":  indentJSON(*genConfig),
	}
	if *tok == qwenBPE {
		ids = fmt.Sprintf("\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,", bos, eos)
		files = map[string]any{"tokenizer.json": spm, "tokenizer_config.json": []byte(qwenTokenizerConfig),
			"generation_config.json": indentJSON(*genConfig)}
	} else if strings.HasSuffix(*tok, ".json") {
		tc, err := os.ReadFile(filepath.Join(filepath.Dir(*tok), "tokenizer_config.json"))
		if err != nil {
			log.Fatal(err)
		}
		ids = ""
		files = map[string]any{"tokenizer.json": spm, "tokenizer_config.json": tc}
	}
	scaling := ""
	if *ropeScaling != "" {
		scaling = "\n  \"rope_scaling\": " + *ropeScaling + ","
	}
	more := ""
	if *extra != "" {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*extra), &fields); err != nil {
			log.Fatalf("-extra: %v", err)
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			more += fmt.Sprintf("\n  %q: %s,", k, fields[k])
		}
	}
	cfg := fmt.Sprintf(config, *arch, model, *vocab, *hidden, *ffn, *layers, *heads, *kvHeads,
		headDimJSON, *ropeTheta, scaling, *tied, ids, more, d.torch)
	for _, f := range []string{"sliding_window", "hidden_act", "rms_norm_eps"} { // -extra gives it: not twice
		if strings.Contains(more, `"`+f+`":`) {
			if loc := regexp.MustCompile(`\n  "` + f + `": [^,]*,`).FindStringIndex(cfg); loc != nil {
				cfg = cfg[:loc[0]] + cfg[loc[1]:] // the template's, which comes first
			}
		}
	}
	files["config.json"] = []byte(cfg)
	md := container.Metadata{Extra: map[string]any{stconv.KeyFiles: files}}
	var total int64
	for _, t := range specs {
		n, err := t.RawSize()
		if err != nil {
			log.Fatal(err)
		}
		total += n
	}
	shard := int64(math.Ceil(float64(total) / float64(*shards)))
	if *inShards {
		specs = shardOrder(specs, shard)
	}
	s := &genStream{h: container.Header{Type: modeltype.Custom, Metadata: md, Table: specs},
		rng: rand.New(rand.NewPCG(2026, 11)), enc: d.enc, normOffset: !strings.HasPrefix(*arch, "Gemma")}
	if err := stconv.ExportDir(*out, stconv.StreamSource(s), stconv.ExportOptions{ShardSize: shard}); err != nil {
		log.Fatal(err)
	}
}

// moeLayer adds a mixture-of-experts feed-forward network's tensors to layer p: the
// router and each expert's three projections, under Mixtral's names
// (block_sparse_moe.experts.E.w1/w2/w3, gate, down and up) or Qwen-MoE's
// (mlp.experts.E.gate_proj/up_proj/down_proj), and Qwen2-MoE's shared expert with
// its gate when shared is not 0; Granite-MoE's are stacked already, gate and up fused
// (block_sparse_moe.input_linear), with its shared_mlp.
func moeLayer(half func(string, ...int64), p, arch string, experts int, ffn, shared, hidden int64) {
	e := int64(experts)
	if arch == "GraniteMoeForCausalLM" || arch == "GraniteMoeSharedForCausalLM" { // experts already stacked, gate and up fused
		half(p+"block_sparse_moe.router.layer.weight", e, hidden)
		half(p+"block_sparse_moe.input_linear.weight", e, 2*ffn, hidden)
		half(p+"block_sparse_moe.output_linear.weight", e, hidden, ffn)
		if shared > 0 {
			half(p+"shared_mlp.input_linear.weight", 2*shared, hidden)
			half(p+"shared_mlp.output_linear.weight", hidden, shared)
		}
		return
	}
	if arch == "MixtralForCausalLM" {
		half(p+"block_sparse_moe.gate.weight", e, hidden)
		for x := range experts {
			q := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, x)
			half(q+"w1.weight", ffn, hidden)
			half(q+"w2.weight", hidden, ffn)
			half(q+"w3.weight", ffn, hidden)
		}
		return
	}
	half(p+"mlp.gate.weight", e, hidden)
	for x := range experts {
		q := fmt.Sprintf("%smlp.experts.%d.", p, x)
		half(q+"gate_proj.weight", ffn, hidden)
		half(q+"up_proj.weight", ffn, hidden)
		half(q+"down_proj.weight", hidden, ffn)
	}
	if shared > 0 {
		half(p+"mlp.shared_expert.gate_proj.weight", shared, hidden)
		half(p+"mlp.shared_expert.up_proj.weight", shared, hidden)
		half(p+"mlp.shared_expert.down_proj.weight", hidden, shared)
		half(p+"mlp.shared_expert_gate.weight", 1, hidden)
	}
}

// deepseekLayer adds the tensors of DeepSeek-V2/V3 layer p: multi-head latent
// attention of ranks m (q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
// v_head_dim), then a dense feed-forward network or routed experts with their router,
// DeepSeek-V3's score correction bias (v3) and shared experts. A multi-token prediction
// layer (mtp) holds its own norms and projection too, which the converter leaves out.
func deepseekLayer(half func(string, ...int64), p string, m [5]int64, heads, hidden, ffn, moeFFN, shared int64, experts int, dense, mtp, v3 bool) {
	qLora, kvLora, nope, rope, v := m[0], m[1], m[2], m[3], m[4]
	half(p+"input_layernorm.weight", hidden)
	half(p+"post_attention_layernorm.weight", hidden)
	if qLora > 0 {
		half(p+"self_attn.q_a_proj.weight", qLora, hidden)
		half(p+"self_attn.q_a_layernorm.weight", qLora)
		half(p+"self_attn.q_b_proj.weight", heads*(nope+rope), qLora)
	} else {
		half(p+"self_attn.q_proj.weight", heads*(nope+rope), hidden)
	}
	half(p+"self_attn.kv_a_proj_with_mqa.weight", kvLora+rope, hidden)
	half(p+"self_attn.kv_a_layernorm.weight", kvLora)
	half(p+"self_attn.kv_b_proj.weight", heads*(nope+v), kvLora)
	half(p+"self_attn.o_proj.weight", hidden, heads*v)
	if mtp {
		half(p+"enorm.weight", hidden)
		half(p+"hnorm.weight", hidden)
		half(p+"eh_proj.weight", hidden, 2*hidden)
		half(p+"shared_head.norm.weight", hidden)
	}
	if dense {
		half(p+"mlp.gate_proj.weight", ffn, hidden)
		half(p+"mlp.up_proj.weight", ffn, hidden)
		half(p+"mlp.down_proj.weight", hidden, ffn)
		return
	}
	half(p+"mlp.gate.weight", int64(experts), hidden)
	if v3 {
		half(p+"mlp.gate.e_score_correction_bias", int64(experts))
	}
	for x := range experts {
		q := fmt.Sprintf("%smlp.experts.%d.", p, x)
		half(q+"gate_proj.weight", moeFFN, hidden)
		half(q+"up_proj.weight", moeFFN, hidden)
		half(q+"down_proj.weight", hidden, moeFFN)
	}
	if shared > 0 {
		half(p+"mlp.shared_experts.gate_proj.weight", shared, hidden)
		half(p+"mlp.shared_experts.up_proj.weight", shared, hidden)
		half(p+"mlp.shared_experts.down_proj.weight", hidden, shared)
	}
}

// withFields appends the fields of the JSON object extra to the JSON object doc (a
// file as transformers writes it, closing brace last).
func withFields(doc, extra string) string {
	if extra == "" {
		return doc
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(extra), &fields); err != nil {
		log.Fatalf("%s: %v", extra, err)
	}
	end := strings.LastIndex(doc, "\n}")
	var b strings.Builder
	b.WriteString(doc[:end])
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(&b, ",\n  %q: %s", k, fields[k])
	}
	b.WriteString(doc[end:])
	return b.String()
}

// genStream makes each tensor's seeded values when it is asked for, so a checkpoint
// bigger than memory (the giant-model benchmark's) is written one tensor at a time.
// shardOrder returns specs in the order ExportDir writes them with shards of at most
// limit bytes (each shard's tensors in SafeTensors' layout order), the order in which
// it streams a source instead of spooling it. Reordering can move a shard's boundary (a
// small tensor now first in the next shard fits in this one), so it is planned again
// until the order holds.
func shardOrder(specs []container.TensorInfo, limit int64) []container.TensorInfo {
	byName := make(map[string]container.TensorInfo, len(specs))
	for _, t := range specs {
		byName[t.Name] = t
	}
	for range 20 {
		st := make([]safetensors.TensorSpec, len(specs))
		for i, t := range specs {
			st[i] = safetensors.TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}
		}
		plan, err := safetensors.PlanShards(st, limit, nil)
		if err != nil {
			log.Fatal(err)
		}
		var out []container.TensorInfo
		for _, s := range plan.Shards {
			for _, t := range s.Header.Tensors {
				out = append(out, byName[t.Name])
			}
		}
		if slices.EqualFunc(out, specs, func(a, b container.TensorInfo) bool { return a.Name == b.Name }) {
			return out
		}
		specs = out
	}
	log.Fatal("-stream: the shards' order did not settle")
	return nil
}

type genStream struct {
	h   container.Header
	i   int
	rng *rand.Rand
	enc func(float32) uint16
	// normOffset: 1-D tensors (norms) near one; Gemma's are near zero, its RMS norms
	// scaling by 1 + weight.
	normOffset bool
}

func (s *genStream) Header() container.Header { return s.h }

func (s *genStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.i == len(s.h.Table) {
		return container.TensorInfo{}, nil, io.EOF
	}
	t := s.h.Table[s.i]
	s.i++
	n, _ := t.RawSize()
	b := make([]byte, n)
	if t.DType == dtype.F8E4M3 { // exponents 1..10 (2^-6..2^3), any sign and mantissa: no NaN
		for i := range b {
			r := s.rng.Uint32()
			b[i] = uint8(r&0x80) | uint8(1+r>>8%10)<<3 | uint8(r>>16&7)
		}
		return t, bytes.NewReader(b), nil
	}
	if strings.HasSuffix(t.Name, "_scale_inv") { // m·2^-15, m in 8..15 (4 significant bits): FP8 x scale is exact in BF16
		for i := 0; i < len(b); i += 4 {
			m := 8 + s.rng.Uint32()%8
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(m)*float32(math.Exp2(-15))))
		}
		return t, bytes.NewReader(b), nil
	}
	if t.DType == dtype.U8 { // MXFP4: any codes; exponents near 2^-6 (weights of about 0.02)
		for i := range b {
			b[i] = uint8(s.rng.Uint32())
			if strings.HasSuffix(t.Name, "_scales") {
				b[i] = 118 + b[i]%6
			}
		}
		return t, bytes.NewReader(b), nil
	}
	for i := 0; i < len(b); i += 2 {
		v := float32(s.rng.NormFloat64() * 0.02)
		if len(t.Shape) == 1 && s.normOffset {
			v = 1 + v // norms near one
		}
		binary.LittleEndian.PutUint16(b[i:], s.enc(v))
	}
	return t, bytes.NewReader(b), nil
}

func (s *genStream) Blocks() []container.Block { return nil }
func (s *genStream) Close() error              { return nil }
