//go:build arm64 && !purego && !noasm

package kernels

func asmBlockKernels() []asmKernel {
	return []asmKernel{{"Q8_0", q8_0NEON, quantQ8_0Generic, 34}}
}
