//go:build amd64 && !purego && !noasm

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
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

// TestIQ3Lanes compares the assembly lane kernel with iq3LanesGeneric on
// random lanes: all outputs, bit for bit.
func TestIQ3Lanes(t *testing.T) {
	if !iq3Asm {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(33, 34))
	for trial := range 20000 {
		tb := iq3xxsTables()
		if trial%2 == 1 {
			tb = iq3sTables()
		}
		x, w, waux, maxv := iq3SubBlock(r, trial%2 == 0)
		var want, got iq3Lanes
		copy(want.x[:], x)
		copy(want.w[:], w)
		copy(want.wa[:], waux)
		for i := range x {
			want.wx[i] = float32(w[i] * x[i])
		}
		for ln := range 8 {
			id := iq3TrialID(r.IntN(31)-15, maxv)
			if r.IntN(50) == 0 {
				id = float32(r.NormFloat64() * 100)
			}
			want.id[ln], want.s[ln] = id, 1/id
		}
		got = want
		tb.iq3LanesGeneric(&want)
		iq3LanesAsm(&got, &tb.nbr[0], &tb.list[0])
		// Every field but the assembly's scratch (off, the last).
		gb := unsafe.Slice((*byte)(unsafe.Pointer(&got)), unsafe.Offsetof(got.off))
		wb := unsafe.Slice((*byte)(unsafe.Pointer(&want)), unsafe.Offsetof(want.off))
		if !bytes.Equal(gb, wb) {
			t.Fatalf("trial %d: byte %d of the lanes differs: codes %v sums %v %v, want %v %v %v (x %v, w %v, id %v)",
				trial, firstDiff(gb, wb), got.code, got.sumqx, got.sumq2, want.code, want.sumqx, want.sumq2, x, w, want.id)
		}
	}
}
