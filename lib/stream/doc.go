// Package stream is apr's one tensor stream: every importer produces a Stream and every
// exporter and transform consumes one, a tensor at a time, so memory stays bounded by
// a tensor's chunks whatever the model's size.
//
// It opens all three layouts apr reads (APR v2 streams, aprender's APRN v1 and APR\0
// files), inspects and checks them, re-encodes a stream, and converts float tensors to
// F32 (ToF32 for a tensor in memory, Decode for a reader: the one dequantizer of the
// library, on kernels.Dequantize).
//
// Layer: above the file formats (lib/container, lib/aprender) and the kernels; below
// the models, converters and transforms. It never imports lib/model or lib/apr.
package stream
