//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package cli

import "os"

// isTerminal falls back to "character device but not the null device" where no
// termios ioctl is available (wasm, windows).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}
