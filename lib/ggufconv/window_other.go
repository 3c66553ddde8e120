//go:build !unix

package ggufconv

import "os"

// mapRange is not available on this platform: the caller reads.
func mapRange(f *os.File, off, n int64) (b []byte, unmap func(), ok bool) {
	return nil, nil, false
}

// patchable: this platform cannot tell whether f appends, so it is never patched.
func patchable(f interface{ Fd() uintptr }) bool { return false }
