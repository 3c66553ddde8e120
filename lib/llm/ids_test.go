package llm

import (
	"os"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// TestAddedTokenIDs: tokenizer_config.json's added_tokens_decoder ids are decimal, as
// the converter's int(token_id) reads them: "010" is 10 (fmt.Sscan made it 8), and
// "0x10" and "5abc" are errors (16 and 5).
func TestAddedTokenIDs(t *testing.T) {
	spm, err := os.ReadFile("../../testdata/hf/tiny-llama/tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	vocab := func(id string) ([]string, error) {
		files := map[string][]byte{"tokenizer.model": spm, "config.json": []byte(`{}`),
			"tokenizer_config.json": []byte(`{"added_tokens_decoder": {"` + id + `": {"content": "<x>", "special": true}}}`)}
		kvs, err := sentencePieceVocab(files, 512, false)
		if err != nil {
			return nil, err
		}
		v, _ := (&gguf.Header{KVs: kvs}).Get("tokenizer.ggml.tokens")
		toks, _ := v.Strings()
		return toks, nil
	}
	toks, err := vocab("010")
	if err != nil {
		t.Fatal(err)
	}
	if toks[10] != "<x>" || toks[8] == "<x>" {
		t.Errorf("id \"010\": tokens 8 and 10 are %q and %q, want 10 to be <x>", toks[8], toks[10])
	}
	for _, id := range []string{"0x10", "5abc", "-1", "512"} {
		if _, err := vocab(id); err == nil || !strings.Contains(err.Error(), `added_tokens_decoder id "`+id+`"`) {
			t.Errorf("id %q: %v", id, err)
		}
	}
}
