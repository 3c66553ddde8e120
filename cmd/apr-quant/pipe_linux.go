//go:build linux

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// widePipe is the pipe size asked for: 1 MiB, Linux's default limit for
// unprivileged users (/proc/sys/fs/pipe-max-size) and 16 times its default.
const widePipe = 1 << 20

// widenPipes enlarges the program's stdin and stdout when they are pipes: a model then moves
// through them in reads and writes of up to 1 MiB instead of 64 KiB, and apr-quant
// and the programs beside it wake each other far less often. Where the kernel
// refuses (a lower limit, not a pipe), the pipe keeps its size.
func widenPipes(stdin io.Reader, stdout io.Writer) {
	for _, x := range []any{stdin, stdout} {
		f, ok := x.(*os.File)
		if !ok {
			continue
		}
		st, err := f.Stat()
		if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			continue
		}
		c, err := f.SyscallConn()
		if err != nil {
			continue
		}
		c.Control(func(fd uintptr) {
			if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && n < widePipe {
				unix.FcntlInt(fd, unix.F_SETPIPE_SZ, widePipe)
			}
		})
	}
}
