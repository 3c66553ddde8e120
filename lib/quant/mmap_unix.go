//go:build linux || darwin || freebsd

package quant

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only, or returns nil where that is not possible.
func mapFile(f *os.File, size int64) []byte {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func unmapFile(b []byte) { unix.Munmap(b) }

// dropPages releases the pages of b (whole pages of a mapping) from the process:
// the file's pages stay in the page cache, but no longer count in its resident size.
func dropPages(b []byte) { unix.Madvise(b, unix.MADV_DONTNEED) }
