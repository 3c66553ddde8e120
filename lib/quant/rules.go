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

// fallbacks is the type a tensor gets when its rows are not a whole number of the
// requested type's blocks. It follows llama.cpp's quantizer (tensor_type_fallback in
// src/llama-quant.cpp, commit 007dbbf3): Q2_K, Q3_K and Q2_0 -> Q4_0, Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0. (Older llama.cpp sent Q2_K and Q3_K to IQ4_NL, which
// apr does not write; Q4_0 has the same 4.5 bits per weight.) When the fallback cannot
// hold the row either (not a multiple of 32), the tensor becomes F16, again as
// llama.cpp does. The 32-value types, NVFP4 and Q1_0 have no fallback there: such a
// tensor is an error.
var fallbacks = map[dtype.DType]dtype.DType{
	dtype.Q2_K: dtype.Q4_0,
	dtype.Q3_K: dtype.Q4_0,
	dtype.Q4_K: dtype.Q5_0,
	dtype.Q5_K: dtype.Q5_1,
	dtype.Q6_K: dtype.Q8_0,
	dtype.Q2_0: dtype.Q4_0,
}

// Options say what to quantize and how.
type Options struct {
	// Type is the target: a GGML block type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K,
	// NVFP4, Q1_0, Q2_0), F16, BF16, or F32 (dequantize every float tensor).
	Type dtype.DType
	// Pure converts every float tensor of two or more dimensions, whatever its name
	// (llama.cpp's name rules are skipped).
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

	llm *llmModel // the language model the preset's rules apply to, set by New
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
		case o.Type == dtype.F32:
			return errors.New("an importance matrix weights quantization; f32 dequantizes, so it has no use for one")
		case !kernels.CanQuantizeWeighted(o.Type):
			return fmt.Errorf("an importance matrix cannot weight %v: ggml has no importance-weighted quantizer for it in llama.cpp b4747", o.Type)
		}
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

	weights []float32 // the importance matrix's entry for the tensor, when it applies
}

// Converted reports whether the tensor's data changes.
func (d Decision) Converted() bool { return d.To != d.From }

// Decide applies the rules to one tensor: which type it gets and why, or an error
// for a selected tensor that cannot be converted (its row length does not fit the
// type and there is no fallback, it is already quantized, its dtype cannot be
// decoded).
func (o *Options) Decide(t container.TensorInfo) (Decision, error) {
	d := Decision{From: t.DType, To: t.DType}
	if o.llm != nil && t.Name == "output.weight" {
		o.llm.hasOutput = true // llama.cpp's has_output: token_embd then keeps the default type
		o.llm.sawOutput = true
	}
	info := t.DType.Info()
	if p, ok := match(o.Exclude, t.Name); ok {
		d.Reason = "excluded by " + p
		return d, nil
	}
	if !info.Float {
		d.Reason = "not a float tensor"
		return d, nil
	}
	if t.DType == o.Type {
		d.Reason = "already " + o.Type.String()
		return d, nil
	}
	if o.Type == dtype.F32 {
		d.Reason = "f32 dequantizes every float tensor"
	} else if p, ok := match(o.Include, t.Name); ok {
		d.Reason = "included by " + p
	} else if o.Pure {
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
	if !kernels.CanDequantize(t.DType) {
		return d, fmt.Errorf("tensor %q: cannot decode %v values (exclude it with --exclude)", t.Name, t.DType)
	}
	if info.Quantized() && o.Type.Info().Quantized() && !o.AllowRequantize {
		return d, fmt.Errorf("tensor %q is already %v: requantizing it to %v compounds the error; "+
			"start from the float model, or allow it with --allow-requantize", t.Name, t.DType, o.Type)
	}
	row := rowLen(t.Shape)
	to := o.Type
	if p, ok := lookupPreset(o.Preset); ok && o.llm != nil && !o.Pure && o.Type != dtype.F32 {
		to = o.llm.presetType(p, t.Name, row)
		d.Reason = d.Reason + "; " + presetReason(p, to)
	}
	if bs := int64(to.Info().BlockElems); row%bs != 0 {
		fb, ok := fallbacks[to]
		if !ok {
			return d, fmt.Errorf("tensor %q: rows of %d values (shape %v) are not a whole number of %d-value %v blocks; "+
				"exclude it (--exclude %s) or choose f16, bf16, a K-quant or q2_0 (which fall back)", t.Name, row, t.Shape, bs, to, t.Name)
		}
		if row%int64(fb.Info().BlockElems) != 0 {
			fb = dtype.F16
		}
		d.Fallback = true
		d.Reason = fmt.Sprintf("%s; fallback: rows of %d values are not a whole number of %d-value %v blocks", d.Reason, row, bs, to)
		to = fb
	}
	if to == t.DType {
		d.Reason += "; already " + to.String()
		return d, nil
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
