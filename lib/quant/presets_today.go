package quant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
)

// This file holds today's llama-quantize (llama.cpp of 2026-09-28) where it goes
// beyond the K-quant presets of preset.go: the i-quant, ternary, MXFP4_MOE, Q1_0 and
// Q2_0 file types and Q2_K_S (llama_tensor_get_type_impl in src/llama-quant.cpp), the fallback
// for rows that are not whole blocks (tensor_type_fallback), and the types that
// need an importance matrix (tensor_requires_imatrix).

// todayPresets are the presets whose rules todayPresetType holds.
var todayPresets = []string{"iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq1_s", "iq1_m", "iq3_xxs", "iq3_xs", "iq3_s", "iq3_m",
	"iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4_moe", "q2_k_s", "q1_0", "q2_0"}

// todayTypes are the target types of today's llama-quantize beyond the K-quants.
var todayTypes = []dtype.DType{dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ3_XXS, dtype.IQ3_S, dtype.IQ1_S, dtype.IQ1_M,
	dtype.IQ4_NL, dtype.IQ4_XS, dtype.TQ1_0, dtype.TQ2_0, dtype.MXFP4}

// ignoresWeights: ggml's quantizer of t takes no importance weights (Q8_0, F16, BF16,
// F32 as kernels.IgnoresWeights says; TQ1_0, TQ2_0, Q1_0 and Q2_0, whose ggml
// quantizers ignore them), so an importance matrix leaves its bytes as they are.
func ignoresWeights(t dtype.DType) bool {
	return kernels.IgnoresWeights(t) || t == dtype.TQ1_0 || t == dtype.TQ2_0 || t == dtype.Q1_0 || t == dtype.Q2_0
}

// presetFor is the type preset p gives a converted tensor of a language model, and
// the reason, before the fallback: --output-tensor-type for the token embeddings of a
// model without output.weight (llama.cpp quantizes them as the output), otherwise
// the preset's rules.
func (o *Options) presetFor(p preset, t container.TensorInfo) (dtype.DType, string) {
	m := o.llm
	var to dtype.DType
	if slices.Contains(todayPresets, p.name) {
		to = m.todayPresetType(p, t.Name, t.Shape)
	} else {
		to = m.presetType(p, t.Name, rowLen(t.Shape))
	}
	if o.OutputTensorType != dtype.Invalid && !m.hasOutput && tokenEmbd(t.Name) {
		return o.OutputTensorType, "--output-tensor-type (tied embeddings: token_embd is the output)"
	}
	return to, presetReason(p, to)
}

// tensor categories, llama.cpp's tensor_get_category (in its order of tests)
const (
	catOther = iota
	catOutput
	catTokenEmbd
	catQKV
	catKVB
	catV
	catK
	catQ
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
)

func category(name string) int {
	switch {
	case name == "output.weight":
		return catOutput
	case tokenEmbd(name):
		return catTokenEmbd
	}
	for _, c := range []struct {
		part string
		cat  int
	}{
		{"attn_qkv.weight", catQKV}, {"attn_kv_b.weight", catKVB}, {"attn_v.weight", catV}, {"attn_k.weight", catK},
		{"attn_q.weight", catQ}, {"attn_output.weight", catAttnOutput}, {"ffn_up", catFFNUp}, {"ffn_gate", catFFNGate},
		{"ffn_down", catFFNDown},
	} {
		if strings.Contains(name, c.part) {
			return c.cat
		}
	}
	return catOther
}

// todayPresetType is llama_tensor_get_type_impl for the presets in todayPresets.
// Layer counters (i_ffn_down, i_attention_wv) are the layer of the tensor's name,
// as preset.go takes them: the same for a model with one such tensor a layer; the
// iq1/iq2 presets' ffn_down rule counts ffn_down tensors as llama.cpp does.
func (m *llmModel) todayPresetType(p preset, name string, shape []int64) dtype.DType {
	t, ft := p.def, p.name
	i, n := layerOf(name), m.layers
	falcon := m.arch == "falcon"
	cat := category(name)
	if cat == catTokenEmbd && !m.outputKnown && !m.hasOutput {
		m.hasOutput, m.assumed = true, true // as presetType: checked at the end
	}
	is := func(names ...string) bool { return slices.Contains(names, ft) }
	attnV := cat == catV || cat == catQKV || cat == catKVB
	gqa4 := m.gqa() >= 4
	iq2sm := is("iq2_s", "iq2_m")
	switch {
	case cat == catOutput || (!m.hasOutput && cat == catTokenEmbd):
		switch {
		case ft == "mxfp4_moe", falcon, rowLen(shape)%int64(t.Info().BlockElems) != 0:
			return dtype.Q8_0
		case is("iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
			return dtype.Q5_K
		case t != dtype.Q8_0:
			return dtype.Q6_K
		}
	case ft == "mxfp4_moe":
		// expert tensors (3-D) MXFP4, the rest Q8_0; Bailing MoE 3's MLA projections
		// are 3-D too, so there only the FFN experts
		expertFFN := cat == catFFNUp || cat == catFFNGate || cat == catFFNDown
		if experts(shape) > 1 && (m.arch != "bailingmoe3" || expertFFN) {
			return dtype.MXFP4
		}
		return dtype.Q8_0
	case cat == catTokenEmbd:
		switch {
		case is("iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"):
			return dtype.Q2_K
		case is("iq2_s", "iq2_m", "iq3_xxs"):
			return dtype.IQ3_S
		case is("tq1_0", "tq2_0", "q2_0"):
			return dtype.Q4_K
		}
	case is("iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
		low := dtype.Q2_K
		if iq2sm {
			low = dtype.IQ3_S
		}
		switch {
		case attnV:
			if gqa4 || m.experts >= 4 {
				return dtype.Q4_K
			}
			return low
		case m.experts == 8 && cat == catK:
			return dtype.Q4_K
		case cat == catFFNDown:
			j := m.ffnDown
			m.ffnDown++
			if j < n/8 {
				return low
			}
		case cat == catAttnOutput:
			switch {
			case m.experts == 8:
				return dtype.Q5_K
			case is("iq1_s", "iq1_m"):
				return dtype.IQ2_XXS
			case iq2sm:
				return dtype.IQ3_S
			}
		}
	case attnV:
		switch {
		case ft == "q2_k_s" && gqa4:
			t = dtype.Q4_K
		case ft == "iq3_xxs":
			t = dtype.IQ3_XXS
			if gqa4 {
				t = dtype.Q4_K
			} else if !m.imatrix {
				t = dtype.IQ3_S
			}
		case is("iq3_xs", "iq3_s") && gqa4:
			t = dtype.Q4_K
		case ft == "iq3_m":
			t = dtype.Q4_K
		case is("iq4_nl", "iq4_xs") && gqa4:
			t = dtype.Q5_K
		}
		if m.arch == "llama" && n == 80 && (t == dtype.Q3_K || t == dtype.Q4_K) { // LLM_TYPE_70B, as presetType
			t = dtype.Q5_K
		}
		if m.experts == 8 {
			t = dtype.Q8_0
		}
	case cat == catK:
		switch {
		case m.experts == 8:
			t = dtype.Q8_0
		case ft == "iq3_xs":
			t = dtype.IQ3_XXS
		case ft == "iq3_xxs":
			t = dtype.IQ2_S
		}
	case cat == catQ:
		switch ft {
		case "iq3_xs":
			t = dtype.IQ3_XXS
		case "iq3_xxs":
			t = dtype.IQ2_S
		}
	case cat == catFFNDown:
		switch {
		case ft == "q2_k_s":
			if i < n/8 {
				t = dtype.Q4_K
			}
		case ft == "iq3_xxs" && !m.imatrix:
			t = dtype.Q3_K
			if i < n/8 {
				t = dtype.Q4_K
			}
		case ft == "iq3_m" && (i < n/8 || (m.experts == 8 && moreBits(i, n))):
			t = dtype.Q4_K
		case i < n/8 && is("iq4_nl", "iq4_xs") && !m.imatrix:
			t = dtype.Q5_K
		}
	case cat == catAttnOutput && !falcon:
		if m.experts == 8 {
			if is("iq3_xs", "iq3_xxs", "iq4_nl", "iq3_s", "iq3_m", "iq4_xs") {
				t = dtype.Q5_K
			}
		} else if ft == "iq3_xxs" {
			t = dtype.IQ3_S
		} else if ft == "iq3_m" {
			t = dtype.Q4_K
		}
	case cat == catFFNGate || cat == catFFNUp:
		if ft == "iq3_xs" && i >= n/8 && i < 7*n/8 {
			t = dtype.IQ3_XXS
		}
	}
	return t
}

// fallback is tensor_type_fallback's type for rows that are not whole blocks of t:
// the 256-value i-quants go to IQ4_NL; Q2_K, Q3_K, Q2_0 and the ternary types to
// Q4_0; Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0 (llama.cpp before 2025 sent Q2_K
// and Q3_K to IQ4_NL); a 32-value type (Q4_0..Q8_0, IQ4_NL, MXFP4) has no smaller
// block, so it goes straight to F16, as does any fallback whose blocks do not fit
// either (the caller checks). NVFP4 and Q1_0 have none: such a tensor is an error.
func fallback(t dtype.DType) (dtype.DType, bool) {
	switch t {
	case dtype.IQ1_S, dtype.IQ1_M, dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ3_XXS, dtype.IQ3_S, dtype.IQ4_XS:
		return dtype.IQ4_NL, true
	case dtype.Q2_0, dtype.Q2_K, dtype.Q3_K, dtype.TQ1_0, dtype.TQ2_0:
		return dtype.Q4_0, true
	case dtype.Q4_K:
		return dtype.Q5_0, true
	case dtype.Q5_K:
		return dtype.Q5_1, true
	case dtype.Q6_K:
		return dtype.Q8_0, true
	}
	if t.Info().Quantized() && t.Info().BlockElems <= 32 {
		return dtype.F16, true
	}
	return dtype.Invalid, false
}

// needsImatrix is tensor_requires_imatrix: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S and
// IQ3_XXS (and Q2_K in a Q2_K_S file) need importance weights, except for the token
// embeddings and the output; llama-quantize refuses the file without a matrix, and a
// tensor the matrix has no entry for. ggml cannot quantize IQ2_XXS, IQ2_XS and IQ1_S
// without weights at all (it asserts: llama-quantize --pure stops on the token
// embeddings there), so those exempt tensors are refused too. have: the tensor has its
// weights.
func (o *Options) needsImatrix(name string, to dtype.DType, have bool) error {
	if have {
		return nil
	}
	exempt := tokenEmbd(name) || name == "output.weight"
	required := false
	switch to {
	case dtype.IQ1_S, dtype.IQ1_M, dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ3_XXS:
		required = !exempt
	case dtype.Q2_K:
		p, _ := lookupPreset(o.Preset)
		required = !exempt && p.name == "q2_k_s"
	}
	switch {
	case !required && !kernels.NeedsWeights(to):
		return nil
	case o.Imatrix == nil:
		return fmt.Errorf("tensor %q: %v needs an importance matrix, as llama-quantize requires for IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, "+
			"IQ2_S and IQ3_XXS (and Q2_K in a Q2_K_S file): give one with --imatrix FILE (llama-imatrix's .gguf or .dat)", name, to)
	case required:
		return fmt.Errorf("tensor %q: the importance matrix %s has no entry for it, and %v is a very low-bit type that needs one "+
			"(llama-quantize: missing importance matrix for tensor in a very low-bit quantization)", name, o.Imatrix.File, to)
	}
	return fmt.Errorf("tensor %q: ggml quantizes %v only with importance weights, and there are none for this tensor "+
		"(llama-imatrix records none for embeddings); keep it with --exclude %s or choose a type ggml quantizes without weights for it",
		name, to, name)
}
