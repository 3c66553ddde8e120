//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// wasClosed reports whether w looks like a standard stream the shell closed (`>&-`).
// The Go runtime reopens a closed fd 0, 1 or 2 on the null device before main runs,
// so a model written there would vanish with exit status 0. The runtime opens the
// device read-write, while a shell's `> /dev/null` opens it write-only. Others open it
// read-write too (Python's subprocess.DEVNULL), so the callers warn, not refuse.
func wasClosed(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_ACCMODE != unix.O_RDWR {
		return false
	}
	var got, null unix.Stat_t
	if unix.Fstat(int(f.Fd()), &got) != nil || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	return got.Mode&unix.S_IFMT == unix.S_IFCHR && got.Rdev == null.Rdev
}
