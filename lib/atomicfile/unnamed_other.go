//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// createUnnamed returns nil: only Linux makes unnamed files (O_TMPFILE), so the
// temporary file is named.
func createUnnamed(dir, path string, perm os.FileMode) *os.File { return nil }

// linkUnnamed is never called, as no file is unnamed here.
func linkUnnamed(f *os.File, path string) error {
	f.Close()
	return errors.New(path + ": unnamed files are Linux only")
}
