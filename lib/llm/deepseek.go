package llm

import (
	"fmt"
	"io"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// deepseekLayer are DeepSeek-V2's and V3's layer names: multi-head latent attention
// (queries through a low-rank pair q_a/q_b, or one q_proj where q_lora_rank is null as
// in V2-Lite; keys and values through kv_a_proj_with_mqa and kv_b_proj), a dense
// feed-forward network in the leading layers, and in the others the router, V3's score
// correction bias (the converter's exp_probs_b.bias) and the shared experts.
var deepseekLayer = map[string]string{
	"input_layernorm.weight":              "attn_norm.weight",
	"post_attention_layernorm.weight":     "ffn_norm.weight",
	"self_attn.q_proj.weight":             "attn_q.weight",
	"self_attn.q_a_proj.weight":           "attn_q_a.weight",
	"self_attn.q_a_layernorm.weight":      "attn_q_a_norm.weight",
	"self_attn.q_b_proj.weight":           "attn_q_b.weight",
	"self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
	"self_attn.kv_a_layernorm.weight":     "attn_kv_a_norm.weight",
	"self_attn.kv_b_proj.weight":          "attn_kv_b.weight",
	"self_attn.o_proj.weight":             "attn_output.weight",
	"mlp.gate_proj.weight":                "ffn_gate.weight",
	"mlp.up_proj.weight":                  "ffn_up.weight",
	"mlp.down_proj.weight":                "ffn_down.weight",
	"mlp.gate.weight":                     "ffn_gate_inp.weight",
	"mlp.gate.e_score_correction_bias":    "exp_probs_b.bias",
	"mlp.shared_experts.gate_proj.weight": "ffn_gate_shexp.weight",
	"mlp.shared_experts.up_proj.weight":   "ffn_up_shexp.weight",
	"mlp.shared_experts.down_proj.weight": "ffn_down_shexp.weight",
}

// deepseek2 is the code of DeepSeek-V2 and V3 (the converter's DeepseekV2Model, which
// llama.cpp runs as deepseek2): one KV head (the latent attention runs as multi-query
// attention over the compressed keys and values), the ranks and head sizes of the
// latent attention, the leading dense blocks, the shared experts and expert weighting,
// and kv_b_proj split into attn_k_b (transposed per head) and attn_v_b. The
// multi-token prediction layers (from num_hidden_layers on) are left out, as the
// converter leaves them.
type deepseek2 struct{ plain }

// mla are the latent attention's sizes from config.json.
type mla struct {
	qLora, kvLora, nope, rope, v int
	hasQLora                     bool
}

func (deepseek2) mla(cp *Checkpoint) (mla, error) {
	var m mla
	var err error
	get := func(dst *int, key string, def int) {
		if err != nil {
			return
		}
		var ok bool
		if *dst, ok, err = cp.config.int(key, def < 0); err == nil && !ok {
			*dst = def
		}
	}
	get(&m.kvLora, "kv_lora_rank", 512) // the converter's default
	get(&m.nope, "qk_nope_head_dim", -1)
	get(&m.rope, "qk_rope_head_dim", -1)
	get(&m.v, "v_head_dim", -1)
	if err != nil {
		return m, err
	}
	m.qLora, m.hasQLora, err = cp.config.int("q_lora_rank", false)
	return m, err
}

// denseLayers is first_k_dense_replace: the leading layers with a dense feed-forward
// network (all of them in a model without routed experts, none when unset in one with).
func (deepseek2) denseLayers(cp *Checkpoint) (int, error) {
	n, ok, err := cp.config.int("first_k_dense_replace", false)
	if err != nil || ok {
		return n, err
	}
	if _, has := cp.config["n_routed_experts"]; has && cp.config["n_routed_experts"] != nil {
		return 0, nil
	}
	return cp.Hparams.Layers, nil
}

// layerWhy names first_k_dense_replace, which makes layer l dense or a mixture of
// experts.
func (d deepseek2) layerWhy(cp *Checkpoint, l int) string {
	n, _ := d.denseLayers(cp)
	kind := "a mixture of experts (mlp.gate and mlp.experts)"
	if l < n {
		kind = "dense (mlp.gate_proj, up_proj, down_proj)"
	}
	if _, ok, _ := cp.config.int("first_k_dense_replace", false); !ok {
		return fmt.Sprintf("config.json: first_k_dense_replace is not given, so %d layers are dense: layer %d is %s", n, l, kind)
	}
	return fmt.Sprintf("config.json: first_k_dense_replace %d makes layer %d %s", n, l, kind)
}

func (d deepseek2) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	a, c := cp.Arch.GGUF, cp.config
	m, err := d.mla(cp)
	if err != nil {
		return nil, err
	}
	dense, err := d.denseLayers(cp)
	if err != nil {
		return nil, err
	}
	kvs := make([]gguf.KV, 0, len(base)+16)
	for _, kv := range base {
		if kv.Key == a+".attention.head_count_kv" { // set to 1 before the base keys are written
			kv.Value = gguf.Uint32(1)
		}
		kvs = append(kvs, kv)
	}
	u32 := func(k string, v int) { kvs = append(kvs, gguf.KV{Key: a + "." + k, Value: gguf.Uint32(uint32(v))}) }
	u32("leading_dense_block_count", dense)
	u32("vocab_size", cp.Hparams.Vocab)
	if m.hasQLora {
		u32("attention.q_lora_rank", m.qLora)
	}
	u32("attention.kv_lora_rank", m.kvLora)
	u32("attention.key_length", m.kvLora+m.rope)
	u32("attention.value_length", m.kvLora)
	u32("attention.key_length_mla", m.nope+m.rope)
	u32("attention.value_length_mla", m.v)
	ff, _, err := c.intOf("moe_intermediate_size", "intermediate_size")
	if err != nil {
		return nil, err
	}
	u32("expert_feed_forward_length", ff)
	if n, ok, err := c.int("n_routed_experts", false); err != nil {
		return nil, err
	} else if ok {
		u32("expert_count", n)
	}
	shared, _, err := c.int("n_shared_experts", false)
	if err != nil {
		return nil, err
	}
	u32("expert_shared_count", shared)
	if f, ok, err := c.float("routed_scaling_factor"); err != nil {
		return nil, err
	} else if ok {
		kvs = append(kvs, gguf.KV{Key: a + ".expert_weights_scale", Value: gguf.Float32(float32(f))})
	}
	if b, _ := c["norm_topk_prob"].(bool); b {
		kvs = append(kvs, gguf.KV{Key: a + ".expert_weights_norm", Value: gguf.Bool(true)})
	}
	u32("rope.dimension_count", m.rope)
	if f, ok, err := cp.Hparams.rope.float("mscale_all_dim"); err != nil {
		return nil, err
	} else if ok {
		// 0.1 x mscale_all_dim, as the converter writes it for DeepSeek (not ln)
		kvs = append(kvs, gguf.KV{Key: a + ".rope.scaling.yarn_log_multiplier", Value: gguf.Float32(float32(0.1 * f))})
	}
	return kvs, nil
}

// layerTensors are the tensors layer l must hold, after "blk.N.": the latent
// attention, then the dense feed-forward network of the leading layers, or the router
// and stacked experts (with the score correction bias and shared experts where the
// checkpoint has them in any layer: have).
func (d deepseek2) layerTensors(cp *Checkpoint, l int, have func(string) bool) ([]string, error) {
	m, err := d.mla(cp)
	if err != nil {
		return nil, err
	}
	dense, err := d.denseLayers(cp)
	if err != nil {
		return nil, err
	}
	r := []string{"attn_norm.weight", "ffn_norm.weight", "attn_kv_a_mqa.weight", "attn_kv_a_norm.weight",
		"attn_kv_b.weight", "attn_output.weight"}
	if m.hasQLora {
		r = append(r, "attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight")
	} else {
		r = append(r, "attn_q.weight")
	}
	if l < dense {
		return append(r, "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"), nil
	}
	r = append(r, "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight")
	for _, k := range []string{"exp_probs_b.bias", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight"} {
		if have(k) {
			r = append(r, k)
		}
	}
	return r, nil
}

// shapeOf is the shape config.json gives the latent attention's tensors (suffix after
// "blk.N."), ok false for the others.
func (d deepseek2) shapeOf(cp *Checkpoint, suffix string) ([]int64, string, bool, error) {
	m, err := d.mla(cp)
	if err != nil {
		return nil, "", false, err
	}
	h := int64(cp.Hparams.Heads)
	hidden := int64(cp.Hparams.Hidden)
	q, kvl := int64(m.qLora), int64(m.kvLora)
	nope, rope, v := int64(m.nope), int64(m.rope), int64(m.v)
	switch suffix {
	case "attn_q.weight":
		return []int64{h * (nope + rope), hidden}, "num_attention_heads/qk_nope_head_dim/qk_rope_head_dim", true, nil
	case "attn_q_a.weight":
		return []int64{q, hidden}, "q_lora_rank/hidden_size", true, nil
	case "attn_q_a_norm.weight":
		return []int64{q}, "q_lora_rank", true, nil
	case "attn_q_b.weight":
		return []int64{h * (nope + rope), q}, "num_attention_heads/qk_nope_head_dim/qk_rope_head_dim/q_lora_rank", true, nil
	case "attn_kv_a_mqa.weight":
		return []int64{kvl + rope, hidden}, "kv_lora_rank/qk_rope_head_dim/hidden_size", true, nil
	case "attn_kv_a_norm.weight":
		return []int64{kvl}, "kv_lora_rank", true, nil
	case "attn_kv_b.weight":
		return []int64{int64(cp.Hparams.KVHeads) * (nope + v), kvl}, "num_key_value_heads/qk_nope_head_dim/v_head_dim/kv_lora_rank", true, nil
	case "attn_output.weight":
		return []int64{hidden, h * v}, "hidden_size/num_attention_heads/v_head_dim", true, nil
	}
	return nil, "", false, nil
}

// split writes kv_b_proj ([heads x (nope + v), kv_lora], each head's key rows then
// its value rows) as the converter does: attn_k_b [heads, kv_lora, nope], each head's
// key rows transposed, then attn_v_b [heads, v, kv_lora], each head's value rows.
// Both read the source one head at a time.
func (d deepseek2) split(cp *Checkpoint, name string, layer int, rest string) ([]Part, bool, error) {
	if rest != "self_attn.kv_b_proj.weight" {
		return nil, false, nil
	}
	m, err := d.mla(cp)
	if err != nil {
		return nil, true, err
	}
	src, ok := cp.shapes[name]
	if !ok {
		return nil, true, fmt.Errorf("tensor %q is not in the checkpoint's list", name)
	}
	heads, kvl := int64(cp.Hparams.KVHeads), int64(m.kvLora)
	nope, v := int64(m.nope), int64(m.v)
	elem := int64(src.DType.Info().BlockBytes)
	if src.DType.Info().BlockElems != 1 {
		return nil, true, fmt.Errorf("tensor %q is %v; apr splits kv_b_proj of a float type only", name, src.DType)
	}
	mk := func(g string, shape []int64, keys bool) Part {
		return Part{
			Info:    container.TensorInfo{Name: fmt.Sprintf("blk.%d.%s", layer, g), DType: src.DType, Shape: shape},
			Sources: []string{name},
			read: func(open func(string) (io.Reader, error)) (io.Reader, error) {
				r, err := open(name)
				if err != nil {
					return nil, err
				}
				return &kvbReader{name: name, r: r, heads: heads, nope: nope, v: v, cols: kvl, elem: elem, keys: keys}, nil
			},
		}
	}
	return []Part{
		mk("attn_k_b.weight", []int64{heads, kvl, nope}, true),
		mk("attn_v_b.weight", []int64{heads, v, kvl}, false),
	}, true, nil
}

// kvbReader reads one half of kv_b_proj, one head at a time: the key rows transposed
// (keys), or the value rows.
type kvbReader struct {
	name                 string
	r                    io.Reader
	heads, nope, v, cols int64
	elem                 int64
	keys                 bool
	done                 int64 // heads given out
	in, out, pending     []byte
}

func (k *kvbReader) Read(p []byte) (int, error) {
	if len(k.pending) == 0 {
		if k.done == k.heads {
			return 0, io.EOF
		}
		if err := k.head(); err != nil {
			return 0, err
		}
	}
	n := copy(p, k.pending)
	k.pending = k.pending[n:]
	return n, nil
}

// head reads the next head's rows and makes its part.
func (k *kvbReader) head() error {
	row := k.cols * k.elem
	if k.in == nil {
		k.in = make([]byte, (k.nope+k.v)*row)
		k.out = make([]byte, max(k.nope, k.v)*row)
	}
	if _, err := io.ReadFull(k.r, k.in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return tensor.Wrap(k.name, err)
	}
	k.done++
	if !k.keys {
		k.pending = k.in[k.nope*row:]
		return nil
	}
	// keys: [nope, cols] -> [cols, nope]
	e := k.elem
	for i := range k.nope {
		for j := range k.cols {
			copy(k.out[(j*k.nope+i)*e:(j*k.nope+i+1)*e], k.in[(i*k.cols+j)*e:(i*k.cols+j+1)*e])
		}
	}
	k.pending = k.out[:k.nope*row]
	return nil
}

// maxKB caps the attn_k_b tensor held on the way back to Hugging Face's layout
// (DeepSeek-V3's is 128 x 512 x 128 values: 32 MiB in F32).
const maxKB = 1 << 30

// kvbInfo is kv_b_proj's table entry from its two halves' (k_b [heads, kv_lora, nope],
// v_b [heads, v, kv_lora]): [heads x (nope + v), kv_lora], under attn_kv_b's name.
func kvbInfo(k, v container.TensorInfo) (container.TensorInfo, error) {
	if len(k.Shape) != 3 || len(v.Shape) != 3 || k.Shape[0] != v.Shape[0] || k.Shape[1] != v.Shape[2] || k.DType != v.DType ||
		k.DType.Info().BlockElems != 1 || strings.TrimSuffix(k.Name, "attn_k_b.weight") != strings.TrimSuffix(v.Name, "attn_v_b.weight") {
		return v, fmt.Errorf("tensors %q %v %v and %q %v %v are not the two halves of one kv_b_proj ([heads, kv_lora, nope] and [heads, v, kv_lora] of one float type)",
			k.Name, k.DType, k.Shape, v.Name, v.DType, v.Shape)
	}
	return container.TensorInfo{Name: strings.TrimSuffix(k.Name, "attn_k_b.weight") + "attn_kv_b.weight", DType: k.DType,
		Shape: []int64{k.Shape[0] * (k.Shape[2] + v.Shape[1]), k.Shape[1]}}, nil
}

// joinKVB makes kv_b_proj again from attn_k_b (info, r: held whole, since each head's
// key rows come before its value rows) and the attn_v_b that follows it in the stream:
// each head's key rows transposed back, then its value rows.
func (s *hfStream) joinKVB(k container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, error) {
	size, err := dtype.Size(k.DType, k.Shape)
	if err != nil || size > maxKB {
		return k, nil, fmt.Errorf("tensor %q (shape %v): over the %d bytes apr holds to join kv_b_proj back (%v)", k.Name, k.Shape, maxKB, err)
	}
	keys := make([]byte, size)
	if _, err := io.ReadFull(r, keys); err != nil {
		return k, nil, tensor.Wrap(k.Name, err)
	}
	v, vr, err := s.next()
	if err != nil {
		return k, nil, err
	}
	info, err := kvbInfo(k, v)
	if err != nil {
		return k, nil, err
	}
	heads, kvl, nope, vd := k.Shape[0], k.Shape[1], k.Shape[2], v.Shape[1]
	e := int64(k.DType.Info().BlockBytes)
	head := make([]byte, (nope+vd)*kvl*e)
	var pending []byte
	h := int64(0)
	return info, readerFunc(func(p []byte) (int, error) {
		if len(pending) == 0 {
			if h == heads {
				return 0, io.EOF
			}
			kh := keys[h*kvl*nope*e:]
			for i := range nope { // [kv_lora, nope] -> [nope, kv_lora]
				for j := range kvl {
					copy(head[(i*kvl+j)*e:(i*kvl+j+1)*e], kh[(j*nope+i)*e:(j*nope+i+1)*e])
				}
			}
			if _, err := io.ReadFull(vr, head[nope*kvl*e:]); err != nil {
				return 0, tensor.Wrap(v.Name, err)
			}
			h++
			pending = head
		}
		n := copy(p, pending)
		pending = pending[n:]
		return n, nil
	}), nil
}

// readerFunc is an io.Reader of a function.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
