//go:build !unix

package ggufconv

import "os"

// mapRange is not available on this platform: the caller reads.
func mapRange(f *os.File, off, n int64) (b []byte, unmap func(), ok bool) {
	return nil, nil, false
}
