// Package atomicfile writes files so that a failed run leaves nothing behind: data
// goes to a temporary file beside the destination, which gets the destination's name
// only when the writer commits. A reader never sees a partial file at the destination
// path.
//
// On Linux the temporary file has no name at all (open(2) with O_TMPFILE): a process
// killed by SIGKILL, which no handler sees, leaves nothing, as the kernel frees an
// unnamed file when its last descriptor closes. Commit links it in (linkat(2)) under
// the destination's name, or, when that name exists, under a fresh name beside it
// which is at once renamed over the destination: only a kill between these two
// system calls leaves a (complete) .NAME.tmp-N file. Where the filesystem refuses
// O_TMPFILE, and on other systems, the temporary file is named .NAME.tmp-N from the
// start, renamed over the destination on Commit, and registered with package
// cleanup so that SIGINT, SIGTERM and SIGHUP remove it.
//
// What is not a regular file is treated as every Unix tool treats it: an existing
// character device, FIFO or socket (or a symlink to one) is opened and written in
// place (-o /dev/null, -o /dev/stdout, a named pipe), since replacing it would break
// the system or the reader at the other end; a symlink to a regular file has its
// target replaced, the link staying; an existing directory is refused.
//
// A new file gets the permission bits its creator asks for less the process's umask,
// as open(2) gives any new file: pass 0o666 for an ordinary output (0o644 under the
// usual umask 022, 0o600 under 077, 0o664 under 002, as cp or a shell's > would make
// it) and 0o600 for a secret.
package atomicfile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apr-go/apr/lib/cleanup"
)

// File is a pending output file.
type File struct {
	*os.File
	path    string
	temp    string // the named temporary file; "" for an unnamed one
	done    bool
	inPlace bool   // a device, FIFO or socket written directly: nothing to rename or remove
	forget  func() // unregisters the temporary file from package cleanup
}

// resolve follows symlinks at path: it returns the regular file to replace, or with
// inPlace the special file to write directly. A path that does not exist (or a
// dangling link's target) is created.
func resolve(path string) (target string, inPlace bool, err error) {
	target = path
	for range 40 { // as the kernel's limit on nested links
		st, err := os.Lstat(target)
		if os.IsNotExist(err) {
			return target, false, nil
		}
		if err != nil {
			return "", false, err
		}
		switch m := st.Mode(); {
		case m&os.ModeSymlink != 0:
			link, err := os.Readlink(target)
			if err != nil {
				return "", false, err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(target), link)
			}
			target = link
			continue
		case m.IsDir():
			return "", false, fmt.Errorf("%s: is a directory", path)
		case m.IsRegular():
			return target, false, nil
		default: // device, FIFO, socket
			return target, true, nil
		}
	}
	return "", false, fmt.Errorf("%s: too many levels of symbolic links", path)
}

// Create starts a pending file for path, with the permission bits perm less the
// umask (see the package comment).
func Create(path string, perm os.FileMode) (*File, error) {
	target, inPlace, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if inPlace {
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, path: path, inPlace: true, forget: func() {}}, nil
	}
	path = target
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if f := createUnnamed(dir, path, perm); f != nil {
		return &File{File: f, path: path, forget: func() {}}, nil
	}
	var f *os.File
	err = tempName(dir, base, func(name string) (err error) {
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		return err
	})
	if err != nil {
		// Named by the path asked for, not the temporary file's name.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{File: f, path: path, temp: f.Name(), forget: cleanup.Register(f.Name())}, nil
}

// tempName calls create with a new name .BASE.tmp-N in dir until it does not fail
// with os.ErrExist. A file created so gets its mode (perm less the umask, a default
// ACL) from the kernel, as any new file; os.CreateTemp would make it 0600 whatever
// the umask.
func tempName(dir, base string, create func(name string) error) error {
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := create(name)
		if err == nil || !errors.Is(err, os.ErrExist) || try == 10000 {
			return err
		}
	}
}

// Commit closes the file and renames it into place. Like cp and gzip it does not fsync:
// the guarantee is that a failed run leaves no partial file, not durability across a
// power loss (call Sync first for that).
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.path)
	}
	f.done = true
	defer f.forget()
	if !f.inPlace && f.temp == "" {
		return linkUnnamed(f.File, f.path)
	}
	err := f.File.Close()
	if f.inPlace {
		return err
	}
	if err == nil {
		err = os.Rename(f.temp, f.path)
	}
	if err != nil {
		os.Remove(f.temp)
	}
	return err
}

// Abort removes the pending file. It is a no-op after Commit, so callers can defer it.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	defer f.forget()
	f.File.Close()
	if f.temp != "" {
		os.Remove(f.temp)
	}
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}
