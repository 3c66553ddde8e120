// Package quant converts the tensors of a model stream to another type: GGML's block
// quantizations (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4, NVFP4,
// Q1_0, Q2_0, TQ1_0, TQ2_0, the i-quants IQ4_NL, IQ4_XS, IQ3_S, IQ2_S, IQ1_M, and with an
// importance matrix IQ3_XXS, IQ2_XXS, IQ2_XS, IQ1_S), F16, BF16, or back to F32. It is the
// library behind apr-quant.
//
// # Which tensors change
//
// The rules are llama.cpp's quantizer's (llama-quantize without an importance matrix):
// a tensor is converted when its name ends in "weight" and it has two or more
// dimensions, except norms ("_norm.weight"), MoE routers ("ffn_gate_inp.weight"),
// positional and token-type embeddings, and the small 2-D tensors llama.cpp keeps
// on purpose (Mamba conv1d, RWKV time-mix, AltUp/Laurel, T5 relative bias). Biases,
// norms and every 1-D tensor stay as they are. Integer and bool tensors never change.
//
//   - Pure converts every float tensor of two or more dimensions, whatever its name.
//     (llama.cpp's --pure only switches off its per-tensor type mixtures; apr has
//     no mixtures, every converted tensor gets the one requested type.)
//   - Include (glob patterns, path.Match) converts the named tensors whatever the
//     rules say, 1-D tensors included: this is how a model made of vectors, such as
//     LinearRegression's "coefficients", is quantized. Exclude keeps the named
//     tensors; it wins over Include.
//   - The F32 target dequantizes every float tensor that is not F32, rules aside.
//
// A tensor already of the target type is copied. A quantized tensor is not
// requantized to another quantized type unless AllowRequantize is set (the errors
// compound), as in llama.cpp.
//
// # Row lengths
//
// GGML types quantize each row in blocks of 32 (Q4_0..Q8_0), 64 (NVFP4, Q2_0), 128
// (Q1_0) or 256 values (K-quants). A row of a length that is not a whole number of
// blocks is an error for the 32-value types, NVFP4 and Q1_0, naming the tensor, its
// shape and the block size. The K-quants and Q2_0 fall back as llama.cpp does, with a
// warning: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, and Q2_K, Q3_K and Q2_0 to Q4_0
// (older llama.cpp sent Q2_K and Q3_K to IQ4_NL), IQ4_XS, IQ3_XXS and IQ3_S to IQ4_NL;
// when the fallback cannot hold the row either, F16.
//
// # Values
//
// Every value is decoded to float32 first, whatever the source dtype (F64, F16,
// BF16, F8, or a GGML type when requantizing). A NaN or an infinity is refused with
// the tensor's name and position (llama.cpp refuses such tensors too); a block whose
// scale, or an F16/BF16 value, would overflow its 16-bit float is refused likewise
// instead of being written as infinity, and so is an NVFP4 value beyond 2688 (6 times
// its largest E4M3 scale), which ggml would write as ±2688. The output bytes are those
// of ggml's reference quantizers (package kernels).
//
// # Streaming
//
// A Stream converts one tensor at a time in chunks of ChunkElems values, Workers
// chunks at once, with at most 2*Workers+1 chunks in memory; chunks come out in
// input order, so the bytes do not depend on Workers. Tensors that do not change are
// passed through without a copy.
//
// # Importance matrices
//
// Options.Imatrix (llama-imatrix's matrix, package imatrix) makes each converted
// tensor with an entry use ggml's importance-weighted quantizer (kernels.QuantizeWeighted),
// as llama-quantize --imatrix does: looked up by name, one weight per column (per
// expert for 3-D tensors), an entry of the wrong size an error (token_embd.weight
// excepted, as in llama.cpp). Chunks of such a tensor are whole rows.
//
// # Per-tensor flags and dry runs
//
// Options.Overrides are llama-quantize's --output-tensor-type, --token-embedding-type,
// --tensor-type and --leave-output-tensor (overrides.go); presets_today.go holds today's
// i-quant, ternary, MXFP4_MOE and Q2_K_S rules, fallbacks and the types that need an
// importance matrix. DryRun decides every tensor from a tensor list without reading
// data, as llama-quantize --dry-run does.
//
// # Provenance
//
// The output metadata's provenance gets a "quantization" map: type, producer, the
// rules (pure, include, exclude, allow_requantize, method). When the tensor list is
// known before the data (Options.Plan, from a file's index, or the input stream's
// tensor table, which New takes as the plan when Plan is nil), it also holds
// tensor_types (output dtype -> count), source_dtypes and fallbacks. With an importance
// matrix it holds "imatrix" (file as given, dataset, entries_count, chunks_count), from
// which ggufconv writes llama-quantize's quantize.imatrix.* keys. With KVOverrides it
// holds "override_kv" (the specs, in order; the metadata's GGUF key-values already
// hold the values), from which ggufconv puts them after general.file_type. A stream read
// from a pipe without a tensor table (format 2.0) has no tensor list until its end,
// so those three keys are absent there; the output's index lists every tensor's
// dtype in any case. With a plan the output stream has its own tensor table.
package quant
