//go:build amd64 && !purego && !noasm

package kernels

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AVX2 and F16C assembly (asm_amd64.s) for plain builds: the legacy
// quantizers Q8_0, Q4_0 and Q4_1, the f16 and bf16 conversions both ways,
// the dot product and axpy. They are chosen at start-up by CPU features;
// without AVX2 and F16C (or with the purego or noasm tags) the plain Go
// reference runs.
//
// Each kernel does the reference's float32 operations, lane by lane, in the
// reference's order (no fused multiply-add), so the bytes are the
// reference's; the tests compare them (fast_test.go, asm_amd64_test.go):
//
//   - a block's largest |x| is an integer maximum of the |x| bits, which
//     orders non-negative floats as their values; d, 1/d and the f16 bits of
//     d are one VDIVSS, one VDIVSS and one VCVTPS2PH (IEEE round to nearest
//     even, as F32ToF16Bits);
//   - Q8_0's roundf truncates (VROUNDPS), subtracts (exact) and steps away
//     from zero where the remainder is 0.5 or more, as roundAway does;
//   - Q4_0's scale is the first element of largest magnitude (a compare and
//     a bit scan over the block), Q4_1's minimum and maximum are VMINPS and
//     VMAXPS (exact), except that a zero extreme is the block's first zero
//     with its sign, as the reference's strict comparisons keep it;
//   - quantized values are stored as the low byte of the 32-bit result,
//     which is what the reference's byte(int8(...)) keeps, also where a
//     scale's inverse overflows to +Inf (the reference then writes 0s:
//     VCVTTPS2DQ's 0x80000000 has a zero low byte).
//
// A block with a NaN or infinity is left to the reference (the kernels stop
// before it and say how many blocks they did), so those bytes are the
// reference's too, and apr-quant's check for such values (QuantizeChecked)
// comes from the same pass.
//
// In a GOEXPERIMENT=simd build these are set first (package variable
// initialisation runs before every init function), and the init functions
// of simd_amd64.go and kquants_amd64.go then replace what they have a faster
// path for: on a CPU with AVX-512 the legacy quantizers and the f16
// conversions; the dot product and axpy (AVX2) in any case.
var _ = setupAsm()

func setupAsm() bool {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return false
	}
	quantMaxQ8_0 = asmBlocks(q8_0AVX2, quantQ8_0Generic, 34)
	quantMaxQ4_0 = asmBlocks(q4_0AVX2, quantQ4_0Generic, 18)
	quantMaxQ4_1 = asmBlocks(q4_1AVX2, quantQ4_1Generic, 20)
	quantQ8_0 = dropMaxBits(quantMaxQ8_0)
	quantQ4_0 = dropMaxBits(quantMaxQ4_0)
	quantQ4_1 = dropMaxBits(quantMaxQ4_1)
	f32ToF16 = func(dst []uint16, src []float32) {
		f32ToF16Ptr(unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)])
	}
	f16ToF32 = func(dst []float32, src []uint16) {
		f16ToF32Ptr(dst, unsafe.Pointer(unsafe.SliceData(src)), len(dst))
	}
	f32ToBF16 = func(dst []uint16, src []float32) {
		f32ToBF16Ptr(unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)])
	}
	bf16ToF32 = func(dst []float32, src []uint16) {
		bf16ToF32Ptr(dst, unsafe.Pointer(unsafe.SliceData(src)), len(dst))
	}
	f32ToF16Bytes = func(dst []byte, src []float32) {
		f32ToF16Ptr(unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)/2])
	}
	f16BytesToF32 = func(dst []float32, src []byte) {
		f16ToF32Ptr(dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)/2)
	}
	f32ToBF16Bytes = func(dst []byte, src []float32) {
		f32ToBF16Ptr(unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)/2])
	}
	bf16BytesToF32 = func(dst []float32, src []byte) {
		bf16ToF32Ptr(dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)/2)
	}
	bf16ToF16Max = func(dst, src []byte) uint32 {
		n := len(src) / 2 &^ 7
		var m uint32
		if n > 0 {
			m = bf16ToF16F16C((*uint16)(unsafe.Pointer(&dst[0])), (*uint16)(unsafe.Pointer(&src[0])), n)
		}
		return max(m, bf16ToF16Generic(dst[2*n:], src[2*n:]))
	}
	dotF32 = dotAsm
	axpy = axpyAsm
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, q6Fits16Asm, nil) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, kx2BlockAsm) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, kx2BlockAsm) }
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, q2Fits16Asm) }
	weightedAsm = true
	asmName = "avx2 asm"
	return true
}

//go:noescape
func q8_0AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func q4_0AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func q4_1AVX2(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func f32ToF16F16C(dst *uint16, src *float32, n int)

//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n int)

//go:noescape
func f32ToBF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func bf16ToF32AVX2(dst *float32, src *uint16, n int)

//go:noescape
func bf16ToF16F16C(dst, src *uint16, n int) (maxBits uint32)

//go:noescape
func kx2LanesAVX2(grp *kx2Asm)

//go:noescape
func qxLanesAVX2(grp *qxAsm)

//go:noescape
func levelsAVX2(dst *int32, x *float32, n int, d, dm float32, nmax int32)

//go:noescape
func dotAVX2Asm(a, b *float32, n int, s *[8]float32)

//go:noescape
func axpyAVX2Asm(y, x *float32, n int, alpha float32)

// The conversions take the 16-bit side as a pointer, so that one kernel
// serves []uint16 and little-endian []byte; the caller has checked that it
// holds as many values as the float side. The tails (less than a vector)
// go through the reference.

func f32ToF16Ptr(dst unsafe.Pointer, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		f32ToF16F16C((*uint16)(dst), &src[0], n)
	}
	for i := n; i < len(src); i++ {
		*(*uint16)(unsafe.Add(dst, 2*i)) = F32ToF16Bits(src[i])
	}
}

func f16ToF32Ptr(dst []float32, src unsafe.Pointer, n int) {
	dst = dst[:n]
	v := n &^ 7
	if v > 0 {
		f16ToF32F16C(&dst[0], (*uint16)(src), v)
	}
	for i := v; i < n; i++ {
		dst[i] = F16BitsToF32(*(*uint16)(unsafe.Add(src, 2*i)))
	}
}

func f32ToBF16Ptr(dst unsafe.Pointer, src []float32) {
	n := len(src) &^ 15
	if n > 0 {
		f32ToBF16AVX2((*uint16)(dst), &src[0], n)
	}
	for i := n; i < len(src); i++ {
		*(*uint16)(unsafe.Add(dst, 2*i)) = F32ToBF16Bits(src[i])
	}
}

func bf16ToF32Ptr(dst []float32, src unsafe.Pointer, n int) {
	dst = dst[:n]
	v := n &^ 7
	if v > 0 {
		bf16ToF32AVX2(&dst[0], (*uint16)(src), v)
	}
	for i := v; i < n; i++ {
		dst[i] = BF16BitsToF32(*(*uint16)(unsafe.Add(src, 2*i)))
	}
}

func dotAsm(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var s [8]float32
	if n > 0 {
		dotAVX2Asm(&a[0], &b[0], n, &s)
	}
	return reduce8(&s) + dotTail(a[n:], b[n:])
}

func axpyAsm(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	n := len(y) &^ 7
	if n > 0 {
		axpyAVX2Asm(&y[0], &x[0], n, alpha)
	}
	axpyGeneric(y[n:], alpha, x[n:])
}

// qxAsm is qxLanesAVX2's input and output (offsets fixed in asm_amd64.s,
// checked by TestAsmLayout).
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
// block is transposed so that element i of the 8 sub-blocks is one load,
// and the levels are transposed back.
func q6Fits16Asm(x []float32, L []int8, scales *[16]float32) {
	var g qxAsm
	x = x[:qkK]
	g.setQX(16, 32)
	for h := range 2 {
		for i := range 16 {
			for j := range 8 {
				g.xt[8*i+j] = math.Float32bits(x[16*(8*h+j)+i])
			}
		}
		qxLanesAVX2(&g)
		copy(scales[8*h:], g.scale[:])
		for i := range 16 {
			for j := range 8 {
				L[16*(8*h+j)+i] = int8(g.lt[8*i+j])
			}
		}
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
	qxLanesAVX2(&g)
	copy(scales, g.scale[:])
	for i := range n {
		for j := range 8 {
			L[n*j+i] = int8(g.lt[8*i+j])
		}
	}
	if imp && sw != nil {
		copy(sw[:8], g.sw[:])
	}
}

// toLanes transposes 8 sub-blocks of n values of x and w (sub-block j at
// n·j) into xt (as bits) and wt: element i of sub-block j at 8i+j.
func toLanes(xt *[256]uint32, wt *[256]float32, x, w []float32, n int) {
	for j := range 8 {
		xs := x[n*j : n*j+n]
		ws := w[n*j : n*j+n]
		ws = ws[:len(xs)]
		for i, v := range xs {
			k := (8*i + j) & 255
			xt[k] = math.Float32bits(v)
			wt[k] = ws[i]
		}
	}
}

// kx2Asm is kx2LanesAVX2's input and output (offsets fixed in asm_amd64.s,
// checked by TestAsmLayout).
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
	for i := range 32 {
		for j := range 8 {
			g.xt[8*i+j] = math.Float32bits(x[32*j+i])
		}
	}
	fmax := float32(nmax)
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(rmin+float32(0.1*float32(is))) + fmax)
	}
	g.fmax, g.n, g.nmax, g.nstep = math.Float32bits(fmax), 32, nmax, int32(nstep)
	kx2LanesAVX2(&g)
	*scales, *mins = g.scale, g.min
	for i := range 32 {
		for j := range 8 {
			L[32*j+i] = uint8(g.lt[8*i+j])
		}
	}
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
		for i := range 16 {
			for j := range 8 {
				g.xt[8*i+j] = math.Float32bits(x[16*(8*h+j)+i])
			}
		}
		kx2LanesAVX2(&g)
		copy(scales[8*h:], g.scale[:])
		copy(mins[8*h:], g.min[:])
		for i := range 16 {
			for j := range 8 {
				L[16*(8*h+j)+i] = uint8(g.lt[8*i+j])
			}
		}
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
	kx2LanesAVX2(&g)
	copy(scales, g.scale[:])
	copy(mins, g.min[:])
	for i := range n {
		for j := range 8 {
			L[n*j+i] = uint8(g.lt[8*i+j])
		}
	}
	copy(sw[:8], g.sw[:])
}

// levelsAsm is levelsAt's loop, 8 values to a vector (len(x) 16 or 32):
// the same float32 add and divide, nearest_int by the same bits.
func levelsAsm(L []uint8, x []float32, d, dm float32, nmax int32) {
	var t [32]int32
	n := len(x)
	levelsAVX2(&t[0], &x[0], n, d, dm, nmax)
	L = L[:n]
	for i := range L {
		L[i] = uint8(t[i&31])
	}
}
