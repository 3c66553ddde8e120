package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/safetensors"
)

func TestPermuteInverts(t *testing.T) {
	const heads, d, row = 2, 8, 3
	src := make([]byte, heads*d*row)
	for i := range src {
		src[i] = byte(i)
	}
	ggml := make([]byte, len(src))
	permute(ggml, src, heads, row, false)
	// Head 0: ggml row 1 is Hugging Face row d/2 = 4, ggml row 2 is row 1.
	if ggml[1*row] != src[4*row] || ggml[2*row] != src[1*row] || ggml[(d+1)*row] != src[(d+4)*row] {
		t.Fatalf("permutation %v", ggml)
	}
	back := make([]byte, len(src))
	permute(back, ggml, heads, row, true)
	if !bytes.Equal(back, src) {
		t.Fatal("inverse permutation does not give the rows back")
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{1443072: "1.4M", 1100048384: "1.1B", 6738415616: "6.7B", 109482240: "109M", 70553706496: "71B", 999: "1.0K"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
	for in, want := range map[string]string{"tiny-llama": "Tiny Llama", "Llama-2-7b-hf": "Llama 2 7b Hf", "Mistral-7B-v0.1": "Mistral 7B v0.1"} {
		if got := titleOf(in); got != want {
			t.Errorf("titleOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSentencePiece(t *testing.T) {
	b, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := ParseSentencePiece(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) != 512 || pieces[0] != (Piece{"<unk>", 0, TokenUnknown}) || pieces[1].Type != TokenControl ||
		pieces[3] != (Piece{"<0x00>", 0, TokenByte}) || pieces[259].Type != TokenNormal {
		t.Fatalf("%d pieces: %v %v %v %v", len(pieces), pieces[0], pieces[1], pieces[3], pieces[259])
	}
	// The first piece is 16 bytes: every shorter prefix ends inside it.
	for cut := 1; cut < 16; cut++ {
		if _, err := ParseSentencePiece(b[:cut]); err == nil {
			t.Errorf("a cut at byte %d is accepted", cut)
		}
	}
	if p, err := ParseSentencePiece(b[:16]); err != nil || len(p) != 1 {
		t.Errorf("first piece alone: %v %v", p, err)
	}
}

func FuzzParseSentencePiece(f *testing.F) {
	b, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer.model")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:200])
	f.Add([]byte{0x0a, 0x02, 0x18, 0x07})
	f.Fuzz(func(t *testing.T, data []byte) {
		pieces, err := ParseSentencePiece(data)
		if err == nil && len(pieces) == 0 {
			t.Fatal("no pieces and no error")
		}
	})
}

func TestPermuteHeadsStreams(t *testing.T) {
	const heads, d, row = 3, 8, 5
	src := make([]byte, heads*d*row)
	for i := range src {
		src[i] = byte(i * 7)
	}
	info := container.TensorInfo{Name: "q", DType: dtype.U8, Shape: []int64{heads * d, row}}
	permuteHeads := func(r io.Reader, inverse bool) io.Reader {
		h, err := permuteHeads("q", info, heads, r, inverse)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, inverse := range []bool{false, true} {
		want := make([]byte, len(src))
		permute(want, src, heads, row, inverse)
		got, err := io.ReadAll(iotest.OneByteReader(permuteHeads(bytes.NewReader(src), inverse)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("inverse %v: got %v, %v; want the whole-tensor permutation", inverse, got, err)
		}
	}
	var buf bytes.Buffer
	r := permuteHeads(bytes.NewReader(src), true).(io.WriterTo)
	if n, err := r.WriteTo(&buf); n != int64(len(src)) || err != nil {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	want := make([]byte, len(src))
	permute(want, src, heads, row, true)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("WriteTo gives other bytes than the whole-tensor permutation")
	}
	_, err := io.ReadAll(permuteHeads(bytes.NewReader(src[:len(src)-1]), false))
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("a short tensor gave %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestSamplingKVs: generation_config.json's fields become general.sampling.* keys in
// the converter's order and types; a null field is absent, a file that is not JSON
// gives none (the converter ignores it), and a field of the wrong kind is an error.
func TestSamplingKVs(t *testing.T) {
	kvs, err := samplingKVs(map[string][]byte{"generation_config.json": []byte(
		`{"temperature": 0.6, "top_k": 40, "do_sample": true, "top_p": null, "repetition_penalty": 1.1, "mirostat": true}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, fmt.Sprintf("%s=%v", kv.Key, kv.Value))
	}
	want := []string{"general.sampling.top_k=40", "general.sampling.temp=0.6", "general.sampling.penalty_repeat=1.1", "general.sampling.mirostat=1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if v, _ := (&gguf.Header{KVs: kvs}).Get("general.sampling.top_k"); v.Type() != gguf.TypeInt32 {
		t.Errorf("top_k is %v, want INT32", v.Type())
	}
	if kvs, err := samplingKVs(map[string][]byte{"generation_config.json": []byte(`{"temperature": `)}); err != nil || kvs != nil {
		t.Errorf("a broken file: %v, %v; want no keys and no error", kvs, err)
	}
	for _, bad := range []string{`{"top_k": 40.5}`, `{"temperature": "hot"}`, `{"top_p": 1e39}`, `{"sequence": 3}`} {
		if _, err := samplingKVs(map[string][]byte{"generation_config.json": []byte(bad)}); err == nil || !strings.Contains(err.Error(), "generation_config.json") {
			t.Errorf("%s: error %v, want one naming generation_config.json", bad, err)
		}
	}
}

// TestRecoverLlama3: the rope scaling parameters written back for a GGUF's
// rope_freqs.weight make the same factors: Meta's, and others solved from the blend.
func TestRecoverLlama3(t *testing.T) {
	for _, p := range []llama3Params{{32, 1, 4, 8192}, {8, 1, 4, 8192}, {16, 1, 6, 4096}} {
		r := rope{params: map[string]any{"rope_theta": json.Number("500000"), "factor": json.Number(fmt.Sprint(p.factor)),
			"low_freq_factor": json.Number("1"), "high_freq_factor": json.Number(fmt.Sprint(p.high)),
			"original_max_position_embeddings": json.Number(fmt.Sprint(p.orig))}}
		f, err := llama3RopeFreqs(r, 128)
		if err != nil {
			t.Fatal(err)
		}
		got, err := recoverLlama3(f, 128, 500000)
		if err != nil || got != p {
			t.Errorf("%+v: recovered %+v, %v", p, got, err)
		}
	}
	if _, err := recoverLlama3([]float32{1, 2, 3}, 8, 10000); err == nil {
		t.Error("factors no Llama 3 scaling makes were recovered")
	}
}

// TestRopeScalingErrors: a rope scaling apr does not convert, or malformed, is an
// error naming config.json's field.
func TestRopeScalingErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}`:    `rope_scaling.rope_type "dynamic"`,
		`{"rope_scaling": {"type": "llama3", "factor": 8.0}}`:          `rope_scaling.rope_type "llama3"`,
		`{"rope_scaling": "linear"}`:                                   `"rope_scaling" is linear, expected an object`,
		`{"rope_scaling": {"rope_type": "linear", "factor": "x"}}`:     `rope_scaling.factor is x`,
		`{"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}`:    `rope_parameters.original_max_position_embeddings`,
		`{"rope_parameters": {"full_attention": {"rope_type": "su"}}}`: `rope_parameters.full_attention.rope_type "su"`,
	} {
		var c map[string]any
		d := json.NewDecoder(strings.NewReader(cfg))
		d.UseNumber()
		if err := d.Decode(&c); err != nil {
			t.Fatal(err)
		}
		r, err := parseRope(config(c))
		if err == nil {
			_, err = r.scalingKVs("qwen3", false, false)
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("%s: error %v, want one with %q", cfg, err, want)
		}
	}
}

// TestLayerMissingTensor: a layer short of a tensor its family's layers have, or a
// model without its final norm, is an error naming it, before anything is converted.
func TestLayerMissingTensor(t *testing.T) {
	f, err := safetensors.Open("../../testdata/hf/tiny-llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	for _, n := range []string{"config.json", "tokenizer.model", "tokenizer_config.json"} {
		if files[n], err = os.ReadFile("../../testdata/hf/tiny-llama/" + n); err != nil {
			t.Fatal(err)
		}
	}
	without := func(drop func(string) bool) []TensorShape {
		var shapes []TensorShape
		for _, ti := range f.Header().Tensors {
			if !drop(ti.Name) {
				shapes = append(shapes, TensorShape{Name: ti.Name, DType: ti.DType, Shape: ti.Shape})
			}
		}
		return shapes
	}
	for _, c := range []struct {
		drop func(string) bool
		want string
	}{
		{func(n string) bool { return n == "model.layers.1.self_attn.k_proj.weight" },
			`"model.layers.1.self_attn.k_proj.weight", which every layer of a LlamaForCausalLM/MistralForCausalLM model has`},
		{func(n string) bool { return strings.HasSuffix(n, "post_attention_layernorm.weight") }, // in no layer
			`"model.layers.0.post_attention_layernorm.weight", which every layer`},
		{func(n string) bool { return n == "model.norm.weight" }, `no "model.norm.weight" (the final norm`},
	} {
		if _, _, err := FromCheckpoint(files, "x", without(c.drop)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one with %s", err, c.want)
		}
	}
}

// FuzzFromCheckpoint: any config.json, tokenizer_config.json and generation_config.json
// beside tiny-llama's tokenizer and tensors give a description or an error, never a
// panic: every family's fields, rope scaling, special tokens and sampling keys are read
// from them. Seeded with the test checkpoints' own files.
func FuzzFromCheckpoint(f *testing.F) {
	spm, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer.model")
	if err != nil {
		f.Fatal(err)
	}
	st, err := safetensors.Open("../../testdata/hf/tiny-llama/model.safetensors")
	if err != nil {
		f.Fatal(err)
	}
	var shapes []TensorShape
	for _, ti := range st.Header().Tensors {
		shapes = append(shapes, TensorShape{Name: ti.Name, DType: ti.DType, Shape: ti.Shape})
	}
	st.Close()
	dirs, _ := os.ReadDir("../../testdata/hf")
	for _, d := range dirs {
		read := func(name string) []byte {
			b, _ := os.ReadFile("../../testdata/hf/" + d.Name() + "/" + name)
			return b
		}
		if cfg := read("config.json"); cfg != nil {
			f.Add(cfg, read("tokenizer_config.json"), read("generation_config.json"))
		}
	}
	f.Fuzz(func(t *testing.T, cfg, tc, gen []byte) {
		files := map[string][]byte{"config.json": cfg, "tokenizer_config.json": tc, "generation_config.json": gen, "tokenizer.model": spm}
		cp, ok, err := FromCheckpoint(files, "x", shapes)
		if err == nil && ok && len(cp.KVs) == 0 {
			t.Error("a description without key-values")
		}
	})
}

// TestGemma3SparseTextConfig: a Gemma 3 multimodal release's config.json gives its text
// model only its sizes; the rest are transformers' Gemma3TextConfig defaults, which the
// converter reads through AutoConfig (heads 8 over 4 KV heads of 256, a context of
// 131072, rotary bases 1e6 and 1e4).
func TestGemma3SparseTextConfig(t *testing.T) {
	spm, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"tokenizer.model": spm, "config.json": []byte(`{"architectures": ["Gemma3ForConditionalGeneration"],
		"model_type": "gemma3", "text_config": {"hidden_size": 16, "intermediate_size": 32, "model_type": "gemma3_text",
		"num_hidden_layers": 1, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}}`)}
	const vocab, hidden, heads, kv, hd = 262208, 16, 8, 4, 256
	p := "model.language_model.layers.0."
	shapes := []TensorShape{
		{"model.language_model.embed_tokens.weight", dtype.BF16, []int64{vocab, hidden}},
		{"model.language_model.norm.weight", dtype.BF16, []int64{hidden}},
		{p + "input_layernorm.weight", dtype.BF16, []int64{hidden}},
		{p + "post_attention_layernorm.weight", dtype.BF16, []int64{hidden}},
		{p + "pre_feedforward_layernorm.weight", dtype.BF16, []int64{hidden}},
		{p + "post_feedforward_layernorm.weight", dtype.BF16, []int64{hidden}},
		{p + "self_attn.q_proj.weight", dtype.BF16, []int64{heads * hd, hidden}},
		{p + "self_attn.k_proj.weight", dtype.BF16, []int64{kv * hd, hidden}},
		{p + "self_attn.v_proj.weight", dtype.BF16, []int64{kv * hd, hidden}},
		{p + "self_attn.o_proj.weight", dtype.BF16, []int64{hidden, heads * hd}},
		{p + "self_attn.q_norm.weight", dtype.BF16, []int64{hd}},
		{p + "self_attn.k_norm.weight", dtype.BF16, []int64{hd}},
		{p + "mlp.gate_proj.weight", dtype.BF16, []int64{32, hidden}},
		{p + "mlp.up_proj.weight", dtype.BF16, []int64{32, hidden}},
		{p + "mlp.down_proj.weight", dtype.BF16, []int64{hidden, 32}},
	}
	cp, ok, err := FromCheckpoint(files, "x", shapes)
	if err != nil || !ok {
		t.Fatalf("%v, %v", ok, err)
	}
	h := gguf.Header{KVs: cp.KVs}
	for key, want := range map[string]string{"gemma3.attention.head_count": "8", "gemma3.attention.head_count_kv": "4",
		"gemma3.attention.key_length": "256", "gemma3.context_length": "131072", "gemma3.rope.freq_base": "1e+06",
		"gemma3.rope.freq_base_swa": "10000", "gemma3.attention.sliding_window": "1024", "gemma3.rope.scaling.factor": "8"} {
		if v, ok := h.Get(key); !ok || v.String() != want {
			t.Errorf("%s = %v, want %s", key, v, want)
		}
	}
}
