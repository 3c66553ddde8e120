package llm_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stconv"
)

// editedCheckpoint copies testdata/hf/CKPT with old replaced by new in file (which must
// hold old), and returns the directory.
func editedCheckpoint(t *testing.T, ckpt, file, old, new string) string {
	t.Helper()
	return copyCheckpointWith(t, "../../testdata/hf/"+ckpt, ckpt, func(name string, b []byte) []byte {
		if name != file {
			return b
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s has no %s", file, old)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	})
}

// TestConfigNumbers: a config value beyond FLOAT32's range was written as +Inf (the
// converter stops there: Python's struct.pack raises OverflowError), and Python's NaN,
// Infinity and -Infinity, which real configs hold, stopped the import with "invalid
// character 'N'" whatever the field. Now a field apr writes or computes with names
// itself when it is not a finite FLOAT32, and one the converter ignores imports to the
// very bytes of the unedited checkpoint.
func TestConfigNumbers(t *testing.T) {
	const rope = `"rope_theta": 10000.0,`
	for _, c := range []struct {
		ckpt, file, old, new string
		want                 string // "": converts, to the unedited checkpoint's F32 GGUF
	}{
		{"tiny-llama", "config.json", rope, `"rope_theta": 1e39,`, "config.json: rope_theta is 1e39, expected a finite number within FLOAT32's range"},
		{"tiny-llama", "config.json", rope, `"rope_theta": 1e400,`, "config.json: rope_theta is 1e400, expected a finite number"},
		{"tiny-llama", "config.json", rope, `"rope_theta": NaN,`, "config.json: rope_theta is NaN, expected a finite number"},
		{"tiny-llama", "config.json", rope, `"rope_theta":-Infinity,`, "config.json: rope_theta is -Infinity, expected a finite number"},
		{"tiny-llama", "config.json", `"rms_norm_eps": 1e-05`, `"rms_norm_eps": Infinity`, `config.json: "rms_norm_eps" is Infinity, expected a finite number`},
		{"tiny-llama", "config.json", `"num_hidden_layers": 2`, `"num_hidden_layers": NaN`, `config.json: "num_hidden_layers" is NaN, expected a non-negative integer`},
		{"tiny-llama", "config.json", rope, rope + ` "rope_scaling": {"rope_type": "linear", "factor": NaN},`, "config.json: rope_scaling.factor is NaN, expected a finite number"},
		{"tiny-granite", "config.json", `"attention_multiplier": 0.015625`, `"attention_multiplier": 1e39`, `config.json: "attention_multiplier" is 1e39, expected a finite number within FLOAT32's range`},
		{"tiny-granite", "config.json", `"logits_scaling": 8.0`, `"logits_scaling": NaN`, `config.json: "logits_scaling" is NaN`},
		{"tiny-deepseek2", "config.json", `"routed_scaling_factor": 1.0`, `"routed_scaling_factor": -3.5e38`, `config.json: "routed_scaling_factor" is -3.5e38, expected a finite number within FLOAT32's range`},
		{"tiny-phi3", "config.json", `"long_factor": [1.0,`, `"long_factor": [NaN,`, "config.json: rope_scaling.long_factor[0] is NaN, expected a finite number"},
		{"tiny-phi3", "config.json", `"short_factor": [1.0,`, `"short_factor": [1e39,`, "config.json: rope_scaling.short_factor[0] is 1e39, expected a finite number"},
		// Fields the converter does not read hold them harmlessly.
		{"tiny-llama", "config.json", `"initializer_range": 0.02`, `"initializer_range": NaN`, ""},
		{"tiny-llama", "config.json", `"initializer_range": 0.02`, `"initializer_range": [NaN, Infinity, -Infinity, {"x": NaN}, "NaN"]`, ""},
		{"tiny-llama", "config.json", rope, rope + ` "rope_scaling": {"rope_type": "default", "factor": NaN},`, ""},
		{"tiny-llama", "tokenizer_config.json", `{`, `{"model_max_length": Infinity, "x": NaN,`, ""},
		{"tiny-llama", "generation_config.json", `"do_sample": true`, `"do_sample": true, "length_penalty": NaN`, ""},
	} {
		t.Run(c.ckpt+"/"+c.new, func(t *testing.T) {
			dir := editedCheckpoint(t, c.ckpt, c.file, c.old, c.new)
			if c.want != "" {
				s, err := stconv.Open(dir, stconv.ImportOptions{})
				if err == nil {
					s.Close()
				}
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one with %q", err, c.want)
				}
				return
			}
			if !bytes.Equal(toGGUF(t, dir, "f32"), toGGUF(t, "../../testdata/hf/"+c.ckpt, "f32")) {
				t.Error("the F32 GGUF differs from the unedited checkpoint's")
			}
		})
	}
}

// TestSamplingNonFinite: a NaN or infinite sampling value of generation_config.json
// is left out (the converter writes it as it is; llama.cpp would sample with it),
// and the other sampling keys are still written; a NaN stopped apr's reading of the
// file, which then left every sampling key out.
func TestSamplingNonFinite(t *testing.T) {
	for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
		dir := editedCheckpoint(t, "tiny-llama", "generation_config.json", `"temperature": 0.6`, `"temperature": `+lit)
		out := toGGUF(t, dir, "f32")
		f, err := gguf.NewFile(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := f.Header.Get("general.sampling.temp"); ok {
			t.Errorf("temperature %s: general.sampling.temp is %v", lit, v)
		}
		if _, ok := f.Header.Get("general.sampling.top_p"); !ok {
			t.Errorf("temperature %s: general.sampling.top_p is missing", lit)
		}
	}
}

// withTensor copies testdata/hf/CKPT with tensor name's data replaced by data of dtype
// dt (its shape kept); a name that ends in "." replaces every tensor it starts.
func withTensor(t *testing.T, ckpt, name, dt string, data func(n int) []byte) string {
	t.Helper()
	return copyCheckpointWith(t, "../../testdata/hf/"+ckpt, ckpt, func(file string, b []byte) []byte {
		if file != "model.safetensors" {
			return b
		}
		ts, meta := readTensors(t, b)
		found := false
		for i, e := range ts {
			if e.name == name || strings.HasSuffix(name, ".") && strings.HasPrefix(e.name, name) {
				n := 1
				for _, d := range e.shape {
					n *= int(d)
				}
				ts[i].dtype, ts[i].data, found = dt, data(n), true
			}
		}
		if !found && !strings.HasSuffix(name, ".") {
			t.Fatalf("no tensor %s", name)
		}
		return writeTensors(t, ts, meta)
	})
}

// TestIntegerWeights: an integer tensor in a weight's place was kept integer (an I32
// ffn_down.weight in the GGUF, on which llama.cpp crashed). The converter casts every
// tensor to float32 first (prepare_tensors), so each output type gets the floats of
// the integers: the export equals that of the checkpoint with the values stored as
// F32 (16777217 rounds to 16777216, as torch's cast rounds it), Q and K permuted
// after the cast. U16, U32 and U64, which the converter cannot read, are refused
// naming the tensor.
func TestIntegerWeights(t *testing.T) {
	vals := func(n int) []int64 { // small values and a few beyond float32's 24 bits
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i*7919%2001) - 1000
		}
		copy(v, []int64{16777217, -16777219, 123456789, 1 << 40, 0, 1})
		return v
	}
	enc := func(size int, put func(b []byte, v int64)) func(int) []byte {
		return func(n int) []byte {
			b := make([]byte, n*size)
			for i, v := range vals(n) {
				put(b[i*size:], v)
			}
			return b
		}
	}
	f32 := func(conv func(int64) float32) func(int) []byte {
		return enc(4, func(b []byte, v int64) { binary.LittleEndian.PutUint32(b, math.Float32bits(conv(v))) })
	}
	const down, q = "model.layers.0.mlp.down_proj.weight", "model.layers.1.self_attn.q_proj.weight"
	wide := []string{"f16", "q8_0"}
	for _, c := range []struct {
		name, tensor, dt string
		data, same       func(int) []byte
		types            []string // f16 and q8_0 only where the values fit F16 (apr refuses an infinite value or block scale)
	}{
		{"I32", down, "I32", enc(4, func(b []byte, v int64) { binary.LittleEndian.PutUint32(b, uint32(v)) }), f32(func(v int64) float32 { return float32(int32(v)) }), nil},
		{"I32 small", down, "I32", enc(4, func(b []byte, v int64) { binary.LittleEndian.PutUint32(b, uint32(int16(v))) }), f32(func(v int64) float32 { return float32(int16(v)) }), wide},
		{"I64", down, "I64", enc(8, func(b []byte, v int64) { binary.LittleEndian.PutUint64(b, uint64(v)) }), f32(func(v int64) float32 { return float32(v) }), nil},
		{"I16 Q", q, "I16", enc(2, func(b []byte, v int64) { binary.LittleEndian.PutUint16(b, uint16(v)) }), f32(func(v int64) float32 { return float32(int16(v)) }), wide},
		{"I8", down, "I8", enc(1, func(b []byte, v int64) { b[0] = byte(v) }), f32(func(v int64) float32 { return float32(int8(v)) }), wide},
		{"U8", down, "U8", enc(1, func(b []byte, v int64) { b[0] = byte(v) }), f32(func(v int64) float32 { return float32(uint8(v)) }), wide},
		{"BOOL", down, "BOOL", enc(1, func(b []byte, v int64) { b[0] = byte(v & 1) }), f32(func(v int64) float32 { return float32(v & 1) }), wide},
	} {
		t.Run(c.name, func(t *testing.T) {
			ints, floats := withTensor(t, "tiny-llama", c.tensor, c.dt, c.data), withTensor(t, "tiny-llama", c.tensor, "F32", c.same)
			for _, typ := range append([]string{"f32", "bf16"}, c.types...) {
				if !bytes.Equal(toGGUF(t, ints, typ), toGGUF(t, floats, typ)) {
					t.Errorf("%s: the export differs from that of the F32 values", typ)
				}
			}
		})
	}
	for _, dt := range []string{"U16", "U32", "U64"} {
		dir := withTensor(t, "tiny-llama", down, dt, func(n int) []byte { return make([]byte, n*map[string]int{"U16": 2, "U32": 4, "U64": 8}[dt]) })
		s, err := stconv.Open(dir, stconv.ImportOptions{})
		if err == nil {
			s.Close()
		}
		if want := `tensor "model.layers.0.mlp.down_proj.weight" is ` + dt + `, which llama.cpp's converter cannot read`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dt, err, want)
		}
	} // Experts are stacked as they are: integer ones are refused, naming the tensor.
	dir := withTensor(t, "tiny-qwen3moe", "model.layers.0.mlp.experts.", "I32", func(n int) []byte { return make([]byte, 4*n) })
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err == nil {
		s.Close()
	}
	if want := `tensor "model.layers.0.mlp.experts.0.down_proj.weight" is I32: apr stacks float experts only`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("integer experts: %v, want %q", err, want)
	}
}

// TestFieldNamingErrors: errors that named no config.json field, or not the one to
// mend: a head dimension derived from hidden_size and the head count ("the head
// dimension 63 is odd"), a DeepSeek layer whose tensors disagree with
// first_k_dense_replace ("no model.layers.0.mlp.gate.weight"), a multimodal config
// without text_config ("hidden_size is missing"), a longrope scaling without its
// factors ("not a rope scaling apr converts").
func TestFieldNamingErrors(t *testing.T) {
	const multimodal = "is multimodal: config.json holds its text model's fields in text_config, "
	for _, c := range []struct{ ckpt, old, new, want string }{
		{"tiny-llama", `"hidden_size": 256`, `"hidden_size": 252`, "the head dimension 63 (hidden_size 252 / num_attention_heads 4, as head_dim is not given) is odd"},
		{"tiny-llama", `"num_attention_heads": 4`, `"num_attention_heads": 512`, "hidden_size 256 is not a multiple of num_attention_heads 512 (head_dim is not given, so it is hidden_size / num_attention_heads)"},
		{"tiny-llama", `"hidden_size": 256`, `"hidden_size": 256, "head_dim": 63`, "the head dimension 63 (head_dim) is odd"},
		{"tiny-deepseek2", `"first_k_dense_replace": 1`, `"first_k_dense_replace": 0`, `no "model.layers.0.mlp.gate.weight", which layer 0 of this DeepseekV2ForCausalLM/DeepseekV3ForCausalLM model has (config.json: first_k_dense_replace 0 makes layer 0 a mixture of experts`},
		{"tiny-deepseek2", `"first_k_dense_replace": 1`, `"first_k_dense_replace": 2`, `(config.json: first_k_dense_replace 2 makes layer 1 dense`},
		// multimodal configs without their text_config, hidden_size left out
		{"tiny-gemma3", `"Gemma3ForCausalLM"`, `"Gemma3ForConditionalGeneration"`, `config.json: "hidden_size" is missing (Gemma3ForConditionalGeneration ` + multimodal + `which it lacks)`},
		{"tiny-llama", `"LlamaForCausalLM"`, `"Mistral3ForConditionalGeneration"], "text_config": 5, "x": [`, `(Mistral3ForConditionalGeneration ` + multimodal + `which is 5, not an object)`},
		{"tiny-phi3", `"long_factor"`, `"long_factor_x"`, `config.json: rope_scaling.type "longrope" needs rope_scaling.long_factor and rope_scaling.short_factor`},
		{"tiny-llama", `"rope_theta": 10000.0,`, `"rope_theta": 10000.0, "rope_scaling": {"rope_type": "su", "factor": 2},`, `rope_scaling.rope_type "su" needs rope_scaling.long_factor and rope_scaling.short_factor`},
	} {
		t.Run(c.ckpt+"/"+c.new, func(t *testing.T) {
			dir := editedCheckpoint(t, c.ckpt, "config.json", c.old, c.new)
			if strings.Contains(c.want, multimodal) {
				b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
				b = bytes.Replace(b, []byte(`"hidden_size"`), []byte(`"hidden_size_x"`), 1)
				if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := stconv.Open(dir, stconv.ImportOptions{})
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
}
