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
