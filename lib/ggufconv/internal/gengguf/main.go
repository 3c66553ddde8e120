// Command gengguf writes a llama-shaped GGUF file of about -size MiB for the benchmarks
// (.ci/bench-gguf): a 32,000-token vocabulary, F32 norms and Q8_0 weight matrices of
// 4096 x 4096 filled with pseudo-random bytes (valid Q8_0 blocks: the f16 scale of
// every block is a small normal number). It streams: memory stays at one row.
//
//	go run ./lib/ggufconv/internal/gengguf -size 1024 -o big.gguf
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/gguf"
)

func main() {
	size := flag.Int64("size", 1024, "approximate file size in MiB")
	out := flag.String("o", "", "output file (required)")
	f32 := flag.Int("f32", 0, "write this many F32 matrices of 16384 x 4096 instead")
	flag.Parse()
	if *f32 > 0 && *out != "" {
		if err := runF32(*f32, *out); err != nil {
			fmt.Fprintln(os.Stderr, "gengguf:", err)
			os.Exit(1)
		}
		return
	}
	if *out == "" || *size <= 0 {
		fmt.Fprintln(os.Stderr, "gengguf: usage: gengguf -size MiB -o FILE")
		os.Exit(2)
	}
	if err := run(*size<<20, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gengguf:", err)
		os.Exit(1)
	}
}

const dim = 4096

func run(target int64, path string) error {
	vocab := make([]string, 32000)
	scores := make([]float32, len(vocab))
	types := make([]int32, len(vocab))
	for i := range vocab {
		vocab[i] = fmt.Sprintf("tok%05d", i)
		scores[i] = -float32(i) / 100
		types[i] = 1
	}
	h := &gguf.Header{KVs: []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "general.name", Value: gguf.String("bench")},
		{Key: "llama.embedding_length", Value: gguf.Uint32(dim)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-5)},
		{Key: "general.file_type", Value: gguf.Uint32(7)},
		{Key: "tokenizer.ggml.model", Value: gguf.String("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array(vocab)},
		{Key: "tokenizer.ggml.scores", Value: gguf.Array(scores)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array(types)},
	}}
	q8Row := int64(dim / 32 * 34)
	matrix := q8Row * dim
	for i, total := 0, int64(0); total < target; i++ {
		h.Tensors = append(h.Tensors,
			gguf.TensorInfo{Name: fmt.Sprintf("blk.%d.attn_norm.weight", i), Dims: []int64{dim}, Type: 0},
			gguf.TensorInfo{Name: fmt.Sprintf("blk.%d.attn_q.weight", i), Dims: []int64{dim, dim}, Type: 8})
		total += 4*dim + matrix
	}
	return writeGGUF(path, h, func(w io.Writer) error {
		rng := rand.New(rand.NewPCG(1, 2))
		row := make([]byte, q8Row)
		for _, t := range h.Tensors {
			if t.Type == 0 {
				norm := make([]byte, 4*dim)
				for j := 0; j < dim; j++ {
					binary.LittleEndian.PutUint32(norm[4*j:], 0x3f800000+uint32(rng.IntN(1<<16)))
				}
				if _, err := w.Write(norm); err != nil {
					return err
				}
				continue
			}
			for r := 0; r < dim; r++ {
				for b := 0; b < len(row); b += 8 {
					binary.LittleEndian.PutUint64(row[b:], rng.Uint64())
				}
				for b := 0; b < len(row); b += 34 {
					binary.LittleEndian.PutUint16(row[b:], 0x2000+uint16(rng.IntN(0x400))) // f16 scale ~0.008
				}
				if _, err := w.Write(row); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// runF32 writes n F32 matrices of f32Rows x dim (see the package comment).
func runF32(n int, path string) error {
	const f32Rows = 16384
	h := &gguf.Header{KVs: []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "general.name", Value: gguf.String("bench-f32")},
		{Key: "llama.block_count", Value: gguf.Uint32(uint32(n))},
		{Key: "llama.context_length", Value: gguf.Uint32(2048)},
		{Key: "llama.embedding_length", Value: gguf.Uint32(dim)},
		{Key: "llama.feed_forward_length", Value: gguf.Uint32(f32Rows)},
		{Key: "llama.attention.head_count", Value: gguf.Uint32(32)},
		{Key: "llama.attention.head_count_kv", Value: gguf.Uint32(32)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32(1e-5)},
		{Key: "general.file_type", Value: gguf.Uint32(0)},
	}}
	for i := range n {
		h.Tensors = append(h.Tensors, gguf.TensorInfo{Name: fmt.Sprintf("blk.%d.ffn_up.weight", i), Dims: []int64{dim, f32Rows}, Type: 0})
	}
	return writeGGUF(path, h, func(w io.Writer) error {
		rng := rand.New(rand.NewPCG(1, 2))
		row := make([]byte, 4*dim)
		for range n * f32Rows {
			for j := range dim {
				binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
			}
			if _, err := w.Write(row); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeGGUF lays out h and writes it to path atomically, the tensor data from data.
func writeGGUF(path string, h *gguf.Header, data func(w io.Writer) error) error {
	if err := h.Layout(); err != nil {
		return err
	}
	f, err := atomicfile.Create(path, 0o666)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := gguf.NewWriter(bw, h)
	if err != nil {
		return err
	}
	if err := data(w); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
