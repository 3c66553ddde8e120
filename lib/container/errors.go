package container

import (
	"errors"
	"fmt"

	"github.com/apr-go/apr/lib/modeltype"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrFormat is wrapped by every *FormatError: the bytes are not a valid APR file.
	ErrFormat = errors.New("invalid APR file")
	// ErrChecksum is wrapped by every *ChecksumError.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrVersion is wrapped by every *VersionError.
	ErrVersion = errors.New("unsupported APR version")
	// ErrNotFound is returned by File lookups of a tensor name that is not in the index.
	ErrNotFound = errors.New("tensor not found")
	// ErrEncrypted is returned when tensor data of a sealed file is read without a key.
	ErrEncrypted = errors.New("tensor data is encrypted")
	// ErrTypeMismatch is wrapped by every *TypeMismatchError.
	ErrTypeMismatch = errors.New("model type mismatch")
)

// TypeMismatchError says that a file holds another model type than the one asked for.
type TypeMismatchError struct {
	Expected, Found modeltype.Type
}

func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("model type mismatch: file contains %v, expected %v", e.Found, e.Expected)
}

func (e *TypeMismatchError) Unwrap() error { return ErrTypeMismatch }

// FormatError says where a file breaks the format and what was expected there.
type FormatError struct {
	Offset int64  // byte offset in the file, -1 when unknown
	Tensor string // tensor name, when the fault is inside a tensor
	Msg    string
}

func (e *FormatError) Error() string {
	s := ""
	if e.Tensor != "" {
		s += fmt.Sprintf("tensor %q: ", e.Tensor)
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf("offset %d: ", e.Offset)
	}
	return s + e.Msg
}

func (e *FormatError) Unwrap() error { return ErrFormat }

func formatErr(off int64, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// ChecksumError reports a CRC32 that does not match the bytes it covers, as the case
// study's ChecksumMismatch { expected, actual }.
type ChecksumError struct {
	What     string // "header", "metadata", "index", "file", "tensor record header", "tensor data", "chunk 3"
	Tensor   string // set for tensor checksums
	Offset   int64  // where the covered bytes start
	Expected uint32 // the value stored in the file
	Actual   uint32 // the value computed from the bytes
}

func (e *ChecksumError) Error() string {
	t := ""
	if e.Tensor != "" {
		t = fmt.Sprintf(" of tensor %q", e.Tensor)
	}
	return fmt.Sprintf("checksum mismatch in %s%s at offset %d: expected 0x%08X, actual 0x%08X",
		e.What, t, e.Offset, e.Expected, e.Actual)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// VersionError reports a file version this reader cannot read.
type VersionError struct {
	Major, Minor     uint8 // found in the file
	SupportedMajor   uint8
	SupportedMinorTo uint8
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("unsupported version %d.%d (this reader supports %d.0 to %d.%d)",
		e.Major, e.Minor, e.SupportedMajor, e.SupportedMajor, e.SupportedMinorTo)
}

func (e *VersionError) Unwrap() error { return ErrVersion }

// tensorErr attaches a tensor name to format and checksum errors.
func tensorErr(name string, err error) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Tensor == "" {
		c := *fe
		c.Tensor = name
		return &c
	}
	var ce *ChecksumError
	if errors.As(err, &ce) && ce.Tensor == "" {
		c := *ce
		c.Tensor = name
		return &c
	}
	return err
}
