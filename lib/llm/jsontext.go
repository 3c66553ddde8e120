package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// strictJSON decodes the checkpoint file name (its bytes b) into v, numbers as
// json.Number. It refuses what encoding/json would pass over silently where the
// converter stops: a byte that is not UTF-8 (Python's json.load, reading the file as
// UTF-8, refuses it; encoding/json makes it U+FFFD), a \u escape of half a surrogate
// pair alone (the tokenizers crate refuses it, and Python cannot write it into a
// GGUF; encoding/json makes it U+FFFD), and anything after the value (Python's "Extra
// data"; encoding/json's Decoder stops before it). Python's NaN, Infinity and
// -Infinity are refused too, naming the byte: strictJSON reads the files the
// tokenizers crate reads, which takes JSON's numbers only. Errors name the file and
// the byte offset.
func strictJSON(name string, b []byte, v any) error {
	if lits := nonFinite(b); len(lits) > 0 {
		return fmt.Errorf("%s: byte %d: %s is not a JSON number (the tokenizers library, which reads this file, refuses it)", name, lits[0].off, lits[0].text)
	}
	return decodeJSON(name, b, v, nil)
}

// pythonJSON decodes the checkpoint file name (its bytes b) as Python's json.load
// reads it, into a map with numbers as json.Number: as strictJSON, but NaN, Infinity
// and -Infinity, which Python's json reads (and writes, for a float that is not
// finite), are numbers, json.Number("NaN"), ("Infinity") and ("-Infinity").
// strconv.ParseFloat reads them as such, and Int64 refuses them, so the typed
// lookups (config.int, config.float) name a field that holds one, and a field apr
// does not read holds one harmlessly.
func pythonJSON(name string, b []byte) (map[string]any, error) {
	lits := nonFinite(b)
	if len(lits) == 0 {
		var m map[string]any
		return m, decodeJSON(name, b, &m, nil)
	}
	// Each literal becomes a number whose text the file holds nowhere (so no number
	// of the file's own decodes to it), and is put back once decoded.
	zeros := "0.0000000"
	for bytes.Contains(b, []byte(zeros)) {
		zeros += "0"
	}
	marks := map[string]string{}
	var sub []byte
	var moved []shift
	last := 0
	for i, l := range lits {
		mark := zeros + strconv.Itoa(i%9+1)
		if i >= 9 {
			mark += "e" + strconv.Itoa(i/9)
		}
		marks[mark] = l.text
		sub = append(append(sub, b[last:l.off]...), mark...)
		last = l.off + len(l.text)
		moved = append(moved, shift{len(sub), len(mark) - len(l.text)})
	}
	sub = append(sub, b[last:]...)
	var m map[string]any
	if err := decodeJSON(name, sub, &m, moved); err != nil {
		return nil, err
	}
	restore(m, marks)
	return m, nil
}

// shift records that the bytes after offset end of a rewritten file moved by delta.
type shift struct{ end, delta int }

// restore replaces, in place, each number of v that is a key of marks by the
// literal it stands for.
func restore(v any, marks map[string]string) any {
	switch x := v.(type) {
	case json.Number:
		if lit, ok := marks[string(x)]; ok {
			return json.Number(lit)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = restore(e, marks)
		}
	case []any:
		for i, e := range x {
			x[i] = restore(e, marks)
		}
	}
	return v
}

// decodeJSON is strictJSON's decoding of b, whose offsets past the shifts moved
// are mapped back to the file's.
func decodeJSON(name string, b []byte, v any, moved []shift) error {
	if off, msg := badText(b); off >= 0 {
		return fmt.Errorf("%s: byte %d: %s", name, fileOffset(off, moved), msg)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if _, isMap := v.(*map[string]any); isMap && errors.As(err, &te) && te.Field == "" {
			return fmt.Errorf("%s: expected a JSON object, found %s", name, jsonKind(te.Value))
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if m, isMap := v.(*map[string]any); isMap && *m == nil {
		return fmt.Errorf("%s: expected a JSON object, found null", name)
	}
	rest := bytes.TrimLeft(b[d.InputOffset():], " \t\r\n") // JSON's white space
	if len(rest) > 0 {
		return fmt.Errorf("%s: byte %d: data after the JSON value", name, fileOffset(len(b)-len(rest), moved))
	}
	return nil
}

// fileOffset maps offset off of a rewritten file back to the file's own.
func fileOffset(off int, moved []shift) int {
	d := 0
	for _, s := range moved {
		if s.end <= off {
			d = s.delta + d
		}
	}
	return off - d
}

// literal is a NaN, Infinity or -Infinity of a JSON file and its byte offset.
type literal struct {
	off  int
	text string
}

// nonFinite returns Python's NaN, Infinity and -Infinity literals of b, outside
// strings, in order: each where a value may stand, between JSON's punctuation or
// white space ("-NaN", "1NaN" and "NaNe5" are no literal; they stay a syntax error).
func nonFinite(b []byte) []literal {
	var out []literal
	inString := false
	apart := func(i int) bool { return i < 0 || i >= len(b) || strings.IndexByte("[]{},: \t\r\n", b[i]) >= 0 }
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString || !apart(i-1):
		default:
			for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
				if bytes.HasPrefix(b[i:], []byte(lit)) && apart(i+len(lit)) {
					out = append(out, literal{i, lit})
					i += len(lit) - 1
					break
				}
			}
		}
	}
	return out
}

// badText returns the offset of the first byte of b that is not UTF-8 or that starts
// an escaped lone surrogate, and what is wrong there; -1 when there is none.
func badText(b []byte) (int, string) {
	hex4 := func(i int) (rune, bool) { // the XXXX of a \uXXXX at b[i]
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r, ok := hex4(i)
			switch {
			case !ok: // not an escape encoding/json takes: its error says so
				i += 2
			case r >= 0xD800 && r < 0xDC00:
				if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
					i += 12
					continue
				}
				return i, fmt.Sprintf("\\u%04x, half a surrogate pair without its other half (not a character)", r)
			case r >= 0xDC00 && r < 0xE000:
				return i, fmt.Sprintf("\\u%04x, half a surrogate pair without its other half (not a character)", r)
			default:
				i += 6
			}
		case c == '\\':
			i += 2 // \" \\ and the others: the escaped byte is not a backslash of its own
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, fmt.Sprintf("0x%02x is not UTF-8 (Python's json.load, as the converter reads the file, refuses it)", c)
			}
			i += n
		}
	}
	return -1, ""
}

// jsonKind names a JSON value kind as encoding/json's type errors give it
// ("array", "string", "number", "bool").
func jsonKind(v string) string {
	switch v {
	case "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + v
}
