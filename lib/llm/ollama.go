package llm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apr-go/apr/lib/gguf"
)

// ModelfileOptions says what goes into an Ollama Modelfile besides the GGUF's own
// description.
type ModelfileOptions struct {
	// From is the FROM line's path, written as given: Ollama resolves a relative
	// path against the Modelfile's directory.
	From string
	// Template, when set, is the TEMPLATE (an Ollama Go template the user wrote),
	// instead of the translation of the GGUF's chat template.
	Template string
	// NoTemplate leaves TEMPLATE out (Ollama then uses its own default), for a GGUF
	// whose chat template is unknown or absent.
	NoTemplate bool
}

// Modelfile is an Ollama Modelfile for a GGUF: FROM, TEMPLATE, SYSTEM and the stop
// sequences.
type Modelfile struct {
	From     string
	Template string
	System   string
	Stops    []string
	// Chat is the recognised chat template, or nil (a user's template, none).
	Chat *ChatTranslation
}

// ErrNoChatTemplate: the GGUF has no tokenizer.chat_template and no fallback was asked for.
var ErrNoChatTemplate = errors.New("no tokenizer.chat_template")

// OllamaModelfile builds the Modelfile of the GGUF whose header is h. Errors do not
// name the file; the caller does.
func OllamaModelfile(h *gguf.Header, o ModelfileOptions) (*Modelfile, error) {
	if o.From == "" {
		return nil, errors.New("llm: Modelfile needs a FROM path")
	}
	kv := ggufKVs{h: *h}
	mf := &Modelfile{From: o.From}
	tokens, _ := kv.h.Get("tokenizer.ggml.tokens")
	names, _ := tokens.Strings()
	token := func(key string) string {
		id, ok := kv.uint(key)
		if !ok || id >= int64(len(names)) {
			return ""
		}
		return names[id]
	}
	bos, eos := token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
	model, _ := kv.str("tokenizer.ggml.model")
	addBOS := kv.boolean("tokenizer.ggml.add_bos_token", model == "llama")

	switch {
	case o.Template != "":
		mf.Template = o.Template
	case o.NoTemplate:
	default:
		jinja, ok := kv.str("tokenizer.chat_template")
		if !ok {
			return nil, fmt.Errorf("%w (give a template with --template FILE, or none with --no-template)", ErrNoChatTemplate)
		}
		if len(names) == 0 {
			return nil, errors.New("no tokenizer.ggml.tokens, so the chat template's special tokens are unknown")
		}
		tr, err := TranslateChatTemplate(jinja, bos, eos, addBOS)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.chat_template: %w (give a template with --template FILE, or none with --no-template)", err)
		}
		mf.Chat, mf.Template, mf.System = tr, tr.Template, tr.System
		mf.Stops = append(mf.Stops, tr.Stops...)
	}
	// The end tokens: llama.cpp stops on them anyway; the stop lines say so to Ollama
	// (and to a reader) and also hold when the text is produced piecewise.
	for _, key := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if t := token(key); t != "" && !contains(mf.Stops, t) {
			mf.Stops = append(mf.Stops, t)
		}
	}
	return mf, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Text writes the Modelfile in the syntax of Ollama's parser (github.com/ollama/ollama/parser).
func (m *Modelfile) Text() ([]byte, error) {
	var b strings.Builder
	line := func(cmd, v string) error {
		q, err := modelfileQuote(v)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		b.WriteString(cmd + " " + q + "\n")
		return nil
	}
	if err := line("FROM", m.From); err != nil {
		return nil, err
	}
	if m.Template != "" {
		if err := line("TEMPLATE", m.Template); err != nil {
			return nil, err
		}
	}
	if m.System != "" {
		if err := line("SYSTEM", m.System); err != nil {
			return nil, err
		}
	}
	for _, s := range m.Stops {
		if err := line("PARAMETER stop", s); err != nil {
			return nil, err
		}
	}
	return []byte(b.String()), nil
}

// modelfileQuote writes v as a value Ollama's parser reads back exactly. The parser
// has no escapes: a value is a bare word (it ends at a newline, and its outer spaces
// are trimmed), "..." (it ends at the first `"` followed by a space or a newline) or
// """...""" (it ends at the first `"""` followed by one); it drops non-printable
// characters other than spaces, tabs and newlines. So: bare when that is exact, else
// "..." when v has no `"`, else """...""" when v has no `"""`; anything else is an
// error rather than a value Ollama would read differently.
func modelfileQuote(v string) (string, error) {
	if v == "" {
		return "", errors.New("empty value")
	}
	if !utf8.ValidString(v) {
		return "", errors.New("value is not UTF-8")
	}
	for _, r := range v {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' && !strconv.IsPrint(r) {
			return "", fmt.Errorf("value holds the character %U, which Ollama's parser drops", r)
		}
	}
	if !strings.ContainsAny(v, " \t\r\n\"") {
		return v, nil
	}
	if !strings.Contains(v, `"`) {
		return `"` + v + `"`, nil
	}
	if !strings.Contains(v, `"""`) && !strings.HasPrefix(v, `"`) {
		return `"""` + v + `"""`, nil
	}
	return "", errors.New(`value holds """ or starts with ", which Ollama's Modelfile syntax cannot quote`)
}
