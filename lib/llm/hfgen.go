package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
)

// HFFiles generates the Hugging Face checkpoint files of a model in llama.cpp's form
// that came from a GGUF file, so has no checkpoint files of its own: config.json,
// generation_config.json, tokenizer_config.json, special_tokens_map.json and a
// SentencePiece tokenizer.model or a BPE tokenizer.json, all from the GGUF key-values. tensors are the
// checkpoint's tensors as the export writes them (Hugging Face names, output dtypes):
// they give vocab_size, tie_word_embeddings (no lm_head.weight) and torch_dtype.
func (cp *Checkpoint) HFFiles(tensors []TensorShape) (map[string][]byte, error) {
	cls := cp.Arch.Back
	g := ggufKVs{h: gguf.Header{KVs: cp.KVs}, arch: cp.Arch.GGUF}
	voc, err := g.hfVocab()
	if err != nil {
		return nil, err
	}
	shapes := map[string]TensorShape{}
	types := map[dtype.DType]int{}
	for _, t := range tensors {
		shapes[t.Name] = t
		if len(t.Shape) >= 2 {
			types[t.DType]++
		}
	}
	emb, ok := shapes["model.embed_tokens.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("the model has no 2-D token embedding (token_embd.weight)")
	}
	_, hasHead := shapes["lm_head.weight"]
	torchDType := "float32"
	if len(types) == 1 {
		switch {
		case types[dtype.F16] > 0:
			torchDType = "float16"
		case types[dtype.BF16] > 0:
			torchDType = "bfloat16"
		}
	}

	cfg := jsonObject{}
	cfg.set("architectures", []string{cls[0]})
	cfg.set("model_type", cls[1])
	cfg.set("vocab_size", emb.Shape[0])
	cfg.set("hidden_size", emb.Shape[1])
	if n, ok := g.archUint("feed_forward_length"); ok {
		cfg.set("intermediate_size", n)
	} else if up, ok := shapes["model.layers.0.mlp.up_proj.weight"]; ok && len(up.Shape) == 2 {
		cfg.set("intermediate_size", up.Shape[0])
	}
	n, ok := g.archUint("block_count")
	if !ok {
		return nil, fmt.Errorf("the GGUF has no %s.block_count", cp.Arch.GGUF)
	}
	cfg.set("num_hidden_layers", n)
	cfg.set("num_attention_heads", cp.Hparams.Heads)
	cfg.set("num_key_value_heads", cp.Hparams.KVHeads)
	if n, ok := g.archUint("attention.key_length"); ok {
		cfg.set("head_dim", n)
	}
	if n, ok := g.archUint("context_length"); ok {
		cfg.set("max_position_embeddings", n)
	}
	if f, ok := g.archFloat("attention.layer_norm_rms_epsilon"); ok {
		cfg.set("rms_norm_eps", f)
	}
	if f, ok := g.archFloat("rope.freq_base"); ok {
		cfg.set("rope_theta", f)
	}
	if t, _ := g.str(cp.Arch.GGUF + ".rope.scaling.type"); t != "" && t != "none" {
		f, ok := g.archFloat("rope.scaling.factor")
		if t != "linear" || !ok {
			return nil, fmt.Errorf("%s.rope.scaling.type %q: only linear rope scaling is written back yet", cp.Arch.GGUF, t)
		}
		rs := jsonObject{} // transformers writes config.json with its keys sorted
		rs.set("factor", f)
		rs.set("rope_type", "linear")
		cfg.set("rope_scaling", rs)
	}
	if f := cp.computedData["rope_freqs.weight"]; f != nil {
		theta, _ := g.archFloat("rope.freq_base")
		dim, ok := g.archUint("rope.dimension_count")
		if !ok {
			return nil, fmt.Errorf("the GGUF has rope_freqs.weight but no %s.rope.dimension_count", cp.Arch.GGUF)
		}
		p, err := recoverLlama3(f, int(dim), theta.f)
		if err != nil {
			return nil, err
		}
		rs := jsonObject{} // transformers writes config.json with its keys sorted
		rs.set("factor", jsonFloat{p.factor, 64})
		rs.set("high_freq_factor", jsonFloat{p.high, 64})
		rs.set("low_freq_factor", jsonFloat{p.low, 64})
		rs.set("original_max_position_embeddings", int64(p.orig))
		rs.set("rope_type", "llama3")
		cfg.set("rope_scaling", rs)
	}
	cfg.set("hidden_act", "silu")
	cfg.set("tie_word_embeddings", !hasHead)
	if err := cp.Arch.family().HFConfig(cp, g, &cfg); err != nil {
		return nil, err
	}

	gen := jsonObject{}
	stm := jsonObject{}
	tc := jsonObject{}
	if _, ok := g.h.Get("tokenizer.ggml.add_bos_token"); ok {
		tc.set("add_bos_token", voc.addBOS)
	}
	if _, ok := g.h.Get("tokenizer.ggml.add_eos_token"); ok {
		tc.set("add_eos_token", voc.addEOS)
	}
	fromConfig := g.configSpecials()
	for _, sp := range []struct {
		typ string
		id  int
	}{{"bos", voc.bos}, {"eos", voc.eos}, {"unk", voc.unk}, {"pad", voc.pad}} {
		if sp.id < 0 {
			continue
		}
		if sp.typ != "unk" {
			cfg.set(sp.typ+"_token_id", sp.id)
			gen.set(sp.typ+"_token_id", sp.id)
		}
		if !fromConfig[sp.typ] {
			tc.set(sp.typ+"_token", voc.texts[sp.id])
			stm.set(sp.typ+"_token", voc.texts[sp.id])
		}
	}
	g.setSampling(&gen)
	cfg.set("torch_dtype", torchDType)
	if n, ok := g.archUint("context_length"); ok {
		tc.set("model_max_length", n)
	}
	tc.set("tokenizer_class", voc.class)
	if voc.class == "LlamaTokenizer" {
		tc.set("legacy", false)
	}
	tc.set("clean_up_tokenization_spaces", false)
	if len(voc.added) > 0 {
		dec := jsonObject{}
		for i, p := range voc.added {
			e := jsonObject{}
			e.set("content", p.Text)
			e.set("lstrip", false)
			e.set("normalized", false)
			e.set("rstrip", false)
			e.set("single_word", false)
			e.set("special", p.Type == TokenControl)
			dec.set(strconv.Itoa(len(voc.texts)-len(voc.added)+i), e)
		}
		tc.set("added_tokens_decoder", dec)
	}
	if t, ok := g.str("tokenizer.chat_template"); ok {
		tc.set("chat_template", t)
	}
	files := voc.files
	for name, o := range map[string]jsonObject{"config.json": cfg, "generation_config.json": gen,
		"tokenizer_config.json": tc, "special_tokens_map.json": stm} {
		if files[name], err = o.marshal(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return files, nil
}

// hfVocabulary is a GGUF's vocabulary as Hugging Face files: the token texts by id,
// the special ids, add_bos/add_eos, the tokenizer class and the tokenizer file.
type hfVocabulary struct {
	texts              []string
	unk, bos, eos, pad int
	addBOS, addEOS     bool
	class              string
	files              map[string][]byte
	// added are tokens the converter added to a SentencePiece vocabulary from the
	// tokenizer config, which go back there (added_tokens_decoder).
	added []Piece
}

// splitAdded takes off the end of the vocabulary the tokens the converter added
// from tokenizer_config.json's added_tokens_decoder (or added_tokens.json), which
// it scores -1000 and types USER_DEFINED or CONTROL, and returns them indexed from
// the first: they are not pieces of tokenizer.model. The unknown token stays a piece.
func (t *spmTokenizer) splitAdded() []Piece {
	k := len(t.pieces)
	for k > t.unk+1 {
		p := t.pieces[k-1]
		if p.Score != -1000 || p.Type != TokenUserDefined && p.Type != TokenControl {
			break
		}
		k--
	}
	added := t.pieces[k:]
	t.pieces = t.pieces[:k]
	return added
}

// hfVocab writes the GGUF's tokenizer back: a SentencePiece tokenizer.model for
// tokenizer.ggml.model "llama", a byte-level BPE tokenizer.json for "gpt2".
func (g ggufKVs) hfVocab() (*hfVocabulary, error) {
	switch m, _ := g.str("tokenizer.ggml.model"); m {
	case "llama":
		tok, err := g.tokenizer()
		if err != nil {
			return nil, err
		}
		texts := make([]string, len(tok.pieces))
		for i, p := range tok.pieces {
			texts[i] = p.Text
		}
		added := tok.splitAdded()
		return &hfVocabulary{texts: texts, unk: tok.unk, bos: tok.bos, eos: tok.eos, pad: tok.pad,
			addBOS: tok.addBOS, addEOS: tok.addEOS, class: "LlamaTokenizer", added: added,
			files: map[string][]byte{"tokenizer.model": tok.model()}}, nil
	case "gpt2":
		tok, err := g.bpeTokenizer()
		if err != nil {
			return nil, err
		}
		j, err := tok.json()
		if err != nil {
			return nil, err
		}
		return &hfVocabulary{texts: tok.tokens, unk: tok.unk, bos: tok.bos, eos: tok.eos, pad: tok.pad,
			addBOS: tok.addBOS, addEOS: tok.addEOS, class: "PreTrainedTokenizerFast",
			files: map[string][]byte{"tokenizer.json": j}}, nil
	case "":
		return nil, fmt.Errorf("the GGUF has no tokenizer (tokenizer.ggml.model); a Hugging Face checkpoint needs one (apr-st export -o FILE.safetensors writes the tensors alone)")
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q: only SentencePiece (\"llama\") and byte-level BPE (\"gpt2\") vocabularies are written back as a Hugging Face tokenizer (apr-st export -o FILE.safetensors writes the tensors alone)", m)
	}
}

// ggufKVs reads typed values of one model's key-values.
type ggufKVs struct {
	h    gguf.Header
	arch string
}

func (g ggufKVs) str(key string) (string, bool) {
	v, ok := g.h.Get(key)
	s, isStr := v.AsString()
	return s, ok && isStr
}

func (g ggufKVs) uint(key string) (int64, bool) {
	v, ok := g.h.Get(key)
	if !ok {
		return 0, false
	}
	if n, ok := v.AsUint64(); ok && n <= math.MaxInt32 {
		return int64(n), true
	}
	if n, ok := v.AsInt64(); ok && n >= 0 && n <= math.MaxInt32 {
		return n, true
	}
	return 0, false
}

func (g ggufKVs) archUint(key string) (int64, bool) { return g.uint(g.arch + "." + key) }

func (g ggufKVs) archFloat(key string) (jsonFloat, bool) { return g.float(g.arch + "." + key) }

// float returns a float key as the shortest decimal of its own width (an f32
// 1e-5 is 1e-05, not 9.999999747378752e-06).
func (g ggufKVs) float(key string) (jsonFloat, bool) {
	v, ok := g.h.Get(key)
	f, isFloat := v.AsFloat64()
	if !ok || !isFloat || math.IsNaN(f) || math.IsInf(f, 0) {
		return jsonFloat{}, false
	}
	bits := 64
	if v.Type() == gguf.TypeFloat32 {
		bits = 32
	}
	return jsonFloat{f, bits}, true
}

func (g ggufKVs) boolean(key string, def bool) bool {
	v, ok := g.h.Get(key)
	b, isBool := v.AsBool()
	if !ok || !isBool {
		return def
	}
	return b
}

// tokens reads tokenizer.ggml.tokens and token_type (every token NORMAL without
// it), with the converter's padding dropped: trailing UNUSED "[PADn]" tokens, which
// fill the vocabulary up to the model's size and were not in the source tokenizer.
func (g ggufKVs) tokens() (texts []string, types []int32, err error) {
	v, _ := g.h.Get("tokenizer.ggml.tokens")
	texts, ok := v.Strings()
	if !ok || len(texts) == 0 {
		return nil, nil, fmt.Errorf("tokenizer.ggml.tokens is missing or not an array of strings")
	}
	if len(texts) > MaxPieces {
		return nil, nil, fmt.Errorf("tokenizer.ggml.tokens: more than %d tokens", MaxPieces)
	}
	tv, hasTypes := g.h.Get("tokenizer.ggml.token_type")
	if hasTypes && tv.Len() != len(texts) {
		return nil, nil, fmt.Errorf("tokenizer.ggml.token_type does not have the %d elements of tokenizer.ggml.tokens", len(texts))
	}
	types = make([]int32, len(texts))
	for i := range texts {
		types[i] = TokenNormal
		if !hasTypes {
			continue
		}
		e := tv.Index(i)
		n, ok := e.AsInt64()
		if !ok {
			u, isU := e.AsUint64()
			n, ok = int64(u), isU && u <= TokenByte
		}
		if !ok || n < TokenNormal || n > TokenByte {
			return nil, nil, fmt.Errorf("tokenizer.ggml.token_type[%d] (%q) is not a token type 1..6", i, texts[i])
		}
		types[i] = int32(n)
	}
	for n := len(texts); n > 1; n-- {
		if types[n-1] != TokenUnused || texts[n-1] != fmt.Sprintf("[PAD%d]", n-1) {
			break
		}
		texts, types = texts[:n-1], types[:n-1]
	}
	return texts, types, nil
}

// configSpecials tells the special tokens the converter found in config.json rather
// than in the tokenizer's files: gguf-py's SpecialVocab writes the ids it finds in the
// tokenizer config first, in specialTypes order, then those of config.json, so a
// type that comes before another earlier in that order starts the second run (Qwen's
// EOS and padding, then its BOS, which only config.json names). Written back the same
// way, they convert to the same key order.
func (g ggufKVs) configSpecials() map[string]bool {
	rank := map[string]int{}
	for i, t := range specialTypes {
		rank[specialKeys[t]] = i
	}
	out := map[string]bool{}
	last, second := -1, false
	for _, kv := range g.h.KVs {
		r, ok := rank[kv.Key]
		if !ok {
			continue
		}
		second = second || r < last
		last = r
		if second {
			out[specialTypes[r]] = true
		}
	}
	return out
}

// specialIDs sets the ids of the unknown, BOS, EOS and padding tokens that the
// GGUF names and that are below n.
func (g ggufKVs) specialIDs(n int, unk, bos, eos, pad *int) {
	for _, sp := range []struct {
		key string
		dst *int
	}{{"unknown", unk}, {"bos", bos}, {"eos", eos}, {"padding", pad}} {
		if id, ok := g.uint("tokenizer.ggml." + sp.key + "_token_id"); ok && id < int64(n) {
			*sp.dst = int(id)
		}
	}
}

// spmTokenizer is a SentencePiece vocabulary recovered from tokenizer.ggml.*.
type spmTokenizer struct {
	pieces                  []Piece
	unk, bos, eos, pad      int // -1: none
	addBOS, addEOS          bool
	byteFallback            bool
	dummyPrefix, removeMore bool
}

// tokenizer reads the SentencePiece vocabulary: the pieces with their scores and types
// (the converter's padding, trailing "[PADn]" UNUSED pieces, dropped: they were not in
// tokenizer.model), the special token ids, and add_bos/add_eos as llama.cpp reads them
// (true and false when absent).
func (g ggufKVs) tokenizer() (*spmTokenizer, error) {
	texts, types, err := g.tokens()
	if err != nil {
		return nil, err
	}
	sv, hasScores := g.h.Get("tokenizer.ggml.scores")
	if tv, _ := g.h.Get("tokenizer.ggml.tokens"); hasScores && sv.Len() != tv.Len() {
		return nil, fmt.Errorf("tokenizer.ggml.scores does not have the %d elements of tokenizer.ggml.tokens", tv.Len())
	}
	t := &spmTokenizer{unk: -1, bos: -1, eos: -1, pad: -1}
	t.pieces = make([]Piece, len(texts))
	for i, s := range texts {
		p := Piece{Text: s, Type: types[i]}
		if hasScores {
			f, ok := sv.Index(i).AsFloat64()
			if !ok {
				return nil, fmt.Errorf("tokenizer.ggml.scores is not an array of floats")
			}
			p.Score = float32(f)
		}
		t.pieces[i] = p
	}
	seen := make(map[string]int, len(t.pieces))
	bytePieces := 0
	for i, p := range t.pieces {
		if p.Text == "" {
			return nil, fmt.Errorf("tokenizer.ggml.tokens[%d] is empty; SentencePiece pieces are not", i)
		}
		if j, dup := seen[p.Text]; dup {
			return nil, fmt.Errorf("tokenizer.ggml.tokens: %q is both token %d and %d; SentencePiece pieces are unique", p.Text, j, i)
		}
		seen[p.Text] = i
		if p.Type == TokenUnknown && t.unk < 0 {
			t.unk = i
		}
		if p.Type == TokenByte {
			bytePieces++
		}
	}
	g.specialIDs(len(t.pieces), &t.unk, &t.bos, &t.eos, &t.pad)
	if t.unk < 0 || t.pieces[t.unk].Type != TokenUnknown {
		return nil, fmt.Errorf("tokenizer.ggml.token_type: no UNKNOWN token (SentencePiece needs exactly one)")
	}
	if t.pad == t.unk || t.pad == t.bos || t.pad == t.eos {
		t.pad = -1 // SentencePiece gives each special role its own piece
	}
	for i := range 256 {
		j, ok := seen[fmt.Sprintf("<0x%02X>", i)]
		if !ok || t.pieces[j].Type != TokenByte {
			bytePieces = -1
			break
		}
	}
	t.byteFallback = bytePieces == 256
	t.addBOS = g.boolean("tokenizer.ggml.add_bos_token", true)
	t.addEOS = g.boolean("tokenizer.ggml.add_eos_token", false)
	t.dummyPrefix = g.boolean("tokenizer.ggml.add_space_prefix", true)
	t.removeMore = g.boolean("tokenizer.ggml.remove_extra_whitespaces", false)
	return t, nil
}

// model serializes the vocabulary as a SentencePiece ModelProto in the form of Llama's
// tokenizer.model: the pieces (1); a TrainerSpec (2) with model_type BPE, the
// vocabulary size, byte_fallback, whitespace-only pieces and split digits as Llama's
// has them, and the special ids and pieces; a NormalizerSpec (3) "identity" with no
// character map, a dummy prefix and extra whitespace kept.
func (t *spmTokenizer) model() []byte {
	var b protoWriter
	for _, p := range t.pieces {
		var pb protoWriter
		pb.str(1, p.Text)
		pb.fixed32(2, math.Float32bits(p.Score))
		if p.Type != TokenNormal {
			pb.varint(3, uint64(p.Type))
		}
		b.bytes(1, pb.b)
	}
	var ts protoWriter
	ts.varint(3, 2) // model_type BPE
	ts.varint(4, uint64(len(t.pieces)))
	ts.varint(25, 1) // split_digits
	ts.varint(26, 1) // allow_whitespace_only_pieces
	if t.byteFallback {
		ts.varint(35, 1)
	}
	ids := []struct {
		field, pieceField int
		id                int
	}{{40, 45, t.unk}, {41, 46, t.bos}, {42, 47, t.eos}, {43, 48, t.pad}}
	for _, x := range ids {
		if x.id >= len(t.pieces) {
			x.id = -1 // an added token: the tokenizer config names it
		}
		ts.varint(x.field, uint64(int64(x.id))) // -1 as protobuf's ten-byte int32
		if x.id >= 0 {
			ts.str(x.pieceField, t.pieces[x.id].Text)
		}
	}
	b.bytes(2, ts.b)
	var ns protoWriter
	ns.str(1, "identity")
	ns.bytes(2, nil)
	ns.varint(3, boolBit(t.dummyPrefix))
	ns.varint(4, boolBit(t.removeMore))
	b.bytes(3, ns.b)
	return b.b
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// protoWriter appends protobuf's wire format.
type protoWriter struct{ b []byte }

func (w *protoWriter) key(field, wire int) { w.b = appendUvarint(w.b, uint64(field<<3|wire)) }

func (w *protoWriter) varint(field int, v uint64) {
	w.key(field, 0)
	w.b = appendUvarint(w.b, v)
}

func (w *protoWriter) fixed32(field int, v uint32) {
	w.key(field, 5)
	w.b = append(w.b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func (w *protoWriter) bytes(field int, v []byte) {
	w.key(field, 2)
	w.b = appendUvarint(w.b, uint64(len(v)))
	w.b = append(w.b, v...)
}

func (w *protoWriter) str(field int, s string) { w.bytes(field, []byte(s)) }

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// jsonObject is a JSON object whose keys keep their order, written as transformers
// writes its files: two-space indent, non-ASCII and <>& as they are, a final newline.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func (o *jsonObject) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalPlain(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalPlain(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o jsonObject) marshal() ([]byte, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonFloat is a float written as Python writes it: the shortest decimal of its width,
// with ".0" when it would read as an integer.
type jsonFloat struct {
	f    float64
	bits int
}

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(f.f, 'g', -1, f.bits)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return []byte(s), nil
}
