//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCreateUmask: the file gets perm less the umask, as open(2) makes a new file, and
// a secret's 0600 stays 0600 under a permissive umask.
func TestCreateUmask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		umask      int
		perm, want os.FileMode
	}{{0o022, 0o666, 0o644}, {0o077, 0o666, 0o600}, {0o002, 0o666, 0o664}, {0o000, 0o600, 0o600}, {0o027, 0o666, 0o640}} {
		old := syscall.Umask(c.umask)
		path := filepath.Join(dir, "f")
		err := WriteFile(path, []byte("x"), c.perm)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != c.want {
			t.Errorf("umask %03o, perm %v: mode %v, want %v", c.umask, c.perm, st.Mode().Perm(), c.want)
		}
	}
}
