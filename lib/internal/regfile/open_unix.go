//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// open opens path without waiting for a FIFO's writer (O_NONBLOCK): the caller checks
// the type of what it got before reading.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// blocking clears O_NONBLOCK from a regular file's descriptor, so that it reads as
// one that os.Open opened (reads of a regular file do not heed the flag anyway).
func blocking(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
