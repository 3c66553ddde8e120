package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The shapes of the tensors the conversion's own check (Checkpoint.check) leaves to
// the loader rules: the attention output, the biases, the router, and which feed-forward
// tensors a layer may hold at all. llama.cpp's load_arch_tensors creates each tensor
// with the shape the hyperparameters in the file give it and refuses a file whose
// tensor has another shape (llama-model-loader.cpp:880-915; only extra trailing
// dimensions of 1, a leading 1 in the checkpoint's order, are accepted) or that holds
// a tensor it did not create (llama-model-loader.cpp:1398, "wrong number of tensors").

// qRowsHiddenArchs take Q and the attention output as hidden_size rows whatever the
// head size (models/qwen2.cpp:21, phi3.cpp:21, starcoder2.cpp:23, qwen2moe.cpp:16,
// olmoe.cpp:16, olmo2.cpp:16).
var qRowsHiddenArchs = []string{"qwen2", "phi3", "starcoder2", "qwen2moe", "olmoe", "olmo2"}

// layerShapes checks every layer's tensors of the kinds below against the shape
// llama.cpp creates them with (ne reversed: the checkpoint's order).
var layerShapes = loaderRule{"models/*.cpp load_arch_tensors", func(v *loaderView) error {
	h := v.cp.Hparams
	embd, _ := v.u32("embedding_length")
	heads, _ := v.u32("attention.head_count")
	experts, _ := v.u32("expert_count")
	if embd == 0 || heads == 0 {
		return nil
	}
	// The attention output: n_embd_head_k x n_head columns (models/llama.cpp:54 and
	// the like), n_embd_head_k being attention.key_length, else n_embd / n_head.
	cols, colFields := embd, "hidden_size"
	switch {
	case slices.Contains(qRowsHiddenArchs, v.arch()):
	case v.arch() == "gpt-oss": // n_head x n_rot (models/openai-moe.cpp:19), n_rot defaulting to the head
		rot, ok := v.u32("rope.dimension_count")
		if !ok {
			if rot, ok = v.u32("attention.key_length"); !ok {
				rot = embd / heads
			}
		}
		cols, colFields = heads*rot, "num_attention_heads x head_dim"
	case v.arch() == "deepseek2": // MLA: checked with its other attention tensors (deepseek.go shapeOf)
		cols = 0
	default:
		head, ok := v.u32("attention.key_length")
		if !ok {
			head = embd / heads
		}
		cols, colFields = heads*head, "num_attention_heads x head_dim"
		if !ok {
			colFields = "num_attention_heads (llama.cpp's head is hidden_size / num_attention_heads: the file has no head_dim)"
		}
	}
	type kind struct {
		suffix string
		want   []int64
		fields string
	}
	kinds := []kind{
		{"attn_output.bias", []int64{embd}, "hidden_size"},
		{"attn_norm.bias", []int64{embd}, "hidden_size"},
		{"ffn_norm.bias", []int64{embd}, "hidden_size"},
		{"ffn_down.bias", []int64{embd}, "hidden_size"},
		{"post_attention_norm.weight", []int64{embd}, "hidden_size"},
		{"post_ffw_norm.weight", []int64{embd}, "hidden_size"},
	}
	if cols > 0 {
		fields := "hidden_size/" + colFields
		if slices.Contains(qRowsHiddenArchs, v.arch()) {
			fields = "hidden_size (both sides: llama.cpp's " + v.arch() + " takes the attention as hidden_size wide)"
		}
		kinds = append(kinds, kind{"attn_output.weight", []int64{embd, cols}, fields})
	}
	if h.HasFFN && !v.cp.Arch.FusedUp {
		ff := int64(h.FFN)
		kinds = append(kinds, kind{"ffn_up.bias", []int64{ff}, "intermediate_size"}, kind{"ffn_gate.bias", []int64{ff}, "intermediate_size"})
	}
	if experts > 0 {
		ef := v.field(expertCountKeys...)
		kinds = append(kinds, kind{"ffn_gate_inp.weight", []int64{experts, embd}, ef + "/hidden_size"},
			kind{"ffn_gate_inp.bias", []int64{experts}, ef}, kind{"exp_probs_b.bias", []int64{experts}, ef})
	}
	if n, ok := v.u32("expert_shared_feed_forward_length"); ok && n > 0 && v.arch() == "granitemoe" {
		kinds = append(kinds, kind{"ffn_down_shexp.weight", []int64{embd, n}, "hidden_size/shared_intermediate_size"})
	}
	for _, k := range kinds {
		if err := v.shapeExact(k.suffix, k.want, k.fields); err != nil {
			return err
		}
	}
	return v.layerKinds()
}}

// layerKinds refuses a feed-forward tensor llama.cpp does not create in its layer:
// a layer with experts (every layer of a model with experts, DeepSeek's past its
// leading dense layers, models/deepseek2.cpp:72) takes the router, the experts and
// shared experts and no dense feed-forward; a dense layer takes none of those.
func (v *loaderView) layerKinds() error {
	experts, _ := v.u32("expert_count")
	for _, g := range slices.Sorted(maps.Keys(v.byGGUF)) {
		t := v.byGGUF[g]
		if !strings.HasPrefix(g, "blk.") {
			continue
		}
		var layer int64
		var suffix string
		if _, err := fmt.Sscanf(g, "blk.%d.", &layer); err != nil {
			continue
		}
		suffix = g[strings.IndexByte(g[4:], '.')+5:]
		moe := experts > 0 && (v.arch() != "deepseek2" || layer >= v.dense())
		expertKind := strings.HasPrefix(suffix, "ffn_gate_inp") || strings.HasPrefix(suffix, "exp_probs_b") ||
			strings.Contains(suffix, "_exps.") || strings.Contains(suffix, "_shexp.")
		denseKind := slices.Contains([]string{"ffn_gate", "ffn_up", "ffn_down", "ffn_gate_up"}, strings.TrimSuffix(strings.TrimSuffix(suffix, ".weight"), ".bias"))
		switch {
		case moe && denseKind:
			return fmt.Errorf("tensor %q: layer %d of llama.cpp's %s has experts, and its loader takes no dense feed-forward tensor there (it refuses the file)", t.Name, layer, v.arch())
		case !moe && expertKind && experts > 0:
			return fmt.Errorf("tensor %q: layer %d is one of the %d leading dense layers (first_k_dense_replace), which take no router or experts in llama.cpp's %s (it refuses the file)", t.Name, layer, v.dense(), v.arch())
		case !moe && expertKind:
			return fmt.Errorf("tensor %q: the model has no experts (%s is 0 or missing), so llama.cpp's %s takes no router or experts (it refuses the file)", t.Name, v.field(expertCountKeys...), v.arch())
		}
	}
	return nil
}
