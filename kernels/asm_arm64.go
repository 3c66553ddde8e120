//go:build arm64 && !purego && !noasm

package kernels

import "unsafe"

// NEON assembly (asm_arm64.s): the Q8_0, Q4_0 and Q4_1 quantizers, the
// K-quants' sub-block searches (kquants_asm.go: make_qkx2_quants for Q2_K,
// Q4_K and Q5_K, make_qx_quants for Q6_K, and those of the importance-weighted
// quantizers), the f16 and bf16 conversions both ways and the dot product.
// Every arm64 CPU has them (Advanced SIMD and its half-precision
// conversions are part of ARMv8-A), so they are always used, except with
// the purego or noasm tags.
//
// As on amd64 (asm_amd64.go), each kernel does the reference's float32
// operations lane by lane in the reference's order, and the tests compare
// bytes (make test-arm64 runs them under qemu-user): Q8_0's largest |x| is
// an integer maximum of the |x| bits, d and 1/d are FDIVS, d's half is
// FCVT (round to nearest even), roundf is FCVTAS (to nearest, ties away
// from zero), and a scale whose inverse is +inf (d zero or tiny) gives
// 0s as the reference's roundf of ±inf and NaN does. A Q8_0, Q4_0 or Q4_1
// block with a NaN or infinity is left to the reference; the K-quant
// searches take such values through the same operations as the reference
// (apr-quant refuses them anyway; TestKQuantEdges and
// TestKQuantSearchKernels hold them to its results).
var _ = setupAsm()

func setupAsm() bool {
	quantMaxQ8_0 = asmBlocks(q8_0NEON, quantQ8_0Generic, 34)
	quantQ8_0 = dropMaxBits(quantMaxQ8_0)
	quantMaxQ4_0 = asmBlocks(q4_0NEON, quantQ4_0Generic, 18)
	quantQ4_0 = dropMaxBits(quantMaxQ4_0)
	quantMaxQ4_1 = asmBlocks(q4_1NEON, quantQ4_1Generic, 20)
	quantQ4_1 = dropMaxBits(quantMaxQ4_1)
	f32ToF16 = func(dst []uint16, src []float32) {
		convPtr(f32ToF16NEON, F32ToF16Bits, unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)])
	}
	f16ToF32 = func(dst []float32, src []uint16) {
		widenPtr(f16ToF32NEON, F16BitsToF32, dst, unsafe.Pointer(unsafe.SliceData(src)), len(dst))
	}
	f32ToBF16 = func(dst []uint16, src []float32) {
		convPtr(f32ToBF16NEON, F32ToBF16Bits, unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)])
	}
	bf16ToF32 = func(dst []float32, src []uint16) {
		widenPtr(bf16ToF32NEON, BF16BitsToF32, dst, unsafe.Pointer(unsafe.SliceData(src)), len(dst))
	}
	f32ToF16Bytes = func(dst []byte, src []float32) {
		convPtr(f32ToF16NEON, F32ToF16Bits, unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)/2])
	}
	f16BytesToF32 = func(dst []float32, src []byte) {
		widenPtr(f16ToF32NEON, F16BitsToF32, dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)/2)
	}
	f32ToBF16Bytes = func(dst []byte, src []float32) {
		convPtr(f32ToBF16NEON, F32ToBF16Bits, unsafe.Pointer(unsafe.SliceData(dst)), src[:len(dst)/2])
	}
	bf16BytesToF32 = func(dst []float32, src []byte) {
		widenPtr(bf16ToF32NEON, BF16BitsToF32, dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)/2)
	}
	dotF32 = dotAsmNEON
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, q6Fits16Asm, nil) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, kx2BlockAsm) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, kx2BlockAsm) }
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, q2Fits16Asm) }
	weightedAsm = true
	asmName = "neon asm"
	return true
}

//go:noescape
func q8_0NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func q4_0NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func q4_1NEON(dst *byte, src *float32, nb int) (done int, maxBits uint32)

//go:noescape
func f32ToF16NEON(dst *uint16, src *float32, n int)

//go:noescape
func f16ToF32NEON(dst *float32, src *uint16, n int)

//go:noescape
func f32ToBF16NEON(dst *uint16, src *float32, n int)

//go:noescape
func bf16ToF32NEON(dst *float32, src *uint16, n int)

//go:noescape
func dotNEON(a, b *float32, n int, s *[8]float32)

//go:noescape
func kx2LanesNEON(grp *kx2Asm)

//go:noescape
func qxLanesNEON(grp *qxAsm)

//go:noescape
func levelsNEON(dst *int32, x *float32, n int, d, dm float32, nmax int32)

// convPtr narrows src to 16-bit values at dst (as many as src has), eight
// at a time with k, the tail with the scalar reference one.
func convPtr(k func(*uint16, *float32, int), one func(float32) uint16, dst unsafe.Pointer, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		k((*uint16)(dst), &src[0], n)
	}
	for i := n; i < len(src); i++ {
		*(*uint16)(unsafe.Add(dst, 2*i)) = one(src[i])
	}
}

// widenPtr widens n 16-bit values at src into dst likewise.
func widenPtr(k func(*float32, *uint16, int), one func(uint16) float32, dst []float32, src unsafe.Pointer, n int) {
	dst = dst[:n]
	v := n &^ 7
	if v > 0 {
		k(&dst[0], (*uint16)(src), v)
	}
	for i := v; i < n; i++ {
		dst[i] = one(*(*uint16)(unsafe.Add(src, 2*i)))
	}
}

func dotAsmNEON(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var s [8]float32
	if n > 0 {
		dotNEON(&a[0], &b[0], n, &s)
	}
	return reduce8(&s) + dotTail(a[n:], b[n:])
}

// The lane kernels under the names the shared drivers (kquants_asm.go) call.

func kx2Lanes(g *kx2Asm) { kx2LanesNEON(g) }
func qxLanes(g *qxAsm)   { qxLanesNEON(g) }
func levelsLanes(dst *int32, x *float32, n int, d, dm float32, nmax int32) {
	levelsNEON(dst, x, n, d, dm, nmax)
}

func intoLanes(xt *[256]uint32, x []float32, n int) { intoLanesGo(xt, x, n) }

func outOfLanes[T int8 | uint8](L []T, lt *[256]int32, n int) { outOfLanesGo(L, lt, n) }
