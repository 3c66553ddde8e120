//go:build !unix

package container

// notAppending: this platform cannot tell whether f appends, so nothing is patched.
func notAppending(f interface{ Fd() uintptr }) bool { return false }
