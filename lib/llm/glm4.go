package llm

import (
	"fmt"

	"github.com/apr-go/apr/lib/gguf"
)

// glm4 is GLM-4-0414's code (the converter's Glm4Model): the base keys with the
// rotary dimensions of its partial rotary factor (0.5 unless config.json says), and
// its special tokens, which the converter takes from the tokenizer's added tokens
// where the tokenizer config does not name them: <|endoftext|> as EOS, unknown and
// BOS, <|user|> as EOT.
type glm4 struct{ plain }

func (glm4) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	pct, err := cp.Hparams.rope.floatOr("partial_rotary_factor", 0.5)
	if err != nil {
		return nil, err
	}
	return append(base, gguf.KV{Key: cp.Arch.GGUF + ".rope.dimension_count",
		Value: gguf.Uint32(uint32(int(float64(cp.Hparams.HeadDim) * pct)))}), nil
}

func (glm4) Vocab(cp *Checkpoint, kvs []gguf.KV) ([]gguf.KV, error) {
	tj, err := parseJSON("tokenizer.json", cp.files["tokenizer.json"])
	if err != nil {
		return nil, err
	}
	added := map[string]any{}
	list, _ := tj["added_tokens"].([]any)
	for _, a := range list {
		if e, ok := a.(map[string]any); ok {
			if s, ok := e["content"].(string); ok {
				added[s] = e["id"]
			}
		}
	}
	sv, err := newSpecialVocab(cp.files, -1, specialTypes)
	if err != nil {
		return nil, err
	}
	for _, x := range []struct{ typ, token string }{{"eos", "<|endoftext|>"}, {"eot", "<|user|>"}, {"unk", "<|endoftext|>"}, {"bos", "<|endoftext|>"}} {
		id, ok := added[x.token]
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: GLM-4's converter needs the added token %s, which it does not have", x.token)
		}
		if err := sv.setID(x.typ, id); err != nil {
			return nil, err
		}
	}
	tail, err := sv.kvs()
	if err != nil {
		return nil, err
	}
	// The tail the common vocabulary wrote (after the merges) is written again whole.
	for i, kv := range kvs {
		if kv.Key == "tokenizer.ggml.merges" {
			return append(kvs[:i+1:i+1], tail...), nil
		}
	}
	return nil, fmt.Errorf("GLM-4's vocabulary is a byte-level BPE tokenizer.json, with merges")
}
