// Package regfile is the one checked way to open a file that must be a regular file:
// a checkpoint's config, tokenizer, index and shards, a later part of a split GGUF
// set, a file read with ReadAt or memory-mapped. Symbolic links are followed (the
// Hugging Face cache keeps a checkpoint as links into its blobs), and whatever the
// path resolves to is checked without blocking: a FIFO is refused, not opened for a
// writer that never comes, and a device, socket or directory is refused too. A
// dangling link and a loop of links get errors that say so.
//
// A path that may be a stream on purpose (a program's input, a passphrase file given
// as <(...)) is opened with os.Open instead: there, waiting for a FIFO's writer is
// what the user asked for.
package regfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error for a path that resolves to something other than a
// regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what the path resolves to
}

func (e *NotRegularError) Error() string {
	return e.Path + ": not a regular file (" + Kind(e.Mode) + ")"
}

// Kind names a file type for messages: "a FIFO", "a directory", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "of type " + m.Type().String()
}

// Error is the error for a path that cannot be resolved: a dangling link or a loop of
// links. It unwraps to the error of the open (fs.ErrNotExist for a dangling link).
type Error struct {
	Path string
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Open opens path for reading, following symbolic links, and returns it only when it
// resolves to a regular file (else a *NotRegularError, never blocking on a FIFO).
// Other errors are os.Open's, except that a dangling link or a loop is an *Error
// saying so.
func Open(path string) (*os.File, error) {
	// Stat first, so that a device is not even opened in the usual case; open then
	// checks the file it got (the path may have changed in between).
	st, err := os.Stat(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open" // as os.Open says it
		}
		return nil, explain(path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: st.Mode().Type()}
	}
	f, err := open(path)
	if err != nil {
		return nil, explain(path, err)
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode().Type()}
	}
	if err := blocking(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// explain turns the error of following path into one that says what is wrong with
// the links on the way, when that is the cause.
func explain(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return &Error{Path: path, Msg: "a loop of symbolic links (or too many links in a row)", Err: err}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if target, lerr := os.Readlink(path); lerr == nil {
			return &Error{Path: path, Msg: "a symbolic link to " + target + ", which does not exist", Err: err}
		}
	}
	return err
}
