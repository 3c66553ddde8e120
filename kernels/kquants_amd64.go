//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import "simd/archsimd"

// Fast paths for the K-quant searches (AVX2): see kquants_lanes_amd64.go.

func init() {
	if !archsimd.X86.AVX2() {
		return
	}
	// Q3_K keeps the assembly (kquants_q3_amd64.s) in this build too: it
	// measured about 1.9x the simd lanes it replaced (docs/BENCHMARKS.md, Q3_K).
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, q6Fits16SIMD, requant16SIMD) }
	if asmName != "" {
		// Q2_K, Q4_K and Q5_K keep the assembly (asm_amd64.go, set before
		// this init runs): its make_qkx2_quants measured 1.5-1.7x faster
		// than kx2Lanes8 (docs/BENCHMARKS.md, "Kernels").
		return
	}
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, q2Fits16SIMD) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, kx2BlockSIMD) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, kx2BlockSIMD) }
}
