package llm

import (
	"bytes"
	"fmt"
	"strings"
)

// bpeTokenizer is a byte-level BPE vocabulary recovered from tokenizer.ggml.* (model
// "gpt2").
type bpeTokenizer struct {
	tokens             []string
	types              []int32
	merges             []string
	pre                prePattern
	unk, bos, eos, pad int // -1: none
	addBOS, addEOS     bool
}

// bpeTokenizer reads a GGUF's BPE vocabulary: tokens and types (the converter's
// trailing "[PADn]" UNUSED padding dropped), merges, the pre-tokenizer, which must be
// one apr can write back (PreNames), special ids, and add_bos/add_eos as llama.cpp
// reads them (absent: true for the pre-tokenizers llama.cpp adds a BOS for, else false).
func (g ggufKVs) bpeTokenizer() (*bpeTokenizer, error) {
	texts, types, err := g.tokens()
	if err != nil {
		return nil, err
	}
	name, _ := g.str("tokenizer.ggml.pre")
	pre, ok := preByName(name)
	if !ok {
		return nil, fmt.Errorf("tokenizer.ggml.pre %q: apr writes tokenizer.json back only for the pre-tokenizers %s", name, strings.Join(PreNames(), ", "))
	}
	t := &bpeTokenizer{tokens: texts, types: types, pre: pre, unk: -1, bos: -1, eos: -1, pad: -1}
	seen := make(map[string]int, len(t.tokens))
	for i, s := range t.tokens {
		if s == "" {
			return nil, fmt.Errorf("tokenizer.ggml.tokens[%d] is empty", i)
		}
		if j, dup := seen[s]; dup {
			return nil, fmt.Errorf("tokenizer.ggml.tokens: %q is both token %d and %d; tokenizer.json needs unique tokens", s, j, i)
		}
		seen[s] = i
	}
	mv, ok := g.h.Get("tokenizer.ggml.merges")
	if t.merges, _ = mv.Strings(); !ok || t.merges == nil {
		return nil, fmt.Errorf("tokenizer.ggml.merges is missing or not an array of strings (a BPE vocabulary needs its merges)")
	}
	for i, m := range t.merges {
		if sp := strings.IndexByte(m, ' '); sp < 1 || sp == len(m)-1 {
			return nil, fmt.Errorf("tokenizer.ggml.merges[%d] %q is not two parts", i, m)
		}
	}
	g.specialIDs(len(t.tokens), &t.unk, &t.bos, &t.eos, &t.pad)
	t.addBOS = g.boolean("tokenizer.ggml.add_bos_token", pre.addBOS)
	t.addEOS = g.boolean("tokenizer.ggml.add_eos_token", false)
	if t.addBOS && t.bos < 0 {
		return nil, fmt.Errorf("the tokenizer adds a BOS token but tokenizer.ggml.bos_token_id is missing")
	}
	return t, nil
}

// padding reports the converter's filler of an id the tokenizer did not use.
func (t *bpeTokenizer) padding(i int) bool {
	return t.types[i] == TokenUnused && t.tokens[i] == fmt.Sprintf("[PAD%d]", i)
}

// json writes tokenizer.json as Hugging Face tokenizers reads it: CONTROL and
// USER_DEFINED tokens as added tokens (special or not), the others but the converter's
// "[PADn]" fillers in the BPE model's vocabulary; the pre-tokenizer of the table entry of tokenizer.ggml.pre (its Split
// expressions, then ByteLevel); a post-processor that adds the BOS token when add_bos
// (and EOS when add_eos); a ByteLevel decoder; and the merges as pairs.
func (t *bpeTokenizer) json() ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) {
		q, _ := marshalPlain(s)
		b.Write(q)
	}
	b.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	n := 0
	for i, s := range t.tokens {
		if t.types[i] != TokenControl && t.types[i] != TokenUserDefined {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(&b, `{"id":%d,"content":`, i)
		str(s)
		fmt.Fprintf(&b, `,"single_word":false,"lstrip":false,"rstrip":false,"normalized":%t,"special":%t}`,
			t.types[i] == TokenUserDefined, t.types[i] == TokenControl)
	}
	b.WriteString(`],"normalizer":`)
	if t.pre.nfc {
		b.WriteString(`{"type":"NFC"}`)
	} else {
		b.WriteString(`null`)
	}
	b.WriteString(`,"pre_tokenizer":{"type":"Sequence","pretokenizers":[`)
	for _, re := range t.pre.regexes {
		b.WriteString(`{"type":"Split","pattern":{"Regex":`)
		str(re)
		b.WriteString(`},"behavior":"Isolated","invert":false},`)
	}
	b.WriteString(`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},"post_processor":`)
	if t.addBOS || t.addEOS {
		var single, pair, specials []string
		add := func(id int, typeID int, seq string) {
			if seq != "" {
				single = append(single, fmt.Sprintf(`{"Sequence":{"id":%q,"type_id":%d}}`, seq, typeID))
				return
			}
			q, _ := marshalPlain(t.tokens[id])
			single = append(single, fmt.Sprintf(`{"SpecialToken":{"id":%s,"type_id":%d}}`, q, typeID))
		}
		if t.addBOS {
			add(t.bos, 0, "")
		}
		add(0, 0, "A")
		if t.addEOS {
			if t.eos < 0 {
				return nil, fmt.Errorf("the tokenizer adds an EOS token but tokenizer.ggml.eos_token_id is missing")
			}
			add(t.eos, 0, "")
		}
		pair = append(pair, single...)
		for _, s := range single {
			pair = append(pair, strings.Replace(strings.Replace(s, `"type_id":0`, `"type_id":1`, 1), `"id":"A"`, `"id":"B"`, 1))
		}
		for _, id := range []int{t.bos, t.eos} {
			if id >= 0 && (id == t.bos && t.addBOS || id == t.eos && t.addEOS) {
				q, _ := marshalPlain(t.tokens[id])
				specials = append(specials, fmt.Sprintf(`%s:{"id":%s,"ids":[%d],"tokens":[%s]}`, q, q, id, q))
			}
		}
		fmt.Fprintf(&b, `{"type":"TemplateProcessing","single":[%s],"pair":[%s],"special_tokens":{%s}}`,
			strings.Join(single, ","), strings.Join(pair, ","), strings.Join(specials, ","))
	} else {
		b.WriteString(`{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`)
	}
	b.WriteString(`,"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`)
	fmt.Fprintf(&b, `,"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":%t,"vocab":{`, t.pre.ignoreMerges)
	n = 0
	for i, s := range t.tokens {
		if t.types[i] == TokenControl || t.types[i] == TokenUserDefined || t.padding(i) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		str(s)
		fmt.Fprintf(&b, ":%d", i)
	}
	b.WriteString(`},"merges":[`)
	for i, m := range t.merges {
		if i > 0 {
			b.WriteByte(',')
		}
		sp := strings.IndexByte(m[1:], ' ') + 1
		b.WriteByte('[')
		str(m[:sp])
		b.WriteByte(',')
		str(m[sp+1:])
		b.WriteByte(']')
	}
	b.WriteString("]}}\n")
	return b.Bytes(), nil
}
