package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyCmd writes "out" to -o (or to the split set --set PREFIX names, as a split
// export checks it first), reading nothing: what it reads is what the grammar says.
type copyCmd struct {
	Globals
	InputFlag
	OutputFlag
	Extra string `reads:""`
	Set   string
}

func (c *copyCmd) Run(env *Env) error {
	if c.Set != "" {
		return env.NotInputSet(c.Set)
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write([]byte("out")); err != nil {
		return err
	}
	return out.Commit()
}

// TestNotInput: an output that is one of the run's inputs (the same file: by name,
// ./ spelling, symlink, hard link; a part of the split set given by its first part,
// a file of the checkpoint directory or of an index's directory, a file of a reads:""
// flag; a split set's part) is refused with exit 1, naming both, and the input is left
// as it was; other outputs are written (a file beside a checkpoint that its import
// does not read too).
func TestNotInput(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, f := range []string{"in.bin", "set-00001-of-00002.gguf", "set-00002-of-00002.gguf", "x.txt",
		"ckpt/model-00001-of-00002.safetensors", "ckpt/model.safetensors.index.json", "ckpt/config.json", "ckpt/model.f16.gguf"} {
		if err := os.MkdirAll(filepath.Dir(p(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p(f), []byte("in"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("in.bin", p("link.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p("in.bin"), p("hard.bin")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		in   string // the input the message names
	}{
		{[]string{p("in.bin"), "-o", p("in.bin")}, 1, p("in.bin")},
		{[]string{p("in.bin"), "-o", dir + "/./in.bin"}, 1, p("in.bin")},
		{[]string{p("in.bin"), "-o", p("link.bin")}, 1, p("in.bin")},
		{[]string{p("in.bin"), "-o", p("hard.bin")}, 1, p("in.bin")},
		{[]string{p("set-00001-of-00002.gguf"), "-o", p("set-00002-of-00002.gguf")}, 1, p("set-00001-of-00002.gguf")},
		{[]string{p("ckpt"), "-o", p("ckpt/model-00001-of-00002.safetensors")}, 1, p("ckpt")},
		{[]string{p("ckpt/model.safetensors.index.json"), "-o", p("ckpt/config.json")}, 1, p("ckpt/model.safetensors.index.json")},
		{[]string{"--extra", p("x.txt"), "-o", p("x.txt")}, 1, p("x.txt")},
		{[]string{p("set-00002-of-00002.gguf"), "--set", p("set")}, 1, p("set-00002-of-00002.gguf")},
		{[]string{p("in.bin"), "--set", p("set")}, 0, ""},
		{[]string{p("in.bin"), "-o", p("new.bin")}, 0, ""},
		{[]string{p("ckpt"), "-o", p("ckpt/model.f16.gguf")}, 0, ""}, // an earlier output beside the checkpoint
		{[]string{"-o", p("in.bin")}, 0, ""},                         // stdin
		{[]string{p("in.bin"), "-o", p("in.bin")}, 1, p("in.bin")},   // the last case wrote in.bin
	} {
		var out, errb bytes.Buffer
		env := &Env{Name: "apr-test", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
		code := Run(env, "a test program", &copyCmd{}, c.args)
		if code != c.code {
			t.Errorf("%q: exit %d, %q; want %d", c.args, code, errb.String(), c.code)
			continue
		}
		if code == 1 && (!strings.Contains(errb.String(), "refusing to write the output "+c.args[len(c.args)-1]) || !strings.Contains(errb.String(), c.in)) {
			t.Errorf("%q: %q does not name the output and %s", c.args, errb.String(), c.in)
		}
	}
	for _, f := range []string{"set-00001-of-00002.gguf", "set-00002-of-00002.gguf", "x.txt", "ckpt/model-00001-of-00002.safetensors", "ckpt/config.json"} {
		if b, _ := os.ReadFile(p(f)); string(b) != "in" {
			t.Errorf("%s was overwritten: %q", f, b)
		}
	}
	if b, _ := os.ReadFile(p("new.bin")); string(b) != "out" {
		t.Errorf("new.bin: %q", b)
	}
}
