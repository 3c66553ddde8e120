//go:build !amd64 || purego || noasm

package kernels

// Without the assembly the neighbour search is best's plain Go.
const iqAsm = false

func iqSums8(lanes *uint8, ngroups int, e *[8][4]float32, out *float32) {
	panic("kernels: iqSums8 without assembly")
}
