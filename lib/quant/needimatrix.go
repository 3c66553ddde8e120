package quant

import (
	"fmt"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
)

// needsImatrix reports the tensors llama-quantize refuses to quantize without
// importance weights (tensor_requires_imatrix in src/llama-quant.cpp, llama.cpp of
// 2026-09-28): those whose final type is IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S or
// IQ1_M ("the result will be garbage"), except the token embeddings and the output
// tensor. (Q2_K in a Q2_K_S file is the preset's rule, not the type's.)
func needsImatrix(name string, to dtype.DType) bool {
	if name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight" {
		return false
	}
	switch to {
	case dtype.IQ3_XXS, dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ1_S, dtype.IQ1_M:
		return true
	}
	return false
}

// imatrixMissing is the error for a tensor that needsImatrix and has no weights:
// llama-quantize stops there too, before it writes anything.
func (o *Options) imatrixMissing(t container.TensorInfo, to dtype.DType) error {
	if o.Imatrix == nil {
		return fmt.Errorf("tensor %q: %v needs an importance matrix (--imatrix FILE, from llama-imatrix), as llama-quantize requires: "+
			"without one the result is garbage; choose another type for it (--exclude %s, or a type with more bits)", t.Name, to, t.Name)
	}
	return fmt.Errorf("tensor %q: the importance matrix %s has no entry for it, and %v needs one (llama-quantize stops here: "+
		"the result would be garbage); exclude it (--exclude %s) or use a matrix made for this model", t.Name, o.Imatrix.File, to, t.Name)
}
