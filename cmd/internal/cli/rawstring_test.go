package cli

import (
	"bytes"
	"strings"
	"testing"
)

type rawCmd struct {
	Globals
	InputFlag
	Name  string   `default:"x"`
	Names []string `sep:"none"`
	Enum  string   `enum:"a,b" default:"a"`
	got   *rawCmd
}

func (c *rawCmd) Run(env *Env) error { *c.got = *c; return nil }

// TestRawStrings: arguments and flag values reach the command as the bytes given, those
// that are not UTF-8 too (a file name in Latin-1, a GGUF string); defaults and enums
// work as before.
func TestRawStrings(t *testing.T) {
	for _, c := range []struct {
		args              []string
		input, name, enum string
		names             []string
	}{
		{[]string{"caf\xe9.apr", "--name", "a\xffb", "--names", "\xfe", "--names=c"}, "caf\xe9.apr", "a\xffb", "a", []string{"\xfe", "c"}},
		{[]string{"--enum", "b"}, "-", "x", "b", nil},
	} {
		var got rawCmd
		var out, errb bytes.Buffer
		env := &Env{Name: "apr-test", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
		if code := Run(env, "a test program", &rawCmd{got: &got}, c.args); code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, errb.String())
		}
		if got.Input != c.input || got.Name != c.name || got.Enum != c.enum || strings.Join(got.Names, "|") != strings.Join(c.names, "|") {
			t.Errorf("%q: got %q %q %q %q", c.args, got.Input, got.Name, got.Enum, got.Names)
		}
	}
	var got rawCmd
	env := &Env{Name: "apr-test", Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	if code := Run(env, "a test program", &rawCmd{got: &got}, []string{"--enum", "c"}); code != 2 {
		t.Errorf("--enum c: exit %d, want 2", code)
	}
}
