// Package ollama tests apr-gguf's Modelfiles against Ollama itself: Ollama's parser
// (github.com/ollama/ollama/parser) reads each, and Ollama's template package renders
// the translated TEMPLATE for conversations, which must give the text the original
// Jinja chat template gives (rendered by Debian's python3-jinja2 as transformers
// renders it). It is a module of its own so that apr's library never depends on
// Ollama; `make test-ollama` runs it.
package ollama

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/llm"
	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/parser"
	"github.com/ollama/ollama/template"
)

// A model is a GGUF made for the test: a chat template and the special tokens a
// model of that family has.
type model struct {
	file          string // under testdata/, or the tiny-llama checkpoint's template
	shape         string // the known template it must be recognised as
	bos, eos, eot string
	addBOS        bool
	system        string   // the expected SYSTEM
	stops         []string // the expected stop sequences
}

var models = []model{
	{file: "tiny-llama", shape: "mistral-inst", bos: "<s>", eos: "</s>", addBOS: true, stops: []string{"</s>"}},
	{file: "mistral-7b-instruct-v0.2.jinja", shape: "mistral-v0.2", bos: "<s>", eos: "</s>", addBOS: true, stops: []string{"</s>"}},
	{file: "meta-llama-3-8b-instruct.jinja", shape: "llama3", bos: "<|begin_of_text|>", eos: "<|end_of_text|>", eot: "<|eot_id|>", addBOS: true,
		stops: []string{"<|eot_id|>", "<|end_of_text|>"}},
	{file: "llama-3-reformatted.jinja", shape: "llama3", bos: "<|begin_of_text|>", eos: "<|eot_id|>", addBOS: true, stops: []string{"<|eot_id|>"}},
	{file: "qwen2-7b-instruct.jinja", shape: "chatml-system", bos: "<|endoftext|>", eos: "<|im_end|>", addBOS: false,
		system: "You are a helpful assistant.", stops: []string{"<|im_end|>"}},
	{file: "openhermes-2.5-chatml.jinja", shape: "chatml", bos: "<s>", eos: "<|im_end|>", addBOS: true, stops: []string{"<|im_end|>"}},
	{file: "gemma-7b-it.jinja", shape: "gemma-7b", bos: "<bos>", eos: "<eos>", eot: "<end_of_turn>", addBOS: true, stops: []string{"<end_of_turn>", "<eos>"}},
	{file: "gemma-2-2b-it.jinja", shape: "gemma", bos: "<bos>", eos: "<eos>", eot: "<end_of_turn>", addBOS: true, stops: []string{"<end_of_turn>", "<eos>"}},
	// The same template with a tokenizer that does not add BOS: the template writes it.
	{file: "gemma-2-2b-it.jinja", shape: "gemma", bos: "<bos>", eos: "<eos>", addBOS: false, stops: []string{"<end_of_turn>", "<eos>"}},
	{file: "phi-3-mini-4k-instruct.jinja", shape: "phi3-mini", bos: "<s>", eos: "<|endoftext|>", eot: "<|end|>", addBOS: true, stops: []string{"<|end|>", "<|endoftext|>"}},
	{file: "phi-3-medium-4k-instruct.jinja", shape: "phi3-medium", bos: "<s>", eos: "<|endoftext|>", eot: "<|end|>", addBOS: true, stops: []string{"<|end|>", "<|endoftext|>"}},
	{file: "phi-3.5-mini-instruct.jinja", shape: "phi3.5", bos: "<s>", eos: "<|endoftext|>", eot: "<|end|>", addBOS: true, stops: []string{"<|end|>", "<|endoftext|>"}},
}

// The conversations each template renders: a user turn alone, with a system prompt,
// multi-turn, content with newlines, and one that ends with the assistant's turn
// (which Ollama leaves open for the model to continue).
var conversations = [][]api.Message{
	{{Role: "user", Content: "Hello"}},
	{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Hi"}},
	{{Role: "user", Content: "Hello"}, {Role: "assistant", Content: "Hi there"}, {Role: "user", Content: "Who are you?"}},
	{{Role: "system", Content: "Answer in French.\nBe brief."}, {Role: "user", Content: "One\ntwo"},
		{Role: "assistant", Content: "Un\ndeux"}, {Role: "user", Content: "Three?"}, {Role: "assistant", Content: "Trois"},
		{Role: "user", Content: "And \"four\" {{ .x }}?"}},
	{{Role: "user", Content: "Count to three"}, {Role: "assistant", Content: "One, two"}},
}

func (m model) template(t *testing.T) string {
	if m.file == "tiny-llama" {
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		b, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer_config.json")
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		return cfg.ChatTemplate
	}
	b, err := os.ReadFile(filepath.Join("testdata", m.file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeGGUF writes a GGUF with the model's tokenizer and chat template and no tensors.
func writeGGUF(t *testing.T, path, jinja string, m model) {
	tokens := []string{"<unk>"}
	id := func(s string) uint32 {
		if i := slices.Index(tokens, s); i >= 0 {
			return uint32(i)
		}
		tokens = append(tokens, s)
		return uint32(len(tokens) - 1)
	}
	kvs := []gguf.KV{{Key: "general.architecture", Value: gguf.String("llama")}, {Key: "tokenizer.ggml.model", Value: gguf.String("llama")}}
	var ids []gguf.KV
	ids = append(ids, gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(id(m.bos))},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(id(m.eos))})
	if m.eot != "" {
		ids = append(ids, gguf.KV{Key: "tokenizer.ggml.eot_token_id", Value: gguf.Uint32(id(m.eot))})
	}
	for _, w := range []string{"Hello", "world"} {
		id(w)
	}
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.Array(tokens)})
	kvs = append(kvs, ids...)
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(m.addBOS)},
		gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(jinja)})
	h := &gguf.Header{Version: 3, KVs: kvs}
	if err := h.Layout(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, h)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = os.WriteFile(path, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// modelfile is what `apr-gguf modelfile FROM` writes for the GGUF at path.
func modelfile(t *testing.T, path, from string) (*llm.Modelfile, []byte) {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mf, err := llm.OllamaModelfile(&f.Header, llm.ModelfileOptions{From: from})
	if err != nil {
		t.Fatal(err)
	}
	text, err := mf.Text()
	if err != nil {
		t.Fatal(err)
	}
	return mf, text
}

type jinjaCase struct {
	Template            string        `json:"template"`
	BOS                 string        `json:"bos_token"`
	EOS                 string        `json:"eos_token"`
	Messages            []api.Message `json:"messages"`
	AddGenerationPrompt bool          `json:"add_generation_prompt"`
}

type jinjaResult struct {
	Output *string `json:"output"`
	Error  string  `json:"error"`
}

// renderJinja renders the cases with python3-jinja2, skipping the test without it
// (failing it under APR_REQUIRE_PEERS=1, as CI runs).
func renderJinja(t *testing.T, cases []jinjaCase) []jinjaResult {
	py := os.Getenv("APR_PYTHON")
	if py == "" {
		py = "python3"
	}
	if err := exec.Command(py, "-c", "import jinja2").Run(); err != nil {
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			t.Fatalf("required peer missing (APR_REQUIRE_PEERS=1): %s cannot import jinja2 (apt-get install -y python3-jinja2)", py)
		}
		t.Skipf("Jinja peer missing: %s cannot import jinja2 (apt-get install -y python3-jinja2)", py)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "render_jinja.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render_jinja.py: %v\n%s", err, stderr.String())
	}
	t.Logf("peer: %s", strings.TrimSpace(stderr.String()))
	var res []jinjaResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("render_jinja.py: %d results for %d cases, %v", len(res), len(cases), err)
	}
	return res
}

func TestModelfileOllama(t *testing.T) {
	dir := t.TempDir()
	type run struct {
		m     model
		tmpl  *template.Template
		mf    *llm.Modelfile
		conv  []api.Message
		jinja int // index of the Jinja case of conv
		bare  int // index of the Jinja case of conv without system messages
	}
	var runs []run
	var cases []jinjaCase
	for i, m := range models {
		jinja := m.template(t)
		path := filepath.Join(dir, "m"+string(rune('a'+i))+".gguf")
		writeGGUF(t, path, jinja, m)
		mf, text := modelfile(t, path, filepath.Base(path)) // FROM relative to the Modelfile's directory
		if mf.Chat == nil || mf.Chat.Name != m.shape {
			t.Fatalf("%s: recognised as %+v, want %s", m.file, mf.Chat, m.shape)
		}

		// Ollama's parser reads back exactly the commands apr meant.
		parsed, err := parser.ParseFile(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("%s: Ollama's parser: %v\n%s", m.file, err, text)
		}
		var got []string
		want := []string{"model=" + filepath.Base(path), "template=" + mf.Template}
		if m.system != "" {
			want = append(want, "system="+m.system)
		}
		for _, s := range m.stops {
			want = append(want, "stop="+s)
		}
		for _, c := range parsed.Commands {
			got = append(got, c.Name+"="+c.Args)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Ollama's parser read\n%q\nwant\n%q\nModelfile:\n%s", m.file, got, want, text)
		}
		// ... and turns them into the request `ollama create` sends: FROM resolved
		// against the Modelfile's directory to this GGUF, by digest.
		req, err := parsed.CreateRequest(dir)
		if err != nil {
			t.Fatalf("%s: CreateRequest: %v", m.file, err)
		}
		b, _ := os.ReadFile(path)
		sum := sha256.Sum256(b)
		if len(req.Files) != 1 || req.Files[path] != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("%s: FROM resolved to %v", m.file, req.Files)
		}
		if stops, _ := req.Parameters["stop"].([]string); !slices.Equal(stops, m.stops) || req.Template != mf.Template || req.System != m.system {
			t.Errorf("%s: request stop %q system %q", m.file, req.Parameters["stop"], req.System)
		}

		tmpl, err := template.Parse(req.Template)
		if err != nil {
			t.Fatalf("%s: Ollama's template package: %v", m.file, err)
		}
		for _, conv := range conversations {
			gen := conv[len(conv)-1].Role != "assistant"
			var bare []api.Message
			for _, msg := range conv {
				if msg.Role != "system" {
					bare = append(bare, msg)
				}
			}
			runs = append(runs, run{m: m, tmpl: tmpl, mf: mf, conv: conv, jinja: len(cases), bare: len(cases) + 1})
			cases = append(cases, jinjaCase{jinja, m.bos, m.eos, conv, gen}, jinjaCase{jinja, m.bos, m.eos, bare, gen})
		}
	}
	res := renderJinja(t, cases)
	for _, r := range runs {
		// What Ollama's server does for /api/chat: the Modelfile's SYSTEM goes first
		// when the request has no system message (server/routes.go, ChatHandler).
		msgs := slices.Clone(r.conv)
		if r.mf.System != "" && msgs[0].Role != "system" {
			msgs = append([]api.Message{{Role: "system", Content: r.mf.System}}, msgs...)
		}
		var b bytes.Buffer
		if err := r.tmpl.Execute(&b, template.Values{Messages: msgs}); err != nil {
			t.Fatalf("%s: Ollama's Execute: %v", r.m.file, err)
		}
		got := b.String()
		jr := res[r.jinja]
		if jr.Output == nil {
			// The Jinja template refuses the conversation (a system message, for
			// templates without a system role): the translation leaves the system
			// messages out, which is the Jinja rendering of the rest.
			if !slices.ContainsFunc(r.conv, func(m api.Message) bool { return m.Role == "system" }) {
				t.Fatalf("%s: Jinja refused a conversation without a system message: %s", r.m.file, jr.Error)
			}
			jr = res[r.bare]
			if jr.Output == nil {
				t.Fatalf("%s: Jinja refused the conversation without its system message: %s", r.m.file, jr.Error)
			}
		}
		want := *jr.Output
		if r.m.addBOS {
			// llama.cpp's tokenizer adds BOS to the prompt Ollama renders.
			want = strings.TrimPrefix(want, r.m.bos)
		}
		if r.conv[len(r.conv)-1].Role == "assistant" {
			// Ollama leaves the last assistant turn open; Jinja closes it.
			rest, ok := strings.CutPrefix(want, got)
			if !ok || rest == "" || !slices.ContainsFunc(r.mf.Stops, func(s string) bool { return strings.HasPrefix(rest, s) }) {
				t.Errorf("%s: a final assistant turn:\nOllama %q\nJinja  %q", r.m.file, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: %d messages:\nOllama %q\nJinja  %q", r.m.file, len(r.conv), got, want)
		}
	}
}

// TestRefused: a template apr does not know (Qwen2.5's, with tool calls) is an
// error that says what to do, never a guess; --no-template's Modelfile parses.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/qwen2.5-7b-instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "qwen.gguf")
	writeGGUF(t, path, string(b), model{bos: "<|endoftext|>", eos: "<|im_end|>"})
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = llm.OllamaModelfile(&f.Header, llm.ModelfileOptions{From: path})
	if err == nil || !strings.Contains(err.Error(), "not one of the known templates") || !strings.Contains(err.Error(), "--no-template") {
		t.Fatalf("Qwen2.5's template: %v", err)
	}
	mf, err := llm.OllamaModelfile(&f.Header, llm.ModelfileOptions{From: path, NoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	text, err := mf.Text()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := parser.ParseFile(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Commands) != 2 || parsed.Commands[0].Args != path || parsed.Commands[1].Args != "<|im_end|>" {
		t.Errorf("--no-template: %+v", parsed.Commands)
	}
}

// TestQuoting: values that need each of the parser's quoting forms come back exactly.
func TestQuoting(t *testing.T) {
	for _, v := range []string{"plain", "two words", " lead", "trail ", "a\nb", `say "hi" there`, "tab\there",
		`{{ if eq .Role "user" }}x{{ end }}`, "ends with quote\"", "ünïcödé ✓", "x\"\" y", "a#b"} {
		mf := &llm.Modelfile{From: "m.gguf", Template: v, System: v, Stops: []string{v}}
		text, err := mf.Text()
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		parsed, err := parser.ParseFile(bytes.NewReader(text))
		if err != nil {
			t.Errorf("%q: %v\n%s", v, err, text)
			continue
		}
		if len(parsed.Commands) != 4 {
			t.Errorf("%q: %d commands\n%s", v, len(parsed.Commands), text)
			continue
		}
		for _, c := range parsed.Commands[1:] {
			if c.Args != v {
				t.Errorf("%q: %s read back as %q\n%s", v, c.Name, c.Args, text)
			}
		}
	}
	for _, v := range []string{`a """ b`, "nul\x00", "\u00a0nbsp"} {
		if _, err := (&llm.Modelfile{From: "m.gguf", System: v}).Text(); err == nil {
			t.Errorf("%q: no error, but Ollama's parser cannot read it back", v)
		}
	}
}
