// Package safetensors reads and writes Hugging Face SafeTensors files exactly as the
// reference Rust crate (huggingface/safetensors v0.6.2) does.
//
// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON describing
// every tensor (dtype, shape, data_offsets) and an optional "__metadata__" string map,
// then the tensor data, packed with no gaps and ending exactly at the end of the file.
//
// # Reading
//
// The reader is as strict as the crate and reports the crate's error kinds (see Kind),
// in the crate's order: length prefix (HeaderTooSmall, HeaderTooLarge over
// MaxHeaderSize, InvalidHeaderLength), UTF-8 (InvalidHeader), JSON
// (InvalidHeaderDeserialization), then per tensor in offset order: contiguity
// (InvalidOffset), overflow of shape x bits (ValidationOverflow), whole bytes for
// sub-byte types (MisalignedSlice), size (TensorInvalidInfo); and last the end of the
// data against the end of the file (MetadataIncompleteBuffer). The tests compare all
// of this with the crate's verdicts on the fixture files.
//
// The header JSON is parsed by this package's own parser with serde/serde_json's
// rules, never by encoding/json: exact, case-sensitive field names; a repeated field
// (dtype twice, __metadata__ twice) refused; unknown fields of a tensor entry ignored
// (but still valid JSON); sizes and offsets only as plain integers below 2^64; strings
// without raw control characters or lone surrogates; nesting up to serde_json's 127
// levels; only whitespace after the object. Like serde's derive, a tensor entry may
// also be a [dtype, shape, data_offsets] array and a dtype may be {"NAME": null}.
// Where the crate decodes into a hash map, a repeated key keeps its last value: two
// entries for one tensor name (the crate checks only the last), or a repeated
// metadata key (the value of the last, at the position of the first).
//
// Decisions where the crate has no answer or Go differs:
//   - Tensors with equal offsets (zero-size ones) are listed in the writer's order
//     (dtype, then name), where the crate's order depends on its HashMap; so a
//     crate-written file reads back in exactly its own order.
//   - Shapes are []int64: a dimension of 2^63 or more, which the crate accepts in a
//     tensor that also has a zero dimension, is refused as ValidationOverflow.
//   - Offsets whose end cannot fit a file (over 2^63) are MetadataIncompleteBuffer.
//   - Dtypes are crate v0.6.2's 19; the 0.8 additions (C64, F8_E4M3FNUZ,
//     F8_E5M2FNUZ) are unknown, as in v0.6.2, and lib/dtype has no code for them.
//
// Decisions where apr is stricter than the crate, to bound memory (OverLimit, see
// MaxTensors, MaxMetadataEntries, MaxMetadataSize and MaxDims): a header of more than
// 65,536 tensors, a __metadata__ of more than 65,536 keys or 16 MiB, a shape of more
// than 32 dimensions.
//
// Memory: ReadHeader never allocates more than 1 MiB ahead of the header bytes
// actually read, and its buffer ends exactly N bytes long; parsing keeps memory
// proportional to N and within the caps above. Reader streams each tensor's
// data through an io.Reader; File maps the file (unix) or uses ReadAt (js/wasm,
// wasip1, windows).
//
// # Writing
//
// Layout, NewWriter and Encode produce the crate's bytes: tensors ordered by dtype (the
// crate's enum order, descending: U64, I64, F64, F32, U32, I32, BF16, F16, U16, I16,
// F8_E8M0, F8_E4M3, F8_E5M2, I8, U8, F6_E3M2, F6_E2M3, F4, BOOL) then by name in byte
// order; contiguous offsets; a compact header with "__metadata__" first and the
// tensors in data order, each {"dtype","shape","data_offsets"}; serde_json's string
// escaping (only '"', '\\' and C0 controls); spaces to a multiple of 8. Metadata keys
// are written in the caller's order (the crate's own order is that of a HashMap, so
// only files with at most one key can be compared byte for byte). The writer
// refuses what the crate would write but not read back: duplicate or "__metadata__"
// names, data of the wrong length, unknown or quantized dtypes.
//
// Writer streams: the header goes first, so every tensor's dtype and shape must be
// known before its data, and the data must then come in the writer's order
// (Header().Tensors), which is not in general the order of the source.
//
// # Checkpoints
//
// ParseIndex, OpenCheckpoint, PlanShards and ShardPlan.WriteDir handle Hugging Face's
// sharded checkpoints: model.safetensors.index.json ({"metadata": {"total_size": N},
// "weight_map": {tensor: file}}, written as transformers writes it:
// json.dumps(indent=2, sort_keys=True) + "\n"), plain shard file names only, every
// shard opened and checked against the weight map; shards split as huggingface_hub's
// split_state_dict_into_shards_factory splits them.
package safetensors
