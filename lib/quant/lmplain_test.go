package quant

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// TestLanguageModelPlainTypes: q8_0, f16 and bf16 are llama-quantize file types too
// (MOSTLY_Q8_0, MOSTLY_F16, MOSTLY_BF16), though not presets here. On a language
// model they follow llama.cpp's selection under --pure (the MoE router stays F32, as
// tensor_allows_quantization keeps it), and a weight whose rows are not whole Q8_0
// blocks falls back to F16 as llama-quantize and the converter's --outtype q8_0 do.
// Found by the third adversarial pass: apr converted the router and refused the
// tensor. A model without GGUF key-values keeps apr's own rules.
func TestLanguageModelPlainTypes(t *testing.T) {
	router := tensor.Tensor{Name: "blk.0.ffn_gate_inp.weight", DType: dtype.F32, Shape: []int64{4, 64}, Data: f32Bytes(randF32(3, 4*64))}
	odd := tensor.Tensor{Name: "blk.0.ffn_down.weight", DType: dtype.F32, Shape: []int64{4, 48}, Data: f32Bytes(randF32(4, 4*48))}
	kvs := gguf.EncodeKVs(3, []gguf.KV{{Key: "general.architecture", Value: gguf.String("qwen3moe")},
		{Key: "qwen3moe.block_count", Value: gguf.Uint32(1)}})
	llm := container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z", Extra: map[string]any{gguf.MetadataKey: kvs}}
	plain := container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z"}
	convert := func(md container.Metadata, o Options, ts ...tensor.Tensor) (map[string]readTensor, error) {
		var out bytes.Buffer
		if _, err := Quantize(&out, stream.FromTensors(modeltype.Custom, md, ts), o); err != nil {
			return nil, err
		}
		_, got := readAll(t, out.Bytes())
		return got, nil
	}
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.F16, dtype.BF16} {
		got, err := convert(llm, Options{Type: typ, Pure: true}, router)
		if err != nil || got[router.Name].DType != dtype.F32 {
			t.Fatalf("--pure %v of a language model: the router is %v (%v); want it kept F32", typ, got[router.Name].DType, err)
		}
	}
	got, err := convert(llm, Options{Type: dtype.Q8_0}, odd)
	if err != nil || got[odd.Name].DType != dtype.F16 {
		t.Fatalf("q8_0 of rows of 48 in a language model: %v (%v); want the F16 fallback", got[odd.Name].DType, err)
	}
	// Without GGUF key-values: --pure converts every 2-D tensor, and rows that are not
	// whole blocks are an error, as before.
	if got, err := convert(plain, Options{Type: dtype.Q8_0, Pure: true}, router); err != nil || got[router.Name].DType != dtype.Q8_0 {
		t.Fatalf("--pure q8_0 without GGUF key-values: %v (%v); want Q8_0", got[router.Name].DType, err)
	}
	if _, err := convert(plain, Options{Type: dtype.Q8_0}, odd); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Fatalf("q8_0 of rows of 48 without GGUF key-values: %v; want refused", err)
	}
}
