package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// Each known template is recognised as itself, also laid out differently (whitespace
// control without whitespace to strip, double quotes, attribute access, another loop
// variable); a change in what it writes is refused.
func TestChatTemplateRecognition(t *testing.T) {
	for i := range chatShapes {
		s := &chatShapes[i]
		variants := map[string]string{
			"as published": s.jinja,
			"whitespace control": strings.NewReplacer("{% ", "{%- ", " %}", " -%}", "{{ ", "{{- ", " }}", " -}}").
				Replace(s.jinja),
			"attribute access": strings.NewReplacer("message['role']", "message.role", "message['content']", "message.content").
				Replace(s.jinja),
			"loop variable": strings.NewReplacer("for message in", "for msg in", "message[", "msg[").Replace(s.jinja),
		}
		if !strings.Contains(s.jinja, `"`) {
			variants["double quotes"] = strings.ReplaceAll(s.jinja, "'", `"`)
		}
		for name, v := range variants {
			tr, err := TranslateChatTemplate(v, "<s>", "</s>", true)
			if err != nil || tr.Name != s.name {
				t.Errorf("%s, %s: %+v, %v", s.name, name, tr, err)
			}
		}
		// One character more in a literal is another template.
		changed := strings.Replace(s.jinja, "['content']", "['content'] + '.'", 1)
		if _, err := TranslateChatTemplate(changed, "<s>", "</s>", true); !errors.Is(err, ErrUnknownTemplate) {
			t.Errorf("%s changed: %v", s.name, err)
		}
	}
}

func TestChatTemplateDefaultSystem(t *testing.T) {
	q := `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are "Q", a \'helpful\' model.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	tr, err := TranslateChatTemplate(q, "", "<|im_end|>", false)
	if err != nil {
		t.Fatal(err)
	}
	if tr.System != `You are "Q", a 'helpful' model.` || tr.Name != "chatml-system" {
		t.Errorf("system %q, shape %s", tr.System, tr.Name)
	}
}

func TestChatTemplateErrors(t *testing.T) {
	for _, bad := range []string{"{{ 'open", "{% for x in messages %", "{{ 'a\\q' }}", "hello {{ messages }}"} {
		if _, err := TranslateChatTemplate(bad, "", "", true); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestOllamaModelfile(t *testing.T) {
	h := &gguf.Header{KVs: []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array([]string{"<unk>", "<s>", "</s>"})},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(2)},
	}}
	if _, err := OllamaModelfile(h, ModelfileOptions{From: "m.gguf"}); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("no chat template: %v", err)
	}
	mf, err := OllamaModelfile(h, ModelfileOptions{From: "my model.gguf", NoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	text, err := mf.Text()
	if err != nil || string(text) != "FROM \"my model.gguf\"\nPARAMETER stop </s>\n" {
		t.Errorf("--no-template: %q, %v", text, err)
	}
	h.KVs = append(h.KVs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(chatShapes[1].jinja)})
	mf, err = OllamaModelfile(h, ModelfileOptions{From: "m.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	if mf.Chat.Name != "mistral-v0.2" || len(mf.Stops) != 1 || mf.Stops[0] != "</s>" ||
		!strings.Contains(mf.Template, "[INST] {{ .Content }} [/INST]") || strings.HasPrefix(mf.Template, "<s>") {
		t.Errorf("%+v", mf)
	}
}

// FuzzChatTemplate: any template text is recognised or refused with an error, and a
// recognised one gives a Modelfile or an error, never a panic.
func FuzzChatTemplate(f *testing.F) {
	for i := range chatShapes {
		f.Add(chatShapes[i].jinja, "<s>", "</s>")
	}
	f.Add("{%- if x -%}\n  {{ 'a' }}\n{%+ endif %}{# c #}", "", "")
	f.Fuzz(func(t *testing.T, jinja, bos, eos string) {
		tr, err := TranslateChatTemplate(jinja, bos, eos, false)
		if err != nil {
			return
		}
		mf := &Modelfile{From: "m.gguf", Template: tr.Template, System: tr.System, Stops: tr.Stops}
		_, _ = mf.Text()
	})
}
