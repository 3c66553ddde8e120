// Command iqmodel writes the models of the dequantization peer check in
// .ci/test-peers-gguf: one llama GGUF per type that the check covers (the
// grid-based IQ types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M and
// ggml's newest types NVFP4, Q1_0, Q2_0), whose token_embd.weight is made of
// random blocks of that type and whose other tensors are random F32.
//
//	go run ./testdata/gguf/llama-peer/iqmodel -src testdata/gguf/tiny-llama.f32.gguf -o DIR
//
// llama.cpp reads token embeddings with get_rows, which dequantizes each row
// with ggml's own dequantize_row_*; everything after that is F32 (output.weight
// too, so no IQ dot product is involved). A twin of each file whose
// token_embd.weight holds apr's dequantization (apr-quant f32) must therefore
// give llama.cpp the same logits.
//
// tiny-llama's rows are 64 values, not a whole 256-value block, so the models
// keep its tokenizer and layout but widen n_embd to 512: two blocks per
// embedding row, 408 rows, so that the random indices reach (almost surely)
// every entry of even the largest grid (IQ1_S's 2048 points, 26,112 draws).
// The weights are random (a fixed seed): the text is gibberish, the numbers
// are what the check compares.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
)

const (
	srcEmbd = 64  // tiny-llama's n_embd
	nEmbd   = 512 // the models' n_embd
)

var types = []dtype.DType{
	dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ3_XXS, dtype.IQ3_S, dtype.IQ1_S, dtype.IQ1_M,
	dtype.NVFP4, dtype.Q1_0, dtype.Q2_0,
}

func main() {
	src := flag.String("src", "testdata/gguf/tiny-llama.f32.gguf", "tiny-llama GGUF (tokenizer and layout)")
	out := flag.String("o", ".", "output directory: writes TYPE.gguf for each type")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "iqmodel:", err)
		os.Exit(1)
	}
}

func run(src, dir string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, t := range types {
		path := filepath.Join(dir, t.String()+".gguf")
		if err := write(path, &f.Header, t); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// write derives the model for IQ type t from tiny-llama's header h.
func write(path string, h *gguf.Header, t dtype.DType) error {
	v, _ := h.Get("llama.attention.head_count")
	heads, ok := v.AsUint64()
	if !ok || heads == 0 || nEmbd%heads != 0 {
		return fmt.Errorf("llama.attention.head_count is %v, want a u32 dividing %d", v, nEmbd)
	}
	out := &gguf.Header{Version: h.Version}
	for _, kv := range h.KVs {
		switch kv.Key {
		case "general.name":
			kv.Value = gguf.String("apr-iq-peer-" + t.String())
		case "llama.embedding_length":
			kv.Value = gguf.Uint32(nEmbd)
		case "llama.rope.dimension_count":
			kv.Value = gguf.Uint32(uint32(nEmbd / heads))
		case "llama.context_length":
			kv.Value = gguf.Uint32(512) // room for all 408 tokens in one sequence
		}
		out.KVs = append(out.KVs, kv)
	}
	iq, _ := gguf.TensorTypeOf(t)
	f32, _ := gguf.TensorTypeOf(dtype.F32)
	for _, ti := range h.Tensors {
		dims := make([]int64, len(ti.Dims))
		for i, d := range ti.Dims {
			if d == srcEmbd {
				d = nEmbd
			}
			dims[i] = d
		}
		typ := f32
		if ti.Name == "token_embd.weight" {
			typ = iq
		}
		out.Tensors = append(out.Tensors, gguf.TensorInfo{Name: ti.Name, Dims: dims, Type: typ})
	}
	if err := out.Layout(); err != nil {
		return err
	}

	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer file.Close()
	w, err := gguf.NewWriter(file, out)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(20260517, uint64(t)))
	for _, ti := range out.Tensors {
		var data []byte
		if ti.Type == iq {
			data = iqBlocks(r, t, ti.Dims[0]*ti.Dims[1])
		} else {
			data = f32Tensor(r, ti)
		}
		if err := w.WriteTensor(data); err != nil {
			return fmt.Errorf("tensor %s: %w", ti.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return file.Close()
}

// f32Tensor is 1 for norm weights and N(0, 1/ne0) elsewhere, so activations
// stay of order one.
func f32Tensor(r *rand.Rand, ti gguf.TensorInfo) []byte {
	n := int64(1)
	for _, d := range ti.Dims {
		n *= d
	}
	b := make([]byte, 4*n)
	sd := 1 / math.Sqrt(float64(ti.Dims[0]))
	for i := range n {
		v := float32(1)
		if len(ti.Dims) > 1 {
			v = float32(r.NormFloat64() * sd)
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// iqBlocks returns n values of type t as random blocks: every bit random
// except the f16 (super-)block scale, a finite normal number of either sign
// between 2^-10 and 2^-6. NVFP4's four UE4M3 scale bytes stay random: all 256
// codes are finite for ggml (sign bit ignored, 0x7F read as zero), and
// 13,056 draws reach every one of them.
func iqBlocks(r *rand.Rand, t dtype.DType, n int64) []byte {
	info := t.Info()
	size := int64(info.BlockBytes)
	b := make([]byte, n/int64(info.BlockElems)*size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for k := int64(0); k < int64(len(b)); k += size {
		d := uint16(r.IntN(2))<<15 | uint16(5+r.IntN(4))<<10 | uint16(r.IntN(1024))
		block := b[k : k+size]
		if t == dtype.NVFP4 {
			continue
		}
		if t != dtype.IQ1_M {
			binary.LittleEndian.PutUint16(block, d)
			continue
		}
		// IQ1_M keeps its scale in the top nibbles of its last four u16,
		// lowest nibble first.
		for i := range 4 {
			o := size - 8 + int64(2*i)
			w := binary.LittleEndian.Uint16(block[o:])&0x0fff | (d>>(4*i)&0xf)<<12
			binary.LittleEndian.PutUint16(block[o:], w)
		}
	}
	return b
}
