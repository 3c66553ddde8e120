package quant

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
)

var iqTargets = []dtype.DType{dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ1_S, dtype.IQ1_M}

// TestIQWeighted: with an importance matrix, each i-quant is a plain target whose
// bytes are the kernel's (ggml's) for the tensor's rows, whatever the chunks and
// workers.
func TestIQWeighted(t *testing.T) {
	const rows, cols = 6, 512
	x := randF32(41, rows*cols)
	qw := importances(42, cols)
	for _, typ := range append(iqPlainTargets, iqTargets...) {
		name := strings.ToLower(typ.String())
		if got, err := ParseType(name); err != nil || got != typ {
			t.Fatalf("ParseType(%q) = %v, %v", name, got, err)
		}
		want := make([]byte, elemBytes(typ, len(x)))
		if err := kernels.QuantizeWeighted(typ, want, x, cols, qw); err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 3 * cols, 0} {
			out, rep, err := run(t, Options{Type: typ, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up.weight": qw}), ChunkElems: chunk, Workers: 2},
				tensorF32("blk.0.ffn_up.weight", []int64{rows, cols}, x))
			if err != nil {
				t.Fatalf("%v: %v", typ, err)
			}
			_, got := readAll(t, out)
			if tt := got["blk.0.ffn_up.weight"]; tt.DType != typ || !bytes.Equal(tt.data, want) {
				t.Fatalf("%v, chunk %d: not the kernel's weighted bytes (%v)", typ, chunk, tt.DType)
			}
			if !strings.Contains(rep.Tensors[0].Reason, "importance-weighted") {
				t.Errorf("%v: reason %q", typ, rep.Tensors[0].Reason)
			}
		}
	}
}

// TestIQNeedsImatrix: as llama-quantize, the grid types refuse a tensor without an
// importance matrix (naming the flag) or without an entry in it, except for the
// token embeddings and the output tensor, which IQ2_S and IQ1_M quantize without
// weights and the types ggml cannot quantize without weights refuse.
func TestIQNeedsImatrix(t *testing.T) {
	x := randF32(43, 2*256)
	qw := importances(44, 256)
	for _, typ := range iqTargets {
		_, _, err := run(t, Options{Type: typ}, tensorF32("blk.0.attn_q.weight", []int64{2, 256}, x))
		if err == nil || !strings.Contains(err.Error(), "--imatrix FILE") || !strings.Contains(err.Error(), `"blk.0.attn_q.weight"`) {
			t.Errorf("%v without a matrix: %v", typ, err)
		}
		m := matrix(map[string][]float32{"blk.0.attn_k.weight": qw})
		_, _, err = run(t, Options{Type: typ, Imatrix: m},
			tensorF32("blk.0.attn_k.weight", []int64{2, 256}, x), tensorF32("blk.0.attn_q.weight", []int64{2, 256}, x))
		if err == nil || !strings.Contains(err.Error(), "has no entry for it") {
			t.Errorf("%v without an entry: %v", typ, err)
		}
		out, _, err := run(t, Options{Type: typ, Imatrix: m},
			tensorF32("blk.0.attn_k.weight", []int64{2, 256}, x), tensorF32("token_embd.weight", []int64{2, 256}, x))
		if kernels.NeedsWeights(typ) {
			if err == nil || !strings.Contains(err.Error(), "only with importance weights") || !strings.Contains(err.Error(), "--exclude token_embd.weight") {
				t.Errorf("%v token_embd without an entry: %v", typ, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v token_embd without an entry: %v", typ, err)
		}
		want := make([]byte, elemBytes(typ, len(x)))
		if err := kernels.Quantize(typ, want, x); err != nil {
			t.Fatal(err)
		}
		if _, got := readAll(t, out); !bytes.Equal(got["token_embd.weight"].data, want) {
			t.Errorf("%v: token_embd.weight is not the unweighted quantization", typ)
		}
	}
}

// TestIQValues: NaN and infinities are refused naming the position, as for every
// type; rows that are not whole 256-value blocks fall back to IQ4_NL, as llama.cpp's do.
func TestIQValues(t *testing.T) {
	qw := importances(46, 512)
	for _, typ := range iqTargets {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			x := randF32(45, 3*512)
			x[512+300] = bad
			_, _, err := run(t, Options{Type: typ, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up.weight": qw})},
				tensorF32("blk.0.ffn_up.weight", []int64{3, 512}, x))
			if err == nil || !strings.Contains(err.Error(), "row 1, column 300") {
				t.Errorf("%v with %v: %v", typ, bad, err)
			}
		}
		out, _, err := run(t, Options{Type: typ, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up.weight": qw[:96]})},
			tensorF32("blk.0.ffn_up.weight", []int64{2, 96}, randF32(47, 2*96)))
		if err != nil {
			t.Fatalf("%v rows of 96: %v", typ, err)
		}
		if _, got := readAll(t, out); got["blk.0.ffn_up.weight"].DType != dtype.IQ4_NL {
			t.Errorf("%v rows of 96: %v, want llama.cpp's fallback IQ4_NL", typ, got["blk.0.ffn_up.weight"].DType)
		}
	}
}

// TestIQ1MOverflow: IQ1_M's F16 scale lives in the top nibbles of its scale words;
// an infinite one is found there, in the block it belongs to.
func TestIQ1MOverflow(t *testing.T) {
	x := randF32(48, 3*256)
	out := make([]byte, elemBytes(dtype.IQ1_M, len(x)))
	if err := kernels.QuantizeWeighted(dtype.IQ1_M, out, x, 256, unitWeights(256)); err != nil {
		t.Fatal(err)
	}
	if i := overflow(dtype.IQ1_M, out); i != -1 {
		t.Fatalf("finite scales: overflow at %d", i)
	}
	// 0x7C00 (+inf) into block 1: nibble i of the f16 is the top nibble of word i.
	b := out[56:112]
	for i, nib := range []byte{0x0, 0x0, 0xC, 0x7} {
		b[49+2*i] = b[49+2*i]&0x0f | nib<<4
	}
	if i := overflow(dtype.IQ1_M, out); i != 256 {
		t.Fatalf("infinite scale in block 1: overflow at %d, want 256", i)
	}
}
