package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/apr-go/apr/lib/cleanup"
)

// noUnnamed makes Create use named temporary files, as where O_TMPFILE is refused
// (tests of that path set it).
var noUnnamed bool

// createUnnamed opens an unnamed file (O_TMPFILE) in dir, with mode perm less the
// umask as any new file, and names the *os.File path for error messages. It returns
// nil where the filesystem or kernel refuses O_TMPFILE (EOPNOTSUPP, EISDIR, EINVAL;
// any other refusal, such as a missing directory, is reported again by the named
// file's open) or where /proc is not mounted, without which linkat cannot name it.
func createUnnamed(dir, path string, perm os.FileMode) *os.File {
	if noUnnamed {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil
	}
	if unix.Access(procFD(fd), unix.F_OK) != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), path)
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// linkUnnamed closes f and gives its file the name path: a hard link made at once
// when path does not exist, else a link under a fresh temporary name renamed over
// path (linkat cannot replace). The file is closed first, through a duplicate
// descriptor that keeps it alive, so that an error the filesystem reports at close
// leaves nothing named.
func linkUnnamed(f *os.File, path string) error {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	cerr := f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	if cerr != nil {
		return cerr
	}
	link := func(name string) error {
		return unix.Linkat(unix.AT_FDCWD, procFD(fd), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	}
	err = link(path)
	if !errors.Is(err, os.ErrExist) {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var tmp string
	var forget func()
	err = tempName(dir, base, func(name string) error {
		tmp, forget = name, cleanup.Register(name)
		err := link(name)
		if err != nil {
			forget()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer forget()
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
