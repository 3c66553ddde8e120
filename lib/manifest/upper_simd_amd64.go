//go:build goexperiment.simd

package manifest

import "simd/archsimd"

var hasAVX = archsimd.X86.AVX()

// clearUpper clears the upper halves of the vector registers (VZEROUPPER).
// SHA-256 with the SHA extensions is legacy SSE code, which runs 10-20 times
// slower while the upper halves are dirty. In a GOEXPERIMENT=simd build on an
// AVX-512 CPU the runtime's asynchronous preemption restores Z0-Z31 and
// returns without clearing them, so a goroutine that only hashes, preempted
// once in Go code, would hash the rest of a tensor at about 100 MB/s (seen on
// a 1 GiB tensor: 10-18 s instead of 0.6 s). Hashing goroutines call it before
// each chunk.
func clearUpper() {
	if hasAVX {
		archsimd.ClearAVXUpperBits()
	}
}
