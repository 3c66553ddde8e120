package kernels

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// The weighted quantizers are held to ggml's bytes by lib/llm's TestImatrixPureBytes
// and TestImatrixPresetBytes (llama-quantize --imatrix, every type, whole tensors).
// These tests hold the package's contract.

func TestQuantizeWeightedContract(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const rowLen, rows = 512, 3
	x := make([]float32, rows*rowLen)
	qw := make([]float32, rowLen)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	for _, typ := range []dtype.DType{dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q5_1, dtype.Q2_K, dtype.Q3_K, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q8_0, dtype.F16} {
		if !CanQuantizeWeighted(typ) {
			t.Fatalf("%v: not supported", typ)
		}
		n, _ := sizes(typ, len(x))
		plain, w, again := make([]byte, n), make([]byte, n), make([]byte, n)
		if err := Quantize(typ, plain, x); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeWeighted(typ, w, x, rowLen, qw); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeWeighted(typ, again, x, rowLen, nil); err != nil || !bytes.Equal(again, plain) {
			t.Errorf("%v: nil weights are not Quantize (%v)", typ, err)
		}
		// ggml's Q8_0 and F16 take no weights; every other type's fit changes.
		if same := bytes.Equal(w, plain); same != IgnoresWeights(typ) {
			t.Errorf("%v: weighted bytes equal to unweighted: %v", typ, same)
		}
		// Row by row is the same as all rows at once.
		rb := n / rows
		for i := range rows {
			one := make([]byte, rb)
			if err := QuantizeWeighted(typ, one, x[i*rowLen:(i+1)*rowLen], rowLen, qw); err != nil || !bytes.Equal(one, w[i*rb:(i+1)*rb]) {
				t.Errorf("%v: row %d alone differs (%v)", typ, i, err)
			}
		}
		// The weighted fit has the smaller weighted error on average.
		if !IgnoresWeights(typ) {
			back := make([]float32, len(x))
			werr := func(b []byte) float64 {
				if err := Dequantize(typ, back, b); err != nil {
					t.Fatal(err)
				}
				var s float64
				for i, v := range x {
					d := float64(back[i] - v)
					s += float64(qw[i%rowLen]) * d * d
				}
				return s
			}
			if a, b := werr(w), werr(plain); a >= b {
				t.Errorf("%v: weighted error %g, unweighted %g", typ, a, b)
			}
		}
	}
	for _, c := range []struct {
		typ    dtype.DType
		dst    int
		src    int
		rowLen int
		qw     int
		want   error
	}{
		{dtype.NVFP4, 36, 64, 64, 64, ErrUnsupported},
		{dtype.Q4_K, 144, 256, 256, 128, ErrLength},
		{dtype.Q4_K, 144, 256, 128, 128, ErrLength}, // rows not whole blocks
		{dtype.Q4_0, 18, 48, 32, 32, ErrLength},     // not whole rows
		{dtype.Q4_0, 17, 32, 32, 32, ErrLength},
	} {
		err := QuantizeWeighted(c.typ, make([]byte, c.dst), make([]float32, c.src), c.rowLen, make([]float32, c.qw))
		if !errors.Is(err, c.want) {
			t.Errorf("%v dst %d src %d row %d qw %d: %v, want %v", c.typ, c.dst, c.src, c.rowLen, c.qw, err, c.want)
		}
	}
}

// benchWeighted quantizes one row of 4096 values with importance weights, as
// benchQuantize does without (MB/s of float32 input on one core).
func benchWeighted(b *testing.B, d dtype.DType) {
	r := rand.New(rand.NewPCG(1, 1))
	x := randRow(r, benchRow, 1)
	qw := make([]float32, benchRow)
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	nb, _ := sizes(d, benchRow)
	q := make([]byte, nb)
	b.SetBytes(4 * benchRow)
	for b.Loop() {
		if err := QuantizeWeighted(d, q, x, benchRow, qw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWeightedQ4_0(b *testing.B) { benchWeighted(b, dtype.Q4_0) }
func BenchmarkWeightedQ4_1(b *testing.B) { benchWeighted(b, dtype.Q4_1) }
func BenchmarkWeightedQ5_0(b *testing.B) { benchWeighted(b, dtype.Q5_0) }
func BenchmarkWeightedQ5_1(b *testing.B) { benchWeighted(b, dtype.Q5_1) }
func BenchmarkWeightedQ2_K(b *testing.B) { benchWeighted(b, dtype.Q2_K) }
func BenchmarkWeightedQ3_K(b *testing.B) { benchWeighted(b, dtype.Q3_K) }
func BenchmarkWeightedQ4_K(b *testing.B) { benchWeighted(b, dtype.Q4_K) }
func BenchmarkWeightedQ5_K(b *testing.B) { benchWeighted(b, dtype.Q5_K) }
func BenchmarkWeightedQ6_K(b *testing.B) { benchWeighted(b, dtype.Q6_K) }
