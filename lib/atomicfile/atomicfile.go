// Package atomicfile writes files so that a failed run leaves nothing behind: data
// goes to a temporary file beside the destination, which is renamed over it only when
// the writer commits. A reader never sees a partial file at the destination path.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is a pending output file.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts a pending file for path, with the given permission bits.
func Create(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, path: path}, nil
}

// Commit closes the file and renames it into place. Like cp and gzip it does not fsync:
// the guarantee is that a failed run leaves no partial file, not durability across a
// power loss (call Sync first for that).
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.path)
	}
	f.done = true
	err := f.File.Close()
	if err == nil {
		err = os.Rename(f.File.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.File.Name())
	}
	return err
}

// Abort removes the pending file. It is a no-op after Commit, so callers can defer it.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
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
