package quant

import (
	"errors"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/imatrix"
)

// TestParseTensorType: llama-quantize's PATTERN=TYPE, the pattern lower-cased, and
// its refusals.
func TestParseTensorType(t *testing.T) {
	tt, err := ParseTensorType(`BLK\.1\.ATTN_V=Q8_0`)
	if err != nil || tt.Pattern != `blk\.1\.attn_v` || tt.Type != dtype.Q8_0 {
		t.Fatalf("%+v %v", tt, err)
	}
	o := Options{Type: dtype.Q4_K, Overrides: Overrides{TensorTypes: []TensorType{tt}}}
	if _, ok := o.pattern("blk.1.attn_v.weight"); !ok {
		t.Error("the pattern does not match")
	}
	if _, ok := o.pattern("blk.10.attn_v.weight"); ok {
		t.Error("blk.10 matches blk\\.1\\.")
	}
	for in, want := range map[string]string{
		"attn_v":        "want PATTERN=TYPE",
		"=q8_0":         "missing tensor name",
		"attn_v=":       "missing quantization type",
		"attn_v=q9_0":   "not a quantization type",
		"(attn_v=q8_0":  "pattern",
		"attn_v=q8_k":   "not a quantization type",
		`a(?=b)=q8_0`:   "pattern",
		"ffn_up=iq4_xs": "",
	} {
		_, err := ParseTensorType(in)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, err := ParseGGMLType("Q8_K"); !errors.Is(err, ErrType) {
		t.Errorf("q8_k: %v", err)
	}
}

// TestNeedsImatrix: the types llama-quantize will not write without an importance
// matrix are refused naming the tensor and the flag, a dry run only notes them, and
// the token embeddings and output are exempt, as in tensor_requires_imatrix.
func TestNeedsImatrix(t *testing.T) {
	w := container.TensorInfo{Name: "blk.0.attn_q.weight", DType: dtype.F32, Shape: []int64{4, 256}}
	for _, typ := range []dtype.DType{dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ1_S, dtype.IQ1_M, dtype.IQ3_XXS} {
		o := Options{Type: typ}
		_, err := o.Decide(w)
		if err == nil || !strings.Contains(err.Error(), `tensor "blk.0.attn_q.weight"`) ||
			!strings.Contains(err.Error(), "--imatrix FILE") {
			t.Errorf("%v: %v", typ, err)
		}
		d, err := o.decide(w, true)
		if err != nil || !d.NeedsImatrix {
			t.Errorf("%v dry run: %+v %v", typ, d, err)
		}
		d, err = o.decide(container.TensorInfo{Name: "token_embd.weight", DType: dtype.F32, Shape: []int64{4, 256}}, true)
		// exempt, but for the types ggml quantizes only with weights
		if err != nil || d.NeedsImatrix != kernels.NeedsWeights(typ) {
			t.Errorf("%v token_embd: %+v %v", typ, d, err)
		}
	}
	// Q2_K needs one only in a Q2_K_S file
	if err := (&Options{Type: dtype.Q2_K, Preset: "q2_k_s"}).needsImatrix(w.Name, dtype.Q2_K, false); err == nil ||
		!strings.Contains(err.Error(), "--imatrix FILE") {
		t.Errorf("q2_k_s: %v", err)
	}
	if err := (&Options{Type: dtype.Q2_K, Preset: "q2_k"}).needsImatrix(w.Name, dtype.Q2_K, false); err != nil {
		t.Errorf("q2_k: %v", err)
	}
	// a matrix without the tensor's entry
	m := &imatrix.Matrix{File: "m.gguf", Entries: map[string][]float32{"other": make([]float32, 256)}}
	if err := (&Options{Type: dtype.IQ2_XXS, Imatrix: m}).needsImatrix(w.Name, dtype.IQ2_XXS, false); err == nil ||
		!strings.Contains(err.Error(), "m.gguf has no entry for it") {
		t.Errorf("no entry: %v", err)
	}
}

// TestTargetsWritable: every type decide can give a tensor (a target, as Validate
// and the override flags require, or a target's fallback) has a quantizer in kernels
// and a value bound, so decide need not check.
func TestTargetsWritable(t *testing.T) {
	for _, x := range targets {
		types := []dtype.DType{x.t}
		if fb, ok := fallback(x.t); ok {
			types = append(types, fb, dtype.F16)
		}
		for _, typ := range types {
			if !isTarget(typ) {
				t.Errorf("%s falls back to %v, not a target", x.name, typ)
			}
			if !typ.Info().Quantized() {
				continue
			}
			if _, bounded := maxMagnitude[typ]; !bounded {
				t.Errorf("%v: no value bound", typ)
			}
			if !kernels.CanQuantize(typ) && !kernels.NeedsWeights(typ) {
				t.Errorf("%v: no quantizer", typ)
			}
		}
	}
}

// TestOverridesDecide: the flags' order of precedence, as llama_tensor_get_type.
func TestOverridesDecide(t *testing.T) {
	tt := func(s string) TensorType {
		x, err := ParseTensorType(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	o := Options{Type: dtype.Q4_0, Pure: true, Overrides: Overrides{
		OutputTensorType: dtype.Q8_0, TokenEmbeddingType: dtype.Q5_0,
		TensorTypes: []TensorType{tt("per_layer=q4_1"), tt("attn=q5_1"), tt("attn_v=q8_0"), tt("ffn=q2_k")}}}
	for name, want := range map[string]dtype.DType{
		"output.weight":               dtype.Q8_0,
		"token_embd.weight":           dtype.Q5_0,
		"per_layer_token_embd.weight": dtype.Q4_1, // a pattern naming it wins over --token-embedding-type
		"blk.0.attn_v.weight":         dtype.Q5_1, // the first pattern that matches
		"blk.0.ffn_up.weight":         dtype.Q4_0, // rows of 96: Q2_K falls back to Q4_0
		"blk.0.other.weight":          dtype.Q4_0,
	} {
		cols := int64(256)
		if strings.Contains(name, "ffn") {
			cols = 96
		}
		d, err := o.Decide(container.TensorInfo{Name: name, DType: dtype.F32, Shape: []int64{2, cols}})
		if err != nil || d.To != want {
			t.Errorf("%s: %v (%s) %v, want %v", name, d.To, d.Reason, err, want)
		}
	}
	o.LeaveOutput = true
	if d, _ := o.Decide(container.TensorInfo{Name: "output.weight", DType: dtype.F32, Shape: []int64{2, 256}}); d.Converted() {
		t.Errorf("--leave-output-tensor: %v", d.To)
	}
	// f16 ignores --tensor-type, as llama-quantize does for a target that is not quantized
	o = Options{Type: dtype.F16, Overrides: Overrides{TensorTypes: []TensorType{tt("attn=q8_0")}}}
	if d, _ := o.Decide(container.TensorInfo{Name: "blk.0.attn_v.weight", DType: dtype.F32, Shape: []int64{2, 256}}); d.To != dtype.F16 {
		t.Errorf("f16 with --tensor-type: %v", d.To)
	}
}
