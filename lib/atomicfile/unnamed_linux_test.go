package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range entries {
		s = append(s, e.Name())
	}
	return s
}

// TestUnnamedWhilePending: on Linux a pending file has no name, so the directory
// holds nothing new until Commit (a SIGKILL then leaves nothing); Commit makes a new
// file, or replaces an existing one as rename does (a hard link to the old file keeps
// the old bytes), and Abort leaves nothing.
func TestUnnamedWhilePending(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.gguf")
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("first"))
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("pending file visible: %v", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.gguf")
	if err := os.Link(path, old); err != nil {
		t.Fatal(err)
	}
	g, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("second"))
	if got := names(t, dir); !slices.Equal(got, []string{"old.gguf", "out.gguf"}) {
		t.Fatalf("while replacing: %v", got)
	}
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "second" {
		t.Errorf("out.gguf holds %q", b)
	}
	if b, _ := os.ReadFile(old); string(b) != "first" {
		t.Errorf("the old file's other link holds %q: it was written in place, not replaced", b)
	}
	h, _ := Create(filepath.Join(dir, "gone"), 0o644)
	h.Write([]byte("x"))
	h.Abort()
	if got := names(t, dir); !slices.Equal(got, []string{"old.gguf", "out.gguf"}) {
		t.Errorf("after all: %v", got)
	}
}

// TestNamedFallback: where O_TMPFILE is refused the pending file is .NAME.tmp-N,
// renamed into place on Commit and removed on Abort.
func TestNamedFallback(t *testing.T) {
	noUnnamed = true
	defer func() { noUnnamed = false }()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.apr")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	if got := names(t, dir); len(got) != 2 || !strings.HasPrefix(got[0], ".out.apr.tmp-") {
		t.Fatalf("pending: %v", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("out.apr holds %q", b)
	}
	g, _ := Create(path, 0o644)
	g.Abort()
	if got := names(t, dir); !slices.Equal(got, []string{"out.apr"}) {
		t.Errorf("after all: %v", got)
	}
}
