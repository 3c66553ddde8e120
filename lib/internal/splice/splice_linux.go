//go:build linux

package splice

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsPipe reports whether f is a pipe (or FIFO), the only output FromFile serves.
func IsPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

// FromFile moves n bytes of src, from offset off, into the pipe dst, and returns how
// many it moved. ErrUnsupported, with nothing moved, means the kernel will not splice
// from src: write the bytes another way. The bytes are those of the page cache at the
// time of the call: a caller that checksummed them from a mapping relies on the file
// not changing meanwhile, as every reader of it does.
func FromFile(dst, src *os.File, off, n int64) (moved int64, err error) {
	dc, err := dst.SyscallConn()
	if err != nil {
		return 0, ErrUnsupported
	}
	sc, err := src.SyscallConn()
	if err != nil {
		return 0, ErrUnsupported
	}
	var done int64
	var serr error
	cerr := sc.Control(func(sfd uintptr) {
		werr := dc.Write(func(dfd uintptr) bool {
			for done < n {
				at := off + done
				m, err := unix.Splice(int(sfd), &at, int(dfd), nil, int(min(n-done, 1<<30)), unix.SPLICE_F_MOVE|unix.SPLICE_F_MORE)
				switch {
				case err == unix.EAGAIN:
					return false // the pipe is full and non-blocking: wait for room
				case err == unix.EINTR:
					continue
				case err != nil:
					serr = err
					return true
				case m == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than it was
					return true
				}
				done += m
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	if done == 0 && (errors.Is(serr, unix.EINVAL) || errors.Is(serr, unix.ENOSYS)) {
		return 0, ErrUnsupported
	}
	if serr != nil {
		return done, &os.PathError{Op: "splice", Path: src.Name(), Err: serr}
	}
	return done, nil
}
