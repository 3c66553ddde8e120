//go:build linux

package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFO: a named pipe is written in place, so its reader gets the data and the
// pipe is still a pipe afterwards.
func TestFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		r, err := os.Open(path)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(r)
		r.Close()
		got <- string(b)
	}()
	if err := WriteFile(path, []byte("model bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err) // (its reader would wait forever)
	}
	if s := <-got; s != "model bytes" {
		t.Fatalf("reader got %q", s)
	}
	assertNoTemp(t, filepath.Dir(path))
}

// TestCharDevice: a character device (a null device made by the test, as root) is
// written in place, never replaced by a regular file.
func TestCharDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root (CI runs as root)")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil { // major 1, minor 3: /dev/null
		t.Skipf("mknod: %v", err)
	}
	link := filepath.Join(dir, "stdout-like")
	if err := os.Symlink(null, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{null, link} {
		if err := WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if st, err := os.Lstat(null); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("the device was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link to the device was replaced: %v %v", st.Mode(), err)
	}
	assertNoTemp(t, dir)
}

// TestSymlinkAndDirectory: a symlink to a regular file has its target replaced (the
// link stays); a directory is refused before anything is created.
func TestSymlinkAndDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "real")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(sub, "model.apr")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "latest.apr")
	if err := os.Symlink("real/model.apr", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target holds %q", b)
	}
	if _, err := Create(sub, 0o644); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	assertNoTemp(t, dir)
	assertNoTemp(t, sub)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}
