//go:build unix

package ggufconv

import (
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = int64(os.Getpagesize())

// mapRange maps the n > 0 bytes of f at off read-only; ok is false when that fails
// (the caller reads instead).
func mapRange(f *os.File, off, n int64) (b []byte, unmap func(), ok bool) {
	start := off &^ (pageSize - 1)
	m, err := unix.Mmap(int(f.Fd()), start, int(off-start+n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	// The pages are read once, in order.
	_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
	return m[off-start:], func() { unix.Munmap(m) }, true
}
