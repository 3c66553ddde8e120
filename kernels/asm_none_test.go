//go:build !(amd64 || arm64) || purego || noasm

package kernels

func asmBlockKernels() []asmKernel { return nil }
