package llm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/stconv"
)

// hostileCheckpoint copies testdata/hf/NAME with config.json's fields set (a nil
// value deletes the field) and the tensors of add appended to model.safetensors
// (zero data), and returns the import's error.
func hostileCheckpoint(t *testing.T, name string, set map[string]any, add map[string][]int64) error {
	t.Helper()
	return hostileFiles(t, name, set, add, nil)
}

// hostileFiles is hostileCheckpoint with files replaced by the contents given.
func hostileFiles(t *testing.T, name string, set map[string]any, add map[string][]int64, files map[string]string) error {
	t.Helper()
	dir := copyCheckpointWith(t, filepath.Join("../../testdata/hf", name), name, func(file string, b []byte) []byte {
		if c, ok := files[file]; ok {
			return []byte(c)
		}
		var err error
		switch file {
		case "config.json":
			var c map[string]any
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			for k, v := range set {
				if v == nil {
					delete(c, k)
				} else {
					c[k] = v
				}
			}
			if b, err = json.Marshal(c); err != nil {
				t.Fatal(err)
			}
		case "model.safetensors":
			ts, meta := readTensors(t, b)
			for tn, shape := range add { // a tensor of the name replaced, or a new one
				size := int64(2)
				for _, d := range shape {
					size *= d
				}
				ts = slices.DeleteFunc(ts, func(e stTensor) bool { return e.name == tn })
				ts = append(ts, stTensor{tn, "BF16", shape, make([]byte, size)})
			}
			slices.SortFunc(ts, func(a, b stTensor) int { return strings.Compare(a.name, b.name) }) // json.Marshal's order
			b = writeTensors(t, ts, meta)
		}
		return b
	})
	for n, c := range files { // new files
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err == nil {
		s.Close()
	}
	return err
}

// TestHostileShapes: a head dimension of 0 and Q biases of no rows made the import
// panic (a division by zero, an index out of range where Q's rows are permuted by
// head); a K bias or a norm of the wrong shape was imported into a GGUF llama.cpp
// cannot load. Each is an error naming the tensor or the field.
func TestHostileShapes(t *testing.T) {
	qkv := func(rows int64) map[string][]int64 {
		m := map[string][]int64{}
		for l := range 2 {
			for _, p := range []string{"q", "k", "v"} {
				m["model.layers."+string(rune('0'+l))+".self_attn."+p+"_proj.weight"] = []int64{rows, 256}
			}
		}
		return m
	}
	for _, c := range []struct {
		name, ckpt string
		set        map[string]any
		add        map[string][]int64
		want       string
	}{
		{"head_dim 0", "tiny-llama", map[string]any{"head_dim": 0}, qkv(0), "head dimension 0"},
		{"hidden_size 0", "tiny-llama", map[string]any{"hidden_size": 0, "head_dim": 64}, nil, "hidden_size 0"},
		{"q bias of 0 rows", "tiny-llama", nil, map[string][]int64{"model.layers.0.self_attn.q_proj.bias": {0}}, `"model.layers.0.self_attn.q_proj.bias" the shape [256], but it has [0]`},
		{"q bias of 0x5", "tiny-llama", nil, map[string][]int64{"model.layers.0.self_attn.q_proj.bias": {0, 5}}, `q_proj.bias" the shape [256]`},
		{"q bias scalar", "tiny-llama", nil, map[string][]int64{"model.layers.0.self_attn.q_proj.bias": {}}, `q_proj.bias" the shape [256], but it has []`},
		{"k bias short", "tiny-llama", nil, map[string][]int64{"model.layers.0.self_attn.k_proj.bias": {8}}, `k_proj.bias" the shape [128], but it has [8]`},
		{"norm 2-D", "tiny-llama", nil, map[string][]int64{"model.norm.weight": {16, 16}}, `hidden_size give tensor "model.norm.weight" the shape [256], but it has [16 16]`},
		{"q_norm 2-D", "tiny-qwen3", nil, map[string][]int64{"model.layers.0.self_attn.q_norm.weight": {8, 8}}, `head_dim give tensor "model.layers.0.self_attn.q_norm.weight"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := hostileCheckpoint(t, c.ckpt, c.set, c.add)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// TestPhi3HostileConfig: Phi-3's original context and partial rotary factor went
// into uint32 keys unchecked (-5 became 4294967291, 256.7 became 256, a factor of
// -0.75 gave rope.dimension_count 4294967248) and an original context of 0 made the
// LongRoPE attention factor NaN, all with exit 0.
func TestPhi3HostileConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"orig negative", map[string]any{"original_max_position_embeddings": -5}, "original_max_position_embeddings is -5, expected a positive integer"},
		{"orig fraction", map[string]any{"original_max_position_embeddings": 256.7}, "original_max_position_embeddings is 256.7"},
		{"orig huge", map[string]any{"original_max_position_embeddings": 1e30}, "original_max_position_embeddings is 1e+30"},
		{"orig 0", map[string]any{"original_max_position_embeddings": 0}, "original_max_position_embeddings is 0"},
		{"orig 1", map[string]any{"original_max_position_embeddings": 1}, "gives the attention factor"},
		{"rotary negative", map[string]any{"partial_rotary_factor": -0.75, "rope_scaling": nil}, "partial_rotary_factor -0.75"},
		{"rotary huge", map[string]any{"partial_rotary_factor": 1e300, "rope_scaling": nil}, "partial_rotary_factor is 1e+300, expected a finite number"},
		{"rotary over the head", map[string]any{"partial_rotary_factor": 2, "rope_scaling": nil}, "want 0 to the head dimension 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := hostileCheckpoint(t, "tiny-phi3", c.set, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "config.json") {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
	if err := hostileCheckpoint(t, "tiny-phi3", map[string]any{"partial_rotary_factor": 0.5}, nil); err == nil ||
		!strings.Contains(err.Error(), "long_factor must be a list of 16 numbers") {
		t.Errorf("a factor list of the wrong length: %v", err)
	}
}

// TestRopeFieldNames: a rotary parameter given at config.json's top level was named
// in errors as if it were inside rope_scaling ("rope_scaling.rope_theta is x" for a
// config with no rope_scaling at all).
func TestRopeFieldNames(t *testing.T) {
	for _, c := range []struct {
		ckpt string
		set  map[string]any
		want string
	}{
		{"tiny-llama", map[string]any{"rope_theta": "x"}, "config.json: rope_theta is x, expected a number"},
		{"tiny-llama3", map[string]any{"rope_theta": "x"}, "config.json: rope_theta is x, expected a number"},
		{"tiny-gemma3", map[string]any{"rope_local_base_freq": "x"}, "config.json: rope_local_base_freq is x, expected a number"},
		{"tiny-phi3", map[string]any{"original_max_position_embeddings": -1}, "config.json: original_max_position_embeddings is -1"},
		{"tiny-llama", map[string]any{"rope_scaling": map[string]any{"type": 5}}, "config.json: rope_scaling.type is 5, expected a string"},
		{"tiny-llama", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4}}, "needs rope_scaling.original_max_position_embeddings"},
	} {
		if err := hostileCheckpoint(t, c.ckpt, c.set, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want one with %q", c.ckpt, c.set, err, c.want)
		}
	}
}

// TestAddedTokenEntries: an added token whose entry is not an object, or whose
// content is not a string, became an empty token with exit 0.
func TestAddedTokenEntries(t *testing.T) {
	for _, c := range []struct{ ckpt, file, body, want string }{
		{"tiny-llama", "tokenizer_config.json", `{"added_tokens_decoder": {"5": {"content": 5}}}`, `added_tokens_decoder "5": content is 5, expected a string`},
		{"tiny-llama", "tokenizer_config.json", `{"added_tokens_decoder": {"5": "x"}}`, `added_tokens_decoder "5": x is not an object`},
		{"tiny-phi3", "tokenizer.json", `{"added_tokens": [{"id": 512, "content": ["x"]}]}`, `tokenizer.json: added_tokens[0]: content is [x], expected a string`},
		{"tiny-phi3", "tokenizer_config.json", `{"tokenizer_class": "LlamaTokenizer", "added_tokens_decoder": {"512": {"special": true}}}`, `added_tokens_decoder "512": content is <nil>`},
	} {
		if err := hostileFiles(t, c.ckpt, nil, nil, map[string]string{c.file: c.body}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one with %q", c.ckpt, c.body, err, c.want)
		}
	}
}
