package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

type testCmd struct {
	VersionFlag
	Fail  string `help:"fail with this message"`
	Usage bool   `help:"fail as a usage error"`
}

func (c *testCmd) Run(env *Env) error {
	switch {
	case c.Usage:
		return Usagef("bad flags")
	case c.Fail != "":
		return errors.New(c.Fail)
	}
	return nil
}

func runTest(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := &Env{Name: "apr-test", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
	return Run(env, "a test program", &testCmd{}, args), out.String(), errb.String()
}

func TestExitCodesAndVoice(t *testing.T) {
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{[]string{"--fail", "disk on fire"}, 1, "apr-test: disk on fire\n"},
		{[]string{"--usage"}, 2, "apr-test: bad flags\napr-test: hint: run 'apr-test --help' for usage\n"},
		{[]string{"--no-such-flag"}, 2, "apr-test: unknown flag --no-such-flag\n"},
	}
	for _, c := range cases {
		code, _, stderr := runTest(c.args...)
		if code != c.code || !strings.HasPrefix(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
	code, out, _ := runTest("--version")
	if code != 0 || out != "apr-test "+apr.Version+"\n" {
		t.Errorf("--version: %d %q", code, out)
	}
	code, out, _ = runTest("--help")
	if code != 0 || !strings.Contains(out, "a test program") {
		t.Errorf("--help: %d %q", code, out)
	}
}

func TestCreateCommitsOrLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	env := &Env{Name: "apr-test", Stdout: io.Discard}
	o, err := env.Create(filepath.Join(dir, "a.apr"), true)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("x"))
	o.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("abort left %v", entries)
	}
	o, _ = env.Create(filepath.Join(dir, "b.apr"), true)
	o.Write([]byte("y"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.apr")); string(b) != "y" {
		t.Fatalf("committed %q", b)
	}
}

func TestProgressOnlyWhenAsked(t *testing.T) {
	stream := func() apr.Stream {
		return stream.FromTensors(modeltype.Custom, container.Metadata{}, []tensor.Tensor{{Name: "w", DType: dtype.U8, Shape: []int64{3}, Data: []byte{1, 2, 3}}})
	}
	var errb bytes.Buffer
	env := &Env{Name: "apr-test", Stderr: &errb}
	drain := func(s apr.Stream) {
		for {
			_, r, err := s.Next()
			if err != nil {
				return
			}
			io.Copy(io.Discard, r)
		}
	}
	drain(env.Progress(stream()))
	if errb.Len() != 0 {
		t.Fatalf("progress printed to a non-terminal: %q", errb.String())
	}
	t.Setenv("APR_PROGRESS", "1")
	drain(env.Progress(stream()))
	if !strings.Contains(errb.String(), "apr-test: tensor 1 w") {
		t.Fatalf("no progress line: %q", errb.String())
	}
}

func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("/dev/null reported as a terminal")
	}
	env := &Env{Name: "apr-test", Stdout: f}
	if _, err := env.Create("-", true); err != nil {
		t.Fatalf("binary output to /dev/null refused: %v", err)
	}
}
