package quant

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// TestMXFP4KeptInGGUFForm: in a model in llama.cpp's form (GGUF key-values in the
// metadata), MXFP4 tensors stay as they are for every plain target, as the converter
// keeps gpt-oss's experts; --allow-requantize converts them; a preset refuses them as
// llama-quantize does. Without GGUF key-values f32 decodes them like any block type.
func TestMXFP4KeptInGGUFForm(t *testing.T) {
	x := randF32(9, 2*256)
	q := make([]byte, 2*8*17)
	if err := kernels.Quantize(dtype.MXFP4, q, x); err != nil {
		t.Fatal(err)
	}
	mx := tensor.Tensor{Name: "blk.0.ffn_up_exps.weight", DType: dtype.MXFP4, Shape: []int64{2, 256}, Data: q}
	kvs := gguf.EncodeKVs(3, []gguf.KV{{Key: "general.architecture", Value: gguf.String("gpt-oss")},
		{Key: "gpt-oss.block_count", Value: gguf.Uint32(1)}})
	llm := container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z", Extra: map[string]any{gguf.MetadataKey: kvs}}
	plainMD := container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z"}
	convert := func(md container.Metadata, o Options) (readTensor, error) {
		var out bytes.Buffer
		if _, err := Quantize(&out, stream.FromTensors(modeltype.Custom, md, []tensor.Tensor{mx}), o); err != nil {
			return readTensor{}, err
		}
		_, got := readAll(t, out.Bytes())
		return got[mx.Name], nil
	}
	for _, typ := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.Q8_0} {
		got, err := convert(llm, Options{Type: typ})
		if err != nil || got.DType != dtype.MXFP4 || !bytes.Equal(got.data, q) {
			t.Fatalf("%v in llama.cpp's form: %v %v; want the MXFP4 bytes kept", typ, got.DType, err)
		}
	}
	if got, err := convert(llm, Options{Type: dtype.F16, AllowRequantize: true}); err != nil || got.DType != dtype.F16 {
		t.Fatalf("f16 with --allow-requantize: %v %v", got.DType, err)
	}
	if got, err := convert(plainMD, Options{Type: dtype.F32}); err != nil || got.DType != dtype.F32 {
		t.Fatalf("f32 of a model without GGUF key-values: %v %v; want decoded", got.DType, err)
	}
	p, _ := Preset("Q4_K_M")
	if _, err := convert(llm, Options{Type: dtype.Q4_K, Preset: p}); err == nil || !strings.Contains(err.Error(), "already MXFP4") {
		t.Fatalf("Q4_K_M of MXFP4: %v", err)
	}
}
