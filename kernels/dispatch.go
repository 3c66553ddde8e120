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
	dotF32    = dotGeneric
	axpy      = axpyGeneric
	// matMulTile is MatMul's inner work on one tile (see matMulTileGeneric).
	matMulTile = matMulTileGeneric

	// Fused quantize-and-measure kernels (see QuantizeChecked); nil where
	// there is no fast path.
	quantMaxQ8_0, quantMaxQ4_0, quantMaxQ4_1 func(dst []byte, src []float32) uint32
)

// fastName names the fast path in use ("" when every kernel is the plain Go
// reference); benchmarks and tests report it.
var fastName string

// FastPath reports which accelerated kernels are active: "" for the plain Go
// reference (always the case with the purego or noasm build tags), else a
// short name such as "avx512".
func FastPath() string { return fastName }
