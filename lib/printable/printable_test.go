package printable

import "testing"

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.0.q_proj": "model.layers.0.q_proj",
		"Tiny Llama ▁ü":         "Tiny Llama ▁ü",
		"x\x1b[2Jverified":      `"x\x1b[2Jverified"`,
		"a\r\nOK":               `"a\r\nOK"`,
		"tab\there":             `"tab\there"`,
		"bad\xffutf8":           `"bad\xffutf8"`,
		"\u202eevil":            `"\u202eevil"`,
		"":                      "",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %s, want %s", in, got, want)
		}
	}
}
