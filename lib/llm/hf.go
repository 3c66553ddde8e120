package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/tensor"
)

// Hparams are the hyperparameters of a transformer checkpoint, from its config.json.
type Hparams struct {
	Vocab, Hidden, FFN, Layers, Heads, KVHeads, Context, HeadDim int
	RopeTheta, RMSEps, NormEps                                   float64
	HasRopeTheta, HasRMSEps, HasNormEps, HasHeadDim, HasContext  bool
	HasFFN                                                       bool
	TieEmbeddings                                                bool
	// Experts and ExpertsUsed are the routed experts and how many a token takes
	// (num_local_experts / num_experts / n_routed_experts, num_experts_per_tok /
	// num_experts_per_token / top_k_experts, as the converter looks them up; 0: a
	// dense model).
	Experts, ExpertsUsed       int
	HasExperts, HasExpertsUsed bool
	rope                       rope
}

// config is a parsed config.json with typed lookups that name the field in errors.
type config map[string]any

// parseJSON reads a JSON object file of the checkpoint as Python's json.load does
// (pythonJSON).
func parseJSON(name string, b []byte) (map[string]any, error) { return pythonJSON(name, b) }

func (c config) int(key string, required bool) (int, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		if required {
			return 0, false, fmt.Errorf("config.json: %q is missing", key)
		}
		return 0, false, nil
	}
	n, ok := v.(json.Number)
	i, err := n.Int64()
	if !ok || err != nil || i < 0 || i > math.MaxInt32 {
		return 0, false, fmt.Errorf("config.json: %q is %v, expected a non-negative integer", key, v)
	}
	return int(i), true, nil
}

func (c config) float(key string) (float64, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	f, err := float32Field(strconv.Quote(key), v)
	return f, err == nil, err
}

// float32Field is config.json's field name (as errors spell it), value v, as a number
// within FLOAT32's range: the converter writes such fields as FLOAT32 keys or F32
// tensors (or computes with them in float32), and stops on one beyond that range
// (Python's struct.pack raises OverflowError, where apr wrote a Granite multiplier of
// 1e39 as +Inf). A NaN or an infinity (Python's json reads NaN and Infinity) the
// converter writes as it is, into a model that computes nothing: apr refuses those.
func float32Field(name string, v any) (float64, error) {
	n, ok := v.(json.Number)
	f, err := n.Float64() // "NaN" and "Infinity" parse; 1e400 is +Inf with ErrRange, as Python reads it
	if !ok || err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("config.json: %s is %v, expected a number", name, v)
	}
	if math.IsNaN(f) || math.Abs(f) > math.MaxFloat32 {
		return 0, fmt.Errorf("config.json: %s is %v, expected a finite number within FLOAT32's range (±3.4e38)", name, v)
	}
	return f, nil
}

// nonFiniteNumber reports a NaN, Infinity or -Infinity of a JSON file (pythonJSON).
func nonFiniteNumber(v any) bool {
	n, _ := v.(json.Number)
	return n == "NaN" || n == "Infinity" || n == "-Infinity"
}

// floatOf is the first of keys config.json has, as the converter's find_hparam takes it.
func (c config) floatOf(keys ...string) (float64, bool, error) {
	for _, k := range keys {
		if _, ok := c[k]; ok {
			return c.float(k)
		}
	}
	return 0, false, nil
}

func parseHparams(c config) (Hparams, error) {
	var h Hparams
	var err error
	get := func(dst *int, has *bool, key string, required bool) {
		if err != nil {
			return
		}
		var ok bool
		*dst, ok, err = c.int(key, required)
		if has != nil {
			*has = ok
		}
	}
	get(&h.Vocab, nil, "vocab_size", true)
	get(&h.Hidden, nil, "hidden_size", true)
	get(&h.FFN, &h.HasFFN, "intermediate_size", false)
	get(&h.Layers, nil, "num_hidden_layers", true)
	get(&h.Heads, nil, "num_attention_heads", true)
	get(&h.Context, &h.HasContext, "max_position_embeddings", false)
	get(&h.HeadDim, &h.HasHeadDim, "head_dim", false)
	var hasKV bool
	get(&h.KVHeads, &hasKV, "num_key_value_heads", false)
	if err == nil {
		h.Experts, h.HasExperts, err = c.intOf(expertCountKeys...)
	}
	if err == nil {
		h.ExpertsUsed, h.HasExpertsUsed, err = c.intOf(expertUsedKeys...)
	}
	if err != nil {
		return h, err
	}
	// The vocabulary is built vocab_size long (padded as the converter pads it), so
	// the size is capped before anything is: the embedding rows it is checked
	// against may be missing (check), and the tokenizer holds at most MaxPieces.
	if h.Vocab > MaxPieces {
		return h, fmt.Errorf("config.json: vocab_size %d is over the cap of %d tokens (the largest published vocabularies hold about 260,000)", h.Vocab, MaxPieces)
	}
	if h.Heads == 0 || h.Hidden%h.Heads != 0 && !h.HasHeadDim {
		return h, fmt.Errorf("config.json: hidden_size %d is not a multiple of num_attention_heads %d (head_dim is not given, so it is hidden_size / num_attention_heads)", h.Hidden, h.Heads)
	}
	if !hasKV {
		h.KVHeads = h.Heads
	}
	if h.KVHeads == 0 || h.Heads%h.KVHeads != 0 {
		return h, fmt.Errorf("config.json: num_attention_heads %d is not a multiple of num_key_value_heads %d", h.Heads, h.KVHeads)
	}
	from := "head_dim" // where the head dimension came from, for errors
	if !h.HasHeadDim {
		h.HeadDim = h.Hidden / h.Heads
		from = fmt.Sprintf("hidden_size %d / num_attention_heads %d, as head_dim is not given", h.Hidden, h.Heads)
	}
	if h.Hidden == 0 || h.HeadDim == 0 {
		return h, fmt.Errorf("config.json: hidden_size %d and the head dimension %d (%s) must not be 0", h.Hidden, h.HeadDim, from)
	}
	if h.HeadDim%2 != 0 {
		return h, fmt.Errorf("config.json: the head dimension %d (%s) is odd (rotary embeddings need pairs)", h.HeadDim, from)
	}
	if h.rope, err = parseRope(c); err != nil {
		return h, err
	}
	if h.RopeTheta, h.HasRopeTheta, err = h.rope.float("rope_theta"); err != nil {
		return h, err
	}
	if h.NormEps, h.HasNormEps, err = c.floatOf("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"); err != nil {
		return h, err
	}
	if h.RMSEps, h.HasRMSEps, err = c.floatOf("rms_norm_eps", "norm_eps"); err != nil {
		return h, err
	}
	if t, ok := c["tie_word_embeddings"].(bool); ok {
		h.TieEmbeddings = t
	}
	return h, nil
}

// textConfig is config.json as the converter's TextModel reads it: a multimodal
// model's text_config moved to the top level over the other fields (its
// "architectures" too, where it has them).
func textConfig(m map[string]any) config {
	merged := maps.Clone(m)
	if text, ok := m["text_config"].(map[string]any); ok {
		maps.Copy(merged, text)
		if _, ok := text["architectures"]; !ok {
			merged["architectures"] = m["architectures"]
		}
	}
	if merged["model_type"] == "gemma3_text" {
		for k, v := range gemma3TextDefaults {
			if _, ok := merged[k]; !ok {
				merged[k] = v
			}
		}
	}
	return config(merged)
}

// gemma3TextDefaults are the fields transformers' Gemma3TextConfig gives a Gemma 3 text
// model whose config.json leaves them out (the multimodal releases' text_config holds
// only the sizes): the converter, running with transformers, reads them through
// AutoConfig. Only the fields the conversion reads are here.
var gemma3TextDefaults = func() map[string]any {
	m := map[string]any{
		"vocab_size": json.Number("262208"), "rope_theta": json.Number("1000000.0"),
		"rope_local_base_freq": json.Number("10000.0"), "sliding_window": json.Number("4096"),
		"query_pre_attn_scalar": json.Number("256"),
	}
	maps.Copy(m, gemma3Defaults)
	return m
}()

// Architecture returns config.json's first "architectures" name ("LlamaForCausalLM"),
// or "" when files hold no config.json or it names none.
func Architecture(files map[string][]byte) string {
	m, err := parseJSON("config.json", files["config.json"])
	if err != nil {
		return ""
	}
	list, _ := textConfig(m)["architectures"].([]any)
	if len(list) == 0 {
		return ""
	}
	name, _ := list[0].(string)
	return name
}

// Checkpoint is a Hugging Face checkpoint of a known architecture, described the way
// llama.cpp's converter (convert_hf_to_gguf.py) describes it in GGUF.
type Checkpoint struct {
	Arch    *Arch
	Hparams Hparams
	// KVs are the GGUF key-values the converter writes, in its order, with
	// general.file_type for the tensors as imported.
	KVs []gguf.KV
	// generated are the tensors the family computes from the config (Family.Generated).
	generated []tensor.Tensor
	// config is config.json as the converter reads it (textConfig); files are the
	// checkpoint's kept files.
	config config
	files  map[string][]byte
	// earlyKVs are keys the family writes while it computes its tensors, before the
	// converter writes the others (Phi-3's rope.scaling.attn_factor): they follow
	// general.architecture.
	earlyKVs []gguf.KV
	// stacks are the per-expert tensors, which the stream writes stacked (Walk).
	stacks expertSet
	// expertParams and perExpert count the stacked tensors' parameters, all and one
	// expert's, for the size label ("8x1.2M").
	expertParams, perExpert int64
	// stackedParams and stackedPerExpert are the same of tensors stacked already.
	stackedParams, stackedPerExpert int64
	// shapes are the checkpoint's tensors by name.
	shapes map[string]TensorShape
	// computedData are the computed tensors (see computed) of a model from a GGUF
	// file, read on the way back to Hugging Face's layout (HFStream) for HFFiles.
	computedData map[string][]float32
	// plan are the tensors of a family that plans them, or of an FP8 checkpoint (Plan),
	// nil for the others; fp8 are the FP8 weights and their scales (fp8.go).
	plan []Planned
	fp8  map[string]fp8Weight
}

// TensorShape is a tensor's name, dtype and shape (outermost dimension first), as the
// checkpoint holds it.
type TensorShape struct {
	Name  string
	DType dtype.DType
	Shape []int64
}

// FromCheckpoint describes the checkpoint whose config and tokenizer files are files
// (name to bytes, as apr-st import keeps them) and whose tensors are tensors. dir is the
// checkpoint directory's name, from which the converter derives general.name. It
// returns ok false for a checkpoint without config.json "architectures" or of an
// architecture apr does not know, and an error for a config that contradicts the
// tensors or a tokenizer it cannot read.
func FromCheckpoint(files map[string][]byte, dir string, tensors []TensorShape) (*Checkpoint, bool, error) {
	return FromCheckpointWith(files, dir, tensors, Options{})
}

// Options are the choices of a conversion that the checkpoint's files cannot make.
type Options struct {
	// TokenizerPre names llama.cpp's pre-tokenizer (tokenizer.ggml.pre) of a BPE
	// tokenizer.json instead of apr's table (PreNames), for one the table lacks.
	TokenizerPre string
}

// FromCheckpointWith is FromCheckpoint with options.
func FromCheckpointWith(files map[string][]byte, dir string, tensors []TensorShape, opts Options) (*Checkpoint, bool, error) {
	raw, ok := files["config.json"]
	if !ok {
		return nil, false, nil
	}
	m, err := parseJSON("config.json", raw)
	if err != nil {
		return nil, false, err
	}
	c := textConfig(m)
	list, _ := c["architectures"].([]any)
	if len(list) == 0 {
		return nil, false, nil
	}
	name, _ := list[0].(string)
	arch, ok := LookupArch(name)
	if !ok {
		return nil, false, nil // imported as it is; apr-gguf export refuses it (Architecture)
	}
	h, err := parseHparams(c)
	if _, isMap := m["text_config"].(map[string]any); err != nil && !isMap && strings.HasSuffix(name, "ForConditionalGeneration") {
		what := "which it lacks"
		if v, has := m["text_config"]; has {
			what = fmt.Sprintf("which is %v, not an object", v)
		}
		return nil, false, fmt.Errorf("%w (%s is multimodal: config.json holds its text model's fields in text_config, %s)", err, name, what)
	}
	if err != nil {
		return nil, false, err
	}
	cp := &Checkpoint{Arch: arch, Hparams: h, config: c, files: files}
	if cp.generated, err = arch.family().Generated(cp); err != nil {
		return nil, false, err
	}
	if cp.fp8, tensors, err = fp8Plan(c, tensors); err != nil {
		return nil, false, err
	}
	params, fileType, err := cp.check(tensors)
	if err != nil {
		return nil, false, err
	}
	label := ""
	if p, ok := arch.family().(planner); ok || len(cp.fp8) > 0 {
		if ok {
			cp.plan, err = p.plan(cp, tensors)
		} else {
			cp.plan, err = planEach(cp, tensors)
		}
		if err != nil {
			return nil, false, err
		}
		label = planSizeLabel(cp.plan)
		if cp.mxfp4() {
			fileType = gptossMXFP4FileType
		}
	}
	hparams, err := cp.hparamKVs(fileType)
	if err == nil {
		err = cp.loaderCheck(hparams) // what llama.cpp's loader would refuse (loadercheck.go)
	}
	if err != nil {
		return nil, false, err
	}
	tok, err := vocabKVs(files, h.Vocab, arch, opts)
	if err == nil {
		tok, err = arch.family().Vocab(cp, tok)
	}
	if err != nil {
		return nil, false, err
	}
	sampling, err := samplingKVs(files)
	if err != nil {
		return nil, false, err
	}
	cp.KVs = append(cp.generalKVs(dir, params, label, sampling), hparams...)
	cp.KVs = append(cp.KVs, gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32(2)})
	cp.KVs = dedupe(append(cp.KVs, tok...))
	return cp, true, nil
}

// dedupe gives key-values written in order, some keys more than once, as the
// converter's writer holds them: a Python dict, where a key written again keeps its
// first place and takes the last value.
func dedupe(kvs []gguf.KV) []gguf.KV {
	at := map[string]int{}
	out := kvs[:0:0]
	for _, kv := range kvs {
		if i, ok := at[kv.Key]; ok {
			out[i] = kv
			continue
		}
		at[kv.Key] = len(out)
		out = append(out, kv)
	}
	return out
}

// check compares the tensors with the hyperparameters and returns the parameter count
// and llama.cpp's file type of the tensors as they are (0 F32, 1 F16, 32 BF16).
func (cp *Checkpoint) check(tensors []TensorShape) (params int64, fileType uint32, err error) {
	h := cp.Hparams
	want := map[string][]int64{
		"token_embd.weight": {int64(h.Vocab), int64(h.Hidden)},
		"output.weight":     {int64(h.Vocab), int64(h.Hidden)},
	}
	field := map[string]string{
		"token_embd.weight": "vocab_size/hidden_size", "output.weight": "vocab_size/hidden_size",
		"attn_q.weight": "num_attention_heads/head_dim", "attn_k.weight": "num_key_value_heads/head_dim",
		"attn_v.weight": "num_key_value_heads/head_dim", "ffn_gate.weight": "intermediate_size",
		"attn_qkv.weight": "num_attention_heads/num_key_value_heads/head_dim",
		"ffn_up.weight":   "intermediate_size", "ffn_down.weight": "intermediate_size",
		"attn_q.bias": "num_attention_heads/head_dim", "attn_k.bias": "num_key_value_heads/head_dim",
		"attn_v.bias": "num_key_value_heads/head_dim", "attn_q_norm.weight": "head_dim", "attn_k_norm.weight": "head_dim",
		"attn_norm.weight": "hidden_size", "ffn_norm.weight": "hidden_size", "output_norm.weight": "hidden_size",
		"post_attention_norm.weight": "hidden_size", "post_ffw_norm.weight": "hidden_size",
	}
	maxLayer := -1
	types := map[dtype.DType]int{}
	have := map[string]bool{}
	for _, t := range cp.generated {
		n, _ := dtype.Elems(t.Shape)
		params += n
	}
	cp.shapes = make(map[string]TensorShape, len(tensors))
	for _, t := range tensors {
		cp.shapes[t.Name] = t
		g, layer, skip, err := cp.ggufName(t.Name)
		if err != nil {
			return 0, 0, err
		}
		if skip {
			continue
		}
		maxLayer = max(maxLayer, layer)
		have[g] = true
		if m := layerName.FindStringSubmatch(strings.Replace(t.Name, "language_model.", "", 1)); m != nil {
			if e, _, ok := cp.Arch.Experts.expertOf(m[2]); ok {
				cp.stacks.add(g, e, t)
			}
		}
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		params += n
		if len(t.Shape) == 3 && t.Shape[0] > 0 && strings.Contains(g, "_exps.") { // experts stacked already
			cp.stackedParams += n
			cp.stackedPerExpert += n / t.Shape[0]
		}
		cast, err := intToF32(container.TensorInfo{Name: t.Name, DType: t.DType})
		if err != nil {
			return 0, 0, err
		}
		if len(t.Shape) >= 2 && cast {
			types[dtype.F32]++ // as Convert casts it
		} else if len(t.Shape) >= 2 {
			types[t.DType]++
		}
		suffix := g
		if layer >= 0 {
			suffix = g[strings.IndexByte(g[4:], '.')+5:]
			if layer >= h.Layers {
				return 0, 0, fmt.Errorf("config.json: num_hidden_layers is %d, but the checkpoint has tensor %q", h.Layers, t.Name)
			}
		}
		var w []int64
		label := field[suffix]
		if f, ok := cp.Arch.family().(shaper); ok {
			ws, l, ok, err := f.shapeOf(cp, suffix)
			if err != nil {
				return 0, 0, err
			}
			if ok {
				suffix, w, label = "", ws, l // checked below, not by the switch
			}
		}
		switch suffix {
		case "token_embd.weight", "output.weight":
			w = want[suffix]
		case "attn_q.weight":
			w = []int64{int64(h.Heads * h.HeadDim), int64(h.Hidden)}
		case "attn_k.weight", "attn_v.weight":
			w = []int64{int64(h.KVHeads * h.HeadDim), int64(h.Hidden)}
		case "attn_q.bias": // permuted by head as Q is (permuteHeads)
			w = []int64{int64(h.Heads * h.HeadDim)}
		case "attn_k.bias", "attn_v.bias":
			w = []int64{int64(h.KVHeads * h.HeadDim)}
		case "attn_q_norm.weight", "attn_k_norm.weight": // one norm a head, shared by the heads
			w = []int64{int64(h.HeadDim)}
			if cp.Arch.WideQKNorm { // OLMo 2's: over the whole projection
				w, label = []int64{int64(h.Heads * h.HeadDim)}, "num_attention_heads/head_dim"
				if suffix == "attn_k_norm.weight" {
					w, label = []int64{int64(h.KVHeads * h.HeadDim)}, "num_key_value_heads/head_dim"
				}
			}
		case "attn_norm.weight", "ffn_norm.weight", "output_norm.weight", "post_attention_norm.weight", "post_ffw_norm.weight":
			w = []int64{int64(h.Hidden)}
		case "attn_qkv.weight":
			w = []int64{int64((h.Heads + 2*h.KVHeads) * h.HeadDim), int64(h.Hidden)}
		case "ffn_gate.weight", "ffn_up.weight":
			if h.HasFFN {
				w = []int64{int64(h.FFN), int64(h.Hidden)}
			}
			if h.HasFFN && cp.Arch.FusedUp && suffix == "ffn_up.weight" {
				w = []int64{int64(2 * h.FFN), int64(h.Hidden)}
			}
		case "ffn_down.weight":
			if h.HasFFN {
				w = []int64{int64(h.Hidden), int64(h.FFN)}
			}
		}
		if w != nil && !slices.Equal(w, t.Shape) {
			return 0, 0, fmt.Errorf("config.json: %s give tensor %q the shape %v, but it has %v", label, t.Name, w, t.Shape)
		}
	}
	if cp.expertParams, cp.perExpert, err = cp.stacks.check(cp, cp.Hparams.Experts, cp.expertShape); err != nil {
		return 0, 0, err
	}
	cp.expertParams += cp.stackedParams
	cp.perExpert += cp.stackedPerExpert
	if !have["token_embd.weight"] {
		hf, _ := cp.Arch.HFName("token_embd.weight")
		return 0, 0, fmt.Errorf("config.json: vocab_size %d cannot be checked against the embedding rows: the checkpoint has no %q (which llama.cpp needs too)", h.Vocab, hf)
	}
	if maxLayer+1 != h.Layers {
		return 0, 0, fmt.Errorf("config.json: num_hidden_layers is %d, but the checkpoint has %d layers", h.Layers, maxLayer+1)
	}
	// Every layer holds the family's tensors (Arch.required and Biases) and whatever
	// any other layer holds, and the model its final norm: a checkpoint short of one
	// is damaged, and the converter would write it as it is for llama.cpp to refuse.
	if !have["output_norm.weight"] {
		hf, _ := cp.Arch.HFName("output_norm.weight")
		return 0, 0, fmt.Errorf("the checkpoint has no %q (the final norm, which llama.cpp needs)", hf)
	}
	switch {
	case len(types) == 1 && types[dtype.F16] > 0:
		fileType = 1
	case len(types) == 1 && types[dtype.BF16] > 0:
		fileType = 32
	}
	if f, ok := cp.Arch.family().(layered); ok {
		return params, fileType, cp.checkLayers(f, have)
	}
	kinds := cp.Arch.required()
	for g := range have {
		if rest, ok := strings.CutPrefix(g, "blk."); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 && !slices.Contains(kinds, rest[i+1:]) {
				kinds = append(kinds, rest[i+1:])
			}
		}
	}
	slices.Sort(kinds)
	kinds = append(slices.Clone(cp.Arch.Biases), kinds...)
	for l := range h.Layers {
		for _, k := range kinds {
			if g := fmt.Sprintf("blk.%d.%s", l, k); !have[g] {
				hf, _ := cp.Arch.HFName(g)
				if slices.Contains(cp.Arch.Biases, k) {
					return 0, 0, fmt.Errorf("%s checkpoints have %q, this one does not", strings.Join(cp.Arch.HF, "/"), hf)
				}
				return 0, 0, fmt.Errorf("the checkpoint has no %q, which every layer of a %s model has", hf, strings.Join(cp.Arch.HF, "/"))
			}
		}
	}
	return params, fileType, nil
}

// generalKVs are the converter's general.* keys for a checkpoint directory without a
// model card: the architecture, "model", the sampling keys, a name from the directory's name (as gguf-py's
// Metadata.id_to_title makes it) and a size label from the parameter count.
func (cp *Checkpoint) generalKVs(dir string, params int64, label string, sampling []gguf.KV) []gguf.KV {
	kvs := append([]gguf.KV{{Key: "general.architecture", Value: gguf.String(cp.Arch.GGUF)}}, cp.earlyKVs...)
	kvs = append(kvs, gguf.KV{Key: "general.type", Value: gguf.String("model")})
	kvs = append(kvs, sampling...)
	if n := titleOf(filepath.Base(dir)); n != "" && dir != "" {
		kvs = append(kvs, gguf.KV{Key: "general.name", Value: gguf.String(n)})
	}
	switch {
	case label != "": // the planned tensors' (planSizeLabel)
	case cp.expertParams > 0: // gguf-py's size_label: experts x (shared + one expert's)
		label = fmt.Sprintf("%dx%s", cp.Hparams.Experts, SizeLabel(params-cp.expertParams+cp.perExpert))
	case params > 0:
		label = SizeLabel(params)
	}
	if label != "" {
		kvs = append(kvs, gguf.KV{Key: "general.size_label", Value: gguf.String(label)})
	}
	return kvs
}

var versionLike = regexp.MustCompile(`^(v\d+(?:\.\d+)*|\d.*)$`)

// titleOf capitalizes the lower-case words of a directory name, '-' read as a space,
// leaving version-like words ("v2", "7b") as they are.
func titleOf(s string) string {
	words := strings.Fields(strings.ReplaceAll(s, "-", " "))
	for i, w := range words {
		if pyIsLower(w) && !versionLike.MatchString(w) {
			words[i] = pyTitle(w)
		}
	}
	return strings.Join(words, " ")
}

// pyIsLower is Python's str.islower: a cased letter, and no upper-case one.
func pyIsLower(s string) bool {
	cased := false
	for _, r := range s {
		if unicode.IsUpper(r) || unicode.IsTitle(r) {
			return false
		}
		cased = cased || unicode.IsLower(r)
	}
	return cased
}

// pyTitle is Python's str.title: each run of cased letters starts upper-case and goes
// on lower-case ("mistral_nemo" is "Mistral_Nemo", "qwen3b" "Qwen3B").
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		isCased := unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
		switch {
		case isCased && !prevCased:
			r = unicode.ToTitle(r)
		case isCased:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
		prevCased = isCased
	}
	return b.String()
}

// SizeLabel writes a parameter count as llama.cpp's converter does: "1.4M", "7.2B",
// "110M" (at least two significant digits).
func SizeLabel(n int64) string {
	f, suffix := float64(n), "K"
	switch {
	case f > 1e12:
		f, suffix = f*1e-12, "T"
	case f > 1e9:
		f, suffix = f*1e-9, "B"
	case f > 1e6:
		f, suffix = f*1e-6, "M"
	default:
		f *= 1e-3
	}
	digits := len(strings.TrimLeft(fmt.Sprint(int64(math.RoundToEven(f))), "0"))
	return fmt.Sprintf("%.*f%s", max(2-digits, 0), f, suffix)
}

// generates reports whether the family computes tensor name (Family.Generated).
func (cp *Checkpoint) generates(name string) bool {
	for _, t := range cp.generated {
		if t.Name == name {
			return true
		}
	}
	return false
}

// hparamKVs are the hyperparameter keys: the base converter's (TextModel's), then
// the family's (Family.KVs).
func (cp *Checkpoint) hparamKVs(fileType uint32) ([]gguf.KV, error) {
	h, a := cp.Hparams, cp.Arch.GGUF
	var kvs []gguf.KV
	u32 := func(k string, v int) { kvs = append(kvs, gguf.KV{Key: a + "." + k, Value: gguf.Uint32(uint32(v))}) }
	f32 := func(k string, v float64) {
		kvs = append(kvs, gguf.KV{Key: a + "." + k, Value: gguf.Float32(float32(v))})
	}
	u32("block_count", h.Layers)
	if h.HasContext {
		u32("context_length", h.Context)
	}
	u32("embedding_length", h.Hidden)
	if h.HasFFN {
		u32("feed_forward_length", h.FFN)
	}
	u32("attention.head_count", h.Heads)
	u32("attention.head_count_kv", h.KVHeads)
	scaling, err := h.rope.scalingKVs(a, cp.generates("rope_freqs.weight"), cp.generates("rope_factors_long.weight"))
	if err != nil {
		return nil, err
	}
	kvs = append(kvs, scaling...)
	if h.HasRopeTheta {
		f32("rope.freq_base", h.RopeTheta)
	}
	if swa, ok, err := h.rope.slidingTheta(); err != nil {
		return nil, err
	} else if ok {
		f32("rope.freq_base_swa", swa)
	}
	if h.HasRMSEps {
		f32("attention.layer_norm_rms_epsilon", h.RMSEps)
	}
	if h.HasNormEps {
		f32("attention.layer_norm_epsilon", h.NormEps)
	}
	experts, err := cp.expertKVs()
	if err != nil {
		return nil, err
	}
	kvs = append(kvs, experts...)
	if h.HasHeadDim {
		u32("attention.key_length", h.HeadDim)
		u32("attention.value_length", h.HeadDim)
	}
	kvs = append(kvs, gguf.KV{Key: "general.file_type", Value: gguf.Uint32(fileType)})
	return cp.Arch.family().KVs(cp, kvs)
}

// vocabKVs builds the tokenizer.* keys: for a family whose converter class does so
// (Llama's), add_space_prefix from tokenizer_config.json's add_prefix_space first, as
// its set_vocab writes it before the vocabulary; then from tokenizer.model
// (SentencePiece) when the checkpoint has one, as the converter prefers it, else from
// tokenizer.json (byte-level BPE).
func vocabKVs(files map[string][]byte, vocab int, arch *Arch, opts Options) ([]gguf.KV, error) {
	var kvs []gguf.KV
	if b, ok := files["tokenizer_config.json"]; ok && arch.SpacePrefix {
		tc, err := parseJSON("tokenizer_config.json", b)
		if err != nil {
			return nil, err
		}
		if add, ok := tc["add_prefix_space"].(bool); ok {
			kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Bool(add)})
		}
	}
	var tok []gguf.KV
	var err error
	_, spm := files["tokenizer.model"]
	_, bpe := files["tokenizer.json"]
	if arch.PlainSPM {
		if spm, err = plainSPM(files); err != nil {
			return nil, err
		}
		bpe = !spm
	}
	switch {
	case spm:
		if opts.TokenizerPre != "" {
			return nil, fmt.Errorf("the tokenizer pre-tokenizer %q is for a BPE tokenizer.json; this checkpoint has a SentencePiece tokenizer.model", opts.TokenizerPre)
		}
		tok, err = sentencePieceVocab(files, vocab, arch.PlainSPM)
	case bpe:
		tok, err = bpeVocab(files, vocab, opts.TokenizerPre)
	default:
		return nil, fmt.Errorf("the checkpoint has no tokenizer (tokenizer.model or tokenizer.json)")
	}
	return append(kvs, tok...), err
}

// sentencePieceVocab builds the tokenizer.* keys from tokenizer.model, as the
// converter's SentencePiece path does: the pieces padded to vocab_size with
// "[PADn]" (UNUSED), added tokens from added_tokens.json and tokenizer_config.json's
// added_tokens_decoder, special token ids from config.json, add_bos/add_eos and the
// chat template from tokenizer_config.json.
func sentencePieceVocab(files map[string][]byte, vocab int, plain bool) ([]gguf.KV, error) {
	pieces, err := ParseSentencePiece(files["tokenizer.model"])
	if err != nil {
		return nil, err
	}
	if len(pieces) > vocab {
		return nil, fmt.Errorf("config.json: vocab_size %d is smaller than tokenizer.model's %d pieces", vocab, len(pieces))
	}
	tokens := make([]string, vocab)
	scores := make([]float32, vocab)
	types := make([]int32, vocab)
	// setAdded records an added token: CONTROL when special or, unless plain, when it
	// looks special, else USER_DEFINED with U+2581 read as a space unless plain.
	setAdded := func(id int, e map[string]any) {
		content := e["content"].(string) // checked by addedEntry
		if special, _ := e["special"].(bool); special || !plain && looksSpecial(content) {
			types[id] = TokenControl
		} else {
			if !plain {
				content = strings.ReplaceAll(content, "\u2581", " ")
			}
			types[id] = TokenUserDefined
		}
		tokens[id], scores[id] = content, -1000
	}
	for i := range tokens {
		tokens[i], scores[i], types[i] = fmt.Sprintf("[PAD%d]", i), -10000, TokenUnused
	}
	for i, p := range pieces {
		tokens[i], scores[i] = p.Text, p.Score
		switch p.Type {
		case TokenUnknown, TokenControl, TokenUnused, TokenByte:
			types[i] = p.Type
		default:
			types[i] = TokenNormal
		}
	}
	if b, ok := files["added_tokens.json"]; ok {
		added, err := parseJSON("added_tokens.json", b)
		if err != nil {
			return nil, err
		}
		for _, tok := range slices.Sorted(maps.Keys(added)) {
			n, _ := added[tok].(json.Number)
			id, err := n.Int64()
			if err != nil || id < 0 {
				return nil, fmt.Errorf("added_tokens.json: %q has id %v", tok, added[tok])
			}
			if id < int64(vocab) {
				tokens[id], scores[id], types[id] = tok, -1000, TokenUserDefined
			}
		}
	}
	var tc map[string]any
	if b, ok := files["tokenizer_config.json"]; ok {
		if tc, err = parseJSON("tokenizer_config.json", b); err != nil {
			return nil, err
		}
		dec, _ := tc["added_tokens_decoder"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(dec)) {
			// Decimal, as the converter's int(token_id) reads it: fmt.Sscan took "010"
			// for 8, "0x10" for 16 and "5abc" for 5.
			id, err := strconv.Atoi(strings.TrimSpace(k))
			if err != nil || id < 0 || id >= vocab {
				return nil, fmt.Errorf("tokenizer_config.json: added_tokens_decoder id %q is not in 0..%d", k, vocab-1)
			}
			e, err := addedEntry(dec[k])
			if err != nil {
				return nil, fmt.Errorf("tokenizer_config.json: added_tokens_decoder %q: %w", k, err)
			}
			setAdded(id, e)
		}
	}
	if b, ok := files["tokenizer.json"]; ok && plain {
		tj, err := parseJSON("tokenizer.json", b)
		if err != nil {
			return nil, err
		}
		added, _ := tj["added_tokens"].([]any)
		for i, a := range added {
			e, err := addedEntry(a)
			if err != nil {
				return nil, fmt.Errorf("tokenizer.json: added_tokens[%d]: %w", i, err)
			}
			n, _ := e["id"].(json.Number)
			id, err := n.Int64()
			if err != nil || id < 0 || id >= int64(vocab) {
				return nil, fmt.Errorf("tokenizer.json: added token %d has id %v, not in 0..%d", i, e["id"], vocab-1)
			}
			setAdded(int(id), e)
		}
	}
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String("llama")},
		{Key: "tokenizer.ggml.pre", Value: gguf.String("default")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array(tokens)},
		{Key: "tokenizer.ggml.scores", Value: gguf.Array(scores)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array(types)},
	}
	tail, err := tokenizerTail(files, vocab)
	if err != nil {
		return nil, err
	}
	return append(kvs, tail...), nil
}

// addedEntry is an added token's entry, an object whose "content" is a string (one
// that was not, or an entry that was not an object, became an empty token; the
// converter fails on either).
func addedEntry(v any) (map[string]any, error) {
	e, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v is not an object", v)
	}
	if _, ok := e["content"].(string); !ok {
		return nil, fmt.Errorf("content is %v, expected a string", e["content"])
	}
	return e, nil
}

// plainSPM tells whether a family with its own SentencePiece reader (Arch.PlainSPM)
// reads tokenizer.model: unless tokenizer_config.json names GPT2Tokenizer (Phi-4),
// whose vocabulary goes the BPE way; the converter reads tokenizer_class whenever the
// file is there, and needs tokenizer.model otherwise.
func plainSPM(files map[string][]byte) (bool, error) {
	if b, ok := files["tokenizer_config.json"]; ok {
		tc, err := parseJSON("tokenizer_config.json", b)
		if err != nil {
			return false, err
		}
		class, ok := tc["tokenizer_class"].(string)
		if !ok {
			return false, fmt.Errorf("tokenizer_config.json: tokenizer_class is missing (the converter reads it to choose Phi-3's vocabulary)")
		}
		if class == "GPT2Tokenizer" {
			return false, nil
		}
	}
	if _, ok := files["tokenizer.model"]; !ok {
		return false, fmt.Errorf("the checkpoint has no tokenizer.model, which its tokenizer_class needs")
	}
	return true, nil
}

// tokenizerTail are the keys gguf-py's SpecialVocab writes after the vocabulary, for
// SentencePiece and BPE alike (specialVocab): the special token ids, add flags and chat
// template. nVocab bounds the ids (-1: no bound, as the converter's BPE path passes
// none).
func tokenizerTail(files map[string][]byte, nVocab int) ([]gguf.KV, error) {
	sv, err := newSpecialVocab(files, nVocab, specialTypes)
	if err != nil {
		return nil, err
	}
	return sv.kvs()
}

// looksSpecial is the converter's guess for added tokens not marked special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}
