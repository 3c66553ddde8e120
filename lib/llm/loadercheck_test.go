package llm_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/stconv"
)

// loaderCase is one row of a family's table: a change to a tiny checkpoint of
// testdata/hf (config.json fields set, a nil value deleting the field; tensors added
// or replaced by shape, zero BF16 data, a nil shape deleting the tensor; tensors
// dropped by drop), and the text the import's error must hold ("" : it converts, an
// edge value llama.cpp accepts). at is llama.cpp's source line the row follows.
type loaderCase struct {
	name, at string
	set      map[string]any
	tensors  map[string][]int64
	drop     func(name string) bool
	want     string
}

// runLoaderCases runs a family's table on checkpoint fixture.
func runLoaderCases(t *testing.T, fixture string, cases []loaderCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := importChanged(t, fixture, c)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("%s: an edge value llama.cpp accepts (%s) was refused: %v", fixture, c.at, err)
			case c.want != "" && err == nil:
				t.Fatalf("%s: imported; llama.cpp refuses it (%s), want an error naming %q", fixture, c.at, c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("%s: error %q does not name %q", fixture, err, c.want)
			}
		})
	}
}

// importChanged copies fixture with c's changes and imports it (stconv.Open, which
// builds the checkpoint's GGUF description as every conversion does).
func importChanged(t *testing.T, fixture string, c loaderCase) error {
	t.Helper()
	drop := func(name string) bool {
		if shape, ok := c.tensors[name]; ok && shape == nil {
			return true
		}
		return c.drop != nil && c.drop(name)
	}
	added := false
	dir := copyCheckpointWith(t, filepath.Join("../../testdata/hf", fixture), fixture, func(file string, b []byte) []byte {
		switch {
		case file == "config.json":
			return editJSON(t, b, func(m map[string]any) {
				for k, v := range c.set {
					if v == nil {
						delete(m, k)
					} else {
						m[k] = v
					}
				}
			})
		case file == "model.safetensors.index.json":
			return editJSON(t, b, func(m map[string]any) {
				wm := m["weight_map"].(map[string]any)
				for n := range wm {
					if drop(n) {
						delete(wm, n)
					}
				}
				for n, shape := range c.tensors {
					if shape != nil {
						wm[n] = "model-00001-of-00003.safetensors"
					}
				}
			})
		case strings.HasSuffix(file, ".safetensors"):
			ts, meta := readTensors(t, b)
			ts = slices.DeleteFunc(ts, func(e stTensor) bool { return drop(e.name) || c.tensors[e.name] != nil })
			if !added && (file == "model.safetensors" || strings.HasPrefix(file, "model-00001-")) {
				added = true
				for n, shape := range c.tensors {
					if shape == nil {
						continue
					}
					size := int64(2)
					for _, d := range shape {
						size *= d
					}
					ts = append(ts, stTensor{n, "BF16", shape, make([]byte, size)})
				}
			}
			slices.SortFunc(ts, func(a, b stTensor) int { return strings.Compare(a.name, b.name) })
			return writeTensors(t, ts, meta)
		}
		return b
	})
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err == nil {
		s.Close()
	}
	return err
}

func editJSON(t *testing.T, b []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allLayers drops every layer's tensors.
func allLayers(name string) bool { return strings.HasPrefix(name, "model.layers.") }

// The tables: one per family, each row a change llama.cpp's loader refuses (or aborts
// on) and the field or tensor apr's refusal names, or an edge value it accepts. The
// rows cite the lines of llama.cpp's source (src/ unless named) they follow.

func TestLoaderCheckLlama(t *testing.T) {
	runLoaderCases(t, "tiny-llama", []loaderCase{
		{name: "as is"},
		{name: "eps 0", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": 0}},
		{name: "eps missing", at: "models/llama.cpp:7", set: map[string]any{"rms_norm_eps": nil}, want: "rms_norm_eps is missing"},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1e-6}, want: "rms_norm_eps is -1e-06"},
		{name: "no context length", at: "llama-model.cpp:1254", set: map[string]any{"max_position_embeddings": nil}, want: "max_position_embeddings is missing"},
		{name: "experts used without experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 2}, want: "num_experts_per_tok is 2, more than the 0 experts"},
		{name: "expert groups without experts", at: "llama-model.cpp:1305", set: map[string]any{"n_group": 2}, want: "n_group is 2, but the model has no experts"},
		{name: "no layers", at: "llama-model.cpp:1260", set: map[string]any{"num_hidden_layers": 0}, drop: allLayers, want: "num_hidden_layers is 0"},
	})
}

func TestLoaderCheckMixtral(t *testing.T) {
	runLoaderCases(t, "tiny-mixtral", []loaderCase{
		{name: "as is"},
		{name: "experts used == experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 8}},
		{name: "experts used 0", at: "llama-model.cpp:1296", set: map[string]any{"num_experts_per_tok": 0}, want: "num_experts_per_tok is 0"},
		{name: "experts used > experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 9}, want: "num_experts_per_tok is 9, more than the 8 experts (num_local_experts)"},
		{name: "experts over 1024", at: "llama-model.cpp:1293", set: map[string]any{"num_local_experts": 1025}, want: "1025 that config.json gives"},
		{name: "groups not dividing", at: "llama-model.cpp:1299", set: map[string]any{"n_group": 3, "topk_group": 1}, want: "n_group 3 does not divide the 8 experts"},
		{name: "groups == experts", at: "llama-model.cpp:1297", set: map[string]any{"n_group": 8, "topk_group": 1}, want: "n_group is 8"},
		{name: "groups used == groups", at: "llama-model.cpp:1301", set: map[string]any{"n_group": 2, "topk_group": 2}, want: "topk_group is 2"},
		{name: "groups used 0", at: "llama-model.cpp:1300", set: map[string]any{"n_group": 2, "topk_group": 0}, want: "topk_group is 0"},
		{name: "groups at the edge", at: "llama-model.cpp:1297", set: map[string]any{"n_group": 4, "topk_group": 3}},
		{name: "router rows", at: "models/llama.cpp:79", tensors: map[string][]int64{"model.layers.1.block_sparse_moe.gate.weight": {7, 256}},
			want: `"model.layers.1.block_sparse_moe.gate.weight"`},
		{name: "experts not intermediate_size", at: "models/llama.cpp:80", set: map[string]any{"intermediate_size": 256, "moe_intermediate_size": 128},
			want: "intermediate_size give the experts 256 rows"},
	})
}

func TestLoaderCheckQwen3(t *testing.T) {
	runLoaderCases(t, "tiny-qwen3", []loaderCase{
		{name: "as is"},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1}, want: "rms_norm_eps is -1"},
		{name: "eps missing", at: "models/qwen3.cpp:4", set: map[string]any{"rms_norm_eps": nil}, want: "rms_norm_eps is missing"},
	})
}

func TestLoaderCheckGemma(t *testing.T) {
	runLoaderCases(t, "tiny-gemma", []loaderCase{
		{name: "as is"},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1e-6}, want: "rms_norm_eps is -1e-06"},
	})
	runLoaderCases(t, "tiny-gemma2", []loaderCase{
		{name: "as is"},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1e-6}, want: "rms_norm_eps is -1e-06"},
	})
	runLoaderCases(t, "tiny-gemma3", []loaderCase{
		{name: "as is"},
		{name: "eps missing: the converter's default", at: "models/gemma3.cpp:16", set: map[string]any{"rms_norm_eps": nil}},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1e-6}, want: "rms_norm_eps is -1e-06"},
	})
}

func TestLoaderCheckPhi3(t *testing.T) {
	// Without rope_scaling's LongRoPE factors, whose length follows the rotary dimensions.
	noLong := func(pct float64) map[string]any {
		return map[string]any{"rope_scaling": nil, "partial_rotary_factor": pct}
	}
	runLoaderCases(t, "tiny-phi3", []loaderCase{
		{name: "as is"},
		{name: "rotary dims == head_dim", at: "ggml-cpu/ops.cpp:6126", set: noLong(1)},
		{name: "rotary dims 0", at: "ggml-cpu/ops.cpp:6126", set: noLong(0.01), want: "partial_rotary_factor gives 0 rotary dimensions"},
		{name: "rotary dims odd", at: "ggml-cpu/ops.cpp:6127", set: noLong(0.734375), want: "partial_rotary_factor gives 47 rotary dimensions"},
		{name: "head_dim x heads not hidden", at: "models/phi3.cpp:46", set: map[string]any{"head_dim": 32, "rope_scaling": nil, "partial_rotary_factor": 0.5},
			tensors: map[string][]int64{"model.layers.0.self_attn.qkv_proj.weight": {256, 256}, "model.layers.1.self_attn.qkv_proj.weight": {256, 256}},
			want:    "head_dim 32 x num_attention_heads 4 is not hidden_size 256"},
	})
}

func TestLoaderCheckGranite(t *testing.T) {
	runLoaderCases(t, "tiny-granite", []loaderCase{
		{name: "as is"},
		{name: "logit scale 0", at: "models/granite.cpp:7", set: map[string]any{"logits_scaling": 0}, want: "logits_scaling is 0"},
		{name: "logit scale missing", at: "models/granite.cpp:7", set: map[string]any{"logits_scaling": nil}, want: "logits_scaling is <nil>"},
		{name: "head_dim not hidden / heads", at: "models/granite.cpp:78", set: map[string]any{"head_dim": 32},
			tensors: map[string][]int64{
				"model.layers.0.self_attn.q_proj.weight": {128, 256}, "model.layers.1.self_attn.q_proj.weight": {128, 256},
				"model.layers.0.self_attn.k_proj.weight": {64, 256}, "model.layers.1.self_attn.k_proj.weight": {64, 256},
				"model.layers.0.self_attn.v_proj.weight": {64, 256}, "model.layers.1.self_attn.v_proj.weight": {64, 256},
			},
			want: "head_dim 32 is not hidden_size 256 / num_attention_heads 4"},
	})
}

func TestLoaderCheckGraniteMoE(t *testing.T) {
	shared := func(name string) bool { return strings.Contains(name, ".shared_mlp.") }
	runLoaderCases(t, "tiny-granitemoe", []loaderCase{
		{name: "as is"},
		{name: "no shared experts", set: map[string]any{"shared_intermediate_size": nil}, drop: shared},
		{name: "shared experts, size 0", at: "models/granite-moe.cpp:73", set: map[string]any{"shared_intermediate_size": 0},
			want: "shared_intermediate_size"},
		{name: "shared experts, size missing", at: "models/granite-moe.cpp:73", set: map[string]any{"shared_intermediate_size": nil, "intermediate_size": 256},
			tensors: map[string][]int64{"model.layers.0.block_sparse_moe.output_linear.weight": {4, 256, 256}, "model.layers.1.block_sparse_moe.output_linear.weight": {4, 256, 256},
				"model.layers.0.block_sparse_moe.input_linear.weight": {4, 512, 256}, "model.layers.1.block_sparse_moe.input_linear.weight": {4, 512, 256}},
			want: "shared_intermediate_size is 0 or missing"},
		{name: "shared size, no shared experts", at: "models/granite-moe.cpp:73", drop: shared, want: "shared_mlp.input_linear.weight"},
		{name: "logit scale missing", at: "models/granite-moe.cpp:5", set: map[string]any{"logits_scaling": nil}, want: "logits_scaling"},
		{name: "experts used 0", at: "llama-model.cpp:1296", set: map[string]any{"num_experts_per_tok": 0}, want: "num_experts_per_tok is 0"},
		{name: "router rows", at: "models/granite-moe.cpp:66", tensors: map[string][]int64{"model.layers.0.block_sparse_moe.router.layer.weight": {3, 256}},
			want: `"model.layers.0.block_sparse_moe.router.layer.weight"`},
	})
}

func TestLoaderCheckStarCoder2(t *testing.T) {
	runLoaderCases(t, "tiny-starcoder2", []loaderCase{
		{name: "as is"},
		{name: "eps 0", at: "ggml-cpu/ops.cpp:3843", set: map[string]any{"norm_epsilon": 0}},
		{name: "eps missing", at: "models/starcoder2.cpp:4", set: map[string]any{"norm_epsilon": nil}, want: "norm_epsilon (or layer_norm_eps) is missing"},
		{name: "eps negative", at: "ggml-cpu/ops.cpp:3843", set: map[string]any{"norm_epsilon": -1e-5}, want: "norm_epsilon is -1e-05"},
		{name: "no final norm bias", at: "models/starcoder2.cpp:23", tensors: map[string][]int64{"model.norm.bias": nil}, want: `"model.norm.bias"`},
		{name: "no output bias", at: "models/starcoder2.cpp:41", tensors: map[string][]int64{"model.layers.1.self_attn.o_proj.bias": nil},
			want: `"model.layers.1.self_attn.o_proj.bias"`},
		{name: "norm bias rows", at: "models/starcoder2.cpp:35", tensors: map[string][]int64{"model.layers.0.input_layernorm.bias": {255}},
			want: `"model.layers.0.input_layernorm.bias"`},
		{name: "up bias rows", at: "models/starcoder2.cpp:51", tensors: map[string][]int64{"model.layers.0.mlp.c_fc.bias": {256}},
			want: `intermediate_size give tensor "model.layers.0.mlp.c_fc.bias"`},
	})
}

func TestLoaderCheckGLM4(t *testing.T) {
	runLoaderCases(t, "tiny-glm4", []loaderCase{
		{name: "as is"},
		{name: "rotary dims == head_dim", at: "ggml-cpu/ops.cpp:6126", set: map[string]any{"partial_rotary_factor": 1}},
		{name: "rotary dims 0", at: "ggml-cpu/ops.cpp:6126", set: map[string]any{"partial_rotary_factor": 0}, want: "partial_rotary_factor gives 0 rotary dimensions"},
		{name: "rotary dims odd", at: "ggml-cpu/ops.cpp:6127", set: map[string]any{"partial_rotary_factor": 0.3}, want: "partial_rotary_factor gives 19 rotary dimensions"},
		{name: "rotary dims beyond the head", at: "ggml-cpu/ops.cpp:6126", set: map[string]any{"partial_rotary_factor": 1.5}, want: "partial_rotary_factor gives 96 rotary dimensions"},
	})
}

func TestLoaderCheckSmolLM3(t *testing.T) {
	runLoaderCases(t, "tiny-smollm3", []loaderCase{
		{name: "as is"},
		{name: "eps missing", at: "models/smollm3.cpp:4", set: map[string]any{"rms_norm_eps": nil}, want: "rms_norm_eps is missing"},
	})
}

func TestLoaderCheckQwen2MoE(t *testing.T) {
	runLoaderCases(t, "tiny-qwen2moe", []loaderCase{
		{name: "as is"},
		{name: "experts used == experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 4}},
		{name: "experts used 0", at: "models/qwen2moe.cpp:41", set: map[string]any{"num_experts_per_tok": 0}, want: "num_experts_per_tok is 0"},
		{name: "no shared expert", at: "models/qwen2moe.cpp:54", drop: func(n string) bool { return strings.Contains(n, "shared_expert") },
			want: `"model.layers.0.mlp.shared_expert_gate.weight"`},
		{name: "shared expert gate rows", at: "models/qwen2moe.cpp:54", tensors: map[string][]int64{"model.layers.1.mlp.shared_expert_gate.weight": {2, 256}},
			want: `"model.layers.1.mlp.shared_expert_gate.weight"`},
		{name: "experts from intermediate_size", at: "models/qwen2moe.cpp:45", set: map[string]any{"moe_intermediate_size": nil, "intermediate_size": 256},
			want: "intermediate_size / num_experts_per_tok"},
	})
}

func TestLoaderCheckQwen3MoE(t *testing.T) {
	runLoaderCases(t, "tiny-qwen3moe", []loaderCase{
		{name: "as is"},
		{name: "experts used == experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 6}},
		{name: "experts used > experts", at: "llama-model.cpp:1294", set: map[string]any{"num_experts_per_tok": 7}, want: "num_experts_per_tok is 7"},
		{name: "experts missing", at: "models/qwen3moe.cpp:43", set: map[string]any{"num_experts": nil}, want: "num_experts"},
		{name: "shared expert", at: "llama-model-loader.cpp:1398", tensors: map[string][]int64{"model.layers.0.mlp.shared_expert.up_proj.weight": {128, 256}, "model.layers.1.mlp.shared_expert.up_proj.weight": {128, 256}},
			want: `"model.layers.0.mlp.shared_expert.up_proj.weight"`},
		{name: "router rows", at: "models/qwen3moe.cpp:40", tensors: map[string][]int64{"model.layers.0.mlp.gate.weight": {5, 256}},
			want: `"model.layers.0.mlp.gate.weight"`},
	})
}

func TestLoaderCheckOLMoE(t *testing.T) {
	runLoaderCases(t, "tiny-olmoe", []loaderCase{
		{name: "as is"},
		// OLMoE's converter writes the RMS epsilon 1e-5 whatever config.json says.
		{name: "eps negative, overridden", at: "ggml-cpu/ops.cpp:3949", set: map[string]any{"rms_norm_eps": -1}},
		{name: "experts used 0", at: "models/olmoe.cpp:39", set: map[string]any{"num_experts_per_tok": 0}, want: "num_experts_per_tok is 0"},
		{name: "experts not intermediate_size", at: "models/olmoe.cpp:43", set: map[string]any{"intermediate_size": 256, "moe_intermediate_size": 128},
			want: "intermediate_size give the experts 256 rows"},
		{name: "key norm not hidden", at: "models/olmoe.cpp:29", set: map[string]any{"num_key_value_heads": 2},
			tensors: map[string][]int64{
				"model.layers.0.self_attn.k_proj.weight": {128, 256}, "model.layers.1.self_attn.k_proj.weight": {128, 256},
				"model.layers.0.self_attn.v_proj.weight": {128, 256}, "model.layers.1.self_attn.v_proj.weight": {128, 256},
				"model.layers.0.self_attn.k_norm.weight": {128}, "model.layers.1.self_attn.k_norm.weight": {128},
			},
			want: `"model.layers.0.self_attn.k_norm.weight"`},
	})
}

func TestLoaderCheckDeepSeek(t *testing.T) {
	runLoaderCases(t, "tiny-deepseek3", []loaderCase{
		{name: "as is"},
		{name: "groups used 0", at: "llama-model.cpp:1300", set: map[string]any{"topk_group": 0}, want: "topk_group is 0"},
		{name: "groups used == groups", at: "llama-model.cpp:1301", set: map[string]any{"topk_group": 2}, want: "topk_group is 2"},
		{name: "groups not dividing", at: "llama-model.cpp:1299", set: map[string]any{"n_group": 3}, want: "n_group 3 does not divide the 4 experts"},
		{name: "groups == experts", at: "llama-model.cpp:1297", set: map[string]any{"n_group": 4}, want: "n_group is 4"},
		{name: "one group", at: "llama-model.cpp:1298", set: map[string]any{"n_group": 1, "topk_group": 1}},
		{name: "experts used 0", at: "models/deepseek2.cpp:138", set: map[string]any{"num_experts_per_tok": 0}, want: "num_experts_per_tok is 0"},
		{name: "shared experts 0", at: "models/deepseek2.cpp:146", set: map[string]any{"n_shared_experts": 0}, want: "n_shared_experts is 0"},
		{name: "shared experts 0, none in the checkpoint", at: "models/deepseek2.cpp:146", set: map[string]any{"n_shared_experts": 0},
			drop: func(n string) bool { return strings.Contains(n, "shared_experts") }, want: "n_shared_experts is 0"},
		{name: "shared experts 2, tensors for 1", at: "models/deepseek2.cpp:146", set: map[string]any{"n_shared_experts": 2},
			want: "n_shared_experts/moe_intermediate_size/hidden_size"},
		{name: "score correction bias rows", at: "models/deepseek2.cpp:132", tensors: map[string][]int64{"model.layers.1.mlp.gate.e_score_correction_bias": {3}},
			want: `"model.layers.1.mlp.gate.e_score_correction_bias"`},
		{name: "router rows", at: "models/deepseek2.cpp:131", tensors: map[string][]int64{"model.layers.1.mlp.gate.weight": {3, 256}},
			want: `"model.layers.1.mlp.gate.weight"`},
		{name: "no q_lora_rank", at: "models/deepseek2.cpp:13", set: map[string]any{"q_lora_rank": nil},
			drop:    func(n string) bool { return strings.Contains(n, ".q_a_") || strings.Contains(n, ".q_b_") },
			tensors: map[string][]int64{"model.layers.0.self_attn.q_proj.weight": {192, 256}, "model.layers.1.self_attn.q_proj.weight": {192, 256}},
			want:    "q_lora_rank is null or missing"},
	})
}

func TestLoaderCheckOLMo2(t *testing.T) {
	runLoaderCases(t, "tiny-olmo2", []loaderCase{
		{name: "as is"},
		{name: "one sliding layer", at: "llama-model.cpp:2685", set: map[string]any{"layer_types": []string{"full_attention", "sliding_attention"}}},
		{name: "no window, no sliding layer", at: "llama-model.cpp:2735", set: map[string]any{"sliding_window": 0, "layer_types": []string{"full_attention", "full_attention"}}},
		{name: "window, no sliding layer", at: "llama-model.cpp:2685", set: map[string]any{"layer_types": []string{"full_attention", "full_attention"}},
			want: "sliding_window is 4096, but no layer slides"},
		{name: "unknown kind", at: "llama-model.cpp:2685", set: map[string]any{"layer_types": []string{"sliding_attention", "chunked_attention"}},
			want: "layer_types[1] is chunked_attention"},
		{name: "too few kinds", at: "llama-model.cpp:2685", set: map[string]any{"layer_types": []string{"sliding_attention"}},
			want: "layer_types is [sliding_attention]; expected a list of num_hidden_layers (2)"},
	})
}

func TestLoaderCheckGptOss(t *testing.T) {
	runLoaderCases(t, "tiny-gptoss", []loaderCase{
		{name: "as is"},
		{name: "sink rows", at: "models/openai-moe.cpp:42", tensors: map[string][]int64{"model.layers.0.self_attn.sinks": {3}}, want: `"model.layers.0.self_attn.sinks"`},
		{name: "router bias rows", at: "models/openai-moe.cpp:51", tensors: map[string][]int64{"model.layers.1.mlp.router.bias": {3}}, want: `"model.layers.1.mlp.router.bias"`},
		{name: "output bias rows", at: "models/openai-moe.cpp:49", tensors: map[string][]int64{"model.layers.1.self_attn.o_proj.bias": {255}}, want: `"model.layers.1.self_attn.o_proj.bias"`},
		{name: "eps missing", at: "models/openai-moe.cpp:4", set: map[string]any{"rms_norm_eps": nil}, want: "rms_norm_eps is missing"},
	})
}

// oProjCases are the attention output of a family given shapes llama.cpp refuses
// (transposed, or half as wide where that is the same shape; a 0 dimension), rows
// and cols as the fixture has it; and a leading 1, which llama.cpp accepts (the
// file's ne gains a trailing 1, llama-model-loader.cpp:907-908) and apr refuses as
// its conversion check refuses it on every other weight.
func oProjCases(rows, cols int64, fields string) []loaderCase {
	o := "model.layers.1.self_attn.o_proj.weight"
	wrong, what := []int64{cols, rows}, "transposed"
	if rows == cols {
		wrong, what = []int64{rows, cols / 2}, "half as wide"
	}
	shape := ` give tensor "` + o + `" the shape [` + fmtDims(rows, cols) + `]`
	return []loaderCase{
		{name: "as is"},
		{name: "o_proj " + what, at: "llama-model-loader.cpp:907", tensors: map[string][]int64{o: wrong}, want: fields + shape},
		{name: "o_proj [0,n]", at: "llama-model-loader.cpp:907", tensors: map[string][]int64{o: {0, cols}}, want: fields + shape},
		{name: "o_proj [1,n,m]", at: "llama-model-loader.cpp:908", tensors: map[string][]int64{o: {1, rows, cols}}, want: fields + shape},
	}
}

func fmtDims(d ...int64) string {
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, " ")
}

// TestLoaderCheckAttnOutput: every family's attention output against the shape its
// loader creates (models/*.cpp: wo).
func TestLoaderCheckAttnOutput(t *testing.T) {
	head := "hidden_size/num_attention_heads x head_dim"
	noHead := "hidden_size/num_attention_heads (llama.cpp's head is hidden_size / num_attention_heads: the file has no head_dim)"
	wide := func(arch string) string {
		return "hidden_size (both sides: llama.cpp's " + arch + " takes the attention as hidden_size wide)"
	}
	for _, c := range []struct {
		fixture    string
		rows, cols int64
		fields     string
	}{
		{"tiny-llama", 256, 256, noHead}, {"tiny-qwen3", 256, 384, head}, {"tiny-gemma", 256, 256, head},
		{"tiny-gemma2", 256, 256, head}, {"tiny-gemma3", 256, 384, head}, {"tiny-phi3", 256, 256, wide("phi3")},
		{"tiny-granite", 256, 256, noHead}, {"tiny-starcoder2", 256, 256, wide("starcoder2")}, {"tiny-glm4", 256, 256, head},
		{"tiny-smollm3", 256, 256, noHead}, {"tiny-qwen2moe", 256, 256, wide("qwen2moe")}, {"tiny-qwen3moe", 256, 256, head},
		{"tiny-granitemoe", 256, 256, noHead}, {"tiny-olmoe", 256, 256, wide("olmoe")}, {"tiny-olmo2", 256, 256, wide("olmo2")},
		{"tiny-gptoss", 256, 256, "hidden_size/num_attention_heads x head_dim"},
		{"tiny-deepseek3", 256, 128, "hidden_size/num_attention_heads/v_head_dim"},
	} {
		t.Run(c.fixture, func(t *testing.T) { runLoaderCases(t, c.fixture, oProjCases(c.rows, c.cols, c.fields)) })
	}
}

// TestLoaderCheckLayerKinds: tensors llama.cpp does not create in their layer, and
// the biases and router shapes the conversion's check leaves to the loader rules.
func TestLoaderCheckLayerKinds(t *testing.T) {
	runLoaderCases(t, "tiny-deepseek3", []loaderCase{
		{name: "router in a dense layer", at: "models/deepseek2.cpp:72", tensors: map[string][]int64{"model.layers.0.mlp.gate.weight": {4, 256}},
			want: `tensor "model.layers.0.mlp.gate.weight": layer 0 is one of the 1 leading dense layers`},
		{name: "shared expert in a dense layer", at: "models/deepseek2.cpp:72", tensors: map[string][]int64{"model.layers.0.mlp.shared_experts.up_proj.weight": {128, 256}},
			want: `"model.layers.0.mlp.shared_experts.up_proj.weight"`},
		{name: "router transposed", at: "models/deepseek2.cpp:77", tensors: map[string][]int64{"model.layers.1.mlp.gate.weight": {256, 4}},
			want: `"model.layers.1.mlp.gate.weight" the shape [4 256]`},
		{name: "router [1,n,m]", at: "llama-model-loader.cpp:908", tensors: map[string][]int64{"model.layers.1.mlp.gate.weight": {1, 4, 256}},
			want: `"model.layers.1.mlp.gate.weight" the shape [4 256]`},
	})
	runLoaderCases(t, "tiny-granitemoe", []loaderCase{
		{name: "shared down columns", at: "models/granite-moe.cpp:55", tensors: map[string][]int64{"model.layers.1.shared_mlp.output_linear.weight": {256, 128}},
			want: `hidden_size/shared_intermediate_size give tensor "model.layers.1.shared_mlp.output_linear.weight" the shape [256 256]`},
		{name: "shared down [0,n]", at: "models/granite-moe.cpp:55", tensors: map[string][]int64{"model.layers.1.shared_mlp.output_linear.weight": {0, 256}},
			want: `"model.layers.1.shared_mlp.output_linear.weight"`},
		{name: "o_proj bias rows", at: "models/granite-moe.cpp:24", tensors: map[string][]int64{"model.layers.0.self_attn.o_proj.bias": {255}},
			want: `"model.layers.0.self_attn.o_proj.bias"`},
	})
	runLoaderCases(t, "tiny-mixtral", []loaderCase{
		{name: "dense MLP beside the experts", at: "models/llama.cpp:70", tensors: map[string][]int64{"model.layers.0.mlp.up_proj.weight": {128, 256}},
			want: `"model.layers.0.mlp.up_proj.weight"`},
	})
	runLoaderCases(t, "tiny-llama", []loaderCase{
		{name: "MLP bias rows", at: "models/llama.cpp:75", tensors: map[string][]int64{"model.layers.0.mlp.up_proj.bias": {255}},
			want: `"model.layers.0.mlp.up_proj.bias"`},
	})
}
