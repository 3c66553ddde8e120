package cleanup

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveAll(t *testing.T) {
	dir := t.TempDir()
	keep, gone, gdir := filepath.Join(dir, "kept"), filepath.Join(dir, "tmp"), filepath.Join(dir, "stage")
	for _, p := range []string{keep, gone} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	os.Mkdir(gdir, 0o755)
	os.WriteFile(filepath.Join(gdir, "part"), []byte("x"), 0o644)
	doneKeep := Register(keep)
	Register(gone)
	Register(gdir)
	doneKeep() // renamed into place: no longer temporary
	doneKeep()
	RemoveAll()
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a path whose done was called was removed: %v", err)
	}
	for _, p := range []string{gone, gdir} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survives RemoveAll: %v", p, err)
		}
	}
}

// TestCreateTempUnnamed: a spool has no name from the start (a SIGKILL leaves nothing
// in its directory) and is read back through its descriptor; remove closes it.
func TestCreateTempUnnamed(t *testing.T) {
	dir := t.TempDir()
	f, remove, err := CreateTemp(dir, "spool-*")
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the spool has a name: %v", entries)
	}
	if _, err := f.WriteString("tensor bytes"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := f.ReadAt(b, 7); err != nil || string(b) != "bytes" {
		t.Errorf("read back %q, %v", b, err)
	}
	mu.Lock()
	n := len(pending)
	mu.Unlock()
	remove()
	if n != 0 {
		t.Errorf("%d registered paths for an unnamed spool", n)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("remove left the spool open")
	}
}
