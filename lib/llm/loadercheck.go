package llm

import (
	"fmt"
	"slices"

	"github.com/apr-go/apr/lib/gguf"
)

// Before apr writes a GGUF it checks what today's llama.cpp checks when it loads one:
// the asserts and throws of its hyperparameter loading and the shapes its tensor
// loading expects. A checkpoint that would write a file llama.cpp refuses, or aborts
// on, for a reason visible in the checkpoint is refused here, naming config.json's
// field or the tensor. The rules read the keys apr is about to write (so a family
// that overrides a value, as OLMoE its norm epsilon, is judged by what it writes)
// and the checkpoint's tensors by their GGUF names. Each rule cites the line of
// llama.cpp's source (the tree of 2026-09-28) it follows: src/ unless named
// (ggml-cpu/ops.cpp is ggml/src/ggml-cpu/ops.cpp).

// loaderRule is one refusal of llama.cpp's loader.
type loaderRule struct {
	at    string // llama.cpp's source line
	check func(v *loaderView) error
}

// loaderRules are the rules of each family, by GGUF architecture: the common ones,
// then the family's own.
var loaderRules = func() map[string][]loaderRule {
	rms := func(at string) []loaderRule { return append(slices.Clone(commonRules), needRMSEps(at)) }
	moe := func(at ...string) []loaderRule { // router and experts of a mixture of experts
		return []loaderRule{needExperts(at[0]), routerShape(at[1])}
	}
	return map[string][]loaderRule{
		"llama":      append(rms("models/llama.cpp:7"), routerShape("models/llama.cpp:79"), expertRowsFFN("models/llama.cpp:80")),
		"qwen2":      append(rms("models/qwen2.cpp:4"), qRowsHidden("models/qwen2.cpp:38")),
		"qwen3":      rms("models/qwen3.cpp:4"),
		"gemma":      rms("models/gemma.cpp:4"),
		"gemma2":     rms("models/gemma2.cpp:13"),
		"gemma3":     rms("models/gemma3.cpp:16"),
		"phi3":       append(rms("models/phi3.cpp:4"), qRowsHidden("models/phi3.cpp:46")),
		"mistral3":   rms("models/mistral3.cpp:4"),
		"granite":    append(rms("models/granite.cpp:6"), needLogitScale("models/granite.cpp:7"), graniteHeadDim("models/granite.cpp:78")),
		"starcoder2": append(slices.Clone(commonRules), needNormEps("models/starcoder2.cpp:4"), qRowsHidden("models/starcoder2.cpp:37"), starcoder2Biases),
		"glm4":       rms("models/glm4.cpp:4"),
		"smollm3":    rms("models/smollm3.cpp:4"),
		"qwen2moe": append(append(rms("models/qwen2moe.cpp:7"), moe("models/qwen2moe.cpp:38", "models/qwen2moe.cpp:35")...),
			qRowsHidden("models/qwen2moe.cpp:30"), expertRowsUsed("models/qwen2moe.cpp:45"), qwen2moeShared),
		"qwen3moe": append(append(rms("models/qwen3moe.cpp:5"), moe("models/qwen3moe.cpp:43", "models/qwen3moe.cpp:40")...),
			expertRowsUsed("models/qwen3moe.cpp:50"), noShared("llama-model-loader.cpp:1398")),
		"granitemoe": append(append(rms("models/granite-moe.cpp:4"), needExperts("models/granite-moe.cpp:66"), routerShape("models/granite-moe.cpp:66")),
			needLogitScale("models/granite-moe.cpp:5"), graniteHeadDim("models/granite-moe.cpp:40"), granitemoeShared),
		"olmoe": append(append(rms("models/olmoe.cpp:4"), moe("models/olmoe.cpp:36", "models/olmoe.cpp:33")...),
			qRowsHidden("models/olmoe.cpp:26"), expertRowsFFN("models/olmoe.cpp:43"), olmoeKNorm),
		"deepseek2": append(rms("models/deepseek2.cpp:10"), deepseekLora, deepseekNope, deepseekExperts,
			routerShape("models/deepseek2.cpp:131"), deepseekProbsBias, deepseekShared),
		"olmo2":   append(rms("models/olmo2.cpp:4"), qRowsHidden("models/olmo2.cpp:41"), olmo2Sliding),
		"gpt-oss": append(rms("models/openai-moe.cpp:4"), gptossShapes),
	}
}()

// commonRules are llama.cpp's checks of every architecture (llama_model_base::load_hparams).
var commonRules = []loaderRule{
	{"llama-model.cpp:1260", func(v *loaderView) error {
		if n := v.cp.Hparams.Layers; n < 1 || n > 512 {
			return fmt.Errorf("config.json: num_hidden_layers is %d; llama.cpp loads 1 to 512 layers", n)
		}
		return nil
	}},
	{"llama-model.cpp:1254", func(v *loaderView) error {
		if _, ok := v.u32("context_length"); !ok {
			return fmt.Errorf("config.json: max_position_embeddings is missing (llama.cpp needs %s.context_length)", v.arch())
		}
		return nil
	}},
	{"llama-model.cpp:1293", expertCounts},
	{"ggml-cpu/ops.cpp:3843", normEpsSign("attention.layer_norm_epsilon", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon")},
	{"ggml-cpu/ops.cpp:3949", normEpsSign("attention.layer_norm_rms_epsilon", "rms_norm_eps", "norm_eps")},
	{"ggml-cpu/ops.cpp:6126", ropeDims},
}

// loaderView is what the rules read: the hyperparameter keys apr writes and the
// checkpoint's tensors by GGUF name.
type loaderView struct {
	cp *Checkpoint
	g  ggufKVs
	// byGGUF are the checkpoint's tensors (Hugging Face names and shapes) by GGUF
	// name; one expert's tensor stands for its stack.
	byGGUF map[string]TensorShape
}

// loaderCheck runs the family's rules on the hyperparameter keys apr writes (kvs).
func (cp *Checkpoint) loaderCheck(kvs []gguf.KV) error {
	v := &loaderView{cp: cp, g: ggufKVs{h: gguf.Header{KVs: dedupe(kvs)}, arch: cp.Arch.GGUF}, byGGUF: map[string]TensorShape{}}
	for _, t := range cp.shapes {
		if g, _, skip, err := cp.ggufName(t.Name); err == nil && !skip {
			if old, ok := v.byGGUF[g]; !ok || t.Name < old.Name {
				v.byGGUF[g] = t
			}
		}
	}
	rules, ok := loaderRules[cp.Arch.GGUF]
	if !ok {
		return nil
	}
	for _, r := range append(slices.Clone(rules), layerShapes) {
		if err := r.check(v); err != nil {
			return err
		}
	}
	return nil
}

func (v *loaderView) arch() string { return v.cp.Arch.GGUF }

// u32 is the unsigned key apr writes, as llama.cpp reads it (a wrapped negative
// value too).
func (v *loaderView) u32(key string) (int64, bool) {
	val, ok := v.g.h.Get(v.arch() + "." + key)
	n, isNum := val.AsUint64()
	return int64(n), ok && isNum
}

// field is the first of config.json's fields the checkpoint has, else the first.
func (v *loaderView) field(names ...string) string {
	for _, n := range names {
		if _, ok := v.cp.config[n]; ok {
			return n
		}
	}
	return names[0]
}

// layerTensor is tensor suffix (after "blk.N.") of some layer, first layer first.
func (v *loaderView) layerTensor(suffix string) (TensorShape, bool) {
	for l := range v.cp.Hparams.Layers {
		if t, ok := v.byGGUF[fmt.Sprintf("blk.%d.%s", l, suffix)]; ok {
			return t, true
		}
	}
	return TensorShape{}, false
}

// shape checks tensor suffix of every layer (a top-level name when it does not
// start with a layer's) against want (outermost first, as the checkpoint holds it),
// as llama.cpp's loader compares them (llama-model-loader.cpp:880): dimensions past
// want's must be 1. fields names the config.json fields that give want.
func (v *loaderView) shape(suffix string, want []int64, fields string) error {
	return v.shapeCmp(suffix, want, fields, false)
}

// shapeExact is shape without the leading 1s llama.cpp lets through, as the
// conversion's own check (Checkpoint.check) compares the tensors it covers.
func (v *loaderView) shapeExact(suffix string, want []int64, fields string) error {
	return v.shapeCmp(suffix, want, fields, true)
}

func (v *loaderView) shapeCmp(suffix string, want []int64, fields string, exact bool) error {
	var names []string
	if _, ok := v.byGGUF[suffix]; ok {
		names = []string{suffix}
	}
	for l := range v.cp.Hparams.Layers {
		names = append(names, fmt.Sprintf("blk.%d.%s", l, suffix))
	}
	for _, g := range names {
		t, ok := v.byGGUF[g]
		if !ok {
			continue
		}
		ne := slices.Clone(t.Shape)
		slices.Reverse(ne)
		w := slices.Clone(want)
		slices.Reverse(w)
		same := len(ne) >= len(w) && (!exact || len(ne) == len(w))
		for i := 0; same && i < len(ne); i++ {
			same = i < len(w) && ne[i] == w[i] || i >= len(w) && ne[i] == 1
		}
		if !same {
			return fmt.Errorf("config.json: %s give tensor %q the shape %v (llama.cpp's %s), but it has %v", fields, t.Name, want, g, t.Shape)
		}
	}
	return nil
}

// needLayers checks that every layer holds each tensor of suffixes.
func (v *loaderView) needLayers(why string, suffixes ...string) error {
	for l := range v.cp.Hparams.Layers {
		for _, s := range suffixes {
			if g := fmt.Sprintf("blk.%d.%s", l, s); v.byGGUF[g].Name == "" {
				hf, _ := v.cp.Arch.HFName(g)
				return fmt.Errorf("the checkpoint has no %q, which llama.cpp's %s needs in every layer%s", hf, v.arch(), why)
			}
		}
	}
	return nil
}

// expertCounts are load_hparams's asserts on the experts (llama-model.cpp:1293-1305):
// at most 1024; a model with experts routes each token to 1 to all of them, and its
// expert groups (when more than one) divide the experts, with 1 to all but one used;
// a model without experts has neither.
func expertCounts(v *loaderView) error {
	n, _ := v.u32("expert_count")
	used, _ := v.u32("expert_used_count")
	groups, _ := v.u32("expert_group_count")
	gused, _ := v.u32("expert_group_used_count")
	nf, uf := v.field(expertCountKeys...), v.field(expertUsedKeys...)
	switch {
	case n > 1024:
		return fmt.Errorf("config.json: %s is %d; llama.cpp loads at most 1024 experts", nf, n)
	case used > n:
		return fmt.Errorf("config.json: %s is %d, more than the %d experts (%s)", uf, used, n, nf)
	case n == 0 && groups != 0:
		return fmt.Errorf("config.json: n_group is %d, but the model has no experts", groups)
	case n == 0:
		return nil
	case used == 0:
		return fmt.Errorf("config.json: %s is 0 (or missing); llama.cpp routes each token to at least one of the %d experts", uf, n)
	case groups >= n:
		return fmt.Errorf("config.json: n_group is %d; llama.cpp needs fewer expert groups than the %d experts", groups, n)
	case groups > 1 && n%groups != 0:
		return fmt.Errorf("config.json: n_group %d does not divide the %d experts (%s)", groups, n, nf)
	case groups > 1 && (gused == 0 || gused >= groups):
		return fmt.Errorf("config.json: topk_group is %d; llama.cpp uses 1 to %d of the %d expert groups (n_group)", gused, groups-1, groups)
	}
	return nil
}

// normEpsSign refuses a negative epsilon under key, which ggml's norms assert against
// when they run; names are the config.json fields it comes from.
func normEpsSign(key string, names ...string) func(v *loaderView) error {
	return func(v *loaderView) error {
		if f, ok := v.g.archFloat(key); ok && f.f < 0 {
			return fmt.Errorf("config.json: %s is %v; a norm's epsilon must not be negative", v.field(names...), float32(f.f))
		}
		return nil
	}
}

// ropeDims: ggml rotates pairs of a head's first rope.dimension_count dimensions
// (ops.cpp:6126-6127: even, at most the head); apr refuses 0 too, a rotary
// embedding of nothing, which no published model has.
func ropeDims(v *loaderView) error {
	dims, ok := v.u32("rope.dimension_count")
	if !ok {
		return nil
	}
	head, ok := v.u32("attention.key_length")
	if !ok {
		head = int64(v.cp.Hparams.Hidden / v.cp.Hparams.Heads)
	}
	if v.arch() == "deepseek2" { // the rotary part is its own (qk_rope_head_dim), beside the nope part
		head = dims
	}
	if dims == 0 || dims%2 != 0 || dims > head {
		field := map[string]string{"glm4": "partial_rotary_factor", "phi3": "partial_rotary_factor", "deepseek2": "qk_rope_head_dim"}[v.arch()]
		if field == "" {
			field = "head_dim"
		}
		return fmt.Errorf("config.json: %s gives %d rotary dimensions a head; llama.cpp rotates an even number from 2 to the head's %d", field, dims, head)
	}
	return nil
}

// needRMSEps: the family's loader reads attention.layer_norm_rms_epsilon as required.
func needRMSEps(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		if _, ok := v.g.archFloat("attention.layer_norm_rms_epsilon"); !ok {
			return fmt.Errorf("config.json: rms_norm_eps is missing (llama.cpp's %s needs attention.layer_norm_rms_epsilon)", v.arch())
		}
		return nil
	}}
}

// needNormEps: StarCoder2's loader reads attention.layer_norm_epsilon as required.
func needNormEps(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		if _, ok := v.g.archFloat("attention.layer_norm_epsilon"); !ok {
			return fmt.Errorf("config.json: norm_epsilon (or layer_norm_eps) is missing (llama.cpp's %s needs attention.layer_norm_epsilon)", v.arch())
		}
		return nil
	}}
}

// needLogitScale: Granite's loader reads logit_scale as required, which the converter
// writes only when logits_scaling is there and not 0.
func needLogitScale(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		if _, ok := v.g.archFloat("logit_scale"); !ok {
			return fmt.Errorf("config.json: logits_scaling is %v; llama.cpp's %s needs a logit scale, which the converter writes only when it is not 0", v.cp.config["logits_scaling"], v.arch())
		}
		return nil
	}}
}

// qRowsHidden: the family's loader expects Q (and the attention output) of
// hidden_size rows, so the heads times head_dim must be hidden_size.
func qRowsHidden(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		h := v.cp.Hparams
		if h.Heads*h.HeadDim != h.Hidden {
			return fmt.Errorf("config.json: head_dim %d x num_attention_heads %d is not hidden_size %d, which llama.cpp's %s takes as Q's rows", h.HeadDim, h.Heads, h.Hidden, v.arch())
		}
		return nil
	}}
}

// graniteHeadDim: Granite's converter leaves head_dim out, so llama.cpp's head is
// hidden_size / num_attention_heads; a head_dim other than that gives Q rows it
// does not expect.
func graniteHeadDim(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		h := v.cp.Hparams
		if h.HasHeadDim && h.HeadDim*h.Heads != h.Hidden {
			return fmt.Errorf("config.json: head_dim %d is not hidden_size %d / num_attention_heads %d, the head llama.cpp's %s takes (the converter does not write head_dim)", h.HeadDim, h.Hidden, h.Heads, v.arch())
		}
		return nil
	}}
}

// needExperts: the family's loader throws without experts, or with none used.
func needExperts(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		if n, _ := v.u32("expert_count"); n == 0 {
			return fmt.Errorf("config.json: %s is 0 or missing; llama.cpp's %s needs experts", v.field(expertCountKeys...), v.arch())
		}
		if n, _ := v.u32("expert_used_count"); n == 0 {
			return fmt.Errorf("config.json: %s is 0 or missing; llama.cpp's %s needs experts used per token", v.field(expertUsedKeys...), v.arch())
		}
		return nil
	}}
}

// routerShape: the router (ffn_gate_inp) has a row per expert over the hidden size.
func routerShape(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		n, _ := v.u32("expert_count")
		return v.shape("ffn_gate_inp.weight", []int64{n, int64(v.cp.Hparams.Hidden)}, v.field(expertCountKeys...)+"/hidden_size")
	}}
}

// expertRows checks one expert's up projection has rows rows (rows of fields).
func (v *loaderView) expertRows(rows int64, fields string) error {
	t, ok := v.layerTensor("ffn_up_exps.weight")
	if !ok || len(t.Shape) < 2 || t.Shape[len(t.Shape)-2] == rows {
		return nil
	}
	return fmt.Errorf("config.json: %s give the experts %d rows each (llama.cpp's %s), but tensor %q has %v", fields, rows, v.arch(), t.Name, t.Shape)
}

// expertRowsFFN: Mixtral's and OLMoE's experts are feed_forward_length
// (intermediate_size) wide; llama.cpp does not read moe_intermediate_size for them.
func expertRowsFFN(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		if n, _ := v.u32("expert_count"); n == 0 || !v.cp.Hparams.HasFFN {
			return nil
		}
		return v.expertRows(int64(v.cp.Hparams.FFN), "intermediate_size")
	}}
}

// expertRowsUsed: without expert_feed_forward_length (moe_intermediate_size),
// Qwen-MoE's experts are intermediate_size / num_experts_per_tok wide.
func expertRowsUsed(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		used, _ := v.u32("expert_used_count")
		if _, ok := v.u32("expert_feed_forward_length"); ok || used == 0 {
			return nil
		}
		return v.expertRows(int64(v.cp.Hparams.FFN)/used, "intermediate_size / "+v.field(expertUsedKeys...)+" (moe_intermediate_size missing)")
	}}
}

// qwen2moeShared: Qwen2-MoE's loader needs the shared expert and its gate in every
// layer, shared_expert_intermediate_size (else intermediate_size) wide.
var qwen2moeShared = loaderRule{"models/qwen2moe.cpp:54", func(v *loaderView) error {
	if err := v.needLayers(" (the shared expert)", "ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"); err != nil {
		return err
	}
	ff, field := int64(v.cp.Hparams.FFN), "intermediate_size"
	if n, ok := v.u32("expert_shared_feed_forward_length"); ok && n > 0 {
		ff, field = n, "shared_expert_intermediate_size"
	}
	hidden := int64(v.cp.Hparams.Hidden)
	for _, c := range []struct {
		suffix string
		want   []int64
	}{{"ffn_gate_inp_shexp.weight", []int64{hidden}}, {"ffn_gate_shexp.weight", []int64{ff, hidden}},
		{"ffn_up_shexp.weight", []int64{ff, hidden}}, {"ffn_down_shexp.weight", []int64{hidden, ff}}} {
		if err := v.shape(c.suffix, c.want, field+"/hidden_size"); err != nil {
			return err
		}
	}
	return nil
}}

// noShared: llama.cpp's Qwen3-MoE has no shared expert; a file with one has tensors
// its loader does not take, which it refuses.
func noShared(at string) loaderRule {
	return loaderRule{at, func(v *loaderView) error {
		for _, s := range []string{"ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"} {
			if t, ok := v.layerTensor(s); ok {
				return fmt.Errorf("tensor %q: llama.cpp's %s has no shared expert and refuses a file with one", t.Name, v.arch())
			}
		}
		return nil
	}}
}

// granitemoeShared: Granite-MoE's loader takes shared experts exactly when
// expert_shared_feed_forward_length (shared_intermediate_size, written when not 0)
// is there: it needs them then, and refuses them otherwise.
var granitemoeShared = loaderRule{"models/granite-moe.cpp:73", func(v *loaderView) error {
	n, _ := v.u32("expert_shared_feed_forward_length")
	t, has := v.layerTensor("ffn_gate_up_shexp.weight")
	switch {
	case n == 0 && has:
		return fmt.Errorf("tensor %q: shared_intermediate_size is 0 or missing, so llama.cpp's %s takes no shared experts and refuses a file with them", t.Name, v.arch())
	case n > 0:
		return v.needLayers(" (shared_intermediate_size is not 0)", "ffn_gate_up_shexp.weight", "ffn_down_shexp.weight")
	}
	return nil
}}

// olmoeKNorm: OLMoE's loader takes a key norm over hidden_size (olmoe.cpp:29), so
// the key heads must be the query heads.
var olmoeKNorm = loaderRule{"models/olmoe.cpp:29", func(v *loaderView) error {
	return v.shape("attn_k_norm.weight", []int64{int64(v.cp.Hparams.Hidden)}, "hidden_size (llama.cpp's OLMoE key norm, so num_key_value_heads must be num_attention_heads)")
}}

// starcoder2Biases: StarCoder2's loader needs every bias (starcoder2.cpp:23-51), of
// the hidden size, the up projection's of intermediate_size.
var starcoder2Biases = loaderRule{"models/starcoder2.cpp:35", func(v *loaderView) error {
	if _, ok := v.byGGUF["output_norm.bias"]; !ok {
		return fmt.Errorf("the checkpoint has no \"model.norm.bias\", which llama.cpp's starcoder2 needs (starcoder2 has biases: use_bias)")
	}
	if err := v.needLayers(" (use_bias)", "attn_norm.bias", "attn_output.bias", "ffn_norm.bias", "ffn_up.bias", "ffn_down.bias"); err != nil {
		return err
	}
	hidden := []int64{int64(v.cp.Hparams.Hidden)}
	for _, s := range []string{"output_norm.bias", "attn_norm.bias", "attn_output.bias", "ffn_norm.bias", "ffn_down.bias"} {
		if err := v.shape(s, hidden, "hidden_size"); err != nil {
			return err
		}
	}
	if !v.cp.Hparams.HasFFN {
		return nil
	}
	return v.shape("ffn_up.bias", []int64{int64(v.cp.Hparams.FFN)}, "intermediate_size")
}}

// gptossShapes: gpt-oss's attention sinks (one per head), output bias and router
// bias (one per expert), which its loader needs (openai-moe.cpp:42-51).
var gptossShapes = loaderRule{"models/openai-moe.cpp:42", func(v *loaderView) error {
	h := v.cp.Hparams
	if err := v.shape("attn_sinks.weight", []int64{int64(h.Heads)}, "num_attention_heads"); err != nil {
		return err
	}
	if err := v.shape("attn_output.bias", []int64{int64(h.Hidden)}, "hidden_size"); err != nil {
		return err
	}
	return v.shape("ffn_gate_inp.bias", []int64{int64(h.Experts)}, "num_local_experts")
}}

// dense is DeepSeek's leading dense layers (leading_dense_block_count) as apr writes it.
func (v *loaderView) dense() int64 {
	n, _ := v.u32("leading_dense_block_count")
	return n
}

// deepseekMoE reports whether some layer of a DeepSeek model has experts.
func (v *loaderView) deepseekMoE() bool { return v.dense() < int64(v.cp.Hparams.Layers) }

// deepseekLora: DeepSeek's loader needs q_lora_rank except for the shapes it takes
// for V2-Lite (26 or 27 layers, or 48 with a vocabulary of 128256).
var deepseekLora = loaderRule{"models/deepseek2.cpp:13", func(v *loaderView) error {
	layers := v.cp.Hparams.Layers
	vocab, _ := v.u32("vocab_size")
	lite := layers == 26 || layers == 27 || layers == 48 && vocab == 128256
	if _, ok := v.u32("attention.q_lora_rank"); !ok && !lite {
		return fmt.Errorf("config.json: q_lora_rank is null or missing; llama.cpp's deepseek2 needs it unless the model has V2-Lite's 26 or 27 layers (this one has %d)", layers)
	}
	return nil
}}

// deepseekNope: the keys' part without rotary embedding is at least 1 wide.
var deepseekNope = loaderRule{"models/deepseek2.cpp:77", func(v *loaderView) error {
	k, _ := v.u32("attention.key_length_mla")
	rope, _ := v.u32("rope.dimension_count")
	if k-rope < 1 {
		return fmt.Errorf("config.json: qk_nope_head_dim is %d; llama.cpp's deepseek2 needs at least 1", k-rope)
	}
	return nil
}}

// deepseekExperts: a DeepSeek model with expert layers needs experts, and experts
// used (deepseek2.cpp:134-139).
var deepseekExperts = loaderRule{"models/deepseek2.cpp:135", func(v *loaderView) error {
	if !v.deepseekMoE() {
		return nil
	}
	return needExperts("").check(v)
}}

// deepseekProbsBias: the score correction bias has one value per expert.
var deepseekProbsBias = loaderRule{"models/deepseek2.cpp:132", func(v *loaderView) error {
	n, _ := v.u32("expert_count")
	return v.shape("exp_probs_b.bias", []int64{n}, "n_routed_experts")
}}

// deepseekShared: every expert layer needs the shared experts, n_shared_experts x
// moe_intermediate_size wide (deepseek2.cpp:146-148): n_shared_experts 0 makes them
// of width 0, which no checkpoint holds.
var deepseekShared = loaderRule{"models/deepseek2.cpp:146", func(v *loaderView) error {
	if !v.deepseekMoE() {
		return nil
	}
	shared, _ := v.u32("expert_shared_count")
	if shared == 0 {
		if t, ok := v.layerTensor("ffn_gate_shexp.weight"); ok {
			return fmt.Errorf("config.json: n_shared_experts is 0 or missing, but the checkpoint has shared-expert tensors such as %q", t.Name)
		}
		return fmt.Errorf("config.json: n_shared_experts is 0 or missing; llama.cpp's deepseek2 needs shared experts in every expert layer")
	}
	for l := range v.cp.Hparams.Layers {
		if int64(l) < v.dense() {
			continue
		}
		for _, s := range []string{"ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"} {
			if g := fmt.Sprintf("blk.%d.%s", l, s); v.byGGUF[g].Name == "" {
				hf, _ := v.cp.Arch.HFName(g)
				return fmt.Errorf("config.json: n_shared_experts is %d, but the checkpoint has no %q", shared, hf)
			}
		}
	}
	ff, _ := v.u32("expert_feed_forward_length")
	hidden := int64(v.cp.Hparams.Hidden)
	fields := "n_shared_experts/moe_intermediate_size/hidden_size"
	for _, c := range []struct {
		suffix string
		want   []int64
	}{{"ffn_gate_shexp.weight", []int64{ff * shared, hidden}}, {"ffn_up_shexp.weight", []int64{ff * shared, hidden}},
		{"ffn_down_shexp.weight", []int64{hidden, ff * shared}}} {
		if err := v.shape(c.suffix, c.want, fields); err != nil {
			return err
		}
	}
	return nil
}}

// olmo2Sliding: OLMo 2/3's sliding-window layers come from layer_types, each
// "sliding_attention" or "full_attention", one per layer; with a window, some layer
// must slide, or llama.cpp aborts when it makes its cache (llama-model.cpp:2685).
var olmo2Sliding = loaderRule{"llama-model.cpp:2685", func(v *loaderView) error {
	c := v.cp.config
	if raw, has := c["layer_types"]; has && raw != nil {
		types, ok := raw.([]any)
		if !ok || len(types) != v.cp.Hparams.Layers {
			return fmt.Errorf("config.json: layer_types is %v; expected a list of num_hidden_layers (%d) attention kinds", raw, v.cp.Hparams.Layers)
		}
		for i, t := range types {
			if t != "sliding_attention" && t != "full_attention" {
				return fmt.Errorf("config.json: layer_types[%d] is %v; OLMo 2's layers are \"sliding_attention\" or \"full_attention\"", i, t)
			}
		}
	}
	window, _ := v.u32("attention.sliding_window")
	val, ok := v.g.h.Get(v.arch() + ".attention.sliding_window_pattern")
	if window == 0 || !ok {
		return nil
	}
	for i := range val.Len() {
		if b, _ := val.Index(i).AsBool(); b {
			return nil
		}
	}
	return fmt.Errorf("config.json: sliding_window is %d, but no layer slides (layer_types has no \"sliding_attention\"); llama.cpp aborts on a sliding window no layer uses", window)
}}
