package llm

import (
	"fmt"
	"strings"
	"testing"
)

// TestJSONText: a checkpoint JSON file with a byte that is not UTF-8, an escaped lone
// surrogate or data after its value is refused, naming the file and the byte offset;
// each of them was read as U+FFFD (or ignored, for the data after) and converted.
func TestJSONText(t *testing.T) {
	good := qwenCheckpoint(smallBPE(`["a b","Ġ a","Ġa b"]`), 13)
	if _, ok, err := FromCheckpoint(good, "q", qwenShapes(13, true)); err != nil || !ok {
		t.Fatalf("the good checkpoint: %v %v", ok, err)
	}
	const merges = `"merges":["a b","Ġ a","Ġa b"]}}`
	cases := []struct {
		file, old  string
		pre, bad   string // old is replaced by pre+bad; the error's offset is bad's
		post, want string
	}{
		{"tokenizer.json", `"c":6`, `"c`, "\xff", `":6`, "0xff is not UTF-8"},
		{"tokenizer.json", `"c":6`, `"c`, "\xe2\x82", `":6`, "0xe2 is not UTF-8"},                 // cut short
		{"tokenizer.json", `"c":6`, `"c`, "\xed\xa0\x80", `":6`, "0xed is not UTF-8"},             // a surrogate in UTF-8
		{"tokenizer.json", `"c":6`, `"c`, "\xc0\xaf", `":6`, "0xc0 is not UTF-8"},                 // overlong
		{"tokenizer.json", `"c":6`, `"c`, `\ud800`, `":6`, `\ud800, half a surrogate pair`},       // high alone
		{"tokenizer.json", `"c":6`, `"c`, `\udc00`, `x":6`, `\udc00, half a surrogate pair`},      // low alone
		{"tokenizer.json", `"c":6`, `"c`, `\ud800`, `\u0041":6`, `\ud800, half a surrogate pair`}, // high, then no low
		{"tokenizer_config.json", `"{{ x }}"`, `"{{ x }}`, "\xfe", `"`, "0xfe is not UTF-8"},
		{"config.json", `"eos_token_id":8}`, `"eos_token_id":8,"name":"`, "\xff", `"}`, "0xff is not UTF-8"},
		{"config.json", `"eos_token_id":8}`, `"eos_token_id":8} `, `{`, `"eos_token_id":9}`, "data after the JSON value"},
		{"tokenizer.json", merges, merges, `}`, "", "data after the JSON value"},
	}
	for _, c := range cases {
		files := qwenCheckpoint(smallBPE(`["a b","Ġ a","Ġa b"]`), 13)
		s := string(files[c.file])
		i := strings.Index(s, c.old)
		if i < 0 {
			t.Fatalf("%s has no %s", c.file, c.old)
		}
		files[c.file] = []byte(s[:i] + c.pre + c.bad + c.post + s[i+len(c.old):])
		_, _, err := FromCheckpoint(files, "q", qwenShapes(13, true))
		want := fmt.Sprintf("%s: byte %d: %s", c.file, i+len(c.pre), c.want)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with %q: %v, want %q", c.file, c.bad, err, want)
		}
	}
	// Valid text stays valid: a pair, escapes, a backslash before a u, UTF-8.
	for _, ok := range []string{`"\ud83d\ude00"`, `"\\ud800"`, `"\"\\\/\b\f\n\r\t"`, "\"\u00e9\U0001F600\"", `"\u0041\uFFFF"`} {
		if off, msg := badText([]byte(ok)); off >= 0 {
			t.Errorf("badText(%s) = %d, %s", ok, off, msg)
		}
	}
}
