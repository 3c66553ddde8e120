package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("destination visible before Commit")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no-op after Commit
	if b, err := os.ReadFile(path); err != nil || string(b) != "partial" {
		t.Fatalf("after Commit: %q, %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	g, _ := Create(filepath.Join(dir, "gone.bin"), 0o644)
	g.Write([]byte("x"))
	g.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("abort left files: %v", entries)
	}
}

// TestMissingDirectoryNamesThePath: a path in a directory that does not exist is an
// error naming the path asked for, not the temporary file's name.
func TestMissingDirectoryNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodir", "out.apr")
	_, err := Create(path, 0o644)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), path+": ") || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("Create in a missing directory: %v", err)
	}
}
