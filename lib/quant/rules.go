package quant

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/imatrix"
)

// targets are the types apr-quant writes, by their command-line names.
var targets = []struct {
	name string
	t    dtype.DType
}{
	{"q8_0", dtype.Q8_0}, {"q4_0", dtype.Q4_0}, {"q4_1", dtype.Q4_1}, {"q5_0", dtype.Q5_0}, {"q5_1", dtype.Q5_1},
	{"q2_k", dtype.Q2_K}, {"q3_k", dtype.Q3_K}, {"q4_k", dtype.Q4_K}, {"q5_k", dtype.Q5_K}, {"q6_k", dtype.Q6_K},
	{"nvfp4", dtype.NVFP4}, {"q1_0", dtype.Q1_0}, {"q2_0", dtype.Q2_0},
	{"iq2_xxs", dtype.IQ2_XXS}, {"iq2_xs", dtype.IQ2_XS}, {"iq2_s", dtype.IQ2_S}, {"iq3_xxs", dtype.IQ3_XXS},
	{"iq3_s", dtype.IQ3_S}, {"iq1_s", dtype.IQ1_S}, {"iq1_m", dtype.IQ1_M}, {"iq4_nl", dtype.IQ4_NL},
	{"iq4_xs", dtype.IQ4_XS}, {"tq1_0", dtype.TQ1_0}, {"tq2_0", dtype.TQ2_0}, {"mxfp4", dtype.MXFP4},
	{"f16", dtype.F16}, {"bf16", dtype.BF16}, {"f32", dtype.F32},
}

// Types returns the target type names ParseType accepts, in a fixed order.
func Types() []string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	return names
}

// ErrType is wrapped by the error ParseType returns for a name that is not a target.
var ErrType = errors.New("not a quantization type")

// ParseType returns the target dtype for a name such as "q8_0", "Q4_K" or "f16"
// (case-insensitive); for a llama-quantize preset ("q4_k_m") its default type.
func ParseType(s string) (dtype.DType, error) {
	l := strings.ToLower(s)
	for _, t := range targets {
		if t.name == l {
			return t.t, nil
		}
	}
	if p, ok := lookupPreset(l); ok {
		return p.def, nil
	}
	return dtype.Invalid, fmt.Errorf("%q: %w (one of %s; or a llama-quantize preset: %s)", s, ErrType, strings.Join(Types(), ", "), strings.Join(presetNames(), ", "))
}

func isTarget(t dtype.DType) bool {
	for _, x := range targets {
		if x.t == t {
			return true
		}
	}
	return false
}

// Options say what to quantize and how.
type Options struct {
	// Type is the target: a GGML block type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K,
	// MXFP4, NVFP4, Q1_0, Q2_0), F16, BF16, or F32 (dequantize every float tensor).
	Type dtype.DType
	// Pure converts every float tensor of two or more dimensions, whatever its name
	// (llama.cpp's name rules are skipped); for a language model's preset it is
	// llama-quantize's --pure: llama.cpp's selection, every weight the preset's
	// default type (the per-tensor flags still apply).
	Pure bool
	// Include names tensors (path.Match glob patterns) to convert whatever the rules
	// say, 1-D tensors included; Exclude names tensors to keep as they are. Exclude
	// wins over Include.
	Include, Exclude []string
	// AllowRequantize permits converting an already quantized tensor to another
	// quantized type (off by default, as in llama.cpp: the error compounds).
	AllowRequantize bool
	// Workers is how many chunks are converted at once (default GOMAXPROCS). The
	// output does not depend on it.
	Workers int
	// ChunkElems is the number of values per work item (default 262144, 1 MiB of F32);
	// it is rounded up to a whole number of 256-value blocks. The output does not
	// depend on it.
	ChunkElems int
	// Stats measures the error of every converted tensor against its source values
	// (it costs one dequantization of the output).
	Stats bool
	// Plan, when the input's tensor list is known before its data (a file with an
	// index), lets New decide every tensor up front: errors surface before the first
	// byte is written, and the provenance gets per-type counts and source dtypes.
	Plan []container.TensorInfo
	// Warn receives warnings (fallback types); nil drops them.
	Warn func(msg string)
	// Producer names the program in the provenance (default "apr <version>").
	Producer string
	// Preset, when set (see Preset: "q4_k_m", "q4_0", ...), chooses each weight's type
	// by llama-quantize's rules for that file type, for a language model (the
	// metadata's GGUF key-values name its architecture and layers); Type must be the
	// preset's default type. Pure or another model makes it a plain type.
	Preset string
	// Imatrix, when set, weights the quantizers by llama-imatrix's importance matrix
	// as llama-quantize --imatrix does: each converted tensor with an entry is
	// quantized with ggml's importance-weighted quantizer (Q8_0, F16 and BF16 take no
	// weights), a tensor without one as without a matrix; an entry of the wrong size is
	// an error (token_embd.weight is then quantized without it, as llama.cpp does).
	// The provenance records the matrix (see the package documentation).
	Imatrix *imatrix.Matrix
	// Overrides are llama-quantize's per-tensor flags (--output-tensor-type,
	// --token-embedding-type, --tensor-type, --leave-output-tensor).
	Overrides
	// KVOverrides (--override-kv) set GGUF key-values of the output as llama-quantize
	// does (see KVOverride); the provenance lists them, for the GGUF export's order.
	KVOverrides []KVOverride
	// PruneLayers (--prune-layers) drops these layers and renumbers the others, as
	// llama-quantize does (see ParsePruneLayers); it needs the tensor list up front
	// (Plan, or the input's table) and the model's GGUF key-values (block_count).
	PruneLayers []int
	// Copy is llama-quantize's COPY file type: no tensor changes, the file is written
	// in llama-quantize's layout with the input's general.file_type (and the
	// --override-kv and --prune-layers edits); Type is then F32 and not used.
	Copy           bool
	imatrixEntries int // the matrix's entry count before pruning renamed them (quantize.imatrix.entries_count)

	llm *llmModel // the language model the preset's rules apply to, set by New
	// ggufForm: the stream is a model in llama.cpp's form (GGUF key-values in its
	// metadata), whose MXFP4 tensors stay as llama.cpp's converter keeps them; set by New
	ggufForm bool
	// lm: the stream is a language model (its GGUF key-values name an architecture
	// with layers), preset or not: llama.cpp's selection holds under --pure, and a
	// 32-value type falls back to F16, as llama-quantize's Q8_0 and the converter's
	// --outtype q8_0 do; set by New
	lm bool
	// projector: the stream is a vision projector (general.architecture clip), whose
	// patch embedding and merger the converter keeps in F32 but for f16; set by New
	projector bool
}

// Validate checks the options without an input.
func (o *Options) Validate() error {
	if !isTarget(o.Type) {
		return fmt.Errorf("target %v: %w (one of %s)", o.Type, ErrType, strings.Join(Types(), ", "))
	}
	for _, p := range append(append([]string(nil), o.Include...), o.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	if o.Imatrix != nil {
		switch {
		case o.Copy:
			return errors.New("COPY quantizes nothing, so it has no use for an importance matrix")
		case o.Type == dtype.F32:
			return errors.New("an importance matrix weights quantization; f32 dequantizes, so it has no use for one")
		case kernels.CanQuantize(o.Type) && !kernels.CanQuantizeWeighted(o.Type) && !ignoresWeights(o.Type):
			return fmt.Errorf("an importance matrix cannot weight %v: ggml has no importance-weighted quantizer for it", o.Type)
		}
	}
	if err := o.Overrides.validate(); err != nil {
		return err
	}
	if o.Workers < 0 || o.ChunkElems < 0 {
		return fmt.Errorf("workers (%d) and chunk size (%d) must not be negative", o.Workers, o.ChunkElems)
	}
	return nil
}

// Decision is what happens to one tensor.
type Decision struct {
	From, To dtype.DType // To == From: the tensor is copied as it is
	Reason   string      // the rule that decided, for reports
	Fallback bool        // To is a fallback for a row length Type cannot hold
	// NeedsImatrix: To is a very low-bit type that needs an importance matrix and
	// none is given (a dry run notes it; Decide refuses it).
	NeedsImatrix bool

	weights []float32 // the importance matrix's entry for the tensor, when it applies
}

// Converted reports whether the tensor's data changes.
func (d Decision) Converted() bool { return d.To != d.From }

// Decide applies the rules to one tensor: which type it gets and why, or an error
// for a selected tensor that cannot be converted (its row length does not fit the
// type and there is no fallback, it is already quantized, its dtype cannot be
// decoded, its type needs an importance matrix).
func (o *Options) Decide(t container.TensorInfo) (Decision, error) { return o.decide(t, false) }

// decide is Decide; for a dry run (plan) a missing importance matrix is noted in
// the reason instead of refused.
func (o *Options) decide(t container.TensorInfo, plan bool) (Decision, error) {
	d := Decision{From: t.DType, To: t.DType}
	if o.Copy {
		d.Reason = "COPY: copied as it is"
		return d, nil
	}
	if o.llm != nil && t.Name == "output.weight" {
		o.llm.hasOutput = true // llama.cpp's has_output: token_embd then keeps the default type
		o.llm.sawOutput = true
	}
	info := t.DType.Info()
	if p, ok := match(o.Exclude, t.Name); ok {
		d.Reason = "excluded by " + p
		return d, nil
	}
	if o.LeaveOutput && t.Name == "output.weight" {
		d.Reason = "--leave-output-tensor"
		return d, nil
	}
	if !info.Float {
		d.Reason = "not a float tensor"
		return d, nil
	}
	ov, ovWhy, ovFallback, overridden := o.override(t.Name)
	if t.DType == o.Type && !overridden {
		d.Reason = "already " + o.Type.String()
		return d, nil
	}
	if t.DType == dtype.MXFP4 && o.ggufForm && o.Preset == "" && !o.AllowRequantize {
		// gpt-oss ships its experts in MXFP4; llama.cpp's converter keeps them for
		// every --outtype (and llama-quantize refuses to requantize them, as a preset here does).
		d.Reason = "MXFP4 kept, as llama.cpp's converter keeps it for every output type (--allow-requantize converts it)"
		return d, nil
	}
	if o.Type == dtype.F32 {
		d.Reason = "f32 dequantizes every float tensor"
	} else if p, ok := match(o.Include, t.Name); ok {
		d.Reason = "included by " + p
	} else if o.projector && projectorF32(t.Name) && o.Type != dtype.F16 {
		d.Reason = "a projector's patch embedding or merger: F32 but for f16, as llama.cpp's converter keeps it (MmprojModel.tensor_force_quant)"
		return d, nil
	} else if o.Pure && !o.lm { // a language model's --pure keeps llama.cpp's selection, as llama-quantize's does
		if len(t.Shape) < 2 {
			d.Reason = fmt.Sprintf("%d-D (--pure converts 2-D and larger; --include it to convert)", len(t.Shape))
			return d, nil
		}
		d.Reason = "pure: every float tensor of 2+ dimensions"
	} else if ok, why := llamaRule(t.Name, len(t.Shape)); !ok {
		d.Reason = why
		return d, nil
	} else {
		d.Reason = why
	}
	row := rowLen(t.Shape)
	to, canFallBack := o.Type, true
	if p, ok := lookupPreset(o.Preset); ok && o.llm != nil && o.Type != dtype.F32 {
		to = p.def // iq2_s: the type IQ2_S, the file type mostly IQ2_XS
	}
	if overridden {
		to, canFallBack = ov, ovFallback
		d.Reason += "; " + ovWhy
	} else if p, ok := lookupPreset(o.Preset); ok && o.llm != nil && !o.Pure && o.Type != dtype.F32 {
		var why string
		to, why = o.presetFor(p, t)
		d.Reason += "; " + why
	} else if o.Pure && o.lm {
		d.Reason += "; --pure: " + to.String()
	}
	if !kernels.CanDequantize(t.DType) {
		return d, fmt.Errorf("tensor %q: cannot decode %v values (exclude it with --exclude)", t.Name, t.DType)
	}
	if bs := int64(to.Info().BlockElems); row%bs != 0 {
		fb, ok := fallback(to)
		if fb == dtype.F16 && !o.lm {
			// a 32-value type goes to F16 in llama-quantize (and the converter);
			// apr keeps that for language models, and refuses the tensor elsewhere
			ok = false
		}
		if !ok || !canFallBack {
			how := "choose f16, bf16 or a type that falls back (llama.cpp's fallbacks: docs/QUANT.md)"
			if !canFallBack {
				how = "give it another type (--output-tensor-type and --token-embedding-type take no fallback)"
			}
			return d, fmt.Errorf("tensor %q: rows of %d values (shape %v) are not a whole number of %d-value %v blocks; "+
				"exclude it (--exclude %s) or %s", t.Name, row, t.Shape, bs, to, t.Name, how)
		}
		if row%int64(fb.Info().BlockElems) != 0 {
			fb = dtype.F16
		}
		d.Fallback = true
		d.Reason = fmt.Sprintf("%s; fallback: rows of %d values are not a whole number of %d-value %v blocks", d.Reason, row, bs, to)
		to = fb
	}
	if to == t.DType { // after the fallback, as llama-quantize compares: copied as it is
		d.Reason += "; already " + to.String()
		return d, nil
	}
	// As llama-quantize: a quantized tensor becomes another type only with
	// --allow-requantize (f16 and bf16 too); f32 is apr's dequantization.
	if info.Quantized() && o.Type != dtype.F32 && !o.AllowRequantize {
		return d, fmt.Errorf("tensor %q is already %v: requantizing it to %v compounds the error (llama-quantize: "+
			"requantizing from type %s is disabled); start from the float model, or allow it with --allow-requantize",
			t.Name, t.DType, to, strings.ToLower(t.DType.String()))
	}
	d.To = to
	if o.Imatrix != nil {
		w, why, err := o.importanceOf(t, to)
		if err != nil {
			return d, err
		}
		d.weights = w
		d.Reason += why
	}
	if err := o.needsImatrix(t.Name, to, d.weights != nil); err != nil {
		if !plan {
			return d, err
		}
		d.NeedsImatrix = true
		d.Reason += "; needs an importance matrix (--imatrix)"
	}
	return d, nil
}

// rowLen is the innermost dimension (1 for a scalar).
func rowLen(shape []int64) int64 {
	if len(shape) == 0 {
		return 1
	}
	return shape[len(shape)-1]
}

func match(patterns []string, name string) (string, bool) {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return "pattern " + p, true
		}
	}
	return "", false
}

// projectorF32 names the tensors of a vision projector that llama.cpp's converter
// writes in F16 for --outtype f16 and in F32 for every other type
// (conversion/base.py, MmprojModel.tensor_force_quant).
func projectorF32(name string) bool {
	return strings.Contains(name, ".patch_embd.weight") || strings.Contains(name, ".patch_merger.weight")
}

// llamaRule is llama.cpp's choice of the tensors to quantize: names ending in
// "weight", two or more dimensions, and none of the tensors it keeps on purpose
// (norms, MoE routers, positional and token-type embeddings, the small 2-D tensors of
// Mamba, RWKV, Gemma 3n and T5).
func llamaRule(name string, dims int) (bool, string) {
	if !strings.HasSuffix(name, "weight") {
		return false, "not a weight (name does not end in \"weight\")"
	}
	if dims < 2 {
		return false, fmt.Sprintf("%d-D (norms, biases and vectors stay; --include it to convert)", dims)
	}
	keep := []struct{ part, why string }{
		{"_norm.weight", "norm"},
		{"ffn_gate_inp.weight", "MoE router"},
		// Qwen2-MoE's shared-expert gate: F32 in the converter's files, and of shape
		// [1, hidden], which llama-quantize counts as 1-D (ggml_n_dims)
		{"ffn_gate_inp_shexp.weight", "MoE shared-expert gate"},
		{"altup", "small AltUp tensor"},
		{"laurel", "small Laurel tensor"},
		{"per_layer_model_proj", "per-layer projection"},
		{"ssm_conv1d.weight", "Mamba conv1d"},
		{"shortconv.conv.weight", "short convolution"},
		{"time_mix_first.weight", "RWKV time-mix"},
		{"time_mix_w0.weight", "RWKV time-mix"},
		{"time_mix_w1.weight", "RWKV time-mix"},
		{"time_mix_w2.weight", "RWKV time-mix"},
		{"time_mix_v0.weight", "RWKV time-mix"},
		{"time_mix_v1.weight", "RWKV time-mix"},
		{"time_mix_v2.weight", "RWKV time-mix"},
		{"time_mix_a0.weight", "RWKV time-mix"},
		{"time_mix_a1.weight", "RWKV time-mix"},
		{"time_mix_a2.weight", "RWKV time-mix"},
		{"time_mix_g1.weight", "RWKV time-mix"},
		{"time_mix_g2.weight", "RWKV time-mix"},
		{"time_mix_decay_w1.weight", "RWKV time-mix"},
		{"time_mix_decay_w2.weight", "RWKV time-mix"},
		{"time_mix_lerp_fused.weight", "RWKV time-mix"},
		{"attn_rel_b.weight", "T5 relative position bias"},
	}
	for _, k := range keep {
		if strings.Contains(name, k.part) {
			return false, k.why + " (kept, as llama.cpp does)"
		}
	}
	if name == "position_embd.weight" || name == "token_types.weight" {
		return false, "positional or token-type embedding (kept, as llama.cpp does)"
	}
	return true, fmt.Sprintf("%d-D weight", dims)
}
