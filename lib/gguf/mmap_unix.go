//go:build unix

package gguf

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps f read-only; ok is false when it cannot (empty or huge file, or an
// mmap error), and the caller falls back to ReadAt.
func mmapFile(f *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, false
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return b, func() error { return unix.Munmap(b) }, true
}
