//go:build unix

package cleanup

import (
	"os"
	"syscall"
	"testing"
)

// TestMkdirTempPerm: the directory is perm less the umask, registered until removed.
func TestMkdirTempPerm(t *testing.T) {
	old := syscall.Umask(0o027)
	p, remove, err := MkdirTempPerm(t.TempDir(), ".stage-", 0o777)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("%s: %v %v, want mode 0750", p, st, err)
	}
	mu.Lock()
	n := pending[p]
	mu.Unlock()
	remove()
	if _, err := os.Stat(p); !os.IsNotExist(err) || n != 1 {
		t.Errorf("registered %d times; after remove: %v", n, err)
	}
}
