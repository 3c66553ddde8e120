//go:build amd64 && !purego && !noasm

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestIQ3AsmRows quantizes whole rows to IQ3_XXS and IQ3_S with the
// assembly search and with the reference (iq3Asm off), without and with
// importance weights (some zero), over ordinary blocks, the K-quant test
// blocks (scales from 1e-20 to 1e20) and edgeBlocks (thresholds, ±0,
// subnormals, constant runs, NaN and infinities): the same bytes.
func TestIQ3AsmRows(t *testing.T) {
	if !iq3Asm {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(35, 36))
	x := append(randRow(r, 64*qkK, 1), kquantBlocks(r, 200)...)
	x = append(x, edgeBlocks(r, 200)...)
	qw := make([]float32, len(x))
	for i := range qw {
		if r.IntN(8) != 0 {
			qw[i] = float32(r.ExpFloat64())
		}
	}
	for _, c := range []struct {
		name string
		f    func(y []byte, x, qw []float32)
		bs   int
	}{{"IQ3_XXS", quantRowIQ3_XXSW, iq3xxsBytes}, {"IQ3_S", quantRowIQ3_SW, iq3sBytes}} {
		for _, w := range [][]float32{nil, qw} {
			nb := len(x) / qkK
			got, want := make([]byte, nb*c.bs), make([]byte, nb*c.bs)
			c.f(got, x, w)
			iq3Asm = false
			c.f(want, x, w)
			iq3Asm = true
			if !bytes.Equal(got, want) {
				i := firstDiff(got, want)
				t.Fatalf("%s (weights %v): block %d, byte %d: %#02x, want %#02x", c.name, w != nil, i/c.bs, i%c.bs, got[i], want[i])
			}
		}
	}
}
