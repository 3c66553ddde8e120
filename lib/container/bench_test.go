package container

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// BenchmarkOpenIndex opens a real file (APR_BENCH_FILE, e.g. the 1 GiB file of make
// bench) and reads its header, metadata, footer and index.
func BenchmarkOpenIndex(b *testing.B) {
	path := os.Getenv("APR_BENCH_FILE")
	if path == "" {
		b.Skip("set APR_BENCH_FILE to a large APR file")
	}
	for i := 0; i < b.N; i++ {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(f.Entries()) == 0 {
			b.Fatal("no tensors")
		}
		f.Close()
	}
}

func benchTensor() testTensor {
	return testTensor{TensorInfo{"w", dtype.F32, []int64{1024, 4096}}, weights(9, 1024*4096)}
}

// BenchmarkWrite measures the writer per codec on 16 MiB of normal weights.
func BenchmarkWrite(b *testing.B) {
	tt := benchTensor()
	for _, name := range []string{"none", "lz4-shuffle", "zstd", "zstd-max-shuffle"} {
		opts := codecOptions[name]
		if name == "zstd" || name == "zstd-max-shuffle" {
			opts = []Option{WithCompression(map[string]Compression{"zstd": CompressZstd, "zstd-max-shuffle": CompressZstdMax}[name]), WithShuffle(name != "zstd")}
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.data)))
			for i := 0; i < b.N; i++ {
				w, _ := NewWriter(io.Discard, Header{Type: 0xFF}, opts...)
				w.WriteTensorBytes(tt.info, tt.data)
				w.Close()
			}
		})
	}
}

// BenchmarkRead measures the streaming reader per codec.
func BenchmarkRead(b *testing.B) {
	tt := benchTensor()
	for _, name := range []string{"none", "lz4-shuffle", "zstd"} {
		opts := codecOptions[name]
		if name != "none" {
			opts = append([]Option{}, opts...)
			opts = append(opts, WithChunkSize(DefaultChunk))
		}
		file := build(b, []testTensor{tt}, opts...)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.data)))
			for i := 0; i < b.N; i++ {
				r, err := NewReader(bytes.NewReader(file))
				if err != nil {
					b.Fatal(err)
				}
				for {
					t, err := r.Next()
					if err != nil {
						break
					}
					io.Copy(io.Discard, t)
				}
			}
		})
	}
}
