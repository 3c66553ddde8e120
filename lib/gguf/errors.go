package gguf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error kinds; every *Error wraps exactly one of them (test with errors.Is).
var (
	// ErrFormat: the input is not a well-formed GGUF file (truncated, bad magic, a
	// length or offset that points outside the file, a duplicate key, ...).
	ErrFormat = errors.New("malformed GGUF")
	// ErrUnsupported: a well-formed file this package does not handle (version 1,
	// big-endian, a future version, an unknown value or tensor type).
	ErrUnsupported = errors.New("unsupported GGUF")
	// ErrLimit: the input exceeds one of the safety caps in Limits.
	ErrLimit = errors.New("GGUF exceeds a safety limit")
	// ErrInvalid: a Header or Value given to the writer is not valid GGUF as
	// llama.cpp reads it; nothing was written.
	ErrInvalid = errors.New("invalid GGUF header for writing")
)

// Error describes a problem with a GGUF file or header.
type Error struct {
	Kind   error  // ErrFormat, ErrUnsupported, ErrLimit or ErrInvalid
	Path   string // file name, when known
	Offset int64  // byte offset in the file where the problem was found, or -1
	Key    string // the KV key involved, if any
	Tensor string // the tensor involved ("#3" when its name is not known yet), if any
	Msg    string // what was found and what was expected
	Limit  string // for ErrLimit, the Limits field whose cap was hit ("MaxHeaderBytes")
	Err    error  // an underlying cause (an I/O error, io.ErrUnexpectedEOF), or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" { // the file first, as the other formats' errors name it
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString("gguf: ")
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "offset %d: ", e.Offset)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %s: ", quoteShort(e.Key))
	}
	if e.Tensor != "" {
		if strings.HasPrefix(e.Tensor, "#") {
			fmt.Fprintf(&b, "tensor %s: ", e.Tensor)
		} else {
			fmt.Fprintf(&b, "tensor %s: ", quoteShort(e.Tensor))
		}
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind and the underlying cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// quoteShort quotes s for an error message, cutting hostile long strings.
func quoteShort(s string) string {
	const max = 96
	if len(s) > max {
		return strconv.Quote(s[:max]) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// withPath sets the path of err when it is an *Error without one.
func withPath(err error, path string) error {
	var e *Error
	if errors.As(err, &e) && e.Path == "" {
		e.Path = path
	}
	return err
}
