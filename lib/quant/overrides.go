package quant

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/apr-go/apr/lib/dtype"
)

// Overrides are llama-quantize's per-tensor controls, with its flags' meanings
// (tools/quantize/quantize.cpp and llama_tensor_get_type in src/llama-quant.cpp of
// today's llama.cpp, 2026-09-28). They act on the tensors the selection converts.
type Overrides struct {
	// OutputTensorType (--output-tensor-type) is output.weight's type, whatever the
	// preset says and without a fallback; with tied embeddings (no output.weight) a
	// preset gives it to token_embd.weight too, as llama.cpp does. Invalid: unset.
	OutputTensorType dtype.DType
	// TokenEmbeddingType (--token-embedding-type) is the type of token_embd.weight
	// and per_layer_token_embd.weight (unless a TensorTypes pattern names the
	// latter), without a fallback. Invalid: unset.
	TokenEmbeddingType dtype.DType
	// TensorTypes (--tensor-type PATTERN=TYPE, in order) give the type of each
	// tensor whose name a pattern matches anywhere (the first that matches wins), in
	// place of the preset's rules and also under Pure; the fallback for rows that
	// are not whole blocks still applies. As in llama-quantize they act only when
	// the target is a quantized type (f16, bf16 and f32 ignore them).
	TensorTypes []TensorType
	// LeaveOutput (--leave-output-tensor) keeps output.weight as it is.
	LeaveOutput bool
}

// TensorType is one --tensor-type PATTERN=TYPE.
type TensorType struct {
	Pattern string // as llama-quantize keeps it: lower-cased
	Type    dtype.DType
	re      *regexp.Regexp
}

// ParseTensorType reads PATTERN=TYPE as llama-quantize's --tensor-type does: the
// pattern (before the first '=') is lower-cased and is a regular expression searched
// for anywhere in a tensor's name (std::regex_search; RE2 syntax here, which agrees on
// the patterns people write: no back-references or look-arounds); TYPE is a ggml type
// name (ParseGGMLType).
func ParseTensorType(s string) (TensorType, error) {
	pat, typ, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return TensorType{}, fmt.Errorf("--tensor-type %q: want PATTERN=TYPE", s)
	case pat == "":
		return TensorType{}, fmt.Errorf("--tensor-type %q: missing tensor name", s)
	case typ == "":
		return TensorType{}, fmt.Errorf("--tensor-type %q: missing quantization type", s)
	}
	pat = strings.ToLower(pat)
	re, err := regexp.Compile(pat)
	if err != nil {
		return TensorType{}, fmt.Errorf("--tensor-type %q: pattern: %w", s, err)
	}
	t, err := ParseGGMLType(typ)
	if err != nil {
		return TensorType{}, fmt.Errorf("--tensor-type %q: %w", s, err)
	}
	return TensorType{Pattern: pat, Type: t, re: re}, nil
}

// ParseGGMLType reads a ggml type name as llama-quantize's type flags take it
// (ggml_type_name, case-insensitive: "q8_0", "Q6_K", "iq4_xs", "bf16"); it must be a
// type apr-quant writes.
func ParseGGMLType(s string) (dtype.DType, error) {
	for _, t := range targets {
		if strings.EqualFold(t.name, s) {
			return t.t, nil
		}
	}
	return dtype.Invalid, fmt.Errorf("%q: %w (a ggml type apr-quant writes: %s)", s, ErrType, strings.Join(Types(), ", "))
}

// tokenEmbd is llama.cpp's tensor_name_match_token_embd.
func tokenEmbd(name string) bool {
	return name == "token_embd.weight" || name == "per_layer_token_embd.weight"
}

// pattern returns the first --tensor-type that matches name.
func (v *Overrides) pattern(name string) (TensorType, bool) {
	for _, p := range v.TensorTypes {
		if p.re == nil {
			p.re = regexp.MustCompile(p.Pattern) // a TensorType built by hand
		}
		if p.re.MatchString(name) {
			return p, true
		}
	}
	return TensorType{}, false
}

// validate checks hand-built patterns.
func (v *Overrides) validate() error {
	for i, p := range v.TensorTypes {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return fmt.Errorf("--tensor-type %q: %w", p.Pattern, err)
		}
		if !isTarget(p.Type) {
			return fmt.Errorf("--tensor-type %s=%v: %w", p.Pattern, p.Type, ErrType)
		}
		v.TensorTypes[i].re = re
	}
	for _, t := range []dtype.DType{v.OutputTensorType, v.TokenEmbeddingType} {
		if t != dtype.Invalid && !isTarget(t) {
			return fmt.Errorf("%v: %w", t, ErrType)
		}
	}
	return nil
}

// override is llama_tensor_get_type's first steps for a converted tensor: the type
// the flags give it, and whether the fallback applies to it. ok is false when no flag
// names the tensor (the preset's rules, or the plain type, then decide).
func (o *Options) override(name string) (t dtype.DType, why string, fallback, ok bool) {
	if o.TokenEmbeddingType != dtype.Invalid && tokenEmbd(name) {
		// per_layer_token_embd is a large table of its own: a --tensor-type naming it wins
		if _, named := o.pattern(name); !named || name != "per_layer_token_embd.weight" {
			return o.TokenEmbeddingType, "--token-embedding-type", false, true
		}
	}
	if o.OutputTensorType != dtype.Invalid && name == "output.weight" {
		return o.OutputTensorType, "--output-tensor-type", false, true
	}
	if !o.Type.Info().Quantized() {
		return dtype.Invalid, "", false, false
	}
	if p, found := o.pattern(name); found {
		return p.Type, "--tensor-type " + p.Pattern + "=" + strings.ToLower(p.Type.String()), true, true
	}
	return dtype.Invalid, "", false, false
}
