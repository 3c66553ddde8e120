//go:build arm64 && !purego && !noasm

package kernels

func asmBlockKernels() []asmKernel {
	return []asmKernel{
		{"Q8_0", q8_0NEON, quantQ8_0Generic, 34},
		{"Q4_0", q4_0NEON, quantQ4_0Generic, 18},
		{"Q4_1", q4_1NEON, quantQ4_1Generic, 20},
	}
}
