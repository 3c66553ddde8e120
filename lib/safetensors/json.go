package safetensors

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonParser is a small strict JSON reader with serde_json's rules: whitespace is
// space, tab, LF and CR only; strings reject raw control characters, unknown escapes
// and lone surrogates; numbers follow RFC 8259 exactly (no leading zeros, no "+",
// no "1."); nesting deeper than serde_json's recursion limit is an error; nothing but
// whitespace may follow the top-level value. It never builds a generic tree: callers
// decode into their own structures and skip what they ignore, so memory stays
// proportional to what is kept.
type jsonParser struct {
	b     []byte
	i     int
	base  int64 // file offset of b[0], for error messages
	depth int   // current nesting level (the top-level value's brackets are level 1)
	kind  Kind  // Kind of the errors this parser reports
}

// maxDepth mirrors serde_json: its remaining_depth starts at 128 and a container at
// the level that brings it to 0 is refused, so 127 nested levels are the most allowed.
const maxDepth = 127

func (p *jsonParser) errAt(i int, format string, args ...any) *Error {
	return errf(p.kind, p.base+int64(i), format, args...)
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (p *jsonParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *jsonParser) describe(i int) string {
	if i >= len(p.b) {
		return "end of header"
	}
	c := p.b[i]
	switch {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	}
	return fmt.Sprintf("byte %q", c)
}

func (p *jsonParser) expect(c byte, what string) error {
	if p.peek() != c {
		return p.errAt(p.i, "expected %s, found %s", what, p.describe(p.i))
	}
	p.i++
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(p.i, "nesting deeper than %d levels", maxDepth)
	}
	return nil
}

func (p *jsonParser) end() error {
	p.ws()
	if p.i != len(p.b) {
		return p.errAt(p.i, "trailing characters after the JSON value (found %s)", p.describe(p.i))
	}
	return nil
}

// object iterates the members of the object that starts at the next byte, calling
// member with each decoded key; member must consume the value.
func (p *jsonParser) object(what string, member func(key string, keyOff int) error) error {
	return p.items('{', '}', what, "an object", func(int) error {
		if p.peek() != '"' {
			return p.errAt(p.i, "expected a string key in %s, found %s", what, p.describe(p.i))
		}
		keyOff := p.i
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':', "':' after object key"); err != nil {
			return err
		}
		return member(key, keyOff)
	})
}

// array iterates the elements of the array that starts at the next byte, calling elem
// with each index; elem must consume the value.
func (p *jsonParser) array(what string, elem func(idx int) error) error {
	return p.items('[', ']', what, "an array", elem)
}

// items iterates the comma-separated items between open and close (kind names the
// container in messages), calling item with each index; item must consume one.
func (p *jsonParser) items(open, close byte, what, kind string, item func(idx int) error) error {
	if p.peek() != open {
		return p.errAt(p.i, "expected %s (%s), found %s", what, kind, p.describe(p.i))
	}
	if err := p.enter(); err != nil {
		return err
	}
	p.i++
	if p.peek() == close {
		p.i++
		p.depth--
		return nil
	}
	for n := 0; ; n++ {
		if err := item(n); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case close:
			p.i++
			p.depth--
			return nil
		default:
			return p.errAt(p.i, "expected ',' or '%c' in %s, found %s", close, what, p.describe(p.i))
		}
	}
}

// str decodes the string that starts at the next byte. The header was checked to be
// valid UTF-8 before parsing, but str checks again so it is safe on any input.
func (p *jsonParser) str() (string, error) {
	if p.peek() != '"' {
		return "", p.errAt(p.i, "expected a string, found %s", p.describe(p.i))
	}
	start := p.i
	p.i++
	// Fast path: no escapes.
	j := p.i
	for j < len(p.b) {
		c := p.b[j]
		if c == '"' {
			s := p.b[p.i:j]
			if !utf8.Valid(s) {
				return "", p.errAt(p.i, "string is not valid UTF-8")
			}
			p.i = j + 1
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		j++
	}
	var sb strings.Builder
	sb.Write(p.b[p.i:j])
	p.i = j
	for {
		if p.i >= len(p.b) {
			return "", p.errAt(start, "unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			s := sb.String()
			if !utf8.ValidString(s) {
				return "", p.errAt(start, "string is not valid UTF-8")
			}
			return s, nil
		case c < 0x20:
			return "", p.errAt(p.i, "control character 0x%02x inside a string (must be escaped)", c)
		case c != '\\':
			sb.WriteByte(c)
			p.i++
			continue
		}
		// Escape.
		if p.i+1 >= len(p.b) {
			return "", p.errAt(p.i, "unterminated escape")
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			sb.WriteByte(e)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				// A leading surrogate must be followed by \u and a trailing one.
				if p.i+1 >= len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
					return "", p.errAt(p.i, "lone leading surrogate in \\u escape")
				}
				p.i += 2
				r2, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return "", p.errAt(p.i-6, "leading surrogate not followed by a trailing surrogate")
				}
				r = utf16.DecodeRune(r, r2)
			case utf16.IsSurrogate(r):
				return "", p.errAt(p.i-6, "lone trailing surrogate in \\u escape")
			}
			sb.WriteRune(r)
		default:
			return "", p.errAt(p.i-2, "invalid escape \\%c", e)
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.errAt(p.i, "truncated \\u escape")
	}
	var r rune
	for k := 0; k < 4; k++ {
		c := p.b[p.i+k]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, p.errAt(p.i+k, "invalid hex digit %q in \\u escape", c)
		}
		r = r<<4 | rune(v)
	}
	p.i += 4
	return r, nil
}

// number scans the number token at the next byte and reports whether it is a plain
// non-negative integer that fits a u64 (what serde_json accepts for a usize) and its
// value. A token that is valid JSON but not such an integer returns ok=false and no
// error; a malformed token is an error.
func (p *jsonParser) number() (v uint64, ok bool, err error) {
	p.ws()
	start := p.i
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	if !p.digit() {
		return 0, false, p.errAt(start, "invalid number")
	}
	overflow := false
	if p.b[p.i] == '0' {
		p.i++
		if p.digit() {
			return 0, false, p.errAt(start, "invalid number (leading zero)")
		}
	} else {
		for ; p.digit(); p.i++ {
			d := uint64(p.b[p.i] - '0')
			if v > (math.MaxUint64-d)/10 {
				overflow = true
			} else {
				v = v*10 + d
			}
		}
	}
	integer := true
	if p.i < len(p.b) && p.b[p.i] == '.' {
		integer = false
		p.i++
		if !p.digit() {
			return 0, false, p.errAt(start, "invalid number (no digit after '.')")
		}
		p.digits()
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		integer = false
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digit() {
			return 0, false, p.errAt(start, "invalid number (no digit in exponent)")
		}
		p.digits()
	}
	return v, integer && !neg && !overflow, nil
}

// digit reports whether a decimal digit comes next.
func (p *jsonParser) digit() bool { return p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' }

// digits skips a run of decimal digits.
func (p *jsonParser) digits() {
	for p.digit() {
		p.i++
	}
}

// uint reads a usize as serde_json does: a JSON integer with no sign, fraction or
// exponent, at most 2^64-1.
func (p *jsonParser) uint(what string) (uint64, error) {
	c := p.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, p.errAt(p.i, "expected %s (a non-negative integer), found %s", what, p.describe(p.i))
	}
	start := p.i
	v, ok, err := p.number()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, p.errAt(start, "expected %s (a non-negative integer below 2^64), found %s", what, p.b[start:p.i])
	}
	return v, nil
}

func (p *jsonParser) literal(word string) error {
	if p.i+len(word) > len(p.b) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.errAt(p.i, "invalid literal (expected %s)", word)
	}
	p.i += len(word)
	return nil
}

// skip validates and skips any JSON value.
func (p *jsonParser) skip() error {
	switch c := p.peek(); {
	case c == '{':
		return p.object("value", func(string, int) error { return p.skip() })
	case c == '[':
		return p.array("value", func(int) error { return p.skip() })
	case c == '"':
		_, err := p.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.number()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		return p.errAt(p.i, "expected a JSON value, found %s", p.describe(p.i))
	}
}

// isNull consumes a null literal if one comes next.
func (p *jsonParser) isNull() (bool, error) {
	if p.peek() != 'n' {
		return false, nil
	}
	return true, p.literal("null")
}
