//go:build amd64 && !purego && !noasm

package kernels

import (
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
// initialisation runs before every init function), and the init function
// of simd_amd64.go then replaces what it has a faster path for: on a CPU
// with AVX-512 the legacy quantizers and the f16 conversions; the dot
// product and axpy (AVX2) in any case.
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
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, q6Fits16Asm, requant16Asm) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, kx2BlockAsm) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, kx2BlockAsm) }
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, q2Fits16Asm) }
	quantQ3_K = quantQ3_KAsm
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
func intoLanesAVX2(dst *uint32, src *float32, n int)

//go:noescape
func outOfLanesAVX2(dst *byte, src *int32, n int)

//go:noescape
func requant16AVX2(lt *int32, x *float32, d *float32, nmax int32)

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

// intoLanes is intoLanesGo, 8x8 at a time in vectors.
func intoLanes(xt *[256]uint32, x []float32, n int) {
	if n != 16 && n != 32 {
		intoLanesGo(xt, x, n)
		return
	}
	intoLanesAVX2(&xt[0], &x[:8*n][0], n)
}

// outOfLanes is outOfLanesGo, 8x8 at a time in vectors.
func outOfLanes[T int8 | uint8](L []T, lt *[256]int32, n int) {
	if n != 16 && n != 32 {
		outOfLanesGo(L, lt, n)
		return
	}
	outOfLanesAVX2((*byte)(unsafe.Pointer(&L[:8*n][0])), &lt[0], n)
}

// requant16Asm is requantize16's fast path (a requant16Func).
func requant16Asm(x []float32, d *[16]float32, lt *[qkK]int32, nmax int32) {
	requant16AVX2(&lt[0], &x[:qkK][0], &d[0], nmax)
}

// The lane kernels under the names the shared drivers (kquants_asm.go) call.

func kx2Lanes(g *kx2Asm) { kx2LanesAVX2(g) }
func qxLanes(g *qxAsm)   { qxLanesAVX2(g) }
func levelsLanes(dst *int32, x *float32, n int, d, dm float32, nmax int32) {
	levelsAVX2(dst, x, n, d, dm, nmax)
}
