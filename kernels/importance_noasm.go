//go:build !(amd64 || arm64) || purego || noasm

package kernels

// Without the assembly (amd64, arm64) the weighted searches are the
// reference's (weightedAsm stays false); these keep kx3Group and qxwGroup
// compiling.

func kx3GroupAsm(x, qw []float32, sigma2 float32, n int, nmax int32, L []uint8, scales, mins, sw []float32) {
	kx3GroupGeneric(x, qw, sigma2, n, nmax, L, scales, mins, sw)
}

func qxwGroupAsm(x, qw []float32, sigma2 float32, imp bool, n int, nmax int32, L []int8, scales, sw []float32) {
	qxwGroupGeneric(x, qw, sigma2, imp, n, nmax, L, scales, sw)
}

func levelsAsm(L []uint8, x []float32, d, dm float32, nmax int32) {
	for i, v := range x {
		L[i] = uint8(max(0, min(nmax, nearestInt((v+dm)/d))))
	}
}
