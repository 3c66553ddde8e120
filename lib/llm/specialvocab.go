package llm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/apr-go/apr/lib/gguf"
)

// specialVocab is what gguf-py's SpecialVocab finds in a checkpoint's tokenizer files
// and writes after the vocabulary: the special token ids, the add_bos/add_eos/add_sep
// flags, the chat template and the normalizer's flags, each in the order the converter
// finds them, since that is the order of the keys. The rules are the converter's,
// heuristics included (its "crude parsing" of the tokenizer's post-processor).
type specialVocab struct {
	types                   []string // special token types looked for, in order
	nVocab                  int
	ids                     []specialID
	add                     []addFlag
	template                any // the chat template: a string, or nil
	lowercase, stripAccents any // the normalizer's flags, nil when it has none
}

type specialID struct {
	typ string
	id  int64
}

type addFlag struct {
	typ string
	v   bool
}

// specialKeys are the GGUF keys of the special token ids, as GGUFWriter's
// add_X_token_id handlers name them (unknown, "seperator" as spelt there, padding);
// a type without a handler (cls, the FIM types but eot) is skipped, as the converter
// skips it with a warning.
var specialKeys = map[string]string{
	"bos": "tokenizer.ggml.bos_token_id", "eos": "tokenizer.ggml.eos_token_id",
	"unk": "tokenizer.ggml.unknown_token_id", "sep": "tokenizer.ggml.seperator_token_id",
	"pad": "tokenizer.ggml.padding_token_id", "mask": "tokenizer.ggml.mask_token_id",
	"eot": "tokenizer.ggml.eot_token_id", "eom": "tokenizer.ggml.eom_token_id",
}

// specialTypes are the special tokens the converter looks for, in its order.
var specialTypes = []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}

// newSpecialVocab reads the special tokens of files (the checkpoint's kept files) for
// a vocabulary of nVocab tokens, as SpecialVocab(dir, n_vocab=..., special_token_types=
// types) does: tokenizer.json and tokenizer_config.json first, then config.json.
func newSpecialVocab(files map[string][]byte, nVocab int, types []string) (*specialVocab, error) {
	sv := &specialVocab{types: slices.Clone(types), nVocab: nVocab}
	if err := sv.fromTokenizer(files); err != nil {
		return nil, err
	}
	if err := sv.fromConfig(files); err != nil {
		return nil, err
	}
	return sv, nil
}

// infillVocab is the second SpecialVocab Gemma's and CodeLlama's converters write after
// the vocabulary: the infill token types, each as the tokenizer files name it or else
// with its fixed id (ids, in the converter's order of its calls), with the chat
// template again or not; of these types only EOT has a GGUF key.
func infillVocab(files map[string][]byte, ids []specialID, template bool) ([]gguf.KV, error) {
	types := make([]string, len(ids))
	for i, s := range ids {
		types[i] = s.typ
	}
	sv, err := newSpecialVocab(files, -1, types)
	if err != nil {
		return nil, err
	}
	for _, s := range ids {
		_ = sv.setID(s.typ, json.Number(strconv.FormatInt(s.id, 10)))
	}
	if !template {
		sv.template = nil // "do not add it twice"
	}
	return sv.kvs()
}

// setID records the id of a special token type: only an integer, only below the
// vocabulary's size, only the first found; a negative one stops the converter.
func (sv *specialVocab) setID(typ string, v any) error {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	id, err := n.Int64()
	if err != nil {
		return nil
	}
	if id < 0 {
		return fmt.Errorf("invalid value for special token type %s: %d", typ, id)
	}
	if sv.nVocab >= 0 && id >= int64(sv.nVocab) {
		return nil // the converter warns "out of range" and skips it
	}
	for _, s := range sv.ids {
		if s.typ == typ {
			return nil
		}
	}
	sv.ids = append(sv.ids, specialID{typ, id})
	return nil
}

// setAdd records an add_X_token flag; a later one replaces the value in place.
func (sv *specialVocab) setAdd(typ string, v bool) {
	for i := range sv.add {
		if sv.add[i].typ == typ {
			sv.add[i].v = v
			return
		}
	}
	sv.add = append(sv.add, addFlag{typ, v})
}

// truthy is Python's truth of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	case json.Number:
		f, _ := x.Float64()
		return f != 0
	}
	return true
}

// same is Python's == of two JSON values as these rules compare them (strings, or
// None).
func same(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return as == bs
	}
	return a == nil && b == nil
}

func specialTokenID(entry any) any {
	if m, ok := entry.(map[string]any); ok {
		return m["id"]
	}
	return nil
}

// fromTokenizer is _try_load_from_tokenizer_json.
func (sv *specialVocab) fromTokenizer(files map[string][]byte) error {
	var tok map[string]any
	var added []any
	if b, ok := files["tokenizer.json"]; ok {
		var err error
		if tok, err = parseJSON("tokenizer.json", b); err != nil {
			return err
		}
		if n, ok := tok["normalizer"].(map[string]any); ok {
			sv.parseNormalizer(n)
		}
		added, _ = tok["added_tokens"].([]any)
	}
	var tc map[string]any
	if b, ok := files["tokenizer_config.json"]; ok {
		var err error
		if tc, err = parseJSON("tokenizer_config.json", b); err != nil {
			return err
		}
	}
	if tok != nil {
		sv.postProcessor(tok, tc)
	}
	if !truthy(tc) {
		return nil
	}
	sv.template = tc["chat_template"]
	if _, has := tc["chat_template"]; !has {
		sv.template = nil
		if b, ok := files["chat_template.jinja"]; ok {
			sv.template = string(b)
		} else if b, ok := files["chat_template.json"]; ok {
			ct, err := parseJSON("chat_template.json", b)
			if err != nil {
				return err
			}
			sv.template = ct["chat_template"]
		}
	}
	switch sv.template.(type) {
	case nil, string:
	case []any:
		return fmt.Errorf("tokenizer_config.json: chat_template is a list of named templates; only a single template string is supported yet")
	default:
		sv.template = nil // the converter warns "Bad type for chat_template field" and ignores it
	}
	for _, typ := range sv.types {
		if add, ok := tc["add_"+typ+"_token"].(bool); ok {
			sv.setAdd(typ, add)
		}
		content, ok := tc[typ+"_token"].(string)
		if m, isMap := tc[typ+"_token"].(map[string]any); isMap {
			content, ok = m["content"].(string)
		}
		if !ok {
			continue
		}
		var id any
		for _, a := range added {
			if at, _ := a.(map[string]any); at != nil && same(at["content"], content) {
				id = at["id"]
				break
			}
		}
		if err := sv.setID(typ, id); err != nil {
			return err
		}
	}
	return nil
}

// postProcessor reads the add flags (and, where the tokenizer config lacks them, the
// special tokens) from tokenizer.json's post-processor, as SpecialVocab's parsing of
// RobertaProcessing and simple TemplateProcessing templates does; it edits tc as the
// converter edits its copy of tokenizer_config.json.
func (sv *specialVocab) postProcessor(tok, tc map[string]any) {
	get := func(k string) any {
		if tc == nil {
			return nil
		}
		return tc[k]
	}
	bos, cls, eos, sep := get("bos_token"), get("cls_token"), get("eos_token"), get("sep_token")
	if !truthy(bos) && truthy(cls) && truthy(tc) {
		tc["bos_token"], bos = cls, cls
	}
	if !truthy(eos) && truthy(sep) && truthy(tc) {
		tc["eos_token"], eos = sep, sep
	}
	pp, ok := tok["post_processor"].(map[string]any)
	if !ok || !truthy(pp) {
		return
	}
	procs := []any{pp}
	if list, ok := pp["processors"].([]any); ok {
		procs = list
	}
	for _, p := range procs {
		proc, _ := p.(map[string]any)
		switch proc["type"] {
		case "RobertaProcessing":
			sv.setAdd("bos", true)
			sv.setAdd("eos", true)
			sv.setAdd("sep", true)
			if !truthy(cls) && truthy(tc) {
				cls = bos
				if c, ok := proc["cls"].([]any); ok && len(c) > 0 {
					cls = c[0]
				}
				tc["cls_token"] = cls
			}
			if !truthy(sep) && truthy(tc) {
				sep = eos
				if s, ok := proc["sep"].([]any); ok && len(s) > 0 {
					sep = s[0]
				}
				tc["sep_token"] = sep
			}
		case "TemplateProcessing":
			single, _ := proc["single"].([]any)
			pair, _ := proc["pair"].([]any)
			var first, last any
			if len(single) > 1 {
				if first = specialTokenID(asMap(single[0])["SpecialToken"]); truthy(first) {
					if !truthy(tc) {
						bos = first
					} else if !same(first, bos) && !same(first, cls) {
						if !truthy(bos) {
							tc["bos_token"], bos = first, first
						}
						if !truthy(cls) {
							tc["cls_token"], cls = first, first
						}
					}
					sv.setAdd("bos", same(first, bos) || same(first, cls))
				}
				if last = specialTokenID(asMap(single[len(single)-1])["SpecialToken"]); truthy(last) {
					if !truthy(tc) {
						eos = last
					} else if !same(last, eos) {
						switch {
						case !slices.Contains(sv.types, "eot"):
							sv.types = append(sv.types, "eot")
							tc["eot_token"] = eos
						case !slices.Contains(sv.types, "eom"):
							sv.types = append(sv.types, "eom")
							tc["eom_token"] = eos
						}
						tc["eos_token"], eos = last, last
					}
					sv.setAdd("eos", same(last, eos))
				}
			}
			if len(pair) == 0 {
				continue
			}
			start, stop := 0, len(pair)
			if truthy(first) && same(specialTokenID(asMap(pair[0])["SpecialToken"]), first) {
				start = 1
			}
			if truthy(last) && same(specialTokenID(asMap(pair[len(pair)-1])["SpecialToken"]), last) {
				stop = len(pair) - 1
			}
			if start >= stop {
				continue
			}
			mid := pair[start:stop]
			a := asMap(asMap(mid[0])["Sequence"])["id"]
			b := asMap(asMap(mid[len(mid)-1])["Sequence"])["id"]
			if !same(a, "A") || !same(b, "B") || len(mid) <= 2 {
				continue
			}
			mid = mid[1 : len(mid)-1]
			addSep := false
			if e := specialTokenID(asMap(mid[0])["SpecialToken"]); truthy(e) && (same(e, sep) || same(e, eos)) && !truthy(last) {
				addSep = true
			}
			if len(mid) == 2 {
				if e := specialTokenID(asMap(mid[1])["SpecialToken"]); truthy(e) && (same(e, sep) || same(e, eos)) {
					addSep = true
				}
			}
			sv.setAdd("sep", addSep)
			if addSep && !truthy(sep) && truthy(tc) {
				tc["sep_token"] = eos
			}
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// parseNormalizer is _parse_normalizer: the Lowercase and StripAccents flags of the
// tokenizer's normalizer, standalone, as BertNormalizer fields or in a Sequence.
func (sv *specialVocab) parseNormalizer(n map[string]any) {
	switch n["type"] {
	case "Lowercase":
		sv.lowercase = true
	case "StripAccents":
		sv.stripAccents = true
	case "BertNormalizer":
		if v, ok := n["lowercase"]; ok {
			sv.lowercase = v
		}
		if v, ok := n["strip_accents"]; ok {
			sv.stripAccents = v
		}
	case "Sequence":
		list, _ := n["normalizers"].([]any)
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				sv.parseNormalizer(m)
			}
		}
	}
}

// fromConfig is _try_load_from_config_json: config.json's X_token_id (or its
// text_config's) for each type.
func (sv *specialVocab) fromConfig(files map[string][]byte) error {
	b, ok := files["config.json"]
	if !ok {
		return nil
	}
	cfg, err := parseJSON("config.json", b)
	if err != nil {
		return err
	}
	text, _ := cfg["text_config"].(map[string]any)
	for _, typ := range sv.types {
		id := cfg[typ+"_token_id"]
		if id == nil && text != nil {
			id = text[typ+"_token_id"]
		}
		if err := sv.setID(typ, id); err != nil {
			return err
		}
	}
	return nil
}

// kvs are the keys add_to_gguf writes: the ids, the add flags GGUFWriter has handlers
// for (bos, eos, sep), the chat template and the normalizer's flags.
func (sv *specialVocab) kvs() ([]gguf.KV, error) {
	var kvs []gguf.KV
	for _, s := range sv.ids {
		if key, ok := specialKeys[s.typ]; ok {
			kvs = append(kvs, gguf.KV{Key: key, Value: gguf.Uint32(uint32(s.id))})
		}
	}
	for _, a := range sv.add {
		switch a.typ {
		case "bos", "eos", "sep":
			kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_" + a.typ + "_token", Value: gguf.Bool(a.v)})
		}
	}
	if t, ok := sv.template.(string); ok {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(t)})
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"tokenizer.ggml.normalizer.lowercase", sv.lowercase}, {"tokenizer.ggml.normalizer.strip_accents", sv.stripAccents}} {
		if f.v == nil {
			continue
		}
		b, ok := f.v.(bool)
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: the normalizer's %s is %v, expected true or false", f.key, f.v)
		}
		kvs = append(kvs, gguf.KV{Key: f.key, Value: gguf.Bool(b)})
	}
	return kvs, nil
}
