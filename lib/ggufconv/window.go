package ggufconv

import (
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/internal/mmap"
)

// window is how many bytes of a file eachWindow maps (or reads) at a time.
const window = 8 << 20

// eachWindow calls fn with the size bytes of f at off, in pieces of at most window
// bytes, in order. Where the platform allows they are views of a read-only mapping of
// f that is unmapped after fn returns (so no copy is made and the pages leave the
// process's resident set again); otherwise they are read into buf, which must hold
// window bytes. fn must not keep the slice.
func eachWindow(f *os.File, off, size int64, buf *[]byte, fn func([]byte) error) error {
	for size > 0 {
		n := min(size, window)
		var err error
		if mapped, unmap, ok := mmap.MapRange(f, off, n); ok {
			err = fn(mapped)
			unmap()
		} else {
			if len(*buf) < window {
				*buf = make([]byte, window)
			}
			b := (*buf)[:n]
			if _, rerr := f.ReadAt(b, off); rerr != nil {
				if rerr == io.EOF {
					rerr = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("reading %d bytes at %d: %w", n, off, rerr)
			}
			err = fn(b)
		}
		if err != nil {
			return err
		}
		off += n
		size -= n
	}
	return nil
}
