package safetensors

import (
	"fmt"
	"strings"
)

// Kind classifies an error the way the reference crate's SafeTensorError variants do,
// so a verdict of this package can be compared with the crate's. A Kind is itself an
// error: errors.Is(err, safetensors.InvalidOffset) reports whether err is an *Error of
// that kind.
type Kind int

// The crate's variants (safetensors v0.6.2), in the order its reader checks them, then
// the kinds of this package's own checks.
const (
	// HeaderTooSmall: fewer than 8 bytes, so no header length.
	HeaderTooSmall Kind = iota + 1
	// HeaderTooLarge: the header length N is over MaxHeaderSize.
	HeaderTooLarge
	// InvalidHeaderLength: 8+N runs past the end of the file or stream.
	InvalidHeaderLength
	// InvalidHeader: the header bytes are not valid UTF-8.
	InvalidHeader
	// InvalidHeaderDeserialization: the header is not JSON of the expected structure.
	InvalidHeaderDeserialization
	// InvalidOffset: a tensor's data_offsets leave a hole, overlap, or go backwards.
	InvalidOffset
	// ValidationOverflow: shape x dtype size overflows.
	ValidationOverflow
	// MisalignedSlice: a sub-byte dtype's total bit count is not a whole number of bytes.
	MisalignedSlice
	// TensorInvalidInfo: data_offsets span a different byte count than shape x dtype.
	TensorInvalidInfo
	// MetadataIncompleteBuffer: the data does not end exactly where the file ends.
	MetadataIncompleteBuffer

	// TensorNotFound: a lookup of a name that is not in the file (crate variant too).
	TensorNotFound
	// InvalidTensor: the writer was given a tensor it cannot write (bad name, dtype,
	// shape, or data of the wrong length).
	InvalidTensor
	// InvalidIndex: a sharded checkpoint's index is malformed or does not match its shards.
	InvalidIndex
	// OverLimit: a header the crate accepts but that is over one of apr's caps
	// (MaxMetadataSize, MaxMetadataEntries, MaxTensors, MaxDims), which bound the memory
	// a hostile header can cost; no real checkpoint comes near them.
	OverLimit
)

var kindNames = [...]string{
	HeaderTooSmall:               "HeaderTooSmall",
	HeaderTooLarge:               "HeaderTooLarge",
	InvalidHeaderLength:          "InvalidHeaderLength",
	InvalidHeader:                "InvalidHeader",
	InvalidHeaderDeserialization: "InvalidHeaderDeserialization",
	InvalidOffset:                "InvalidOffset",
	ValidationOverflow:           "ValidationOverflow",
	MisalignedSlice:              "MisalignedSlice",
	TensorInvalidInfo:            "TensorInvalidInfo",
	MetadataIncompleteBuffer:     "MetadataIncompleteBuffer",
	TensorNotFound:               "TensorNotFound",
	InvalidTensor:                "InvalidTensor",
	InvalidIndex:                 "InvalidIndex",
	OverLimit:                    "OverLimit",
}

// String returns the crate's variant name ("InvalidOffset").
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error makes a Kind usable as an errors.Is target.
func (k Kind) Error() string { return "safetensors: " + k.String() }

// Error is every error this package reports about file contents. It names the file
// (when known), the tensor (when the fault is in one), the byte offset in the file
// where the fault was found (-1 when none applies) and what was expected there.
type Error struct {
	Kind   Kind
	File   string // path, when the error came from a file
	Tensor string // tensor name, when the fault is in one tensor's entry or data
	Offset int64  // byte offset in the file, -1 when unknown
	Msg    string // what was found and what was expected
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" { // the file first, as the other formats' errors name it
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	b.WriteString("safetensors: ")
	b.WriteString(e.Kind.String())
	if e.Tensor != "" || e.Kind == InvalidOffset {
		fmt.Fprintf(&b, ": tensor %q", e.Tensor)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

func errf(k Kind, off int64, format string, args ...any) *Error {
	return &Error{Kind: k, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func tensorErr(k Kind, name string, off int64, format string, args ...any) *Error {
	return &Error{Kind: k, Tensor: name, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// withFile sets the file name on an *Error (a no-op for other errors).
func withFile(err error, path string) error {
	if e, ok := err.(*Error); ok && e.File == "" {
		e.File = path
	}
	return err
}
