package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

type testCmd struct {
	Globals
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
	if code != 0 || out != "apr-test "+apr.Version+" ("+kernelsText()+")\n" || !strings.Contains(out, "kernels: ") {
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

type depCmd struct {
	Globals
	PassphraseFlags
	TempDirFlag
	Tensor []string `sep:"none"`
	OldP   bool     `name:"deprecated-p" short:"p" hidden:"" deprecated:"-p for a passphrase" use:"passphrase"`
	OldT   []string `name:"deprecated-t" short:"t" sep:"none" hidden:"" deprecated:"-t for a tensor name" use:"tensor"`
	got    *depCmd
}

func (c *depCmd) Run(env *Env) error {
	*c.got = *c
	if !env.Quiet {
		env.Warnf("a warning")
		env.Infof("a report")
	}
	return nil
}

func TestDeprecatedSpellings(t *testing.T) {
	run := func(args ...string) (*depCmd, int, string) {
		var got depCmd
		var errb bytes.Buffer
		env := &Env{Name: "apr-test", Stdout: io.Discard, Stderr: &errb}
		code := Run(env, "test", &depCmd{got: &got}, args)
		return &got, code, errb.String()
	}
	for _, c := range []struct {
		args   []string
		check  func(*depCmd) bool
		notice string
	}{
		{[]string{"-p"}, func(c *depCmd) bool { return c.Passphrase }, "-p for a passphrase is deprecated; use --passphrase"},
		{[]string{"--password"}, func(c *depCmd) bool { return c.Passphrase }, "--password is deprecated; use --passphrase"},
		{[]string{"--password-file", "f"}, func(c *depCmd) bool { return c.PassphraseFile == "f" }, "--password-file is deprecated; use --passphrase-file"},
		{[]string{"--password-env", "V"}, func(c *depCmd) bool { return c.PassphraseEnv == "V" }, "--password-env is deprecated; use --passphrase-env"},
		{[]string{"--tmp-dir", "d"}, func(c *depCmd) bool { return c.TempDir == "d" }, "--tmp-dir is deprecated; use --temp-dir"},
		{[]string{"-t", "a", "--tensor", "b", "-t", "c"}, func(c *depCmd) bool { return strings.Join(c.Tensor, ",") == "b,a,c" }, "-t for a tensor name is deprecated; use --tensor"},
	} {
		got, code, stderr := run(c.args...)
		if code != 0 || !c.check(got) || !strings.HasPrefix(stderr, "apr-test: "+c.notice+"\n") {
			t.Errorf("%v: exit %d, %+v, stderr %q", c.args, code, got, stderr)
		}
		// -q silences warnings and reports, not the notice.
		if _, _, stderr := run(append(c.args, "-q")...); stderr != "apr-test: "+c.notice+"\n" {
			t.Errorf("%v -q: stderr %q", c.args, stderr)
		}
	}
	if _, code, stderr := run("--tmp-dir", "a", "--temp-dir", "b"); code != 2 || !strings.Contains(stderr, "give --temp-dir only") {
		t.Errorf("two spellings, two values: exit %d, %q", code, stderr)
	}
	if _, code, stderr := run("--temp-dir", "a"); code != 0 || stderr != "apr-test: warning: a warning\na report\n" {
		t.Errorf("new spelling: exit %d, %q", code, stderr)
	}
}

func TestMeter(t *testing.T) {
	defer func(d time.Duration) { meterDelay = d }(meterDelay)
	meterDelay = 0
	var errb syncBuffer
	env := &Env{Name: "apr-test", Stderr: &errb}
	if m := env.Meter("working", false, 0); m != nil {
		t.Fatal("a meter on a non-terminal")
	}
	env.ForceProgress = true
	m := env.Meter("working", false, 4e6)
	w := m.Writer(io.Discard)
	w.Write(make([]byte, 2e6))
	time.Sleep(300 * time.Millisecond)
	env.Warnf("careful")
	m.Done()
	m.Done()
	s := errb.String()
	if !strings.Contains(s, "apr-test: working, 2.0 of 4.0 MB (50%)") || !strings.Contains(s, "\r\033[Kapr-test: warning: careful\n") {
		t.Errorf("meter output %q", s)
	}
	env.Quiet = true
	if m := env.Meter("working", true, 0); m != nil {
		t.Fatal("a meter with -q")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type namesCmd struct {
	Globals
	OutputFlag
	IdentityFlag
	TempDirFlag
	Layers string `nonempty:""`
	Max    int    `nonempty:""`
}

func (c *namesCmd) Run(env *Env) error { return nil }

// TestEmptyNames: a flag that names a file or a key given as "" (-o "$OUT" with OUT
// unset) is a usage error, never stdout or the default directory; not giving it, or
// giving "-", is fine. A flag tagged nonempty:"" given as "" or 0 is one too.
func TestEmptyNames(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, 0},
		{[]string{"-o", "-"}, 0},
		{[]string{"-o", "x", "-i", "id", "--temp-dir", "d"}, 0},
		{[]string{"-o", ""}, 2},
		{[]string{"--output="}, 2},
		{[]string{"-i", ""}, 2},
		{[]string{"-i", "id", "-i", ""}, 2},
		{[]string{"--temp-dir", ""}, 2},
		{[]string{"--layers", "1", "--max", "3"}, 0},
		{[]string{"--layers", ""}, 2},
		{[]string{"--max", "0"}, 2},
	} {
		var out, errb bytes.Buffer
		env := &Env{Name: "apr-test", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
		code := Run(env, "a test program", &namesCmd{}, c.args)
		if code != c.code || c.code == 2 && !strings.Contains(errb.String(), "is empty") && !strings.Contains(errb.String(), " 0: give a number of 1 or more") {
			t.Errorf("%q: exit %d, %q; want %d", c.args, code, errb.String(), c.code)
		}
	}
}
