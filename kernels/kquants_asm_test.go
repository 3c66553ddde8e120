//go:build (amd64 || arm64) && !purego && !noasm

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestKQuantSearchKernels calls the drivers of the lane kernels directly
// and compares all they return with the reference searches: every scale,
// min and level. The quantizers' bytes show these only in part (scales are
// stored in 6 bits, and Q2_K, Q4_K and Q5_K recompute their levels from the
// stored scales).
func TestKQuantSearchKernels(t *testing.T) {
	if asmName == "" {
		t.Skip("no assembly on this CPU")
	}
	r := rand.New(rand.NewPCG(71, 72))
	x := append(kquantBlocks(r, 300), edgeBlocks(r, 300)...)
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return true
	}
	for b := range len(x) / qkK {
		xb := x[b*qkK : (b+1)*qkK]
		// make_qkx2_quants as Q4_K and Q5_K call it
		for _, p := range []struct {
			nmax  int32
			rmin  float32
			nstep int
		}{{15, -1, 20}, {31, -0.5, 15}} {
			var La, Lb [qkK]uint8
			var sa, ma, sb, mb [8]float32
			kx2BlockAsm(xb, La[:], &sa, &ma, p.nmax, p.rmin, p.nstep)
			kx2Fits(xb, Lb[:], &sb, &mb, p.nmax, p.rmin, p.nstep)
			if !same(sa[:], sb[:]) || !same(ma[:], mb[:]) || La != Lb {
				t.Fatalf("make_qkx2_quants nmax %d, block %d: scales %v mins %v levels %v, reference %v %v %v", p.nmax, b, sa, ma, La, sb, mb, Lb)
			}
		}
		// as Q2_K calls it: sub-blocks of 16, weights |x|, absolute errors
		var La, Lb [qkK]uint8
		var sa, ma, sb, mb [16]float32
		q2Fits16Asm(xb, La[:], &sa, &ma)
		var w [16]float32
		var Laux [16]uint8
		for j := range 16 {
			xs := xb[16*j : 16*j+16]
			for l, v := range xs {
				w[l] = abs32(v)
			}
			sb[j], mb[j] = makeQKX2Quants(3, xs, w[:], Lb[16*j:16*j+16], Laux[:], -0.5, 0.1, 15, true)
		}
		if !same(sa[:], sb[:]) || !same(ma[:], mb[:]) || La != Lb {
			t.Fatalf("Q2_K's make_qkx2_quants, block %d: scales %v mins %v levels %v, reference %v %v %v", b, sa, ma, La, sb, mb, Lb)
		}
		// make_qx_quants as Q6_K calls it
		var Qa, Qb [qkK]int8
		var da, db [16]float32
		q6Fits16Asm(xb, Qa[:], &da)
		for j := range 16 {
			db[j] = makeQXQuants(32, xb[16*j:16*j+16], Qb[16*j:16*j+16])
		}
		if !same(da[:], db[:]) || Qa != Qb {
			t.Fatalf("make_qx_quants, block %d: scales %v levels %v, reference %v %v", b, da, Qa, db, Qb)
		}
	}
}

// TestAsmLayout checks the field offsets that the lane kernels use.
func TestAsmLayout(t *testing.T) {
	var k kx2Asm
	var q qxAsm
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"kx2Asm.num", unsafe.Offsetof(k.num), 1024}, {"kx2Asm.fmax", unsafe.Offsetof(k.fmax), 1280},
		{"kx2Asm.n", unsafe.Offsetof(k.n), 1284}, {"kx2Asm.nmax", unsafe.Offsetof(k.nmax), 1288},
		{"kx2Asm.nstep", unsafe.Offsetof(k.nstep), 1292}, {"kx2Asm.q2", unsafe.Offsetof(k.q2), 1296},
		{"kx2Asm.wgiven", unsafe.Offsetof(k.wgiven), 1300}, {"kx2Asm.sigma2", unsafe.Offsetof(k.sigma2), 1304},
		{"kx2Asm.scale", unsafe.Offsetof(k.scale), 1312}, {"kx2Asm.min", unsafe.Offsetof(k.min), 1344},
		{"kx2Asm.lt", unsafe.Offsetof(k.lt), 1376}, {"kx2Asm.w", unsafe.Offsetof(k.w), 2400},
		{"kx2Asm.fl", unsafe.Offsetof(k.fl), 3424}, {"kx2Asm.sw", unsafe.Offsetof(k.sw), 4448},
		{"qxAsm.w", unsafe.Offsetof(q.w), 1024}, {"qxAsm.wv", unsafe.Offsetof(q.wv), 2048},
		{"qxAsm.lt", unsafe.Offsetof(q.lt), 3072}, {"qxAsm.num", unsafe.Offsetof(q.num), 4096},
		{"qxAsm.scale", unsafe.Offsetof(q.scale), 4168}, {"qxAsm.n", unsafe.Offsetof(q.n), 4200},
		{"qxAsm.lo", unsafe.Offsetof(q.lo), 4204}, {"qxAsm.hi", unsafe.Offsetof(q.hi), 4208},
		{"qxAsm.fnum0", unsafe.Offsetof(q.fnum0), 4212}, {"qxAsm.nmax", unsafe.Offsetof(q.nmax), 4216},
		{"qxAsm.wgiven", unsafe.Offsetof(q.wgiven), 4220}, {"qxAsm.sigma2", unsafe.Offsetof(q.sigma2), 4224},
		{"qxAsm.sw", unsafe.Offsetof(q.sw), 4228},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly uses %d", c.name, c.got, c.want)
		}
	}
}
