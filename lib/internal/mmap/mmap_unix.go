//go:build unix

package mmap

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f read-only and shared. ok is false when it
// cannot (size 0 or beyond the address space, a file that cannot be mapped): the
// caller reads instead. Unmap releases the mapping.
func Map(f *os.File, size int64) (b []byte, ok bool) {
	if size <= 0 || uint64(size) > math.MaxInt {
		return nil, false
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	return b, true
}

// Unmap releases a mapping made by Map.
func Unmap(b []byte) error { return unix.Munmap(b) }

// MapRange maps the n > 0 bytes of f at off read-only, advised for one sequential
// pass; off need not be page-aligned. unmap releases it.
func MapRange(f *os.File, off, n int64) (b []byte, unmap func(), ok bool) {
	start := off &^ (pageSize - 1)
	if off < 0 || n <= 0 || uint64(off-start+n) > math.MaxInt {
		return nil, nil, false
	}
	m, err := unix.Mmap(int(f.Fd()), start, int(off-start+n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	_ = unix.Madvise(m, unix.MADV_SEQUENTIAL) // advice only
	return m[off-start:], func() { unix.Munmap(m) }, true
}

// DropPages tells the kernel that the whole pages inside m[off:end] of a mapping from
// Map are no longer needed: they leave the process's resident set but stay in the
// page cache, and reading them again faults them back in (the mapping is read-only
// and shared, so no data is lost).
func DropPages(m []byte, off, end int64) {
	lo, hi := alignedInside(off, end, int64(len(m)))
	if hi > lo {
		_ = unix.Madvise(m[lo:hi], unix.MADV_DONTNEED) // advice only: an error changes nothing
	}
}
