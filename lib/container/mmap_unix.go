//go:build unix

package container

import (
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps the whole file read-only; it returns nil when mapping is not possible
// (empty or special files), and the caller falls back to ReadAt.
func mmapFile(f *os.File, size int64) ([]byte, func()) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return b, func() { unix.Munmap(b) }
}
