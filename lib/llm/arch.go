package llm

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// Arch is what apr knows of one family of Hugging Face causal language models: the
// names its config.json gives in "architectures", llama.cpp's architecture name, how
// its tensors are named in GGUF, and the rows of which tensors llama.cpp permutes. A
// new family is one more entry in archs.
type Arch struct {
	HF   []string // config.json "architectures" values
	GGUF string   // general.architecture
	// Top maps whole Hugging Face tensor names to GGUF names; Layer maps the part after
	// "model.layers.N." to the part after "blk.N.".
	Top, Layer map[string]string
	// Skip lists tensor names the converter drops (buffers, not weights): whole
	// names, or the part after "model.layers.N.".
	Skip []string
	// PermuteQK: the rows of the Q and K projections are reordered from Hugging Face's
	// rotary layout (two halves per head) to ggml's (interleaved pairs).
	PermuteQK bool
	// SpacePrefix: the converter's class (LlamaModel) writes
	// tokenizer.ggml.add_space_prefix from tokenizer_config.json's add_prefix_space.
	SpacePrefix bool
	// Biases are the layer tensors the family must have beyond Llama's (Qwen2's Q, K
	// and V biases), as names after "blk.N.".
	Biases []string
	// WideQKNorm: the q/k norms span the whole Q and K projections (OLMo 2), not one
	// head.
	WideQKNorm bool
	// FusedUp: ffn_up holds the gate's rows then the up projection's (2 x
	// intermediate_size), as Phi-3 stores them and llama.cpp takes them.
	FusedUp bool
	// PlainSPM: the family's converter builds a SentencePiece vocabulary itself
	// (Phi3MiniModel.set_vocab): an added token is CONTROL only when marked special,
	// keeps its U+2581, and tokenizer.json's added tokens count too; and a
	// tokenizer_config.json naming GPT2Tokenizer takes the BPE path.
	PlainSPM bool
	// Back is the Hugging Face class and model_type a GGUF of this family is written
	// back as (hfgen.go).
	Back [2]string
	// Family is the family's own code (family.go), nil for one that only renames.
	Family Family
	// Experts is how a mixture-of-experts family holds its routed experts (moe.go),
	// nil for a dense one.
	Experts *expertLayout
	// MTP: the layers from num_hidden_layers on are multi-token prediction layers
	// (DeepSeek-V3's), which the converter leaves out.
	MTP bool
}

// attnLayer are the attention projections most families name alike, with the Q, K
// and V biases some have.
var attnLayer = map[string]string{
	"self_attn.q_proj.weight": "attn_q.weight",
	"self_attn.k_proj.weight": "attn_k.weight",
	"self_attn.v_proj.weight": "attn_v.weight",
	"self_attn.o_proj.weight": "attn_output.weight",
	"self_attn.q_proj.bias":   "attn_q.bias",
	"self_attn.k_proj.bias":   "attn_k.bias",
	"self_attn.v_proj.bias":   "attn_v.bias",
}

var llamaLayer = withLayer(attnLayer, map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
})

var llamaTop = map[string]string{
	"model.embed_tokens.weight": "token_embd.weight",
	"model.norm.weight":         "output_norm.weight",
	"lm_head.weight":            "output.weight",
}

// archs is the table of families. Llama and Mistral are one GGUF architecture (the
// converter writes both as "llama"; GGUF does not record which it was, and
// transformers' Llama class runs both, Mistral's sliding window aside). Qwen2 is
// Llama's layout with Q, K and V biases, rotary halves left as they are (llama.cpp
// runs it in NeoX order) and only the converter's base hyperparameters. Qwen3 is
// Qwen2's without the biases and with an RMS norm of each head's queries and keys
// (q_norm, k_norm; head_dim, which need not be hidden_size/heads, gives the key
// and value lengths). SmolLM3 is Llama's converter class under another name (llama.cpp
// leaves out the rotary embedding of every fourth layer by itself). OLMo 2 normalizes
// after attention and feed-forward only, its q/k norms over the whole projection.
// StarCoder2 is the base converter's, with LayerNorms and biases everywhere and a GELU
// feed-forward of two projections (c_fc, c_proj). Gemma 1-3, Phi-3, Granite and OLMo
// 2's sliding window have code of their own.
var archs = []*Arch{
	{
		HF:   []string{"LlamaForCausalLM", "MistralForCausalLM"},
		GGUF: "llama", Top: llamaTop, Layer: llamaLayer, PermuteQK: true, SpacePrefix: true,
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"LlamaForCausalLM", "llama"}, Family: llama{},
	},
	{
		HF:   []string{"Qwen2ForCausalLM"},
		GGUF: "qwen2", Top: llamaTop, Layer: llamaLayer,
		Skip:   []string{"self_attn.rotary_emb.inv_freq"},
		Biases: []string{"attn_q.bias", "attn_k.bias", "attn_v.bias"},
		Back:   [2]string{"Qwen2ForCausalLM", "qwen2"},
	},
	{
		HF:   []string{"Qwen3ForCausalLM"},
		GGUF: "qwen3", Top: llamaTop, Layer: withLayer(llamaLayer, qkNorm),
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"Qwen3ForCausalLM", "qwen3"},
	},
	{
		HF:   []string{"GemmaForCausalLM"},
		GGUF: "gemma", Top: llamaTop, Layer: llamaLayer,
		Skip: []string{"self_attn.rotary_emb.inv_freq", "lm_head.weight"},
		Back: [2]string{"GemmaForCausalLM", "gemma"}, Family: gemma{version: 1},
	},
	{
		HF:   []string{"Gemma2ForCausalLM"},
		GGUF: "gemma2", Top: llamaTop, Layer: gemma2Layer,
		Skip: []string{"self_attn.rotary_emb.inv_freq", "lm_head.weight"},
		Back: [2]string{"Gemma2ForCausalLM", "gemma2"}, Family: gemma{version: 2},
	},
	{
		HF:   []string{"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"},
		GGUF: "gemma3", Top: llamaTop, Layer: withLayer(gemma2Layer, qkNorm),
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"Gemma3ForCausalLM", "gemma3"}, Family: gemma{version: 3},
	},
	{
		HF:   []string{"Phi3ForCausalLM"},
		GGUF: "phi3", Top: llamaTop, Layer: map[string]string{
			"input_layernorm.weight":          "attn_norm.weight",
			"self_attn.qkv_proj.weight":       "attn_qkv.weight",
			"self_attn.o_proj.weight":         "attn_output.weight",
			"post_attention_layernorm.weight": "ffn_norm.weight",
			"mlp.gate_up_proj.weight":         "ffn_up.weight",
			"mlp.down_proj.weight":            "ffn_down.weight",
		},
		Skip:     []string{"self_attn.rotary_emb.inv_freq"},
		PlainSPM: true, FusedUp: true,
		Back: [2]string{"Phi3ForCausalLM", "phi3"}, Family: phi3{},
	},
	{
		HF:   []string{"Mistral3ForConditionalGeneration"},
		GGUF: "mistral3", Top: llamaTop, Layer: llamaLayer, PermuteQK: true, SpacePrefix: true,
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"MistralForCausalLM", "mistral"}, Family: mistral3{},
	},
	{
		HF:   []string{"GraniteForCausalLM"},
		GGUF: "granite", Top: llamaTop, Layer: llamaLayer, PermuteQK: true, SpacePrefix: true,
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"GraniteForCausalLM", "granite"}, Family: granite{},
	},
	{
		HF:   []string{"Starcoder2ForCausalLM"},
		GGUF: "starcoder2", Top: map[string]string{
			"model.embed_tokens.weight": "token_embd.weight",
			"model.norm.weight":         "output_norm.weight",
			"model.norm.bias":           "output_norm.bias",
			"lm_head.weight":            "output.weight",
		},
		Layer: withLayer(attnLayer, map[string]string{
			"input_layernorm.weight":          "attn_norm.weight",
			"input_layernorm.bias":            "attn_norm.bias",
			"self_attn.o_proj.bias":           "attn_output.bias",
			"post_attention_layernorm.weight": "ffn_norm.weight",
			"post_attention_layernorm.bias":   "ffn_norm.bias",
			"mlp.c_fc.weight":                 "ffn_up.weight",
			"mlp.c_fc.bias":                   "ffn_up.bias",
			"mlp.c_proj.weight":               "ffn_down.weight",
			"mlp.c_proj.bias":                 "ffn_down.bias",
		}),
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"Starcoder2ForCausalLM", "starcoder2"}, Family: starcoder2{},
	},
	{
		HF:   []string{"Glm4ForCausalLM"},
		GGUF: "glm4", Top: llamaTop, Layer: withLayer(attnLayer, map[string]string{
			"input_layernorm.weight":          "attn_norm.weight",
			"post_self_attn_layernorm.weight": "post_attention_norm.weight",
			"post_attention_layernorm.weight": "ffn_norm.weight",
			"mlp.gate_up_proj.weight":         "ffn_up.weight",
			"mlp.down_proj.weight":            "ffn_down.weight",
			"post_mlp_layernorm.weight":       "post_ffw_norm.weight",
		}),
		Skip: []string{"self_attn.rotary_emb.inv_freq"}, FusedUp: true,
		Back: [2]string{"Glm4ForCausalLM", "glm4"}, Family: glm4{},
	},
	{
		HF:   []string{"SmolLM3ForCausalLM"},
		GGUF: "smollm3", Top: llamaTop, Layer: llamaLayer, PermuteQK: true, SpacePrefix: true,
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"SmolLM3ForCausalLM", "smollm3"}, Family: llama{},
	},
	{
		HF:   []string{"MixtralForCausalLM"},
		GGUF: "llama", Top: llamaTop, Layer: withLayer(attnLayer, map[string]string{
			"input_layernorm.weight":          "attn_norm.weight",
			"post_attention_layernorm.weight": "ffn_norm.weight",
			"block_sparse_moe.gate.weight":    "ffn_gate_inp.weight",
		}),
		PermuteQK: true, SpacePrefix: true, Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"MixtralForCausalLM", "mixtral"}, Family: mixtral{}, Experts: mixtralExperts,
	},
	{
		HF:   []string{"Qwen2MoeForCausalLM"},
		GGUF: "qwen2moe", Top: llamaTop, Layer: withLayer(attnLayer, qwenMoELayer),
		Skip:   []string{"self_attn.rotary_emb.inv_freq"},
		Biases: []string{"attn_q.bias", "attn_k.bias", "attn_v.bias"},
		Back:   [2]string{"Qwen2MoeForCausalLM", "qwen2_moe"}, Family: qwenMoE{}, Experts: qwenExperts,
	},
	{
		HF:   []string{"Qwen3MoeForCausalLM"},
		GGUF: "qwen3moe", Top: llamaTop, Layer: withLayer(withLayer(attnLayer, qwenMoELayer), qkNorm),
		Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"Qwen3MoeForCausalLM", "qwen3_moe"}, Family: qwenMoE{}, Experts: qwenExperts,
	},
	{
		HF:   []string{"GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM"},
		GGUF: "granitemoe", Top: llamaTop, Layer: withLayer(attnLayer, map[string]string{
			"input_layernorm.weight":                "attn_norm.weight",
			"post_attention_layernorm.weight":       "ffn_norm.weight",
			"block_sparse_moe.router.layer.weight":  "ffn_gate_inp.weight",
			"block_sparse_moe.input_linear.weight":  "ffn_gate_up_exps.weight", // split (granitemoe.split)
			"block_sparse_moe.output_linear.weight": "ffn_down_exps.weight",
			"shared_mlp.input_linear.weight":        "ffn_gate_up_shexp.weight", // split
			"shared_mlp.output_linear.weight":       "ffn_down_shexp.weight",
		}),
		PermuteQK: true, SpacePrefix: true, Skip: []string{"self_attn.rotary_emb.inv_freq"},
		Back: [2]string{"GraniteMoeForCausalLM", "granitemoe"}, Family: granitemoe{},
	},
	{
		HF:   []string{"OlmoeForCausalLM"},
		GGUF: "olmoe", Top: llamaTop, Layer: withLayer(withLayer(attnLayer, qwenMoELayer), qkNorm),
		Skip: []string{"self_attn.rotary_emb.inv_freq"}, WideQKNorm: true,
		Back: [2]string{"OlmoeForCausalLM", "olmoe"}, Family: olmoe{}, Experts: qwenExperts,
	},
	{
		HF:   []string{"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"},
		GGUF: "deepseek2", Top: llamaTop, Layer: deepseekLayer,
		Skip: []string{"self_attn.rotary_emb.inv_freq"}, MTP: true,
		Back: [2]string{"DeepseekV3ForCausalLM", "deepseek_v3"}, Family: deepseek2{}, Experts: qwenExperts,
	},
	{
		HF:   []string{"Olmo2ForCausalLM"},
		GGUF: "olmo2", Top: llamaTop, Layer: withLayer(attnLayer, map[string]string{
			"self_attn.q_norm.weight":           "attn_q_norm.weight",
			"self_attn.k_norm.weight":           "attn_k_norm.weight",
			"post_attention_layernorm.weight":   "post_attention_norm.weight",
			"mlp.gate_proj.weight":              "ffn_gate.weight",
			"mlp.up_proj.weight":                "ffn_up.weight",
			"mlp.down_proj.weight":              "ffn_down.weight",
			"post_feedforward_layernorm.weight": "post_ffw_norm.weight",
		}),
		Skip:       []string{"self_attn.rotary_emb.inv_freq"},
		WideQKNorm: true,
		Back:       [2]string{"Olmo2ForCausalLM", "olmo2"}, Family: olmo2{},
	},
	{
		HF:   []string{"GptOssForCausalLM"},
		GGUF: "gpt-oss", Top: llamaTop, Layer: gptossLayer,
		Skip:   []string{"self_attn.rotary_emb.inv_freq"},
		Family: gptoss{},
	},
}

// qwenMoELayer are the layer names of Qwen2-MoE and Qwen3-MoE beside attention: the
// norms, the router, and Qwen2-MoE's shared expert with its gate (a checkpoint has
// these in every layer or in none).
var qwenMoELayer = map[string]string{
	"input_layernorm.weight":             "attn_norm.weight",
	"post_attention_layernorm.weight":    "ffn_norm.weight",
	"mlp.gate.weight":                    "ffn_gate_inp.weight",
	"mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
	"mlp.shared_expert.up_proj.weight":   "ffn_up_shexp.weight",
	"mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
	"mlp.shared_expert_gate.weight":      "ffn_gate_inp_shexp.weight",
}

// qkNorm are the layer names of an RMS norm of each head's queries and keys.
var qkNorm = map[string]string{
	"self_attn.q_norm.weight": "attn_q_norm.weight",
	"self_attn.k_norm.weight": "attn_k_norm.weight",
}

// gemma2Layer are Gemma 2's and 3's layer names: a norm before and after attention
// and before and after the feed-forward network.
var gemma2Layer = withLayer(llamaLayer, map[string]string{
	"post_attention_layernorm.weight":   "post_attention_norm.weight",
	"pre_feedforward_layernorm.weight":  "ffn_norm.weight",
	"post_feedforward_layernorm.weight": "post_ffw_norm.weight",
})

// withLayer returns base's layer names with more.
func withLayer(base, more map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, more)
	return m
}

// LookupArch returns the family of a config.json "architectures" name.
func LookupArch(hf string) (*Arch, bool) {
	for _, a := range archs {
		for _, n := range a.HF {
			if n == hf {
				return a, true
			}
		}
	}
	return nil, false
}

// Supported lists the Hugging Face architecture names apr converts, sorted.
func Supported() []string {
	var names []string
	for _, a := range archs {
		names = append(names, a.HF...)
	}
	sort.Strings(names)
	return names
}

var layerName = regexp.MustCompile(`^model\.layers\.(\d+)\.(.+)$`)

// MaxLayers caps the layer number N of a tensor name "model.layers.N." (or
// "blk.N."): a checkpoint holds at most 65,536 tensors (safetensors.MaxTensors), so
// it cannot have more layers.
const MaxLayers = 1 << 16

// layerNumber parses a layer number as the converter's name map takes it, which
// lists "model.layers.{bid}." for each layer: canonical decimal only ("0", "17"; not
// "00", "01", "+1"), here below MaxLayers.
func layerNumber(s string) (int, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' || len(s) > len(strconv.Itoa(MaxLayers)) ||
		strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n < MaxLayers
}

// GGUFName maps a Hugging Face tensor name to llama.cpp's; skip reports a tensor the
// converter drops. A name the family does not know, or whose layer number is not
// canonical decimal below MaxLayers, is an error naming it.
func (a *Arch) GGUFName(hf string) (name string, layer int, skip bool, err error) {
	if multimodal(hf) || slices.Contains(a.Skip, hf) {
		return "", -1, true, nil
	}
	full := hf
	hf = strings.Replace(hf, "language_model.", "", 1)
	if g, ok := a.Top[hf]; ok {
		return g, -1, false, nil
	}
	if m := layerName.FindStringSubmatch(hf); m != nil {
		n, ok := layerNumber(m[1])
		if !ok {
			return "", -1, false, fmt.Errorf("tensor %q: layer number %q is not a decimal number below %d without leading zeros", full, m[1], MaxLayers)
		}
		for _, s := range a.Skip {
			if m[2] == s {
				return "", n, true, nil
			}
		}
		if g, ok := a.Layer[m[2]]; ok {
			return fmt.Sprintf("blk.%d.%s", n, g), n, false, nil
		}
		if _, g, ok := a.Experts.expertOf(m[2]); ok { // one expert of the stacked tensor g
			return fmt.Sprintf("blk.%d.%s", n, g), n, false, nil
		}
	}
	return "", -1, false, fmt.Errorf("tensor %q is not part of a %s model as apr knows it", hf, strings.Join(a.HF, "/"))
}

// multimodal reports a tensor of a vision or audio tower, which the converter leaves
// out of the language model's GGUF (TextModel.filter_tensors; llama.cpp's mmproj file
// holds them).
func multimodal(name string) bool {
	for _, p := range []string{"mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.",
		"sound_encoder.", "sound_projection.", "speech_embeddings."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, p := range []string{"visual.", "vision.", "audio.", "talker.", "vision_", "audio_", "token2wav.",
		"code2wav.", "projector.", "pre_mm_projector_norm", "image_newline", "view_seperator", "patch_embed",
		"patch_merger.", "patch_merge_mlp.", "model.connector."} {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

// required are the tensors every layer of the family holds (its layer names but
// biases, which some checkpoints have and some not, or Biases says, and shared
// experts, which some mixtures of experts have), after "blk.N.".
func (a *Arch) required() []string {
	var r []string
	for _, g := range a.Layer {
		if !strings.HasSuffix(g, ".bias") && !strings.Contains(g, "_shexp") && !slices.Contains(r, g) && !slices.Contains(gptossOptional, g) {
			r = append(r, g)
		}
	}
	slices.Sort(r)
	return r
}

// HFName is the inverse of GGUFName.
func (a *Arch) HFName(g string) (string, error) {
	for hf, n := range a.Top {
		if n == g {
			return hf, nil
		}
	}
	var n int
	var rest string
	if i := strings.IndexByte(strings.TrimPrefix(g, "blk."), '.'); strings.HasPrefix(g, "blk.") && i > 0 {
		if l, ok := layerNumber(g[4 : 4+i]); ok {
			n, rest = l, g[4+i+1:]
		}
	}
	for hf, s := range a.Layer {
		if s == rest {
			return fmt.Sprintf("model.layers.%d.%s", n, hf), nil
		}
	}
	return "", fmt.Errorf("tensor %q has no Hugging Face name in a %s model", g, a.GGUF)
}

// permutedRows reports whether a GGUF tensor's rows are permuted, and over how many
// heads: Q over the attention heads, K over the key-value heads.
func (a *Arch) permutedRows(g string, h Hparams) (heads int, ok bool) {
	if !a.PermuteQK {
		return 0, false
	}
	switch {
	case strings.HasSuffix(g, ".attn_q.weight"), strings.HasSuffix(g, ".attn_q.bias"):
		return h.Heads, true
	case strings.HasSuffix(g, ".attn_k.weight"), strings.HasSuffix(g, ".attn_k.bias"):
		return h.KVHeads, true
	}
	return 0, false
}

// permute reorders the rows of a tensor of heads heads (rows of rowBytes bytes each)
// from Hugging Face's rotary layout to ggml's: within a head of d rows, row 2j comes
// from row j and row 2j+1 from row j+d/2. inverse undoes it.
func permute(dst, src []byte, heads int, rowBytes int, inverse bool) {
	rows := len(src) / rowBytes
	d := rows / heads
	half := d / 2
	for h := 0; h < heads; h++ {
		for j := 0; j < half; j++ {
			for s := 0; s < 2; s++ {
				ggml := h*d + 2*j + s
				hf := h*d + s*half + j
				to, from := ggml, hf
				if inverse {
					to, from = hf, ggml
				}
				copy(dst[to*rowBytes:(to+1)*rowBytes], src[from*rowBytes:(from+1)*rowBytes])
			}
		}
	}
}

// permuteHeads returns a reader of the rows of r, the data of tensor info (named
// name) over heads heads, permuted as permute does. The permutation stays within a
// head, so one head is held at a time: a 5120-wide BF16 Q takes 2.6 MB, not 52 MB.
func permuteHeads(name string, info container.TensorInfo, heads int, r io.Reader, inverse bool) (io.Reader, error) {
	size, err := dtype.Size(info.DType, info.Shape)
	if err != nil {
		return nil, tensor.Wrap(name, err)
	}
	if len(info.Shape) == 0 || info.Shape[0] == 0 || heads <= 0 {
		return nil, fmt.Errorf("tensor %q: shape %v has no rows to split into %d heads", name, info.Shape, heads)
	}
	rows := info.Shape[0]
	if rows%int64(2*heads) != 0 {
		return nil, fmt.Errorf("tensor %q: %d rows do not split into %d heads of pairs", name, rows, heads)
	}
	rowBytes := int(size / rows)
	headBytes := int(rows) / heads * rowBytes
	return &headReader{r: r, left: heads, in: make([]byte, headBytes), out: make([]byte, headBytes),
		rowBytes: rowBytes, inverse: inverse}, nil
}

type headReader struct {
	r        io.Reader
	left     int    // heads not yet read
	in, out  []byte // one head as read, and permuted
	pending  []byte // the unread rest of out
	rowBytes int
	inverse  bool
}

func (h *headReader) Read(p []byte) (int, error) {
	if err := h.fill(); err != nil {
		return 0, err
	}
	n := copy(p, h.pending)
	h.pending = h.pending[n:]
	return n, nil
}

// fill permutes the next head when the last one has been read.
func (h *headReader) fill() error {
	if len(h.pending) > 0 {
		return nil
	}
	if h.left == 0 {
		return io.EOF
	}
	if _, err := io.ReadFull(h.r, h.in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	permute(h.out, h.in, 1, h.rowBytes, h.inverse)
	h.left--
	h.pending = h.out
	return nil
}

// Len is the number of bytes not yet read (container.InPlace).
func (h *headReader) Len() int { return len(h.pending) + h.left*len(h.out) }

// WriteTo writes each permuted head to w from its buffer.
func (h *headReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := h.fill(); err == io.EOF {
			return total, nil
		} else if err != nil {
			return total, err
		}
		n, err := w.Write(h.pending)
		h.pending = h.pending[n:]
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}
