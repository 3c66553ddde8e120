package llm

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
)

// expertLayout is how a family's checkpoint holds the routed experts of a
// mixture-of-experts layer: one 2-D tensor per expert and projection, under
// "model.layers.N.<prefix>E.<projection>", which the converter stacks into one 3-D
// tensor per projection (experts on the slowest axis, expert 0 first), as llama.cpp's
// ffn_gate_exps, ffn_up_exps and ffn_down_exps.
type expertLayout struct {
	prefix string // "mlp.experts." (Qwen-MoE, DeepSeek) or "block_sparse_moe.experts." (Mixtral)
	// proj maps each projection's name after "E." to the stacked tensor's name after
	// "blk.N.", in the order the converter writes them (its modify_tensors loop).
	proj [][2]string
}

// qwenExperts is the layout of Qwen2-MoE, Qwen3-MoE and DeepSeek-V2/V3, whose
// converters write down, gate and up.
var qwenExperts = &expertLayout{prefix: "mlp.experts.", proj: [][2]string{
	{"down_proj.weight", "ffn_down_exps.weight"},
	{"gate_proj.weight", "ffn_gate_exps.weight"},
	{"up_proj.weight", "ffn_up_exps.weight"},
}}

// mixtralExperts is Mixtral's layout: w1 the gate, w2 down, w3 up, written in that order.
var mixtralExperts = &expertLayout{prefix: "block_sparse_moe.experts.", proj: [][2]string{
	{"w1.weight", "ffn_gate_exps.weight"},
	{"w2.weight", "ffn_down_exps.weight"},
	{"w3.weight", "ffn_up_exps.weight"},
}}

// expertOf parses rest, a tensor name after "model.layers.N.", as one expert's
// projection: its expert number and the stacked tensor's name after "blk.N.".
func (l *expertLayout) expertOf(rest string) (expert int, stacked string, ok bool) {
	if l == nil {
		return 0, "", false
	}
	after, ok := strings.CutPrefix(rest, l.prefix)
	if !ok {
		return 0, "", false
	}
	num, proj, ok := strings.Cut(after, ".")
	if !ok {
		return 0, "", false
	}
	e, ok := layerNumber(num)
	if !ok {
		return 0, "", false
	}
	for _, p := range l.proj {
		if p[0] == proj {
			return e, p[1], true
		}
	}
	return 0, "", false
}

// expertKVs are the base converter's (TextModel's) expert keys, for a config that has
// them: the expert count (num_local_experts, num_experts or n_routed_experts, the first
// config.json holds, as find_hparam takes it), the experts used a token, the expert
// groups and groups used (n_group, topk_group) and the gating function.
func (cp *Checkpoint) expertKVs() ([]gguf.KV, error) {
	a, c, h := cp.Arch.GGUF, cp.config, cp.Hparams
	var kvs []gguf.KV
	if h.HasExperts {
		kvs = append(kvs, gguf.KV{Key: a + ".expert_count", Value: gguf.Uint32(uint32(h.Experts))})
	}
	if h.HasExpertsUsed {
		kvs = append(kvs, gguf.KV{Key: a + ".expert_used_count", Value: gguf.Uint32(uint32(h.ExpertsUsed))})
	}
	for _, k := range []struct {
		key   string
		names []string
	}{
		{"expert_group_count", []string{"n_group"}},
		{"expert_group_used_count", []string{"topk_group"}},
	} {
		n, ok, err := c.intOf(k.names...)
		if err != nil {
			return nil, err
		}
		if ok {
			kvs = append(kvs, gguf.KV{Key: a + "." + k.key, Value: gguf.Uint32(uint32(n))})
		}
	}
	for _, name := range []string{"score_function", "scoring_func", "score_func", "moe_router_activation",
		"moe_router_activation_func", "expert_selection_fn"} {
		v, ok := c[name]
		if !ok {
			continue
		}
		if v == nil {
			break
		}
		f, _ := v.(string)
		code, known := map[string]uint32{"softmax": 1, "sigmoid": 2, "sqrtsoftplus": 4}[f]
		if !known {
			return nil, fmt.Errorf("config.json: %s %v is not a gating function llama.cpp knows (softmax, sigmoid, sqrtsoftplus)", name, v)
		}
		kvs = append(kvs, gguf.KV{Key: a + ".expert_gating_func", Value: gguf.Uint32(code)})
		break
	}
	return kvs, nil
}

// intOf is the first of keys config.json has (find_hparam), ok false when that one is
// null.
func (c config) intOf(keys ...string) (int, bool, error) {
	for _, k := range keys {
		if _, ok := c[k]; ok {
			return c.int(k, false)
		}
	}
	return 0, false, nil
}

// expertCountKeys and expertUsedKeys are the config.json fields of the routed expert
// count and the experts a token takes, as the converter's find_hparam looks them up
// (the first one present; null: none).
var (
	expertCountKeys = []string{"num_local_experts", "num_experts", "n_routed_experts"}
	expertUsedKeys  = []string{"num_experts_per_tok", "num_experts_per_token", "top_k_experts"}
)

// expertSet collects a checkpoint's per-expert tensors while check reads the tensor
// list, and checks them when it is complete.
type expertSet struct {
	byStacked map[string][]TensorShape // "blk.N.ffn_down_exps.weight" -> its experts' tensors, by expert
	order     []string                 // the stacked names, first seen first
}

// add records tensor t, expert e of the stacked tensor g.
func (s *expertSet) add(g string, e int, t TensorShape) {
	if s.byStacked == nil {
		s.byStacked = map[string][]TensorShape{}
	}
	list := s.byStacked[g]
	if list == nil {
		s.order = append(s.order, g)
	}
	for len(list) <= e {
		list = append(list, TensorShape{})
	}
	list[e] = t
	s.byStacked[g] = list
}

// firstExpert is the lowest-numbered expert of a stacked tensor that the checkpoint
// has, and its tensor.
func firstExpert(list []TensorShape) (int, TensorShape) {
	for e, t := range list {
		if t.Name != "" {
			return e, t
		}
	}
	return -1, TensorShape{}
}

// check checks that each stacked tensor has exactly the n experts config.json
// gives, of one dtype and shape (rows x cols as want gives for its projection), and
// returns the parameters the experts hold and the parameters of one expert of each
// stacked tensor (gguf-py's size label counts those).
func (s *expertSet) check(cp *Checkpoint, n int, want func(stacked string) ([]int64, string)) (total, perExpert int64, err error) {
	if len(s.order) == 0 {
		return 0, 0, nil
	}
	if n == 0 {
		_, t := firstExpert(s.byStacked[s.order[0]])
		return 0, 0, fmt.Errorf("config.json gives no expert count (num_local_experts, num_experts or n_routed_experts), but the checkpoint has per-expert tensors such as %q", t.Name)
	}
	l := cp.Arch.Experts
	for _, g := range s.order { // a layer with experts has each projection of them
		blk := g[:strings.IndexByte(g[4:], '.')+5]
		for _, p := range l.proj {
			if _, ok := s.byStacked[blk+p[1]]; !ok {
				_, t := firstExpert(s.byStacked[g])
				hf := t.Name[:strings.Index(t.Name, l.prefix)+len(l.prefix)] + "0." + p[0]
				return 0, 0, fmt.Errorf("the checkpoint has no %q (nor any expert's %s), but has %q: llama.cpp's %s%s stacks them", hf, p[0], t.Name, blk, p[1])
			}
		}
	}
	for _, g := range s.order {
		list := s.byStacked[g]
		if len(list) > n {
			return 0, 0, fmt.Errorf("config.json gives %d experts, but the checkpoint has tensor %q (expert %d)", n, list[len(list)-1].Name, len(list)-1)
		}
		first, ref := firstExpert(list)
		for e := range n {
			if e >= len(list) || list[e].Name == "" {
				return 0, 0, fmt.Errorf("the checkpoint has no %q: expert %d of the %d that config.json gives, which llama.cpp's %s stacks",
					expertName(ref.Name, first, e), e, n, g)
			}
			t := list[e]
			if t.DType != ref.DType || !slices.Equal(t.Shape, ref.Shape) {
				return 0, 0, fmt.Errorf("tensor %q is %v %v, but %q is %v %v: the experts stacked into %s must be alike",
					t.Name, t.DType, t.Shape, ref.Name, ref.DType, ref.Shape, g)
			}
		}
		if !ref.DType.Info().Float {
			return 0, 0, fmt.Errorf("tensor %q is %v: apr stacks float experts only into %s (llama.cpp's converter casts integer ones to float32)", ref.Name, ref.DType, g)
		}
		if len(ref.Shape) != 2 {
			return 0, 0, fmt.Errorf("tensor %q has shape %v, expected a matrix (one expert's projection)", ref.Name, ref.Shape)
		}
		if w, field := want(g); w != nil && !slices.Equal(w, ref.Shape) {
			return 0, 0, fmt.Errorf("config.json: %s give tensor %q the shape %v, but it has %v", field, ref.Name, w, ref.Shape)
		}
		size := ref.Shape[0] * ref.Shape[1]
		total += size * int64(n)
		perExpert += size
	}
	return total, perExpert, nil
}

// expertName is name, the tensor of expert from, renamed to expert to.
func expertName(name string, from, to int) string {
	return strings.Replace(name, fmt.Sprintf(".experts.%d.", from), fmt.Sprintf(".experts.%d.", to), 1)
}

// Part is one tensor of the converted stream that is not one checkpoint tensor
// renamed: a stack of per-expert tensors, or a part of one (DeepSeek's kv_b_proj in
// two). Info is the tensor in llama.cpp's form; Sources are the checkpoint tensors it
// is made of.
type Part struct {
	Info    container.TensorInfo
	Sources []string
	// read returns the part's data from its sources' readers (opened by open, one
	// at a time, when read gets to them); nil: the sources' data one after another.
	read func(open func(name string) (io.Reader, error)) (io.Reader, error)
}

// Open returns a reader of the part's data, which opens each source with open when
// it gets to it: a stacked tensor is read expert by expert from the checkpoint (a
// mapped file, in place), never held whole.
func (p Part) Open(open func(name string) (io.Reader, error)) (io.Reader, error) {
	if p.read != nil {
		return p.read(open)
	}
	return &concatReader{names: p.Sources, open: open}, nil
}

// concatReader reads the tensors names, opened by open one at a time, one after
// another.
type concatReader struct {
	names []string
	open  func(string) (io.Reader, error)
	cur   io.Reader
}

func (c *concatReader) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			if len(c.names) == 0 {
				return 0, io.EOF
			}
			r, err := c.open(c.names[0])
			if err != nil {
				return 0, err
			}
			c.cur, c.names = r, c.names[1:]
		}
		n, err := c.cur.Read(p)
		if err == io.EOF {
			c.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// Walk follows the checkpoint's tensors in stream order and says where the tensors
// made of several (Part) come out: the converter holds a layer's expert tensors
// until it has all of them (3 x the expert count), then writes the stacked ones there.
// A stream makes one Walk for its table and one for its data.
type Walk struct {
	cp   *Checkpoint
	held map[int]int // layer -> expert tensors held
}

// Walk starts a walk over the checkpoint's tensors.
func (cp *Checkpoint) Walk() *Walk { return &Walk{cp: cp, held: map[int]int{}} }

// Place takes the next checkpoint tensor (name, in stream order). handled false: the
// tensor is converted alone (Info, Convert). Otherwise parts are the tensors that
// come out in its place, none while experts are held.
func (w *Walk) Place(name string) (parts []Part, handled bool, err error) {
	cp := w.cp
	m := layerName.FindStringSubmatch(strings.Replace(name, "language_model.", "", 1))
	if m == nil {
		return nil, false, nil
	}
	layer, ok := layerNumber(m[1])
	if !ok || cp.mtpLayer(name) {
		return nil, false, nil
	}
	if split, ok := cp.Arch.family().(splitter); ok {
		if parts, ok, err := split.split(cp, name, layer, m[2]); ok || err != nil {
			return parts, true, err
		}
	}
	if _, _, ok := cp.Arch.Experts.expertOf(m[2]); !ok {
		return nil, false, nil
	}
	w.held[layer]++
	l := cp.Arch.Experts
	if w.held[layer] < len(l.proj)*cp.Hparams.Experts {
		return nil, true, nil
	}
	delete(w.held, layer)
	for _, p := range l.proj {
		g := fmt.Sprintf("blk.%d.%s", layer, p[1])
		list := cp.stacks.byStacked[g]
		part := Part{Info: container.TensorInfo{Name: g, DType: list[0].DType,
			Shape: append([]int64{int64(len(list))}, list[0].Shape...)}}
		for _, t := range list {
			part.Sources = append(part.Sources, t.Name)
		}
		parts = append(parts, part)
	}
	return parts, true, nil
}

// Done reports experts still held when the stream has ended (the converter's
// "Unprocessed experts"); check has refused such a checkpoint already.
func (w *Walk) Done() error {
	for l, n := range w.held {
		return fmt.Errorf("layer %d: %d expert tensors were never stacked (the checkpoint lacks some of its experts)", l, n)
	}
	return nil
}

// splitter is a Family that writes some checkpoint tensor as parts of its own
// (DeepSeek's kv_b_proj as attn_k_b and attn_v_b).
type splitter interface {
	split(cp *Checkpoint, name string, layer int, rest string) ([]Part, bool, error)
}

// expertShape is the shape config.json gives one expert's tensor of the stacked
// tensor g: rows x columns of the gate and up projections, the transpose for down,
// with each expert's intermediate size moe_intermediate_size (Mixtral's:
// intermediate_size).
func (cp *Checkpoint) expertShape(g string) ([]int64, string) {
	ff, ok, err := cp.config.int("moe_intermediate_size", false)
	field := "moe_intermediate_size/hidden_size"
	if err != nil || !ok {
		ff, ok, field = cp.Hparams.FFN, cp.Hparams.HasFFN, "intermediate_size/hidden_size"
	}
	if !ok {
		return nil, ""
	}
	hidden := int64(cp.Hparams.Hidden)
	if strings.Contains(g, "ffn_down_exps") {
		return []int64{hidden, int64(ff)}, field
	}
	return []int64{int64(ff), hidden}, field
}

// qwenMoE is the code of Qwen2-MoE and Qwen3-MoE (the converter's Qwen2MoeModel and its
// subclass): the experts' and the shared expert's intermediate sizes after the base
// keys, when config.json has them.
type qwenMoE struct{ plain }

func (qwenMoE) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	for _, k := range [][2]string{{"moe_intermediate_size", "expert_feed_forward_length"},
		{"shared_expert_intermediate_size", "expert_shared_feed_forward_length"}} {
		n, ok, err := cp.config.int(k[0], false)
		if err != nil {
			return nil, err
		}
		if ok {
			base = append(base, gguf.KV{Key: cp.Arch.GGUF + "." + k[1], Value: gguf.Uint32(uint32(n))})
		}
	}
	return base, nil
}

// layered is a Family whose layers hold different tensors (DeepSeek's leading dense
// blocks): it names those layer l must hold, after "blk.N."; have tells whether any
// layer holds one.
type layered interface {
	layerTensors(cp *Checkpoint, l int, have func(suffix string) bool) ([]string, error)
}

// shaper is a Family that gives the shapes of its own tensors (suffix after
// "blk.N."); ok false leaves the tensor to the common checks.
type shaper interface {
	shapeOf(cp *Checkpoint, suffix string) (shape []int64, fields string, ok bool, err error)
}

// layerReasoner is a layered family that names the config.json field which gives a
// layer its tensors, for checkLayers' errors.
type layerReasoner interface {
	layerWhy(cp *Checkpoint, l int) string
}

// checkLayers checks that every layer holds the tensors family f says it must.
func (cp *Checkpoint) checkLayers(f layered, have map[string]bool) error {
	any := map[string]bool{}
	for g := range have {
		if rest, ok := strings.CutPrefix(g, "blk."); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 {
				any[rest[i+1:]] = true
			}
		}
	}
	for l := range cp.Hparams.Layers {
		need, err := f.layerTensors(cp, l, func(k string) bool { return any[k] })
		if err != nil {
			return err
		}
		for _, k := range need {
			if g := fmt.Sprintf("blk.%d.%s", l, k); !have[g] {
				hf, _ := cp.Arch.HFName(g)
				if hf == "" {
					hf = g
				}
				why := ""
				if r, ok := f.(layerReasoner); ok {
					why = " (" + r.layerWhy(cp, l) + ")"
				}
				return fmt.Errorf("the checkpoint has no %q, which layer %d of this %s model has%s", hf, l, strings.Join(cp.Arch.HF, "/"), why)
			}
		}
	}
	return nil
}

// ggufName is Arch.GGUFName, with the multi-token prediction layers of a family that
// has them (Arch.MTP) skipped.
func (cp *Checkpoint) ggufName(hf string) (name string, layer int, skip bool, err error) {
	if cp.mtpLayer(hf) {
		return "", -1, true, nil
	}
	return cp.Arch.GGUFName(hf)
}

// mtpLayer reports a tensor of a multi-token prediction layer the converter leaves out.
func (cp *Checkpoint) mtpLayer(hf string) bool {
	if !cp.Arch.MTP {
		return false
	}
	m := layerName.FindStringSubmatch(strings.Replace(hf, "language_model.", "", 1))
	if m == nil {
		return false
	}
	l, ok := layerNumber(m[1])
	return ok && l >= cp.Hparams.Layers
}

// unstacked returns the Hugging Face names of the experts a stacked tensor t (in
// llama.cpp's form, [experts, rows, cols]) holds, expert 0 first, and each one's
// shape; ok false for any other tensor.
func (l *expertLayout) unstacked(t container.TensorInfo) (names []string, shape []int64, ok bool) {
	if l == nil || len(t.Shape) != 3 {
		return nil, nil, false
	}
	rest, ok := strings.CutPrefix(t.Name, "blk.")
	i := strings.IndexByte(rest, '.')
	if !ok || i <= 0 {
		return nil, nil, false
	}
	layer, ok := layerNumber(rest[:i])
	if !ok {
		return nil, nil, false
	}
	for _, p := range l.proj {
		if p[1] == rest[i+1:] {
			for e := range t.Shape[0] {
				names = append(names, fmt.Sprintf("model.layers.%d.%s%d.%s", layer, l.prefix, e, p[0]))
			}
			return names, slices.Clone(t.Shape[1:]), true
		}
	}
	return nil, nil, false
}

// moeConfig writes config.json's expert fields back from a GGUF's keys: the expert
// count under the family's name for it, the experts used a token, and (names
// non-empty) the experts' and shared experts' intermediate sizes.
func moeConfig(g ggufKVs, cfg *jsonObject, count string, sizes bool) {
	if n, ok := g.archUint("expert_count"); ok {
		cfg.set(count, n)
	}
	if n, ok := g.archUint("expert_used_count"); ok {
		cfg.set("num_experts_per_tok", n)
	}
	if !sizes {
		return
	}
	if n, ok := g.archUint("expert_feed_forward_length"); ok {
		cfg.set("moe_intermediate_size", n)
	}
	if n, ok := g.archUint("expert_shared_feed_forward_length"); ok {
		cfg.set("shared_expert_intermediate_size", n)
	}
}

// HFConfig writes Qwen-MoE's expert fields back.
func (qwenMoE) HFConfig(_ *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	moeConfig(g, cfg, "num_experts", true)
	return nil
}

// mixtral is Mixtral's code: Llama's (the converter's LlamaModel), with its expert
// fields written back.
type mixtral struct{ llama }

func (mixtral) HFConfig(_ *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	moeConfig(g, cfg, "num_local_experts", false)
	return nil
}

// olmoe is OLMoE's code (the converter's OlmoeModel): the base keys, with the RMS norm
// epsilon set to 1e-5 again after them (keeping its place: a key written twice keeps
// its first place), whatever config.json says.
type olmoe struct{ plain }

func (olmoe) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	return append(base, gguf.KV{Key: cp.Arch.GGUF + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-5)}), nil
}

func (olmoe) HFConfig(_ *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	moeConfig(g, cfg, "num_experts", false)
	return nil
}

// granitemoe is Granite-MoE's code (the converter's GraniteMoeModel, a GraniteModel):
// Granite's keys with the base's expert keys and the shared experts' intermediate
// size; its experts come stacked already ([experts, 2 x intermediate_size, hidden]
// input_linear, gate rows then up rows of each expert), which the converter splits
// into ffn_gate_exps and ffn_up_exps, and so the shared experts' input_linear.
type granitemoe struct{ granite }

func (g granitemoe) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	kvs, err := g.granite.KVs(cp, base)
	if err != nil {
		return nil, err
	}
	if n, ok, err := cp.config.int("shared_intermediate_size", false); err != nil {
		return nil, err
	} else if ok && n != 0 {
		kvs = append(kvs, gguf.KV{Key: cp.Arch.GGUF + ".expert_shared_feed_forward_length", Value: gguf.Uint32(uint32(n))})
	}
	return kvs, nil
}

// shapeOf gives the fused tensors' shapes, which the split relies on.
func (granitemoe) shapeOf(cp *Checkpoint, suffix string) ([]int64, string, bool, error) {
	h := cp.Hparams
	switch suffix {
	case "ffn_gate_up_exps.weight":
		return []int64{int64(cp.Hparams.Experts), 2 * int64(h.FFN), int64(h.Hidden)}, "num_local_experts/intermediate_size/hidden_size", true, nil
	case "ffn_down_exps.weight":
		return []int64{int64(cp.Hparams.Experts), int64(h.Hidden), int64(h.FFN)}, "num_local_experts/hidden_size/intermediate_size", true, nil
	case "ffn_gate_up_shexp.weight":
		n, ok, err := cp.config.int("shared_intermediate_size", false)
		if !ok {
			n = h.FFN
		}
		return []int64{2 * int64(n), int64(h.Hidden)}, "shared_intermediate_size/hidden_size", true, err
	}
	return nil, "", false, nil
}

func (granitemoe) split(cp *Checkpoint, name string, layer int, rest string) ([]Part, bool, error) {
	var gate, up string
	switch rest {
	case "block_sparse_moe.input_linear.weight":
		gate, up = "ffn_gate_exps.weight", "ffn_up_exps.weight"
	case "shared_mlp.input_linear.weight":
		gate, up = "ffn_gate_shexp.weight", "ffn_up_shexp.weight"
	default:
		return nil, false, nil
	}
	src := cp.shapes[name]
	info := src.DType.Info()
	if info.BlockElems != 1 || len(src.Shape) < 2 || src.Shape[len(src.Shape)-2]%2 != 0 {
		return nil, true, fmt.Errorf("tensor %q is %v %v; apr splits a float [..., 2 x rows, cols] tensor only", name, src.DType, src.Shape)
	}
	shape := slices.Clone(src.Shape)
	shape[len(shape)-2] /= 2
	halfBytes := shape[len(shape)-2] * shape[len(shape)-1] * int64(info.BlockBytes)
	blocks := int64(1)
	if len(shape) == 3 {
		blocks = shape[0]
	}
	mk := func(g string, second bool) Part {
		return Part{
			Info:    container.TensorInfo{Name: fmt.Sprintf("blk.%d.%s", layer, g), DType: src.DType, Shape: shape},
			Sources: []string{name},
			read: func(open func(string) (io.Reader, error)) (io.Reader, error) {
				r, err := open(name)
				if err != nil {
					return nil, err
				}
				return &halvesReader{name: name, r: r, blocks: blocks, half: halfBytes, second: second}, nil
			},
		}
	}
	return []Part{mk(gate, false), mk(up, true)}, true, nil
}

// halvesReader reads the first or the second half of each of blocks blocks of r (each
// expert's gate rows, or its up rows), one expert in memory at a time.
type halvesReader struct {
	name         string
	r            io.Reader
	blocks, half int64
	second       bool
	done         int64
	buf, pending []byte
}

func (h *halvesReader) Read(p []byte) (int, error) {
	if len(h.pending) == 0 {
		if h.done == h.blocks {
			return 0, io.EOF
		}
		if h.buf == nil {
			h.buf = make([]byte, 2*h.half)
		}
		if _, err := io.ReadFull(h.r, h.buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("tensor %q: %w", h.name, err)
		}
		h.done++
		h.pending = h.buf[:h.half]
		if h.second {
			h.pending = h.buf[h.half:]
		}
	}
	n := copy(p, h.pending)
	h.pending = h.pending[n:]
	return n, nil
}
