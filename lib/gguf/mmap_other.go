//go:build !unix

package gguf

import "os"

// mmapFile is not available on this platform: the caller reads with ReadAt.
func mmapFile(f *os.File, size int64) (data []byte, unmap func() error, ok bool) {
	return nil, nil, false
}
