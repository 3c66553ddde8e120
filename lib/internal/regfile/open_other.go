//go:build !unix

package regfile

import "os"

// open opens path. Platforms other than unix have no FIFO that an open waits on (a
// Windows named pipe is not a path of the file system); Open has checked the type
// with a stat before.
func open(path string) (*os.File, error) { return os.Open(path) }

// blocking has nothing to clear.
func blocking(*os.File) error { return nil }
