package regfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test when f has not returned after a few seconds, so that an open
// that blocks is a failure instead of a hung test.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked for 10 s")
	}
}

func TestRegularThroughLinks(t *testing.T) {
	dir := t.TempDir()
	blob := filepath.Join(dir, "blobs", "abc")
	os.MkdirAll(filepath.Dir(blob), 0o755)
	if err := os.WriteFile(blob, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snapshots", "rev")
	os.MkdirAll(snap, 0o755)
	// A relative link, as the Hugging Face cache makes them, and a link to it.
	if err := os.Symlink("../../blobs/abc", filepath.Join(snap, "config.json")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if err := os.Symlink("config.json", filepath.Join(snap, "again.json")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{blob, filepath.Join(snap, "config.json"), filepath.Join(snap, "again.json")} {
		f, err := Open(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != "hello" {
			t.Fatalf("%s: read %q, %v", name, b, err)
		}
		if f.Name() != name {
			t.Errorf("Name() = %q, want %q", f.Name(), name)
		}
	}
}

func TestRefused(t *testing.T) {
	dir := t.TempDir()
	link := func(target, name string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Skip("no symbolic links:", err)
		}
		return p
	}
	cases := []struct {
		path string
		want string
		is   error
	}{
		{dir, "not a regular file (a directory)", nil},
		{link(".", "dirlink"), "not a regular file (a directory)", nil},
		{link("missing", "dangling"), "a symbolic link to missing, which does not exist", fs.ErrNotExist},
		{link("loop2", "loop1"), "a loop of symbolic links", syscall.ELOOP},
		{link("loop1", "loop2"), "a loop of symbolic links", syscall.ELOOP},
		{link("self", "self"), "a loop of symbolic links", syscall.ELOOP},
		{filepath.Join(dir, "absent"), "", fs.ErrNotExist},
	}
	if runtime.GOOS != "windows" {
		cases = append(cases, struct {
			path string
			want string
			is   error
		}{"/dev/null", "not a regular file (a character device)", nil})
	}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		defer l.Close()
	}
	if st, err := os.Lstat(filepath.Join(dir, "sock")); err == nil && st.Mode()&fs.ModeSocket != 0 { // not under js/wasm
		cases = append(cases, struct {
			path string
			want string
			is   error
		}{filepath.Join(dir, "sock"), "not a regular file (a socket)", nil})
	}
	for _, c := range cases {
		f, err := Open(c.path)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", c.path)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.path+": ") && !strings.Contains(err.Error(), c.path+":") {
			t.Errorf("%s: error %q does not name the path", c.path, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want %q", c.path, err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %q is not %v", c.path, err, c.is)
		}
	}
}
