package main

import (
	"bytes"
	"encoding/json"
	"log"
	"strings"
)

// qwenBPE is the -tokenizer value that asks for syntheticBPE.
const qwenBPE = "qwen2-bpe"

// qwen2Split is Qwen2's pre-tokenizer regex (its tokenizer.json's Split pattern), by
// which llama.cpp's converter and apr name the pre-tokenizer "qwen2".
const qwen2Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// qwenTokenizerConfig is a tokenizer_config.json as Qwen3's, shortened: no BOS,
// <|im_end|> ends a turn, <|endoftext|> pads, and a ChatML template.
const qwenTokenizerConfig = `{
  "add_bos_token": false,
  "add_prefix_space": false,
  "bos_token": null,
  "chat_template": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
  "clean_up_tokenization_spaces": false,
  "eos_token": "<|im_end|>",
  "errors": "replace",
  "model_max_length": 1024,
  "pad_token": "<|endoftext|>",
  "split_special_tokens": false,
  "tokenizer_class": "Qwen2Tokenizer",
  "unk_token": null
}
`

// syntheticMerges are the merges of syntheticBPE, in rank order: English's commonest
// pairs, so that ordinary text is split into a few known pieces.
var syntheticMerges = []string{
	"Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t", "Ġ w", "Ġ o", "e n", "Ġ c",
	"i t", "i s", "a n", "o r", "e s", "Ġ b", "e d", "Ġ f", "in g", "Ġ p", "o u", "Ġa n", "a l", "a r",
	"Ġt o", "Ġ m", "Ġo f", "Ġ in", "Ġ d", "Ġ h", "Ġan d", "i c", "a s", "l e", "Ġt h", "i on", "o m",
	"l l", "en t", "Ġ n", "Ġ l", "s t", "Ġ re", "v e", "Ġ e", "r o", "l y", "Ġb e", "Ġ g", "Ġ T", "c t",
}

// syntheticBPE is a byte-level BPE tokenizer.json in Qwen2's form: the 256 byte tokens
// in GPT-2's byte-to-character order, the merges above, then three added special
// tokens and more; with the ids of <|endoftext|> (Qwen's BOS and padding) and
// <|im_end|> (its EOS).
func syntheticBPE(more ...string) (tok []byte, endOfText, imEnd int) {
	vocab := map[string]int{}
	var order []string
	add := func(t string) {
		if _, ok := vocab[t]; !ok {
			vocab[t] = len(order)
			order = append(order, t)
		}
	}
	for _, c := range byteChars() {
		add(string(c))
	}
	for _, m := range syntheticMerges {
		add(strings.Replace(m, " ", "", 1))
	}
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var specials []added
	for _, s := range append([]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, more...) {
		specials = append(specials, added{ID: len(order) + len(specials), Content: s, Special: true})
	}
	vocabJSON := &bytes.Buffer{}
	vocabJSON.WriteByte('{')
	for i, t := range order {
		if i > 0 {
			vocabJSON.WriteByte(',')
		}
		k, _ := json.Marshal(t)
		vocabJSON.Write(k)
		vocabJSON.WriteString(":")
		vocabJSON.WriteString(jsonInt(i))
	}
	vocabJSON.WriteByte('}')
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": specials,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwen2Split}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": json.RawMessage(vocabJSON.Bytes()), "merges": syntheticMerges},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		log.Fatal(err)
	}
	return b.Bytes(), specials[0].ID, specials[2].ID
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// byteChars is GPT-2's byte-to-character table: printable bytes stand for themselves,
// the others are mapped to characters from U+0100 on, in byte order.
func byteChars() []rune {
	out := make([]rune, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			out[b] = rune(b)
		} else {
			out[b] = rune(256 + n)
			n++
		}
	}
	return out
}

// indentJSON re-indents a JSON object as transformers writes its files.
func indentJSON(s string) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		log.Fatalf("%s: %v", s, err)
	}
	return append(b.Bytes(), '\n')
}
