package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPassword(t *testing.T) {
	dir := t.TempDir()
	n := 0
	file := func(content string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("pw%d", n))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("APR_TEST_PW", "from env\nall of it")
	for _, c := range []struct {
		src  PasswordSource
		want string
	}{
		{PasswordSource{File: file("first line\r\nsecond\n")}, "first line"},
		{PasswordSource{File: file("no newline")}, "no newline"},
		{PasswordSource{Env: "APR_TEST_PW"}, "from env\nall of it"},
	} {
		got, err := ReadPassword(c.src, "Password: ", true)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.src, got, err, c.want)
		}
	}
	if _, err := ReadPassword(PasswordSource{File: file("\nsecond")}, "Password: ", false); err == nil || !strings.Contains(err.Error(), "empty passphrase") {
		t.Errorf("empty first line: %v", err)
	}
	if _, err := ReadPassword(PasswordSource{Env: "APR_TEST_UNSET_VAR"}, "Password: ", false); !errors.As(err, new(*UsageError)) {
		t.Errorf("unset variable: %v, want a usage error", err)
	}
	if _, err := ReadPassword(PasswordSource{File: filepath.Join(dir, "missing")}, "Password: ", false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := file(strings.Repeat("x", 64<<10+1))
	if _, err := ReadPassword(PasswordSource{File: big}, "Password: ", false); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
	// Without a terminal, the error names the flags that give the password instead.
	if tty, err := os.Open("/dev/tty"); err == nil {
		tty.Close()
		t.Log("a terminal is attached: the no-terminal case is not exercised")
		return
	}
	_, err := ReadPassword(PasswordSource{FileFlag: "--pw-file", EnvFlag: "--pw-env"}, "Password: ", false)
	if !errors.Is(err, ErrNoTerminal) || !strings.Contains(err.Error(), "--pw-file FILE or --pw-env VAR") {
		t.Errorf("no terminal: %v", err)
	}
}
