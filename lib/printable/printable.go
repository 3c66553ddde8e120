// Package printable makes strings from untrusted files safe to show on a terminal:
// metadata values, tensor names and the like could otherwise carry escape sequences,
// carriage returns or line feeds that rewrite what a person reads (a forged "verified"
// line). A leaf: every layer that prints may use it.
package printable

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// String returns s as it is when it is valid UTF-8 made only of printable characters
// and spaces, else quoted with Go's escapes (strconv.Quote), so that control
// characters, tabs and invalid bytes show as \x1b, \r, \t, \xff.
func String(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r != ' ' && !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
