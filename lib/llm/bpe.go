package llm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/gguf"
)

// MaxMerges caps the merges of a BPE tokenizer (Llama 3's has 280,147).
const MaxMerges = 1 << 22

// BPE is a byte-level BPE vocabulary as Hugging Face tokenizers' tokenizer.json holds
// it (Llama 3, Qwen2, Mistral-Nemo): the tokens by id, the merges in rank order, the
// added tokens, and what of the normalizer, pre-tokenizer and post-processor decides
// llama.cpp's pre-tokenizer (Pre).
type BPE struct {
	// Tokens maps ids to token texts (byte-level: "Ġ" is a space); "" marks an id that
	// neither the model's vocabulary nor the added tokens use.
	Tokens []string
	// Added are the added tokens, by id.
	Added map[int]AddedToken
	// Merges are the merge rules "left right", as GGUF stores them (a space inside a
	// part written as U+0120, as gguf-py does).
	Merges []string
	// Def is the tokenizer's pre-tokenization, the key of the pre table.
	Def PreDef
}

// AddedToken is an entry of tokenizer.json's added_tokens.
type AddedToken struct {
	Content            string
	Special, Normalize bool
}

// PreDef is what of a tokenizer.json decides how llama.cpp pre-tokenizes: the
// normalizer (none or NFC), the regular expressions of its Split pre-tokenizers (in
// order; the Split and ByteLevel of a Sequence), whether the BPE model ignores merges
// for words in the vocabulary, and whether the post-processor puts a special token
// before the text (the converter's chkhsh counts it, so Llama 3 with a BOS template and
// Smaug without one get different names).
type PreDef struct {
	NFC          bool
	Regexes      []string
	IgnoreMerges bool
	BOS          bool
}

// prePattern is one entry of the pre table: llama.cpp's name and the definition a
// tokenizer.json must have to get it. bos says whether the leading special token that
// transformers' encode adds matters (0: either, 1: must be there, -1: must not).
// addBOS is llama.cpp's add_bos for the name when a GGUF has no
// tokenizer.ggml.add_bos_token (src/llama-vocab.cpp sets it for the llama3 group and
// tekken), what apr's tokenizer.json written back from a GGUF does then.
type prePattern struct {
	name         string
	nfc          bool
	regexes      []string
	ignoreMerges bool
	bos          int
	addBOS       bool
}

// The regular expressions of the Split pre-tokenizers, as tokenizer.json writes them
// (llama.cpp's src/llama-vocab.cpp quotes each beside its own adaptation).
const (
	reLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// DeepSeek V3's three Splits (digits, CJK and kana, the rest); the third holds a
	// backquote and real CR and LF characters, as its tokenizer.json does.
	reDeepSeek3Digits = `\p{N}{1,3}`
	reDeepSeek3CJK    = `[一-龥぀-ゟ゠-ヿ]+`
	reDeepSeek3Rest   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// preTable maps tokenizer.json definitions to tokenizer.ggml.pre. llama.cpp's
// converter names the pre-tokenizer by hashing the ids the Hugging Face tokenizer gives
// for a fixed text (chkhsh, conversion/base.py get_vocab_base_pre), which needs
// Python's transformers; apr names it by the facts that decide those ids apart from
// the vocabulary: the normalizer, the Splits, ignore_merges, and whether encode puts
// a special token first. Each entry is checked against the converter's chkhsh table
// with a real tokenizer of that kind (lib/llm's TestBPEPeer: Llama 3 and 3.1, Qwen2.5,
// Mistral-Nemo, DeepSeek V3). The first entry of a name is the one written back to
// tokenizer.json.
var preTable = []prePattern{
	{name: "llama-bpe", regexes: []string{reLlama3}, ignoreMerges: true, bos: 1, addBOS: true},
	{name: "smaug-bpe", regexes: []string{reLlama3}, ignoreMerges: true, bos: -1},
	{name: "qwen2", nfc: true, regexes: []string{reQwen2}},
	{name: "tekken", regexes: []string{reTekken}, ignoreMerges: true, bos: 1, addBOS: true},
	// DeepSeek V3's tokenizer.json hashes to deepseek-v3 with the BOS its
	// LlamaTokenizerFast adds, and to joyai-llm (JoyAI-LLM-Flash ships the same
	// tokenizer) without it; llama.cpp tokenizes both names alike (llama-vocab.cpp's
	// DEEPSEEK3_LLM regexes, clean_spaces off).
	{name: "deepseek-v3", regexes: []string{reDeepSeek3Digits, reDeepSeek3CJK, reDeepSeek3Rest}, bos: 1},
	{name: "joyai-llm", regexes: []string{reDeepSeek3Digits, reDeepSeek3CJK, reDeepSeek3Rest}, bos: -1},
}

// PreNames lists the tokenizer.ggml.pre values apr recognizes from a tokenizer.json.
func PreNames() []string {
	var names []string
	for _, p := range preTable {
		names = append(names, p.name)
	}
	return names
}

// Pre returns llama.cpp's name for the tokenizer's pre-tokenization, or an error that
// describes the definition and says how to name it.
func (d PreDef) Pre() (string, error) {
	for _, p := range preTable {
		if p.nfc == d.NFC && slices.Equal(p.regexes, d.Regexes) && p.ignoreMerges == d.IgnoreMerges &&
			(p.bos == 0 || (p.bos == 1) == d.BOS) {
			return p.name, nil
		}
	}
	norm := "no normalizer"
	if d.NFC {
		norm = "NFC"
	}
	return "", fmt.Errorf("tokenizer.json: apr does not know the pre-tokenizer (%s, Split %q, ignore_merges %t, BOS template %t); apr knows %s: name llama.cpp's tokenizer.ggml.pre with --tokenizer-pre",
		norm, d.Regexes, d.IgnoreMerges, d.BOS, strings.Join(PreNames(), ", "))
}

// preByName returns the definition written back to tokenizer.json for a pre name.
func preByName(name string) (prePattern, bool) {
	for _, p := range preTable {
		if p.name == name {
			return p, true
		}
	}
	return prePattern{}, false
}

// The parts of tokenizer.json apr reads; the rest is ignored.
type tokenizerJSON struct {
	AddedTokens []struct {
		ID         *int64 `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		Normalized bool   `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type                    string                     `json:"type"`
		Vocab                   map[string]json.RawMessage `json:"vocab"`
		Merges                  []json.RawMessage          `json:"merges"`
		ByteFallback            bool                       `json:"byte_fallback"`
		IgnoreMerges            bool                       `json:"ignore_merges"`
		ContinuingSubwordPrefix *string                    `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string                    `json:"end_of_word_suffix"`
		Dropout                 *float64                   `json:"dropout"`
	} `json:"model"`
}

type typed struct {
	Type string `json:"type"`
}

// ParseBPE reads a Hugging Face tokenizer.json of a byte-level BPE model. Anything
// else (WordPiece, Unigram, a BPE with byte fallback as SentencePiece converts,
// normalizers other than NFC, pre-tokenizers other than Split and ByteLevel) is an
// error naming what was found.
func ParseBPE(b []byte) (*BPE, error) {
	var tj tokenizerJSON
	if err := strictJSON("tokenizer.json", b, &tj); err != nil {
		return nil, err
	}
	m := tj.Model
	switch {
	case m.Type != "BPE":
		return nil, fmt.Errorf("tokenizer.json: model type %q; only byte-level BPE is converted", m.Type)
	case m.ByteFallback:
		return nil, fmt.Errorf("tokenizer.json: a BPE with byte_fallback (a SentencePiece vocabulary); only byte-level BPE is converted")
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("tokenizer.json: BPE dropout %v is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("tokenizer.json: BPE with a continuing_subword_prefix or end_of_word_suffix is not supported")
	case len(m.Vocab) == 0:
		return nil, fmt.Errorf("tokenizer.json: the BPE model has no vocabulary")
	case len(m.Vocab)+len(tj.AddedTokens) > MaxPieces:
		return nil, fmt.Errorf("tokenizer.json: more than %d tokens", MaxPieces)
	case len(m.Merges) > MaxMerges:
		return nil, fmt.Errorf("tokenizer.json: more than %d merges", MaxMerges)
	}
	t := &BPE{Added: map[int]AddedToken{}}
	ids := make(map[int]string, len(m.Vocab)+len(tj.AddedTokens))
	top := -1
	setID := func(id int64, text, where string) error {
		if id < 0 || id >= MaxPieces {
			return fmt.Errorf("tokenizer.json: %s %q has id %d, not in 0..%d", where, text, id, MaxPieces-1)
		}
		if prev, dup := ids[int(id)]; dup && prev != text {
			return fmt.Errorf("tokenizer.json: id %d is both %q and %q", id, prev, text)
		}
		ids[int(id)] = text
		top = max(top, int(id))
		return nil
	}
	for text, raw := range m.Vocab {
		var id int64
		if err := json.Unmarshal(raw, &id); err != nil {
			return nil, fmt.Errorf("tokenizer.json: model.vocab[%q] is %s, expected an integer id", text, raw)
		}
		if err := setID(id, text, "model.vocab token"); err != nil {
			return nil, err
		}
	}
	for i, at := range tj.AddedTokens {
		if at.ID == nil {
			return nil, fmt.Errorf("tokenizer.json: added_tokens[%d] (%q) has no id", i, at.Content)
		}
		if err := setID(*at.ID, at.Content, "added token"); err != nil {
			return nil, err
		}
		t.Added[int(*at.ID)] = AddedToken{Content: at.Content, Special: at.Special, Normalize: at.Normalized}
	}
	t.Tokens = make([]string, top+1)
	for id, text := range ids {
		t.Tokens[id] = text
	}
	t.Merges = make([]string, len(m.Merges))
	for i, raw := range m.Merges {
		var s string
		var pair []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			if sp := strings.IndexByte(s, ' '); sp < 1 || sp == len(s)-1 {
				return nil, fmt.Errorf("tokenizer.json: merges[%d] %q is not two parts", i, s)
			}
		case json.Unmarshal(raw, &pair) == nil && len(pair) == 2 && pair[0] != "" && pair[1] != "":
			s = spaceTo0120(pair[0]) + " " + spaceTo0120(pair[1])
		default:
			return nil, fmt.Errorf("tokenizer.json: merges[%d] is %.40s, expected \"a b\" or [\"a\", \"b\"]", i, raw)
		}
		t.Merges[i] = s
	}
	var err error
	if t.Def, err = preDef(tj); err != nil {
		return nil, err
	}
	return t, nil
}

// spaceTo0120 writes the spaces of a merge part as U+0120, as gguf-py does for the
// pair form of merges (a space never appears in a byte-level token otherwise).
func spaceTo0120(s string) string { return strings.ReplaceAll(s, " ", "\u0120") }

// preDef reads the pre-tokenization of a tokenizer.json: normalizer null or NFC; a
// pre-tokenizer Sequence of Split (Regex, Isolated, not inverted) followed by a
// ByteLevel that does not split itself, without prefix space; a post-processor whose
// template starts with a special token, or any other.
func preDef(tj tokenizerJSON) (PreDef, error) {
	var d PreDef
	d.IgnoreMerges = tj.Model.IgnoreMerges
	if len(tj.Normalizer) > 0 && string(tj.Normalizer) != "null" {
		var n struct {
			Type        string  `json:"type"`
			Normalizers []typed `json:"normalizers"`
		}
		err := json.Unmarshal(tj.Normalizer, &n)
		switch {
		case err == nil && n.Type == "NFC":
			d.NFC = true
		case err == nil && n.Type == "Sequence" && len(n.Normalizers) == 0: // DeepSeek V3's: no normalizer
		default:
			return d, fmt.Errorf("tokenizer.json: normalizer %.80s is not supported (none, an empty Sequence, or NFC)", tj.Normalizer)
		}
	}
	var seq struct {
		Type          string            `json:"type"`
		Pretokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(tj.PreTokenizer, &seq); err != nil || seq.Type != "Sequence" {
		return d, fmt.Errorf("tokenizer.json: pre_tokenizer %.80s is not supported (a Sequence of Split and ByteLevel)", tj.PreTokenizer)
	}
	byteLevel := false
	for i, raw := range seq.Pretokenizers {
		var p struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex *string `json:"Regex"`
			} `json:"pattern"`
			Behavior       string `json:"behavior"`
			Invert         bool   `json:"invert"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			UseRegex       bool   `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return d, fmt.Errorf("tokenizer.json: pre_tokenizer %d: %w", i, err)
		}
		switch {
		case p.Type == "Split" && !byteLevel && p.Pattern.Regex != nil && p.Behavior == "Isolated" && !p.Invert:
			d.Regexes = append(d.Regexes, *p.Pattern.Regex)
		case p.Type == "ByteLevel" && !byteLevel && !p.AddPrefixSpace && !p.UseRegex && len(d.Regexes) > 0:
			byteLevel = true
		default:
			return d, fmt.Errorf("tokenizer.json: pre_tokenizer %d (%.120s) is not supported: apr converts a Sequence of Split (Regex, Isolated) then ByteLevel (no prefix space, no regex)", i, raw)
		}
	}
	if !byteLevel {
		return d, fmt.Errorf("tokenizer.json: the pre_tokenizer has no ByteLevel step; only byte-level BPE is converted")
	}
	d.BOS = templateBOS(tj.PostProcessor)
	return d, nil
}

// templateBOS reports whether a post-processor puts a special token before the text:
// a TemplateProcessing whose single template starts with one, alone or in a Sequence
// of processors (Llama 3.1's: ByteLevel, then the template).
func templateBOS(raw json.RawMessage) bool {
	var pp struct {
		Type   string `json:"type"`
		Single []struct {
			SpecialToken *struct{} `json:"SpecialToken"`
		} `json:"single"`
		Processors []json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(raw, &pp) != nil {
		return false
	}
	switch pp.Type {
	case "TemplateProcessing":
		return len(pp.Single) > 0 && pp.Single[0].SpecialToken != nil
	case "Sequence":
		for _, p := range pp.Processors {
			if templateBOS(p) {
				return true
			}
		}
	}
	return false
}

// UseConfig applies tokenizer_config.json's part in what transformers' encode adds
// (and so in the converter's chkhsh): a tokenizer_class LlamaTokenizer or
// LlamaTokenizerFast loads as LlamaTokenizerFast, which replaces tokenizer.json's
// post-processor by a template that puts the BOS token first when add_bos_token
// (default true) and bos_token are set (DeepSeek V3's config). Other classes keep
// tokenizer.json's post-processor.
func (t *BPE) UseConfig(config []byte) error {
	if len(config) == 0 {
		return nil
	}
	var tc struct {
		Class    string          `json:"tokenizer_class"`
		AddBOS   *bool           `json:"add_bos_token"`
		BOSToken json.RawMessage `json:"bos_token"`
	}
	if err := json.Unmarshal(config, &tc); err != nil {
		return fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if tc.Class == "LlamaTokenizer" || tc.Class == "LlamaTokenizerFast" {
		bos := len(tc.BOSToken) > 0 && string(tc.BOSToken) != "null"
		t.Def.BOS = (tc.AddBOS == nil || *tc.AddBOS) && bos
	}
	return nil
}

// bpeVocab builds the tokenizer.* keys of a byte-level BPE tokenizer.json as the
// converter's GPT-2 path (_set_vocab_gpt2) writes them: model "gpt2", pre, the tokens
// padded to vocab_size with "[PADn]" (UNUSED), token types (added tokens CONTROL when
// special or looking special, else USER_DEFINED with U+2581 as a space; the rest
// NORMAL), the merges, then the special ids, add_bos/add_eos and chat template as for
// SentencePiece (tokenizerTail). pre, when not empty, names the pre-tokenizer instead of
// the table. Unlike the converter, apr does not re-encode added tokens that are not
// normalized through the tokenizer (they are kept as written).
func bpeVocab(files map[string][]byte, vocab int, pre string) ([]gguf.KV, error) {
	t, err := ParseBPE(files["tokenizer.json"])
	if err != nil {
		return nil, err
	}
	if err := t.UseConfig(files["tokenizer_config.json"]); err != nil {
		return nil, err
	}
	if pre == "" {
		if pre, err = t.Def.Pre(); err != nil {
			return nil, err
		}
	}
	if len(t.Tokens) > vocab {
		return nil, fmt.Errorf("config.json: vocab_size %d is smaller than tokenizer.json's largest id %d", vocab, len(t.Tokens)-1)
	}
	tokens := make([]string, vocab)
	types := make([]int32, vocab)
	for i := range tokens {
		text := ""
		if i < len(t.Tokens) {
			text = t.Tokens[i]
		}
		at, added := t.Added[i]
		switch {
		case text == "":
			tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), TokenUnused
		case added && (at.Special || looksSpecial(text)):
			tokens[i], types[i] = text, TokenControl
		case added:
			tokens[i], types[i] = strings.ReplaceAll(text, "\u2581", " "), TokenUserDefined
		default:
			tokens[i], types[i] = text, TokenNormal
		}
	}
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: gguf.String(pre)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array(tokens)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array(types)},
	}
	if len(t.Merges) > 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.Array(t.Merges)})
	}
	tail, err := tokenizerTail(files, -1)
	if err != nil {
		return nil, err
	}
	return append(kvs, tail...), nil
}
