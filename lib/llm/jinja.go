package llm

import (
	"fmt"
	"strconv"
	"strings"
)

// jinjaCanon reduces a Jinja chat template to a canonical token string, so that two
// templates that differ only in layout compare equal: whitespace control ("{%-",
// "-%}") and transformers' trim_blocks/lstrip_blocks are applied to the text between
// tags as Jinja applies them, comments are dropped, string literals are decoded and
// written one way (a single quote or a double quote, escapes or not), spacing inside
// tags is normalised, `x.role`/`x.content` become `x['role']`/`x['content']`, and the
// variable of the loop over messages is called `message`. It reads the template; it
// does not run it. Recognition compares this form with the known templates' forms
// (chattemplate.go); a template that differs in anything that changes its output
// compares unequal and is refused, never approximated.
func jinjaCanon(src string) (string, error) {
	type tag struct {
		kind  byte // 't' text, '{' expression, '%' statement, '#' comment
		body  string
		trimL bool // "{%-": strip whitespace before
		trimR bool // "-%}": strip whitespace after
		plusL bool // "{%+": no lstrip_blocks
	}
	var parts []tag
	i := 0
	for i < len(src) {
		j := strings.Index(src[i:], "{")
		for j >= 0 && i+j+1 < len(src) && !strings.ContainsRune("{%#", rune(src[i+j+1])) {
			k := strings.Index(src[i+j+1:], "{")
			if k < 0 {
				j = -1
				break
			}
			j += k + 1
		}
		if j < 0 || i+j+1 >= len(src) {
			parts = append(parts, tag{kind: 't', body: src[i:]})
			break
		}
		if j > 0 {
			parts = append(parts, tag{kind: 't', body: src[i : i+j]})
		}
		start := i + j
		open := src[start+1]
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[open]
		end, err := tagEnd(src, start+2, closer, open == '#')
		if err != nil {
			return "", err
		}
		body := src[start+2 : end]
		t := tag{kind: open}
		if strings.HasPrefix(body, "-") {
			t.trimL, body = true, body[1:]
		} else if strings.HasPrefix(body, "+") {
			t.plusL, body = true, body[1:]
		}
		if strings.HasSuffix(body, "-") {
			t.trimR, body = true, body[:len(body)-1]
		} else if strings.HasSuffix(body, "+") {
			body = body[:len(body)-1]
		}
		t.body = body
		parts = append(parts, t)
		i = end + 2
	}
	// Whitespace rules on the text parts, as Jinja applies them with transformers'
	// trim_blocks and lstrip_blocks.
	for n := range parts {
		if parts[n].kind != 't' {
			continue
		}
		s := parts[n].body
		if n+1 < len(parts) {
			nx := parts[n+1]
			if nx.trimL {
				s = strings.TrimRight(s, " \t\r\n")
			} else if (nx.kind == '%' || nx.kind == '#') && !nx.plusL {
				// lstrip_blocks: spaces and tabs between the start of a line (in the
				// source) and a block tag go.
				nl := strings.LastIndexByte(s, '\n')
				if tail := s[nl+1:]; strings.Trim(tail, " \t") == "" && (nl >= 0 || n == 0) {
					s = s[:nl+1]
				}
			}
		}
		if n > 0 {
			p := parts[n-1]
			if p.trimR {
				s = strings.TrimLeft(s, " \t\r\n")
			} else if p.kind == '%' || p.kind == '#' {
				// trim_blocks: the first newline after a block tag goes.
				if strings.HasPrefix(s, "\r\n") {
					s = s[2:]
				} else if strings.HasPrefix(s, "\n") {
					s = s[1:]
				}
			}
		}
		parts[n].body = s
	}
	var b strings.Builder
	loopVar := ""
	var canon []string
	for _, p := range parts {
		switch p.kind {
		case 't':
			if p.body != "" {
				canon = append(canon, "T"+strconv.Quote(p.body))
			}
		case '#':
		default:
			toks, err := jinjaTokens(p.body)
			if err != nil {
				return "", err
			}
			if p.kind == '%' && len(toks) >= 4 && toks[0] == "for" && toks[2] == "in" &&
				(toks[3] == "messages" || toks[3] == "loop_messages") && loopVar == "" {
				loopVar = toks[1]
			}
			canon = append(canon, string(p.kind)+" "+strings.Join(toks, " "))
		}
	}
	for n, c := range canon {
		if loopVar != "" && loopVar != "message" && !strings.HasPrefix(c, "T") {
			f := strings.Split(c, " ")
			for k, tok := range f {
				if tok == loopVar {
					f[k] = "message"
				}
			}
			c = strings.Join(f, " ")
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c)
	}
	return b.String(), nil
}

// tagEnd is the index of closer after from, skipping string literals inside a tag
// (a comment has none).
func tagEnd(src string, from int, closer string, comment bool) (int, error) {
	for i := from; i < len(src); i++ {
		c := src[i]
		if !comment && (c == '\'' || c == '"') {
			end, err := stringEnd(src, i)
			if err != nil {
				return 0, err
			}
			i = end
			continue
		}
		if strings.HasPrefix(src[i:], closer) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("chat template: tag at byte %d has no closing %q", from-2, closer)
}

// stringEnd is the index of the quote that closes the literal opening at i.
func stringEnd(src string, i int) (int, error) {
	q := src[i]
	for k := i + 1; k < len(src); k++ {
		switch src[k] {
		case '\\':
			k++
		case q:
			return k, nil
		}
	}
	return 0, fmt.Errorf("chat template: string literal at byte %d is not closed", i)
}

// jinjaTokens splits the inside of a tag into canonical tokens: string literals as Go
// quoted strings, names, numbers and operators; `.role` and `.content` after a name
// become an index by a string.
func jinjaTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			end, err := stringEnd(s, i)
			if err != nil {
				return nil, err
			}
			v, err := pyUnquote(s[i+1 : end])
			if err != nil {
				return nil, err
			}
			toks = append(toks, strconv.Quote(v))
			i = end + 1
		case isNameByte(c):
			k := i
			for k < len(s) && (isNameByte(s[k]) || s[k] >= '0' && s[k] <= '9') {
				k++
			}
			toks = append(toks, s[i:k])
			i = k
		case c >= '0' && c <= '9':
			k := i
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '.') {
				k++
			}
			toks = append(toks, s[i:k])
			i = k
		default:
			op := string(c)
			if i+1 < len(s) && strings.Contains("== != <= >= // **", s[i:i+2]) && s[i+1] != ' ' {
				op = s[i : i+2]
			}
			toks = append(toks, op)
			i += len(op)
		}
	}
	// x.role -> x [ "role" ]
	var out []string
	for k := 0; k < len(toks); k++ {
		if toks[k] == "." && k+1 < len(toks) && (toks[k+1] == "role" || toks[k+1] == "content") && len(out) > 0 {
			out = append(out, "[", strconv.Quote(toks[k+1]), "]")
			k++
			continue
		}
		out = append(out, toks[k])
	}
	return out, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// pyUnquote decodes the escapes of a Python/Jinja string literal's body.
func pyUnquote(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		default:
			return "", fmt.Errorf("chat template: string escape \\%c is not supported", s[i])
		}
	}
	return b.String(), nil
}
