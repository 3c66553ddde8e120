//go:build amd64 && !purego && !noasm

package kernels

import (
	"bytes"
	"math"
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
	x = append(x, q3CornerBlocks()...)
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

// q3CornerBlocks are whole blocks where q3Scales' cases show: all zero (no
// scale), all NaN or all ±Inf (scales NaN), NaN scales beside zero ones,
// values so small or so large that iscale or d overflow, and the largest
// scale in the second half or negative.
func q3CornerBlocks() []float32 {
	var blocks [][qkK]float32
	add := func(f func(i int) float32) {
		var b [qkK]float32
		for i := range b {
			b[i] = f(i)
		}
		blocks = append(blocks, b)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	add(func(i int) float32 { return 0 })
	add(func(i int) float32 { return float32(math.Copysign(0, -1)) })
	add(func(i int) float32 { return nan })
	add(func(i int) float32 { return inf })
	add(func(i int) float32 { return -inf })
	add(func(i int) float32 {
		if i == 40 {
			return nan
		}
		return 0
	})
	add(func(i int) float32 {
		if i%16 == 3 {
			return nan
		}
		return float32(i%7) - 3
	})
	add(func(i int) float32 { return math.Float32frombits(uint32(1 + i%5)) })
	add(func(i int) float32 { return 1e-30 * float32(i%9-4) })
	add(func(i int) float32 { return 3e38 * float32(i%3-1) })
	add(func(i int) float32 {
		if i >= 200 {
			return -float32(i)
		}
		return float32(i % 5)
	})
	add(func(i int) float32 { return float32(i%16) - 8 })
	var x []float32
	for _, b := range blocks {
		x = append(x, b[:]...)
	}
	return x
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
