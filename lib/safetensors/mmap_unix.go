//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || solaris

package safetensors

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps the whole file read-only, or returns nil (the caller then uses ReadAt).
func mmapFile(f *os.File, size int64) []byte {
	if size <= 0 || uint64(size) > math.MaxInt {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func munmapFile(b []byte) error { return unix.Munmap(b) }

// dropPages advises the kernel that the whole pages inside m[off:end] are not needed.
func dropPages(m []byte, off, end int64) {
	pg := int64(os.Getpagesize())
	a := (off + pg - 1) / pg * pg // the mapping starts on a page boundary
	b := end / pg * pg
	if end == int64(len(m)) {
		b = end // the last, partial page of the file
	}
	if b > a {
		_ = unix.Madvise(m[a:b], unix.MADV_DONTNEED) // advice only: an error changes nothing
	}
}
