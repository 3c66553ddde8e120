package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
)

// smallBPE is a tokenizer.json in Qwen2's form (NFC, Qwen2's Split, ByteLevel) with a
// few byte-level tokens, merges in both of tokenizer.json's forms, and added tokens:
// one special, one not special but looking special, one plain.
func smallBPE(merges string) string {
	return `{"version":"1.0","added_tokens":[
  {"id":8,"content":"<|endoftext|>","special":true,"normalized":false},
  {"id":9,"content":"<|im_start|>","special":false,"normalized":false},
  {"id":10,"content":"my▁word","special":false,"normalized":true}],
 "normalizer":{"type":"NFC"},
 "pre_tokenizer":{"type":"Sequence","pretokenizers":[
  {"type":"Split","pattern":{"Regex":` + strings.TrimSpace(mustJSON(reQwen2)) + `},"behavior":"Isolated","invert":false},
  {"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},
 "post_processor":{"type":"ByteLevel"},
 "model":{"type":"BPE","dropout":null,"continuing_subword_prefix":"","end_of_word_suffix":"","byte_fallback":false,
  "vocab":{"a":0,"b":1,"Ġ":2,"ab":3,"Ġa":4,"Ġab":5,"c":6},
  "merges":` + merges + `}}`
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func qwenCheckpoint(tok string, vocab int) map[string][]byte {
	return map[string][]byte{
		"config.json": []byte(fmt.Sprintf(`{"architectures":["Qwen2ForCausalLM"],"vocab_size":%d,"hidden_size":8,
			"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,
			"rope_theta":1000000.0,"rms_norm_eps":1e-06,"max_position_embeddings":64,"eos_token_id":8}`, vocab)),
		"tokenizer.json":        []byte(tok),
		"tokenizer_config.json": []byte(`{"add_bos_token":false,"eos_token":"<|endoftext|>","pad_token":"<|endoftext|>","chat_template":"{{ x }}","add_prefix_space":false}`),
	}
}

func qwenShapes(vocab int64, bias bool) []TensorShape {
	ts := []TensorShape{
		{"model.embed_tokens.weight", dtype.F16, []int64{vocab, 8}}, {"model.norm.weight", dtype.F16, []int64{8}},
		{"model.layers.0.input_layernorm.weight", dtype.F16, []int64{8}},
		{"model.layers.0.post_attention_layernorm.weight", dtype.F16, []int64{8}},
		{"model.layers.0.self_attn.q_proj.weight", dtype.F16, []int64{8, 8}},
		{"model.layers.0.self_attn.k_proj.weight", dtype.F16, []int64{4, 8}},
		{"model.layers.0.self_attn.v_proj.weight", dtype.F16, []int64{4, 8}},
		{"model.layers.0.self_attn.o_proj.weight", dtype.F16, []int64{8, 8}},
		{"model.layers.0.mlp.gate_proj.weight", dtype.F16, []int64{16, 8}},
		{"model.layers.0.mlp.up_proj.weight", dtype.F16, []int64{16, 8}},
		{"model.layers.0.mlp.down_proj.weight", dtype.F16, []int64{8, 16}},
	}
	if bias {
		ts = append(ts, TensorShape{"model.layers.0.self_attn.q_proj.bias", dtype.F16, []int64{8}},
			TensorShape{"model.layers.0.self_attn.k_proj.bias", dtype.F16, []int64{4}},
			TensorShape{"model.layers.0.self_attn.v_proj.bias", dtype.F16, []int64{4}})
	}
	return ts
}

// TestBPEKVs: a Qwen2 checkpoint with a tokenizer.json gets the keys the converter's
// Qwen2Model and _set_vocab_gpt2 write, in their order: the base class's
// hyperparameters (no vocab_size, no rope.dimension_count), then model "gpt2", pre,
// tokens padded with [PADn], types by the converter's rules for added tokens, merges
// (pairs joined with a space, a space inside a part as U+0120), special ids, add_bos
// and the chat template, and no add_space_prefix (a Llama-only key).
func TestBPEKVs(t *testing.T) {
	for _, merges := range []string{`["a b","Ġ a","Ġa b"]`, `[["a","b"],["Ġ","a"],["Ġa","b"]]`} {
		cp, ok, err := FromCheckpoint(qwenCheckpoint(smallBPE(merges), 13), "tiny-qwen", qwenShapes(13, true))
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", merges, ok, err)
		}
		var keys []string
		for _, kv := range cp.KVs {
			keys = append(keys, kv.Key)
		}
		want := []string{"general.architecture", "general.type", "general.name", "general.size_label",
			"qwen2.block_count", "qwen2.context_length", "qwen2.embedding_length", "qwen2.feed_forward_length",
			"qwen2.attention.head_count", "qwen2.attention.head_count_kv", "qwen2.rope.freq_base",
			"qwen2.attention.layer_norm_rms_epsilon", "general.file_type", "general.quantization_version",
			"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
			"tokenizer.ggml.merges", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
			"tokenizer.ggml.add_bos_token", "tokenizer.chat_template"}
		if !slices.Equal(keys, want) {
			t.Fatalf("keys\n%v\nwant\n%v", keys, want)
		}
		h := gguf.Header{KVs: cp.KVs}
		get := func(k string) gguf.Value { v, _ := h.Get(k); return v }
		if s, _ := get("tokenizer.ggml.pre").AsString(); s != "qwen2" {
			t.Errorf("pre %q", s)
		}
		toks, _ := get("tokenizer.ggml.tokens").Strings()
		wantToks := []string{"a", "b", "Ġ", "ab", "Ġa", "Ġab", "c", "[PAD7]", "<|endoftext|>", "<|im_start|>", "my word", "[PAD11]", "[PAD12]"}
		if !slices.Equal(toks, wantToks) {
			t.Errorf("tokens %q, want %q", toks, wantToks)
		}
		tv := get("tokenizer.ggml.token_type")
		var types []int64
		for i := range tv.Len() {
			n, _ := tv.Index(i).AsInt64()
			types = append(types, n)
		}
		if w := []int64{1, 1, 1, 1, 1, 1, 1, 5, 3, 3, 4, 5, 5}; !slices.Equal(types, w) {
			t.Errorf("types %v, want %v", types, w)
		}
		if m, _ := get("tokenizer.ggml.merges").Strings(); !slices.Equal(m, []string{"a b", "Ġ a", "Ġa b"}) {
			t.Errorf("merges %q", m)
		}
		if n, _ := get("tokenizer.ggml.eos_token_id").AsUint64(); n != 8 {
			t.Errorf("eos %d", n)
		}
	}
}

// TestBPEBack: the tokenizer.json written from the GGUF keys reads back to the same
// tokens, merges and pre-tokenizer.
func TestBPEBack(t *testing.T) {
	files := qwenCheckpoint(smallBPE(`["a b","Ġ a","Ġa b"]`), 13)
	cp, _, err := FromCheckpoint(files, "tiny-qwen", qwenShapes(13, true))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cp.HFFiles(qwenShapes(13, true))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := ParseBPE(files["tokenizer.json"])
	got, err := ParseBPE(out["tokenizer.json"])
	if err != nil {
		t.Fatalf("%v\n%s", err, out["tokenizer.json"])
	}
	orig.Tokens[10] = "my word" // USER_DEFINED tokens come back pre-normalized, as the GGUF holds them
	if !slices.Equal(got.Tokens, orig.Tokens) || !slices.Equal(got.Merges, orig.Merges) {
		t.Errorf("tokens %q merges %q, want %q %q", got.Tokens, got.Merges, orig.Tokens, orig.Merges)
	}
	if p, err := got.Def.Pre(); p != "qwen2" || err != nil {
		t.Errorf("pre %q %v", p, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(out["config.json"], &cfg); err != nil || cfg["model_type"] != "qwen2" {
		t.Errorf("config.json %s: %v", out["config.json"], err)
	}
	var tc map[string]any
	if err := json.Unmarshal(out["tokenizer_config.json"], &tc); err != nil || tc["eos_token"] != "<|endoftext|>" || tc["chat_template"] != "{{ x }}" {
		t.Errorf("tokenizer_config.json %s: %v", out["tokenizer_config.json"], err)
	}
}

// TestBPEErrors: what apr refuses, and the flag that names an unknown pre-tokenizer.
func TestBPEErrors(t *testing.T) {
	base := smallBPE(`["a b"]`)
	cases := []struct{ name, tok, want string }{
		{"unknown pre", strings.Replace(base, `\\p{N}|`, `\\p{N}{1,2}|`, 1), "does not know the pre-tokenizer"},
		{"wordpiece", strings.Replace(base, `"type":"BPE"`, `"type":"WordPiece"`, 1), `model type "WordPiece"`},
		{"byte fallback", strings.Replace(base, `"byte_fallback":false`, `"byte_fallback":true`, 1), "byte_fallback"},
		{"bad merge", smallBPE(`["ab"]`), `merges[0] "ab" is not two parts`},
		{"bad id", strings.Replace(base, `"c":6`, `"c":-6`, 1), `"c" has id -6`},
		{"dup id", strings.Replace(base, `"c":6`, `"c":5`, 1), "is both"},
		{"normalizer", strings.Replace(base, `"NFC"`, `"NFKC"`, 1), "normalizer"},
		{"not json", `{"model":`, "tokenizer.json: unexpected EOF"},
	}
	for _, c := range cases {
		_, _, err := FromCheckpoint(qwenCheckpoint(c.tok, 13), "x", qwenShapes(13, true))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	unknown := cases[0].tok
	cp, _, err := FromCheckpointWith(qwenCheckpoint(unknown, 13), "x", qwenShapes(13, true), Options{TokenizerPre: "qwen2"})
	if err != nil {
		t.Fatalf("--tokenizer-pre: %v", err)
	}
	if v, _ := (&gguf.Header{KVs: cp.KVs}).Get("tokenizer.ggml.pre"); v.String() != `"qwen2"` {
		if s, _ := v.AsString(); s != "qwen2" {
			t.Errorf("pre %v", v)
		}
	}
	if _, _, err := FromCheckpoint(qwenCheckpoint(base, 13), "x", qwenShapes(13, false)); err == nil || !strings.Contains(err.Error(), "q_proj.bias") {
		t.Errorf("Qwen2 without biases: %v", err)
	}
	if _, _, err := FromCheckpoint(qwenCheckpoint(base, 9), "x", qwenShapes(9, true)); err == nil || !strings.Contains(err.Error(), "vocab_size 9") {
		t.Errorf("vocab_size below the ids: %v", err)
	}
}

func FuzzParseBPE(f *testing.F) {
	f.Add([]byte(smallBPE(`["a b","Ġ a"]`)))
	f.Add([]byte(smallBPE(`[["a","b"],["Ġ","a"]]`)))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBPE(data)
		if err != nil {
			return
		}
		if len(b.Tokens) == 0 || len(b.Tokens) > MaxPieces || len(b.Merges) > MaxMerges {
			t.Fatalf("%d tokens, %d merges and no error", len(b.Tokens), len(b.Merges))
		}
		for _, m := range b.Merges {
			if sp := strings.IndexByte(m, ' '); sp < 1 || sp == len(m)-1 {
				t.Fatalf("merge %q is not two parts", m)
			}
		}
	})
}

// llamaBPE is smallBPE in Llama 3's form (no normalizer, Llama 3's Split,
// ignore_merges) with the given normalizer and post-processor.
func llamaBPE(normalizer, post string) string {
	b := strings.Replace(smallBPE(`["a b"]`), `"normalizer":{"type":"NFC"}`, `"normalizer":`+normalizer, 1)
	b = strings.Replace(b, mustJSON(reQwen2), mustJSON(reLlama3), 1)
	b = strings.Replace(b, `"byte_fallback":false`, `"byte_fallback":false,"ignore_merges":true`, 1)
	return strings.Replace(b, `"post_processor":{"type":"ByteLevel"}`, `"post_processor":`+post, 1)
}

// TestBPEPreFacts: the facts apr names a pre-tokenizer by, as transformers' encode
// (and so the converter's chkhsh) sees them: a BOS template alone or inside a
// post-processor Sequence (Llama 3.1's), an empty normalizer Sequence (DeepSeek V3's),
// and tokenizer_config.json's LlamaTokenizerFast, which adds the BOS unless
// add_bos_token is false.
func TestBPEPreFacts(t *testing.T) {
	const bos = `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|endoftext|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]}`
	llamaFast := `{"tokenizer_class":"LlamaTokenizerFast","bos_token":"<|endoftext|>"}`
	for _, c := range []struct{ name, tok, config, want string }{
		{"no template", llamaBPE("null", `{"type":"ByteLevel"}`), "", "smaug-bpe"},
		{"template", llamaBPE("null", bos), "", "llama-bpe"},
		{"template in a Sequence", llamaBPE("null", `{"type":"Sequence","processors":[{"type":"ByteLevel"},`+bos+`]}`), "", "llama-bpe"},
		{"empty normalizer Sequence", llamaBPE(`{"type":"Sequence","normalizers":[]}`, bos), "", "llama-bpe"},
		{"LlamaTokenizerFast adds BOS", llamaBPE("null", `{"type":"ByteLevel"}`), llamaFast, "llama-bpe"},
		{"LlamaTokenizerFast without add_bos_token", llamaBPE("null", bos), `{"tokenizer_class":"LlamaTokenizer","add_bos_token":false,"bos_token":"x"}`, "smaug-bpe"},
		{"other class keeps the template", llamaBPE("null", `{"type":"ByteLevel"}`), `{"tokenizer_class":"PreTrainedTokenizerFast","add_bos_token":true,"bos_token":"x"}`, "smaug-bpe"},
	} {
		b, err := ParseBPE([]byte(c.tok))
		if err == nil {
			err = b.UseConfig([]byte(c.config))
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got, err := b.Def.Pre(); got != c.want {
			t.Errorf("%s: pre %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	if _, err := ParseBPE([]byte(llamaBPE(`{"type":"Sequence","normalizers":[{"type":"NFKC"}]}`, bos))); err == nil || !strings.Contains(err.Error(), "normalizer") {
		t.Errorf("a Sequence of NFKC: %v", err)
	}
}

// TestBPEDeepSeekV3: DeepSeek V3's definition (an empty normalizer Sequence, three
// Splits, no ignore_merges) is deepseek-v3 with the BOS its LlamaTokenizerFast adds,
// joyai-llm without, in the checkpoint's keys as in Pre; the tokenizer.json written
// back from deepseek-v3's GGUF has the same definition and no BOS template unless
// the GGUF says add_bos_token (llama.cpp adds no BOS for the name).
func TestBPEDeepSeekV3(t *testing.T) {
	b := smallBPE(`["a b"]`)
	b = strings.Replace(b, `"normalizer":{"type":"NFC"}`, `"normalizer":{"type":"Sequence","normalizers":[]}`, 1)
	var splits []string
	for _, re := range []string{reDeepSeek3Digits, reDeepSeek3CJK, reDeepSeek3Rest} {
		splits = append(splits, `{"type":"Split","pattern":{"Regex":`+mustJSON(re)+`},"behavior":"Isolated","invert":false}`)
	}
	b = strings.Replace(b, `{"type":"Split","pattern":{"Regex":`+strings.TrimSpace(mustJSON(reQwen2))+`},"behavior":"Isolated","invert":false}`, strings.Join(splits, ","), 1)
	for _, c := range []struct{ config, want string }{
		{`{"tokenizer_class":"LlamaTokenizerFast","add_bos_token":true,"bos_token":{"content":"<|endoftext|>"},"eos_token":"<|endoftext|>"}`, "deepseek-v3"},
		{`{"tokenizer_class":"PreTrainedTokenizerFast","eos_token":"<|endoftext|>"}`, "joyai-llm"},
	} {
		files := qwenCheckpoint(b, 13)
		files["tokenizer_config.json"] = []byte(c.config)
		cp, _, err := FromCheckpoint(files, "x", qwenShapes(13, true))
		if err != nil {
			t.Fatalf("%s: %v", c.want, err)
		}
		h := gguf.Header{KVs: cp.KVs}
		v, _ := h.Get("tokenizer.ggml.pre")
		if pre, _ := v.AsString(); pre != c.want {
			t.Errorf("pre %q, want %q", pre, c.want)
		}
		if c.want != "deepseek-v3" {
			continue
		}
		cp.KVs = slices.DeleteFunc(cp.KVs, func(kv gguf.KV) bool { return kv.Key == "tokenizer.ggml.add_bos_token" })
		back, err := cp.HFFiles(qwenShapes(13, true))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseBPE(back["tokenizer.json"])
		if err != nil {
			t.Fatalf("%v\n%s", err, back["tokenizer.json"])
		}
		if want := (PreDef{Regexes: []string{reDeepSeek3Digits, reDeepSeek3CJK, reDeepSeek3Rest}}); !reflect.DeepEqual(got.Def, want) {
			t.Errorf("written back: %+v, want %+v", got.Def, want)
		}
	}
}
