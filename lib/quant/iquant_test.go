package quant

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
)

// iqPlainTargets are the i-quants that (but for IQ3_XXS) need no importance matrix.
var iqPlainTargets = []dtype.DType{dtype.IQ4_NL, dtype.IQ4_XS, dtype.IQ3_XXS, dtype.IQ3_S}

// TestIQuantTargets: the i-quants of iqPlainTargets are plain targets without an
// importance matrix too (with one: TestIQWeighted), their bytes the kernels'; the
// 256-value ones fall back to IQ4_NL for rows of 32·k values, as llama.cpp does;
// IQ3_XXS is refused without importance weights except for token_embd and output
// (llama-quantize's rule), naming the flag.
func TestIQuantTargets(t *testing.T) {
	const rows, cols = 3, 512
	x := randF32(41, rows*cols)
	qw := importances(42, cols)
	for _, typ := range iqPlainTargets {
		_, _, err := run(t, Options{Type: typ}, tensorF32("blk.0.ffn_up.weight", []int64{rows, cols}, x))
		if refused := err != nil; refused != (typ == dtype.IQ3_XXS) {
			t.Errorf("%v without an importance matrix: %v", typ, err)
		} else if refused && !strings.Contains(err.Error(), "--imatrix") {
			t.Errorf("%v: the error does not name the flag: %v", typ, err)
		}
		// token_embd and output need no matrix, and a row of 96 values falls back.
		out, rep, err := run(t, Options{Type: typ}, tensorF32("output.weight", []int64{rows, cols}, x),
			tensorF32("token_embd.weight", []int64{16, 96}, x[:16*96]))
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		_, got := readAll(t, out)
		plain := make([]byte, elemBytes(typ, len(x)))
		if err := kernels.Quantize(typ, plain, x); err != nil || !bytes.Equal(got["output.weight"].data, plain) {
			t.Errorf("%v: output.weight is not the kernel's bytes (%v)", typ, err)
		}
		fb := rep.Tensors[1]
		wantFB := dtype.IQ4_NL
		if typ == dtype.IQ4_NL {
			wantFB = typ // 96 values are whole IQ4_NL blocks
		}
		if fb.To != wantFB.String() || fb.Fallback != (typ != dtype.IQ4_NL) {
			t.Errorf("%v: rows of 96 values become %v (fallback %v), want %v", typ, fb.To, fb.Fallback, wantFB)
		}
	}
	_, _, err := run(t, Options{Type: dtype.IQ3_XXS, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up.weight": qw})},
		tensorF32("blk.0.ffn_up.weight", []int64{rows, cols}, x), tensorF32("blk.0.ffn_down.weight", []int64{rows, cols}, x))
	if err == nil || !strings.Contains(err.Error(), `"blk.0.ffn_down.weight": the importance matrix m.dat has no entry for it`) {
		t.Errorf("IQ3_XXS tensor without an entry: %v", err)
	}
}
