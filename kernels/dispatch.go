package kernels

// Kernel variables: the plain Go reference by default; an architecture file
// may swap in a fast path from its init when the CPU supports it.
var (
	quantQ8_0 = quantQ8_0Generic
	quantQ4_0 = quantQ4_0Generic
	quantQ4_1 = quantQ4_1Generic
	quantQ2_K = quantQ2_KGeneric
	quantQ3_K = quantQ3_KGeneric
	quantQ4_K = quantQ4_KGeneric
	quantQ5_K = quantQ5_KGeneric
	quantQ6_K = quantQ6_KGeneric
	f32ToF16  = f32ToF16Generic
	f16ToF32  = f16ToF32Generic
	f32ToBF16 = f32ToBF16Generic
	bf16ToF32 = bf16ToF32Generic
	dotF32    = dotGeneric
	axpy      = axpyGeneric
	// matMulTile is MatMul's inner work on one tile (see matMulTileGeneric).
	matMulTile = matMulTileGeneric

	// Fused quantize-and-measure kernels (see QuantizeChecked); nil where
	// there is no fast path.
	quantMaxQ8_0, quantMaxQ4_0, quantMaxQ4_1 func(dst []byte, src []float32) uint32

	// The 16-bit conversions straight from and to little-endian bytes (the
	// F16 and BF16 dtypes); nil where there is no fast path, and then the
	// []uint16 kernels above run through a buffer.
	f32ToF16Bytes, f32ToBF16Bytes func(dst []byte, src []float32)
	f16BytesToF32, bf16BytesToF32 func(dst []float32, src []byte)
)

// weightedAsm selects the assembly for the importance-weighted quantizers'
// searches (kx3Group, qxwGroup). It is a flag, not a function variable, so
// that their scratch arrays stay on the stack (arguments of a call through
// a function variable escape).
var weightedAsm bool

// fastName names the GOEXPERIMENT=simd fast path in use, asmName the
// assembly kernels ("" when none); benchmarks and tests report them.
var fastName, asmName string

// FastPath reports which accelerated kernels are active: "" for the plain Go
// reference (always the case with the purego or noasm build tags), else
// short names such as "avx2 asm" (a plain build on amd64), "neon asm"
// (arm64), or "avx512 simd, avx2 asm" (a GOEXPERIMENT=simd build, whose
// kernels replace some of the assembly ones).
func FastPath() string {
	switch {
	case fastName == "":
		return asmName
	case asmName == "":
		return fastName
	}
	return fastName + " simd, " + asmName
}
