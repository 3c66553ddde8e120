//go:build unix

package container

import "golang.org/x/sys/unix"

// notAppending reports whether f was opened without O_APPEND, so that WriteAt
// (pwrite) writes where it is told.
func notAppending(f interface{ Fd() uintptr }) bool {
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_APPEND == 0
}
