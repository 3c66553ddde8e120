package llm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The known chat templates. Each is a Jinja template as published with a model
// (tokenizer_config.json's chat_template, kept by llama.cpp's converter as
// tokenizer.chat_template), with the Ollama template that renders what it renders.
// A GGUF's template is recognised when its canonical form (jinjaCanon: layout,
// quoting, whitespace control, the loop variable's name and attribute-or-index access
// do not matter) equals one of these; anything else is refused (ErrUnknownTemplate),
// because a template that only looks like a family's can differ in what it writes.
//
// "@SYSTEM@" in a template stands for a default system prompt, which becomes the
// Modelfile's SYSTEM; "\x00B" and "\x00E" in the turns stand for the BOS and EOS
// tokens' text.
var chatShapes = []chatShape{
	{
		name: "mistral-inst", family: "Llama 2 / Mistral [INST]",
		source: "apr's testdata/hf/tiny-llama (BOS before every [INST])",
		jinja:  `{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}{% elif m['role'] == 'assistant' %}{{ ' ' + m['content'] + eos_token }}{% endif %}{% endfor %}`,
		user:   turn{pre: "\x00B[INST] ", post: " [/INST]"}, assistant: turn{pre: " ", post: "\x00E"},
		system: turn{skip: true}, bosEachUser: true, end: "\x00E",
	},
	{
		name: "mistral-v0.2", family: "Llama 2 / Mistral [INST]",
		source: "mistralai/Mistral-7B-Instruct-v0.2 (as in llama.cpp's tests/test-chat-template.cpp)",
		jinja:  `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}`,
		user:   turn{pre: "[INST] ", post: " [/INST]"}, assistant: turn{post: "\x00E"},
		system: turn{skip: true}, leadingBOS: true, end: "\x00E",
	},
	{
		name: "llama3", family: "Llama 3",
		source:    "meta-llama/Meta-Llama-3-8B-Instruct",
		jinja:     `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`,
		user:      turn{pre: "<|start_header_id|>user<|end_header_id|>\n\n", post: "<|eot_id|>"},
		assistant: turn{pre: "<|start_header_id|>assistant<|end_header_id|>\n\n", post: "<|eot_id|>"},
		system:    turn{pre: "<|start_header_id|>system<|end_header_id|>\n\n", post: "<|eot_id|>"},
		gen:       "<|start_header_id|>assistant<|end_header_id|>\n\n", leadingBOS: true, trims: true, end: "<|eot_id|>",
	},
	{
		name: "chatml", family: "ChatML",
		source: "teknium/OpenHermes-2.5-Mistral-7B (as in llama.cpp's tests/test-chat-template.cpp)",
		jinja:  `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
		user:   turn{pre: "<|im_start|>user\n", post: "<|im_end|>\n"}, assistant: turn{pre: "<|im_start|>assistant\n", post: "<|im_end|>\n"},
		system: turn{pre: "<|im_start|>system\n", post: "<|im_end|>\n"}, gen: "<|im_start|>assistant\n", end: "<|im_end|>",
	},
	{
		name: "chatml-system", family: "ChatML with a default system prompt (Qwen2)",
		source: "Qwen/Qwen2-7B-Instruct",
		jinja:  `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n@SYSTEM@<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
		user:   turn{pre: "<|im_start|>user\n", post: "<|im_end|>\n"}, assistant: turn{pre: "<|im_start|>assistant\n", post: "<|im_end|>\n"},
		system: turn{pre: "<|im_start|>system\n", post: "<|im_end|>\n"}, gen: "<|im_start|>assistant\n", end: "<|im_end|>",
	},
	{
		name: "gemma", family: "Gemma",
		source:    "google/gemma-2-2b-it (as in llama.cpp's models/templates)",
		jinja:     `{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`,
		user:      turn{pre: "<start_of_turn>user\n", post: "<end_of_turn>\n"},
		assistant: turn{pre: "<start_of_turn>model\n", post: "<end_of_turn>\n"},
		system:    turn{skip: true}, gen: "<start_of_turn>model\n", leadingBOS: true, trims: true, end: "<end_of_turn>",
	},
	{
		name: "gemma-7b", family: "Gemma",
		source:    "google/gemma-7b-it (as in llama.cpp's tests/test-chat-template.cpp, without a leading BOS)",
		jinja:     `{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`,
		user:      turn{pre: "<start_of_turn>user\n", post: "<end_of_turn>\n"},
		assistant: turn{pre: "<start_of_turn>model\n", post: "<end_of_turn>\n"},
		system:    turn{skip: true}, gen: "<start_of_turn>model\n", trims: true, end: "<end_of_turn>",
	},
	{
		name: "phi3-mini", family: "Phi-3",
		source: "microsoft/Phi-3-mini-4k-instruct (as in llama.cpp's tests/test-chat-template.cpp)",
		jinja:  `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}`,
		user:   turn{pre: "<|user|>\n", post: "<|end|>\n<|assistant|>\n"}, assistant: turn{post: "<|end|>\n"},
		system: turn{skip: true}, leadingBOS: true, end: "<|end|>",
	},
	{
		name: "phi3-medium", family: "Phi-3",
		source: "microsoft/Phi-3-medium-4k-instruct (as in llama.cpp's tests/test-chat-template.cpp)",
		jinja:  `{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}`,
		user:   turn{pre: "<|user|>\n", post: "<|end|>\n<|assistant|>\n"}, assistant: turn{post: "<|end|>\n"},
		system: turn{skip: true}, end: "<|end|>",
	},
	{
		name: "phi3.5", family: "Phi-3",
		source: "microsoft/Phi-3.5-mini-instruct (as in llama.cpp's models/templates)",
		jinja: `{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'user' %}{{'<|user|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>
' + message['content'] + '<|end|>
'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>
' }}{% else %}{{ eos_token }}{% endif %}`,
		user: turn{pre: "<|user|>\n", post: "<|end|>\n"}, assistant: turn{pre: "<|assistant|>\n", post: "<|end|>\n"},
		system: turn{pre: "<|system|>\n", post: "<|end|>\n", nonEmpty: true}, gen: "<|assistant|>\n", end: "<|end|>",
	},
}

// A chatShape is one known Jinja template and the parts of its Ollama translation.
type chatShape struct {
	name, family, source string
	jinja                string
	user, assistant      turn
	system               turn
	gen                  string // the generation prompt after a final non-assistant turn
	leadingBOS           bool   // the Jinja template starts with bos_token
	bosEachUser          bool   // BOS before each user turn (but the first thing written)
	trims                bool   // the Jinja template strips each message's content
	end                  string // the end-of-turn text, a stop sequence

	once  sync.Once
	canon *regexp.Regexp
	err   error
}

// A turn is how a role's message is written: pre, the content, post.
type turn struct {
	pre, post string
	skip      bool // the template writes nothing for (or refuses) this role
	nonEmpty  bool // only when the content is not empty
}

// ErrUnknownTemplate: the chat template is none of the known ones.
var ErrUnknownTemplate = errors.New("chat template not recognised")

// ChatTranslation is a Jinja chat template in Ollama's form.
type ChatTranslation struct {
	Name, Family, Source string
	Template             string   // Ollama's Go template over .Messages
	System               string   // the Jinja template's default system prompt, or ""
	Stops                []string // the end-of-turn texts the template writes
	Notes                []string // where Ollama's rendering can differ from the Jinja one
}

// TranslateChatTemplate finds jinja among the known chat templates and writes its
// Ollama form; bos and eos are the text of the model's BOS and EOS tokens, and
// addBOS whether its tokenizer adds BOS itself (llama.cpp and so Ollama then add it
// to every prompt, and the template must not write it again).
func TranslateChatTemplate(jinja, bos, eos string, addBOS bool) (*ChatTranslation, error) {
	c, err := jinjaCanon(jinja)
	if err != nil {
		return nil, err
	}
	for i := range chatShapes {
		s := &chatShapes[i]
		re, err := s.pattern()
		if err != nil {
			return nil, fmt.Errorf("llm: known template %s: %w", s.name, err) // a bug in the table
		}
		m := re.FindStringSubmatch(c)
		if m == nil {
			continue
		}
		system := ""
		if len(m) > 1 {
			if system, err = strconv.Unquote(`"` + m[1] + `"`); err != nil {
				continue
			}
		}
		return s.translate(bos, eos, addBOS, system)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownTemplate, describeTemplate(jinja))
}

// pattern is the canonical form of the shape's template as a regular expression
// (the default system prompt, if any, a group).
func (s *chatShape) pattern() (*regexp.Regexp, error) {
	s.once.Do(func() {
		c, err := jinjaCanon(s.jinja)
		if err != nil {
			s.err = err
			return
		}
		q := regexp.QuoteMeta(c)
		q = strings.Replace(q, "@SYSTEM@", `((?:[^"\\]|\\.)*)`, 1)
		s.canon, s.err = regexp.Compile(`\A` + q + `\z`)
	})
	return s.canon, s.err
}

// describeTemplate names what a template's text shows, for the error: its length
// and the special markers it uses.
func describeTemplate(t string) string {
	var marks []string
	for _, m := range []string{"<|im_start|>", "[INST]", "<<SYS>>", "<|start_header_id|>", "<start_of_turn>",
		"<|user|>", "<|assistant|>", "<|system|>", "tools", "tool_calls"} {
		if strings.Contains(t, m) {
			marks = append(marks, strconv.Quote(m))
		}
	}
	d := fmt.Sprintf("a template of %d bytes", len(t))
	if len(marks) > 0 {
		d += " using " + strings.Join(marks, ", ")
	}
	return d + " is not one of the known templates (docs/GGUF.md, \"A Modelfile for Ollama\")"
}

// translate writes the Ollama template of the shape.
func (s *chatShape) translate(bos, eos string, addBOS bool, system string) (*ChatTranslation, error) {
	tok := func(t string) string {
		return goTemplateText(strings.NewReplacer("\x00B", bos, "\x00E", eos).Replace(t))
	}
	var b strings.Builder
	if s.leadingBOS && !addBOS {
		b.WriteString(tok("\x00B"))
	}
	if s.bosEachUser {
		b.WriteString(`{{ $started := false }}`)
	}
	b.WriteString(`{{ range $i, $_ := .Messages }}{{ $last := eq (len (slice $.Messages $i)) 1 }}`)
	first := true
	branch := func(role string, t turn, openLast bool) {
		if t.skip {
			return
		}
		cond := `eq .Role "` + role + `"`
		if t.nonEmpty {
			cond = `and (eq .Role "` + role + `") .Content`
		}
		if first {
			b.WriteString(`{{ if ` + cond + ` }}`)
			first = false
		} else {
			b.WriteString(`{{ else if ` + cond + ` }}`)
		}
		pre := t.pre
		if s.bosEachUser && strings.HasPrefix(pre, "\x00B") {
			b.WriteString(`{{ if $started }}` + tok("\x00B") + `{{ end }}`)
			pre = pre[2:]
		}
		b.WriteString(tok(pre) + `{{ .Content }}`)
		if openLast && t.post != "" {
			b.WriteString(`{{ if not $last }}` + tok(t.post) + `{{ end }}`)
		} else {
			b.WriteString(tok(t.post))
		}
		if s.bosEachUser {
			b.WriteString(`{{ $started = true }}`)
		}
	}
	branch("system", s.system, false)
	branch("user", s.user, false)
	branch("assistant", s.assistant, true)
	if !first {
		b.WriteString(`{{ end }}`)
	}
	if s.gen != "" {
		b.WriteString(`{{ if and $last (ne .Role "assistant") }}` + tok(s.gen) + `{{ end }}`)
	}
	b.WriteString(`{{ end }}`)

	tr := &ChatTranslation{Name: s.name, Family: s.family, Source: s.source, Template: b.String(), System: system}
	if e := strings.NewReplacer("\x00B", bos, "\x00E", eos).Replace(s.end); e != "" {
		tr.Stops = append(tr.Stops, e)
	}
	if s.trims {
		tr.Notes = append(tr.Notes, "the chat template strips spaces and newlines around each message's content, which Ollama's templates cannot: a message with leading or trailing whitespace keeps it")
	}
	if s.system.skip {
		tr.Notes = append(tr.Notes, "the chat template writes no system messages (it ignores or refuses them), so neither does the translation: a SYSTEM or system message has no effect")
	}
	return tr, nil
}

// goTemplateText writes s as literal text of a Go template: as it is, unless it
// holds an action delimiter, then as a quoted string action.
func goTemplateText(s string) string {
	if s == "" || !strings.Contains(s, "{{") && !strings.Contains(s, "}}") {
		return s
	}
	return `{{ ` + strconv.Quote(s) + ` }}`
}
