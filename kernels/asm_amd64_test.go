//go:build amd64 && !purego && !noasm

package kernels

import "golang.org/x/sys/cpu"

func asmBlockKernels() []asmKernel {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C {
		return nil
	}
	return []asmKernel{
		{"Q8_0", q8_0AVX2, quantQ8_0Generic, 34},
		{"Q4_0", q4_0AVX2, quantQ4_0Generic, 18},
		{"Q4_1", q4_1AVX2, quantQ4_1Generic, 20},
	}
}
