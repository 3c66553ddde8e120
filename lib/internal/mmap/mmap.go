// Package mmap maps files read-only where the platform can (unix), so that readers
// take tensor bytes from the page cache in place instead of copying them, and can
// give the pages they have passed back (DropPages) to keep their resident set small
// on multi-gigabyte files. Elsewhere (js/wasm, wasip1, windows) Map reports false and
// the callers read with ReadAt or Read.
package mmap

import "os"

// pageSize is the granularity of mappings and of DropPages.
var pageSize = int64(os.Getpagesize())

// alignedInside returns the page-aligned range inside [off, end) of a mapping of
// length n that starts on a page boundary; the last, partial page of the mapping
// counts as whole when end is n.
func alignedInside(off, end, n int64) (lo, hi int64) {
	lo = (off + pageSize - 1) / pageSize * pageSize
	hi = end / pageSize * pageSize
	if end == n {
		hi = end
	}
	return lo, hi
}
