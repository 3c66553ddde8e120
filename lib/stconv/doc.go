// Package stconv converts between Hugging Face SafeTensors and apr's tensor stream
// (stream.Stream), in both directions, and saves and loads the classical models as
// SafeTensors files.
//
// # Import
//
// Open takes a .safetensors file, a checkpoint directory or an index file; OpenFile
// an open regular file (a redirected stdin); NewStream a pipe. Files are mapped and
// streamed in place (pages dropped behind the reader, so the resident set stays
// bounded); a pipe streams through because the SafeTensors header comes first.
// Tensors keep their names, dtypes, shapes and bytes. The APR metadata records:
//
//   - Extra["safetensors_metadata"]: the file's __metadata__, verbatim and in file
//     order, as a list of [key, value] string pairs (absent when the file has no
//     __metadata__; an empty list for "__metadata__":{}). MessagePack maps are written
//     with sorted keys, so a list is what keeps the order.
//   - Extra["hf_files"]: from a checkpoint directory, its config and tokenizer files
//     (see KeepFile), as a map of file name to bytes.
//   - Provenance: "source_format": "safetensors"; "source_dtypes": the SafeTensors
//     dtype of every float tensor (name to "BF16", ...), so that an export after
//     quantization can go back to it; "source_files": for file sources, one
//     {"name", "size"} per file (shards in file name order), and "sha256" with
//     ImportOptions.Digest. A pipe has no
//     digest: it is known only at the end, after the APR metadata has gone out. Into
//     a regular file, ImportFile computes the digests beside the conversion and
//     patches them in afterwards (container.Patcher), with the same bytes.
//   - The model type and config, when __metadata__ holds "apr.model_type" and
//     "apr.model_config" (as SaveModel and Export write them).
//
// # Export
//
// SafeTensors puts every tensor's dtype and shape in a header before the data, and
// the crate's writer orders the data by dtype then name, so an export needs the whole
// tensor list first and then the data in the writer's order. From an APR v2 file the
// index gives the list at once; the data is then read where it lies when the tensors
// are stored plain (each tensor's CRC32 checked on the way), in one pass of the
// streaming reader when they are compressed and the file's order is already the
// writer's (as after an import), and otherwise, or from a pipe, the tensors are
// spooled to a temporary file first (ExportOptions.TempDir) and copied out in order.
// Memory stays bounded in every case.
//
// Float, integer and bool tensors are written as they are, so a file written by the
// crate and imported then exported comes back byte for byte (with at most one
// __metadata__ key, whose order the crate itself does not fix). GGML block
// (quantized) tensors have no SafeTensors dtype: they are dequantized to
// ExportOptions.DType, or by default to the tensor's dtype before import (from
// "source_dtypes") when it was F32, F16, BF16 or F64, else F32. Quantized bytes are
// never written under a float dtype.
//
// __metadata__ is restored from "safetensors_metadata"; a model without it whose type
// is not Custom gets {"apr.model_type": TYPE, "apr.model_config": JSON} so that
// LoadModel and a re-import know its type; otherwise the file has no __metadata__.
// ExportDir writes a checkpoint directory: model.safetensors, or with a shard size
// Hugging Face's shards and model.safetensors.index.json, plus the "hf_files"; for a
// Llama-family model imported from a GGUF file (no "hf_files"), the Hugging Face
// layout and the config and tokenizer files lib/llm generates from its GGUF keys.
package stconv

// Metadata keys and values of this package.
const (
	// KeyMetadata is the Extra key holding __metadata__ as [[key, value], ...].
	KeyMetadata = "safetensors_metadata"
	// KeyFiles is the Extra key holding a checkpoint's kept files, name to bytes.
	KeyFiles = "hf_files"
	// ProvDTypes is the provenance key of the source float dtypes, name to dtype string.
	ProvDTypes = "source_dtypes"
	// ProvFiles is the provenance key of the source files: [{"name","size","sha256"}].
	ProvFiles = "source_files"
	// SourceFormat is the provenance source_format of an import.
	SourceFormat = "safetensors"
	// MetaModelType is the __metadata__ key naming the APR model type.
	MetaModelType = "apr.model_type"
	// MetaModelConfig is the __metadata__ key holding the model config as JSON.
	MetaModelConfig = "apr.model_config"
)
