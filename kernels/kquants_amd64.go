//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import "simd/archsimd"

// Q3_K's search in AVX2 lanes (kquants_lanes_amd64.go). The other K-quants
// keep the assembly set up by asm_amd64.go, which measured faster than the
// simd lanes this build had for them (docs/BENCHMARKS.md, "Kernels").
func init() {
	if archsimd.X86.AVX2() {
		quantQ3_K = quantQ3_KSIMD
	}
}
