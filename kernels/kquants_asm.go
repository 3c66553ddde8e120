//go:build (amd64 || arm64) && !purego && !noasm

package kernels

import (
	"math"
	"unsafe"
)

// The K-quant sub-block searches in assembly, shared by amd64 (AVX2) and
// arm64 (NEON): these drivers transpose 8 sub-blocks so that element i of
// each is one row of 8 lanes, call the architecture's lane kernel
// (kx2Lanes, qxLanes, levelsLanes; AVX2 takes a row as one vector, NEON
// makes two passes of 4 lanes) and transpose the levels back.

// qxAsm is qxLanes' input and output (offsets fixed in asm_amd64.s and
// asm_arm64.s, checked by TestAsmLayout).
type qxAsm struct {
	xt     [256]uint32  // element i of sub-block j at 8i+j, as bits
	w, wv  [256]float32 // weights and weights·v, transposed as xt (scratch unless wgiven)
	lt     [256]int32   // result: levels 0..2·nmax-1, transposed as xt
	num    [18]uint32   // the numerators of the candidates' iscales
	scale  [8]float32   // result: the scale of each sub-block
	n      int32        // elements per sub-block (16 or 32)
	lo, hi int32        // the levels' clamp: -nmax, nmax-1
	fnum0  uint32       // the first fit's numerator -nmax, as bits
	nmax   int32
	wgiven int32      // 1: w is the caller's (makeQXQuantsW), 2: w holds qw and becomes qw·sqrt(sigma2 + v·v); else v·v
	sigma2 float32    // for wgiven 2
	sw     [8]float32 // wgiven 2: the weights' sums, in order
}

// setQX fills g's parameters for make_qx_quants with nmax on sub-blocks of n.
func (g *qxAsm) setQX(n int, nmax int32) {
	k := 0
	for is := int32(-9); is <= 9; is++ {
		if is != 0 {
			g.num[k] = math.Float32bits(-(float32(nmax) + float32(0.1*float32(is))))
			k++
		}
	}
	g.n, g.lo, g.hi, g.fnum0, g.nmax = int32(n), -nmax, nmax-1, math.Float32bits(float32(-nmax)), nmax
}

// q6Fits16Asm is Q6_K's sub-block loop (makeQXQuants with nmax 32 on the
// 16 sub-blocks of 16) in two groups of 8, one sub-block per lane: the
// block is transposed so that element i of the 8 sub-blocks is one row,
// and the levels are transposed back.
func q6Fits16Asm(x []float32, L []int8, scales *[16]float32) {
	var g qxAsm
	x = x[:qkK]
	g.setQX(16, 32)
	for h := range 2 {
		intoLanes(&g.xt, x[128*h:128*h+128], 16)
		qxLanes(&g)
		copy(scales[8*h:], g.scale[:])
		outOfLanes(L[128*h:128*h+128], &g.lt, 16)
	}
}

// qxwGroupAsm is qxwGroupGeneric with one sub-block per lane; the
// weights (importance's with imp) and their sums (in importance()'s order:
// from 0, one element after the other, in each lane) are computed in the
// kernel.
func qxwGroupAsm(x, qw []float32, sigma2 float32, imp bool, n int, nmax int32, L []int8, scales, sw []float32) {
	var g qxAsm
	x, qw, L, scales = x[:8*n], qw[:8*n], L[:8*n], scales[:8]
	toLanes(&g.xt, &g.w, x, qw, n)
	g.setQX(n, nmax)
	g.wgiven = 1
	if imp {
		g.wgiven, g.sigma2 = 2, sigma2
	}
	qxLanes(&g)
	copy(scales, g.scale[:])
	outOfLanes(L, &g.lt, n)
	if imp && sw != nil {
		copy(sw[:8], g.sw[:])
	}
}

// toLanes transposes 8 sub-blocks of n values of x and w (sub-block j at
// n·j) into xt (as bits) and wt: element i of sub-block j at 8i+j.
func toLanes(xt *[256]uint32, wt *[256]float32, x, w []float32, n int) {
	intoLanes(xt, x, n)
	intoLanes((*[256]uint32)(unsafe.Pointer(wt)), w, n)
}

// intoLanesGo puts 8 sub-blocks of n values of x (sub-block j at n·j) into
// lanes: element i of sub-block j at 8i+j, as bits.
func intoLanesGo(xt *[256]uint32, x []float32, n int) {
	for j := range 8 {
		for i, v := range x[n*j : n*j+n] {
			xt[(8*i+j)&255] = math.Float32bits(v)
		}
	}
}

// outOfLanesGo takes levels back out of the lanes: L[n·j+i] from lane j of
// row i.
func outOfLanesGo[T int8 | uint8](L []T, lt *[256]int32, n int) {
	for j := range 8 {
		for i := range n {
			L[n*j+i] = T(lt[(8*i+j)&255])
		}
	}
}

// kx2Asm is kx2Lanes' input and output (offsets fixed in asm_amd64.s and
// asm_arm64.s, checked by TestAsmLayout).
type kx2Asm struct {
	xt    [256]uint32 // element i of sub-block j at 8i+j, as bits
	num   [64]uint32  // the numerators of the candidates' iscales
	fmax  uint32      // float32(nmax), as bits
	n     int32       // elements per sub-block (32, or 16 for Q2_K)
	nmax  int32
	nstep int32 // candidates 0..nstep
	q2    int32 // 1: weights |x| and absolute errors (Q2_K)
	// wgiven 1: the weights are the caller's, in w (transposed as xt), as
	// make_qkx3_quants takes them; 2: w holds importance weights qw and
	// becomes importance()'s qw·sqrt(sigma2 + v·v); 0: computed as
	// make_qkx2_quants' callers do
	wgiven int32
	sigma2 float32 // wgiven 2: w = qw·sqrt(sigma2 + v·v) from the qw in w
	_      uint32
	scale  [8]float32   // results: scale and -min per sub-block
	min    [8]float32   //
	lt     [256]int32   // the chosen levels, transposed as xt
	w, fl  [256]float32 // scratch: weights and the current candidate's levels
	sw     [8]float32   // wgiven 2: the weights' sums, in order
}

// kx2BlockAsm is kx2Fits (make_qkx2_quants on the 8 sub-blocks of 32 of a
// Q4_K or Q5_K super-block) with one sub-block per lane.
func kx2BlockAsm(x []float32, L []uint8, scales, mins *[8]float32, nmax int32, rmin float32, nstep int) {
	if nstep > 63 {
		kx2Fits(x, L, scales, mins, nmax, rmin, nstep)
		return
	}
	var g kx2Asm
	x = x[:qkK]
	intoLanes(&g.xt, x, 32)
	fmax := float32(nmax)
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(rmin+float32(0.1*float32(is))) + fmax)
	}
	g.fmax, g.n, g.nmax, g.nstep = math.Float32bits(fmax), 32, nmax, int32(nstep)
	kx2Lanes(&g)
	*scales, *mins = g.scale, g.min
	outOfLanes(L, &g.lt, 32)
}

// q2Fits16Asm is Q2_K's sub-block loop (make_qkx2_quants on the 16
// sub-blocks of 16, weights |x|, absolute errors): two groups of 8.
func q2Fits16Asm(x []float32, L []uint8, scales, mins *[16]float32) {
	var g kx2Asm
	x = x[:qkK]
	const nmax, nstep = 3, 15
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(-0.5+float32(0.1*float32(is))) + nmax)
	}
	g.fmax, g.n, g.nmax, g.nstep, g.q2 = math.Float32bits(nmax), 16, nmax, nstep, 1
	for h := range 2 {
		intoLanes(&g.xt, x[128*h:128*h+128], 16)
		kx2Lanes(&g)
		copy(scales[8*h:], g.scale[:])
		copy(mins[8*h:], g.min[:])
		outOfLanes(L[128*h:128*h+128], &g.lt, 16)
	}
}

// kx3GroupAsm is kx3GroupGeneric (importance weights and make_qkx3_quants
// on 8 sub-blocks of n values, n 16 or 32) with one sub-block per lane: the
// same kernel as make_qkx2_quants', with the weights computed from qw and
// sigma2 and the candidates' numerators rmin + rdelta·is + nmax of
// make_qkx3_quants (rmin -0.9, rdelta 0.05, 36 steps, squared error); the
// kernel also adds up the weights in importance()'s order.
func kx3GroupAsm(x, qw []float32, sigma2 float32, n int, nmax int32, L []uint8, scales, mins, sw []float32) {
	var g kx2Asm
	x, qw, L, scales, mins = x[:8*n], qw[:8*n], L[:8*n], scales[:8], mins[:8]
	toLanes(&g.xt, &g.w, x, qw, n)
	const nstep = 36
	fmax := float32(nmax)
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(-0.9+float32(0.05*float32(is))) + fmax)
	}
	g.fmax, g.n, g.nmax, g.nstep = math.Float32bits(fmax), int32(n), nmax, nstep
	g.wgiven, g.sigma2 = 2, sigma2
	kx2Lanes(&g)
	copy(scales, g.scale[:])
	copy(mins, g.min[:])
	outOfLanes(L, &g.lt, n)
	copy(sw[:8], g.sw[:])
}

// levelsAsm is levelsAt's loop in vectors (len(x) 16 or 32):
// the same float32 add and divide, nearest_int by the same bits.
func levelsAsm(L []uint8, x []float32, d, dm float32, nmax int32) {
	var t [32]int32
	n := len(x)
	levelsLanes(&t[0], &x[0], n, d, dm, nmax)
	L = L[:n]
	for i := range L {
		L[i] = uint8(t[i&31])
	}
}
