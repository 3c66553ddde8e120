// Package container reads and writes APR v2, apr's file format (docs/FORMAT.md): the
// 64-byte header, the MessagePack metadata, the tensor records with their chunked
// compression and optional encryption, the signature and license blocks, and the
// index and footer, every byte of them under a CRC32 that every read path verifies.
//
// Layer: the format only. It imports lib/dtype, lib/modeltype and lib/internal
// helpers, never the models (lib/model) or anything above lib/stream.
package container
