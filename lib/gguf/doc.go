// Package gguf reads and writes GGUF files, the model container of ggml and
// llama.cpp, versions 3 and 2 (little-endian only; version 1 and big-endian files are
// refused with ErrUnsupported).
//
// # Layout
//
// A GGUF file is:
//
//	magic "GGUF" | version u32 | tensor count u64 | KV count u64
//	KVs:          key (u64 length + UTF-8 bytes) | value type u32 | value
//	tensor infos: name (u64 length + bytes) | n_dims u32 | dims u64 x n_dims (ne0, the
//	              innermost, first) | ggml type u32 | offset u64 (relative to the data
//	              section, a multiple of the alignment)
//	zero padding to the alignment
//	data section: each tensor's bytes, each zero-padded to the alignment (the last one
//	              too, as llama.cpp and gguf-py write it)
//
// The alignment is the u32 KV general.alignment (a power of two) or 32. An array value
// is its element type u32, its element count u64 and the elements; the GGUF spec allows
// arrays of arrays, which this package reads (to Limits.MaxArrayDepth) but, like
// llama.cpp's reader, refuses to write.
//
// # Reading
//
// ReadHeader reads from a plain io.Reader (stdin, a pipe) and consumes exactly the
// header, KVs, tensor infos and the padding up to the data section, so the caller can
// go on streaming tensor data from the same reader; NewDataReader does that, yielding
// tensors in ascending offset order (the info order in every file llama.cpp or gguf-py
// writes). Pass a *bufio.Reader for speed: ReadHeader issues one small read per field.
//
// Open and NewFile read through io.ReaderAt (Open memory-maps the file on unix) and
// accept tensor offsets in any order, as long as every tensor is aligned, lies inside
// the file and overlaps no other.
//
// # Hostile files
//
// Every count, length and dimension is checked against caps (Limits) and, when the
// input size is known, against the bytes actually remaining before anything is
// allocated; with a plain reader, buffers grow only as bytes arrive. Element counts and
// byte sizes are computed with overflow checks. Unknown value or tensor types, n_dims
// above 4, tensor names longer than 63 bytes, duplicate keys or tensor names, bool bytes
// other than 0 and 1, a general.alignment that is not a u32 power of two and offsets
// that are unaligned or out of the file are errors. These follow the llama.cpp GGUF
// parser vulnerabilities reported in 2024 (unchecked KV and tensor counts, string and
// array lengths, n_dims, element-count overflow, tensor offsets and alignment). Every
// error is an *Error naming the file, byte offset, key or tensor, and wraps ErrFormat,
// ErrUnsupported or ErrLimit.
//
// # Writing
//
// NewWriter validates the whole header before writing any byte (see Header.Validate):
// it writes only what llama.cpp's reader accepts. Values keep their exact GGUF types
// and KVs and tensors their order, so a file read and written back is byte-identical.
package gguf
