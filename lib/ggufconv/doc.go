// Package ggufconv converts between GGUF files (llama.cpp's model container, read and
// written by package gguf) and apr's tensor stream (stream.Stream), in both directions.
//
// # Import
//
// NewStream reads a GGUF file from any reader (a pipe): the header is read and checked
// first, then the tensor data streams through in bounded memory, in offset order (the
// info order of every file llama.cpp and gguf-py write). OpenFile does the same for a
// file (after one extra pass for its SHA-256 with ImportOptions.Digest), reading it
// from a read-only mapping where the platform allows, with the pages already read
// given back as it goes; NewStream of a regular *os.File (a redirected stdin) does
// too. Elsewhere, or when mapping fails, the file is read with read(); both give the
// same bytes and errors. Bytes after the data section are an error (they would be
// lost). OpenFile of the first part of a split set (PREFIX-00001-of-NNNNN.gguf,
// written by llama.cpp's gguf-split) finds the other parts by name, checks them all
// and streams the set as the merged file; NewStream refuses a part, since it cannot
// find the others. Every tensor keeps its name, its ggml type as the apr
// dtype of the same code (all ggml types pass through unchanged, quantized ones with
// exactly ggml's block bytes) and its bytes; GGUF dims, innermost first, become the
// APR shape outermost first by reversing them, never by moving data. The APR metadata
// records:
//
//   - Extra[KeyGGUF] ("gguf"): the file's version and every KV, with its exact type
//     and position: {"version": 3, "kv": {KEY: [POSITION, TYPE, VALUE], ...}}.
//     TYPE is the GGUF type name ("u8", "i8", "u16", "i16", "u32", "i32", "u64",
//     "i64", "f32", "f64", "bool", "string", "array[ELEM]", "array[array]"); VALUE is
//     the value as plain MessagePack (integers, floats, bools, strings; an array as a
//     list; an array of arrays as a list of [TYPE, VALUE] pairs). A NaN is stored as
//     the string "NaN(0x7fc00001)" (its bit pattern, 8 hex digits for f32, 16 for
//     f64) so that its payload survives; every other float is a MessagePack float
//     (f32 values as float32). The KVs are a map keyed by KEY so that
//     `apr-decode inspect` shows every key with its type and a summary of its value
//     (long tokenizer arrays as "[32000 items: ...]"); POSITION (0, 1, ...) restores
//     the order, since MessagePack maps are written with sorted keys.
//   - Name, Description, License: general.name, general.description, general.license
//     when they are strings.
//   - Provenance: "source_format": "gguf", "source_version": the GGUF version; for a
//     file, "source_size" and (with ImportOptions.Digest) "source_sha256", the
//     hex SHA-256 of the whole file. ImportFile computes the digest beside the conversion when it
//     writes to a regular file, and patches it into the header afterwards. A pipe has no digest: it is known only after the
//     APR metadata has gone out. Since import and export are byte-exact inverses, the
//     digest of an export of an unmodified import equals source_sha256.
//     A split set (the first part of llama.cpp's gguf-split output, opened by
//     OpenFile or ImportFile) records ProvFiles ("source_files") instead: each part's
//     base name and size, and with Digest its SHA-256, in part order.
//   - Type and ModelConfig: a file whose general.architecture is "apr_<type>" (as
//     Export writes for apr's own models, see Arch) gets that model type and a config
//     from the keys "apr_<type>.<key>"; any other file is model type Custom.
//
// # Export
//
// GGUF puts every tensor info before the data, so an export needs the whole tensor
// list first. ExportFile reads it from an APR v2 file's index (header, metadata and
// index in a few reads), plans and checks the GGUF header, and then writes the data in
// one verified pass: uncompressed tensors are checked against the index CRCs by a
// goroutine that runs ahead on windows of a read-only mapping and are written only
// once checked, by copy_file_range when the output is a regular file (the kernel
// copies the bytes, as cat does); compressed ones stream through the verifying reader.
// Export takes any stream (a pipe): it spools the raw tensor data to a temporary file
// (ExportOptions.TempDir) while collecting the infos, then writes (again by
// copy_file_range into a regular file). Either way memory stays bounded and nothing is written before the
// whole header is known to be valid: tensor names of 1 to 63 bytes, unique, 1 to 4
// dims, ggml types with a row length that is a whole number of blocks, unique keys
// (see gguf.Header.Validate). Tensors are written in stream order, packed, each padded
// to the alignment (general.alignment or 32).
//
// The KVs come from Extra[KeyGGUF] when present, in their order and with their types,
// so that importing and exporting a GGUF gives back the same bytes. Three kinds of
// change are applied on the way out: general.name, general.description and
// general.license take the APR metadata's value when it is set and differs (a new key
// goes at the end); and when the APR file was quantized after import (provenance
// "quantization", written by apr-quant), general.file_type, if present, becomes
// llama.cpp's file type of the target (Q8_0 7, Q4_0 2, ..., K-quants as their _M
// variant) and general.quantization_version = 2 is appended for block types when
// absent, as llama-quantize does.
//
// An apr model without Extra[KeyGGUF] (a LinearRegression, a NeuralSequential, ...)
// is described by general.architecture = Arch(type), e.g. "apr_linearregression",
// then general.name, general.description and general.license from the metadata, then
// its config as typed keys "<arch>.<key>" in key order: integers as i64 (u64 beyond
// the int64 range), floats as f64 (f32 as f32), bools, strings, lists as arrays of one
// of those types (an empty list as an empty array[i64]). A config that holds maps or
// lists of mixed kinds has no GGUF form and is an error. Importing such a GGUF gives
// back the model type, config and tensors, so apr.Load loads the same model.
package ggufconv

import "github.com/apr-go/apr/lib/gguf"

// Keys and values of this package.
const (
	// KeyGGUF is the APR metadata key (in Metadata.Extra) holding the GGUF version
	// and KVs.
	KeyGGUF = gguf.MetadataKey
	// SourceFormat is the provenance source_format of an import.
	SourceFormat = "gguf"
	// ProvSHA256 and ProvSize are the provenance keys of a file source's digest and size.
	ProvSHA256 = "source_sha256"
	ProvSize   = "source_size"
	// ArchPrefix starts the general.architecture of an apr model type.
	ArchPrefix = "apr_"

	KeyArchitecture = "general.architecture"
	KeyName         = "general.name"
	KeyDescription  = "general.description"
	KeyLicense      = "general.license"
	KeyFileType     = "general.file_type"
	KeyQuantVersion = "general.quantization_version"
)
