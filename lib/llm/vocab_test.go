package llm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stconv"
)

// dropTensors rewrites the copied checkpoint dir's model.safetensors without the
// tensors named.
func dropTensors(t *testing.T, dir string, names ...string) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []safetensors.Tensor
	for _, ti := range f.Header().Tensors {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+ti.Name+" ") {
			d, err := f.TensorData(ti)
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, safetensors.Tensor{TensorSpec: ti.Spec(), Data: append([]byte(nil), d...)})
		}
	}
	meta := f.Header().Metadata
	f.Close()
	if len(keep) != len(f.Header().Tensors)-len(names) {
		t.Fatalf("not every tensor of %v is in the checkpoint", names)
	}
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := safetensors.Encode(out, meta, keep); err != nil {
		t.Fatal(err)
	}
}

// TestVocabSizeChecked: config.json's vocab_size is checked against a cap and the
// embedding rows before the vocabulary is built vocab_size long: with the embeddings
// removed, 10^7 took 1.2 GB and 18 s before a metadata cap stopped it, and 2^31 - 1
// ran out of memory.
func TestVocabSizeChecked(t *testing.T) {
	for _, c := range []struct {
		vocab string
		drop  bool
		want  string
	}{
		{"2147483647", true, "config.json: vocab_size 2147483647 is over the cap of 2097152 tokens"},
		{"10000000", false, "config.json: vocab_size 10000000 is over the cap of 2097152 tokens"},
		{"2097153", true, "config.json: vocab_size 2097153 is over the cap"},
		{"2097152", true, `config.json: vocab_size 2097152 cannot be checked against the embedding rows: the checkpoint has no "model.embed_tokens.weight"`},
		{"512", true, `config.json: vocab_size 512 cannot be checked against the embedding rows: the checkpoint has no "model.embed_tokens.weight"`},
		{"100000", false, "config.json: vocab_size/hidden_size give tensor"},
	} {
		t.Run(c.vocab, func(t *testing.T) {
			dir := copyCheckpoint(t, func(s string) string {
				if !strings.Contains(s, `"vocab_size": 512`) {
					t.Fatal("config.json has no vocab_size 512")
				}
				return strings.Replace(s, `"vocab_size": 512`, `"vocab_size": `+c.vocab, 1)
			})
			if c.drop {
				dropTensors(t, dir, "model.embed_tokens.weight", "lm_head.weight")
			}
			s, err := stconv.Open(dir, stconv.ImportOptions{})
			if err == nil {
				s.Close()
				t.Fatal("imported")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
		})
	}
}
