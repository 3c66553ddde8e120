package llm

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// pixtral is the projector of Mistral Small 3.1 (Mistral3ForConditionalGeneration in
// Hugging Face's layout): a Pixtral vision tower (vision_tower.) and its projector
// (multi_modal_projector.), as the converter's LlavaVisionModel writes them
// (conversion/llava.py), and the [IMG_BREAK] token's embedding row, which llama.cpp's
// clip loader requires of a pixtral projector (tools/mtmd/clip.cpp, load_tensors,
// PROJECTOR_TYPE_PIXTRAL: v.token_embd.img_break) and the converter means to take from
// the text model's embed_tokens.weight (llava.py, modify_tensors) but never does:
// MmprojModel.filter_tensors drops every language_model. tensor before
// modify_tensors sees it. apr takes the row there (docs/GGUF.md).
type pixtral struct{}

// pixtralNames maps the vision tower's and projector's names (the block number
// taken out) to llama.cpp's, as gguf-py's tensor_mapping.py does for "pixtral-hf".
var pixtralNames = map[string]string{
	"vision_tower.patch_conv":                                  "v.patch_embd",
	"vision_tower.ln_pre":                                      "v.pre_ln",
	"vision_tower.transformer.layers.#.attention.q_proj":       "v.blk.#.attn_q",
	"vision_tower.transformer.layers.#.attention.k_proj":       "v.blk.#.attn_k",
	"vision_tower.transformer.layers.#.attention.v_proj":       "v.blk.#.attn_v",
	"vision_tower.transformer.layers.#.attention.o_proj":       "v.blk.#.attn_out",
	"vision_tower.transformer.layers.#.attention_norm":         "v.blk.#.ln1",
	"vision_tower.transformer.layers.#.ffn_norm":               "v.blk.#.ln2",
	"vision_tower.transformer.layers.#.feed_forward.gate_proj": "v.blk.#.ffn_gate",
	"vision_tower.transformer.layers.#.feed_forward.up_proj":   "v.blk.#.ffn_up",
	"vision_tower.transformer.layers.#.feed_forward.down_proj": "v.blk.#.ffn_down",
	"multi_modal_projector.linear_#":                           "mm.#",
	"multi_modal_projector.norm":                               "mm.input_norm",
	"multi_modal_projector.patch_merger.merging_layer":         "mm.patch_merger",
}

var (
	blockNumber     = regexp.MustCompile(`\.(\d+)(\.|$)|_(\d+)$`)
	pixtralPrefixes = []string{"vision_tower.", "multi_modal_projector."}
)

func (pixtral) Name(p *Projection, hf string) (string, bool, error) {
	if !slices.ContainsFunc(pixtralPrefixes, func(pre string) bool { return strings.HasPrefix(hf, pre) }) {
		return "", true, nil // the text model's, and whatever else the converter filters
	}
	base, suffix := hf, ""
	for _, s := range []string{".weight", ".bias"} {
		if strings.HasSuffix(hf, s) {
			base, suffix = strings.TrimSuffix(hf, s), s
		}
	}
	num := ""
	key := blockNumber.ReplaceAllStringFunc(base, func(m string) string {
		sm := blockNumber.FindStringSubmatch(m)
		if sm[3] != "" {
			num = sm[3]
			return "_#"
		}
		num = sm[1]
		return ".#" + sm[2]
	})
	g, ok := pixtralNames[key]
	if !ok || suffix == "" {
		return "", false, fmt.Errorf("--mmproj: tensor %q of the vision tower has no name in llama.cpp's projector (the converter cannot map it either)", hf)
	}
	return strings.Replace(g, "#", num, 1) + suffix, false, nil
}

// Permuted: Q's and K's rows (weights and biases) over the vision heads, as LlamaModel.permute.
func (pixtral) Permuted(p *Projection, hf string) int {
	if !strings.HasPrefix(hf, "vision_tower.") {
		return 0
	}
	for _, s := range []string{"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias"} {
		if strings.HasSuffix(hf, s) {
			n, _, _ := p.Vision.int("num_attention_heads", true)
			return n
		}
	}
	return 0
}

func (pixtral) KVs(p *Projection) ([]gguf.KV, error) {
	if mt, _ := p.Vision["model_type"].(string); mt != "pixtral" { // LlavaVisionModel refuses the others
		return nil, fmt.Errorf("config.json: vision_config.model_type is %v, expected \"pixtral\" (apr writes no other projector of this class)", p.Vision["model_type"])
	}
	eps := 1e-5 // hard-coded in transformers' modeling_pixtral.py, as the converter notes
	if v, ok, err := p.Vision.float("layer_norm_eps"); err != nil {
		return nil, fmt.Errorf("vision_config: %w", err)
	} else if ok {
		eps = v
	}
	kvs := []gguf.KV{{Key: "clip.projector_type", Value: gguf.String("pixtral")},
		{Key: "clip.vision.attention.layer_norm_epsilon", Value: gguf.Float32(float32(eps))}}
	switch act, _ := p.Vision["hidden_act"].(string); act {
	case "silu":
		kvs = append(kvs, gguf.KV{Key: "clip.use_silu", Value: gguf.Bool(true)})
	case "gelu":
		kvs = append(kvs, gguf.KV{Key: "clip.use_gelu", Value: gguf.Bool(true)})
	default:
		return nil, fmt.Errorf("config.json: vision_config.hidden_act is %v, expected \"silu\" or \"gelu\"", p.Vision["hidden_act"])
	}
	if n, ok, err := p.Top.int("spatial_merge_size", false); err != nil {
		return nil, err
	} else if ok {
		kvs = append(kvs, gguf.KV{Key: "clip.vision.spatial_merge_size", Value: gguf.Uint32(uint32(n))})
	}
	return kvs, nil
}

func (pixtral) Needs(p *Projection) []Need {
	need := []Need{{"v.token_embd.img_break", "the [IMG_BREAK] row of the text model's embed_tokens.weight"},
		{"v.patch_embd.weight", "vision_tower.patch_conv.weight"}, {"mm.1.weight", "multi_modal_projector.linear_1.weight"},
		{"mm.2.weight", "multi_modal_projector.linear_2.weight"}}
	n, _, _ := p.Vision.int("num_hidden_layers", true)
	for i := range n {
		for _, t := range []string{"attn_q", "attn_k", "attn_v", "attn_out", "ln1", "ln2", "ffn_gate", "ffn_up", "ffn_down"} {
			need = append(need, Need{Tensor: fmt.Sprintf("v.blk.%d.%s.weight", i, t), From: "vision_config.num_hidden_layers layers"})
		}
	}
	return need
}

// Derived is, for the text model's token embeddings (the tensor whose name holds
// "embed_tokens.weight", as LlavaVisionModel.modify_tensors looks for it), their
// [IMG_BREAK] row in F32 (a 1-D tensor) named v.token_embd.img_break. The token's id
// is the one its get_token_id finds: tokenizer_config.json's added_tokens_decoder,
// else tokenizer.json's added_tokens.
func (pixtral) Derived(p *Projection, hf string) ([]Planned, error) {
	if !strings.Contains(hf, "embed_tokens.weight") || slices.ContainsFunc(pixtralPrefixes, func(pre string) bool { return strings.HasPrefix(hf, pre) }) {
		return nil, nil
	}
	id, err := addedTokenID(p.files, "[IMG_BREAK]")
	if err != nil {
		return nil, err
	}
	if id <= 0 { // the converter takes the row only for an id above 0
		return nil, nil
	}
	t := p.shapes[hf]
	if len(t.Shape) != 2 || !t.DType.Info().Float || t.DType.Info().Quantized() {
		return nil, fmt.Errorf("--mmproj: tensor %q is %v of shape %v, expected a 2-D float table of token embeddings", t.Name, t.DType, t.Shape)
	}
	if int64(id) >= t.Shape[0] {
		return nil, fmt.Errorf("--mmproj: [IMG_BREAK] is token %d, but %q has only %d rows", id, t.Name, t.Shape[0])
	}
	row := []int64{t.Shape[1]}
	rowSize, err := dtype.Size(t.DType, row)
	if err != nil {
		return nil, tensor.Wrap(t.Name, err)
	}
	info := container.TensorInfo{Name: "v.token_embd.img_break", DType: dtype.F32, Shape: row}
	return []Planned{{Info: info, Make: func(src Source) (io.Reader, error) {
		ra, err := src.Open(t.Name)
		if err != nil {
			return nil, err
		}
		data := make([]byte, rowSize)
		if _, err := ra.ReadAt(data, int64(id)*rowSize); err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		w, err := stream.ToF32(tensor.Tensor{Name: info.Name, DType: t.DType, Shape: row, Data: data})
		if err != nil {
			return nil, err
		}
		return bytes.NewReader(w.Data), nil
	}}}, nil
}

// addedTokenID finds an added token's id as the converter's get_token_id does; an
// error when neither file names it.
func addedTokenID(files map[string][]byte, token string) (int, error) {
	if b, ok := files["tokenizer_config.json"]; ok {
		m, err := parseJSON("tokenizer_config.json", b)
		if err != nil {
			return 0, err
		}
		dec, _ := m["added_tokens_decoder"].(map[string]any)
		ids := make([]string, 0, len(dec))
		for k := range dec {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		for _, k := range ids {
			if e, _ := dec[k].(map[string]any); e != nil && e["content"] == token {
				var id int
				if _, err := fmt.Sscanf(k, "%d", &id); err != nil || fmt.Sprint(id) != k {
					return 0, fmt.Errorf("tokenizer_config.json: added_tokens_decoder key %q of %s is not a token id", k, token)
				}
				return id, nil
			}
		}
	}
	if b, ok := files["tokenizer.json"]; ok {
		m, err := parseJSON("tokenizer.json", b)
		if err != nil {
			return 0, err
		}
		added, _ := m["added_tokens"].([]any)
		for _, a := range added {
			if e, _ := a.(map[string]any); e != nil && e["content"] == token {
				id, _, err := config(e).int("id", true)
				if err != nil {
					return 0, fmt.Errorf("tokenizer.json added_tokens: %w", err)
				}
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("--mmproj: token %s is in neither tokenizer_config.json's added_tokens_decoder nor tokenizer.json's added_tokens (the projector needs its embedding row)", token)
}
