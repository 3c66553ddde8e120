package safetensors

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// llamaLikeHeader is the header of a 32-layer transformer checkpoint (291 tensors),
// the size of a real 7B model's header.
func llamaLikeHeader(b *testing.B) []byte {
	var specs []TensorSpec
	specs = append(specs, TensorSpec{"model.embed_tokens.weight", dtype.BF16, []int64{32000, 4096}})
	for l := 0; l < 32; l++ {
		for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			specs = append(specs, TensorSpec{fmt.Sprintf("model.layers.%d.self_attn.%s.weight", l, n), dtype.BF16, []int64{4096, 4096}})
		}
		for _, n := range []string{"gate_proj", "up_proj", "down_proj"} {
			specs = append(specs, TensorSpec{fmt.Sprintf("model.layers.%d.mlp.%s.weight", l, n), dtype.BF16, []int64{11008, 4096}})
		}
		specs = append(specs, TensorSpec{fmt.Sprintf("model.layers.%d.input_layernorm.weight", l), dtype.BF16, []int64{4096}})
		specs = append(specs, TensorSpec{fmt.Sprintf("model.layers.%d.post_attention_layernorm.weight", l), dtype.BF16, []int64{4096}})
	}
	specs = append(specs, TensorSpec{"model.norm.weight", dtype.BF16, []int64{4096}}, TensorSpec{"lm_head.weight", dtype.BF16, []int64{32000, 4096}})
	h, err := Layout(Metadata{{"format", "pt"}}, specs)
	if err != nil {
		b.Fatal(err)
	}
	hb, err := h.MarshalHeader()
	if err != nil {
		b.Fatal(err)
	}
	return hb
}

func BenchmarkReadHeader(b *testing.B) {
	hb := llamaLikeHeader(b)
	b.SetBytes(int64(len(hb)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadHeader(bytes.NewReader(hb)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalHeader(b *testing.B) {
	h, err := ReadHeader(bytes.NewReader(llamaLikeHeader(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(h.HeaderSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.MarshalHeader(); err != nil {
			b.Fatal(err)
		}
	}
}

const benchData = 256 << 20

// BenchmarkStreamRead reads a 256 MiB stream (4 tensors) through NewReader/Next into
// io.Discard with a 1 MiB buffer; MB/s is data throughput including the generator.
func BenchmarkStreamRead(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(benchData)
	for b.Loop() {
		g, _ := newGen(b, 4, benchData/4)
		r, err := NewReader(g)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.ReadAll(func(_ TensorInfo, tr io.Reader) error {
			_, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{tr}, buf)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamCopy reads a 256 MiB stream and writes it again through Writer.
func BenchmarkStreamCopy(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(benchData)
	for b.Loop() {
		g, _ := newGen(b, 4, benchData/4)
		r, err := NewReader(g)
		if err != nil {
			b.Fatal(err)
		}
		w, err := NewWriterHeader(io.Discard, r.Header())
		if err != nil {
			b.Fatal(err)
		}
		if err := r.ReadAll(func(_ TensorInfo, tr io.Reader) error {
			_, err := io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{tr}, buf)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerator is the floor for the two above: the generator alone.
func BenchmarkGenerator(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(benchData)
	for b.Loop() {
		g, _ := newGen(b, 4, benchData/4)
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{g}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamWrite writes 256 MiB of tensor data through Writer into io.Discard.
func BenchmarkStreamWrite(b *testing.B) {
	chunk := make([]byte, 1<<20)
	specs := []TensorSpec{{"a", dtype.F32, []int64{benchData / 8}}, {"b", dtype.F16, []int64{benchData / 4}}}
	b.SetBytes(benchData)
	for b.Loop() {
		w, err := NewWriter(io.Discard, nil, specs)
		if err != nil {
			b.Fatal(err)
		}
		for left := int64(benchData); left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
