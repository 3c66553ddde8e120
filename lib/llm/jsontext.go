package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// strictJSON decodes the checkpoint file name (its bytes b) into v, numbers as
// json.Number. It refuses what encoding/json would pass over silently where the
// converter stops: a byte that is not UTF-8 (Python's json.load, reading the file as
// UTF-8, refuses it; encoding/json makes it U+FFFD), a \u escape of half a surrogate
// pair alone (the tokenizers crate refuses it, and Python cannot write it into a
// GGUF; encoding/json makes it U+FFFD), and anything after the value (Python's "Extra
// data"; encoding/json's Decoder stops before it). Errors name the file and the byte
// offset.
func strictJSON(name string, b []byte, v any) error {
	if off, msg := badText(b); off >= 0 {
		return fmt.Errorf("%s: byte %d: %s", name, off, msg)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rest := bytes.TrimLeft(b[d.InputOffset():], " \t\r\n") // JSON's white space
	if len(rest) > 0 {
		return fmt.Errorf("%s: byte %d: data after the JSON value", name, len(b)-len(rest))
	}
	return nil
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
