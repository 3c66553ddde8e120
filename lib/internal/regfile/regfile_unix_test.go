//go:build unix

package regfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A FIFO with no writer is refused at once, directly or through a link: os.Open
// would wait for a writer forever.
func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.Symlink("model.safetensors", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, filepath.Join(dir, "link")} {
		within(t, func() {
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Errorf("%s: opened", p)
				return
			}
			if want := p + ": not a regular file (a FIFO)"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
	// The check after the open, for a path that became a FIFO after the stat.
	within(t, func() {
		f, err := open(fifo)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
}

// A regular file is handed back in blocking mode, as os.Open gives it.
func TestBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	c.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Errorf("flags %#x: O_NONBLOCK still set", fl)
	}
}
