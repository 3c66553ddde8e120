//go:build !linux

package splice

import "os"

// IsPipe reports false: FromFile serves nothing here.
func IsPipe(*os.File) bool { return false }

// FromFile reports ErrUnsupported: write the bytes another way.
func FromFile(dst, src *os.File, off, n int64) (moved int64, err error) { return 0, ErrUnsupported }
