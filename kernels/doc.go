// Package kernels holds apr's numeric hot loops: float format conversions
// (f16, bf16, f8), GGML block quantization and dequantization, and the dot
// products and small matrix products used for inference and training.
//
// The quantizers reproduce ggml's reference quantizers byte for byte (the
// bytes llama-quantize writes without an importance matrix). To get there,
// every kernel does its arithmetic in float32 in the same order as ggml's C
// code, and writes float32(a*b) + c wherever C rounds the product before the
// add, so that no Go compiler may fuse the two into one multiply-add.
//
// Dequantize decodes every GGML block type in lib/dtype, following ggml's
// dequantize_row_* functions, including the types that have no quantizer
// here (IQ4_NL, IQ4_XS and the grid-based IQ2_XXS to IQ1_M, whose
// codebooks are stored compactly in iqgrids.go) and ggml's newest NVFP4, Q1_0
// and Q2_0 (newtypes.go; they also quantize, byte for byte as ggml's reference
// quantizers: testdata/quant has ggml's bytes and decoded values for them);
// MXFP4 quantizes too, as ggml's quantize_row_mxfp4_ref (other.go);
// .ci/test-peers-gguf checks the grid types and the newest three against
// llama.cpp bit for bit.
//
// Every kernel has a plain Go reference; faster variants, where they exist,
// must produce identical bytes and are tested against the reference.
package kernels
