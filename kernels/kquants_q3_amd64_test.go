//go:build amd64 && !purego && !noasm

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQ3KAsm compares the assembly Q3_K quantizer with the reference in
// every build (in a GOEXPERIMENT=simd build quantQ3_K is the simd path, so
// the other tests do not see this one), on rows of 1 to 2·q3AsmBlocks+1 blocks, so that
// every batch size up to q3AsmBlocks and the batches after a full one are
// run, over ordinary values and edge cases (NaN, ±Inf, subnormals, flat and
// near-flat sub-blocks).
func TestQ3KAsm(t *testing.T) {
	if asmName == "" {
		t.Skip("no assembly on this CPU")
	}
	r := rand.New(rand.NewPCG(81, 82))
	x := append(kquantBlocks(r, 2000), edgeBlocks(r, 2000)...)
	for len(x) > 0 {
		nb := min(1+r.IntN(2*q3AsmBlocks+1), len(x)/qkK)
		row := x[:nb*qkK]
		x = x[nb*qkK:]
		got, want := make([]byte, nb*110), make([]byte, nb*110)
		quantQ3_KAsm(got, row)
		quantQ3_KGeneric(want, row)
		if !bytes.Equal(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("block %d of %d, byte %d: %#02x, want %#02x (block %v)", i/110, nb, i%110, got[i], want[i], row[i/110*qkK:][:qkK])
		}
	}
}

// TestQ3KAsmLayout checks the field offsets that kquants_q3_amd64.s uses
// (whose Q3NC must be q3Chains).
func TestQ3KAsmLayout(t *testing.T) {
	var g q3Asm
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"lv", unsafe.Offsetof(g.lv), q3Chains * 512}, {"sums", unsafe.Offsetof(g.sums), q3Chains * 1024},
		{"flat", unsafe.Offsetof(g.flat), q3Chains * 1088}, {"changed", unsafe.Offsetof(g.changed), q3Chains * 1120},
		{"scale", unsafe.Offsetof(g.scale), q3Chains * 1124}, {"lt", unsafe.Offsetof(g.lt), q3Chains * 1140},
	} {
		if c.got != c.want {
			t.Errorf("q3Asm.%s at %d, the assembly uses %d", c.name, c.got, c.want)
		}
	}
}
