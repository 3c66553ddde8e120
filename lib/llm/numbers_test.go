package llm_test

import (
	"bytes"
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
