package gguf

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// BenchmarkReadHeader parses tiny-llama's header (408-token vocabulary) from a stream.
func BenchmarkReadHeader(b *testing.B) {
	data := readFixture(b, "tiny-llama.f32.gguf")
	h, err := ReadHeader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	hdr := data[:h.DataOffset]
	b.SetBytes(int64(len(hdr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadHeader(bufio.NewReader(bytes.NewReader(hdr))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamCopy is a GGUF-to-GGUF stream copy (ReadHeader, DataReader, Writer)
// beside a plain io.Copy of the same bytes, the floor.
func BenchmarkStreamCopy(b *testing.B) {
	data := readFixture(b, "tiny-llama.f32.gguf")
	b.Run("floor-io.Copy", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			// Hide ReaderFrom and WriterTo so that the floor copies the bytes through
			// a buffer, as the gguf path does.
			dst := struct{ io.Writer }{io.Discard}
			src := struct{ io.Reader }{bufio.NewReader(bytes.NewReader(data))}
			if _, err := io.Copy(dst, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gguf", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			br := bufio.NewReader(bytes.NewReader(data))
			h, err := ReadHeader(br)
			if err != nil {
				b.Fatal(err)
			}
			w, err := NewWriter(io.Discard, h)
			if err != nil {
				b.Fatal(err)
			}
			dr, err := NewDataReader(br, h)
			if err != nil {
				b.Fatal(err)
			}
			for {
				_, r, err := dr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(w, r); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
