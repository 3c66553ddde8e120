//go:build !amd64 || purego || noasm

package kernels

// Without the amd64 assembly the weighted searches are the reference's
// (weightedAsm stays false); these keep kx3Group and qxwGroup compiling.

func kx3GroupAsm(x, w []float32, n int, nmax int32, L []uint8, scales, mins []float32) {
	kx3GroupGeneric(x, w, n, nmax, L, scales, mins)
}

func qxwGroupAsm(x, w []float32, n int, nmax int32, L []int8, scales []float32) {
	qxwGroupGeneric(x, w, n, nmax, L, scales)
}
