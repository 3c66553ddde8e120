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

// TestPythonJSON: Python's NaN, Infinity and -Infinity were "invalid character"
// errors in every file. The files Python's json reads take them as numbers, where a
// value may stand only; tokenizer.json, which the tokenizers library reads, refuses
// them naming the byte; offsets after them stay the file's own.
func TestPythonJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a": NaN, "b": [Infinity,-Infinity], "c": "NaN", "d": {"e":NaN}}`, `map[a:NaN b:[Infinity -Infinity] c:NaN d:map[e:NaN]]`},
		{`{"a": 0.0000000, "b": NaN, "c": 0.00000001}`, `map[a:0.0000000 b:NaN c:0.00000001]`}, // a file's own numbers stay
		{"{\"a\":\tNaN\n}", `map[a:NaN]`},
		{`{"a": -NaN}`, `invalid character 'N' in numeric literal`},
		{`{"a": 1NaN}`, `invalid character 'N' after object key:value pair`},
		{`{"a": NaNe5}`, `invalid character 'N' looking for beginning of value`},
		{`{"a": nan}`, `invalid character 'a' in literal null`},
		{`{"a": NaN} {`, `x.json: byte 11: data after the JSON value`},
		{`{"a": -Infinity, "b": "` + "\xff" + `"}`, `x.json: byte 23: 0xff is not UTF-8`},
	} {
		m, err := pythonJSON("x.json", []byte(c.in))
		got := fmt.Sprint(m)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	var v map[string]any
	if err := strictJSON("tokenizer.json", []byte(`{"a": 1, "b": [Infinity]}`), &v); err == nil ||
		!strings.Contains(err.Error(), "tokenizer.json: byte 15: Infinity is not a JSON number") {
		t.Errorf("strictJSON: %v", err)
	}
}
