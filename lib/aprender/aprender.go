// Package aprender imports the two container layouts written by the Rust aprender
// library, so that every model it saved enters apr's one tensor stream:
//
//   - "APRN" version 1: a 32-byte header, MessagePack metadata, one bincode payload
//     (optionally zstd or LZ4 compressed), an optional Ed25519 signature and a CRC32
//     trailer. LinearRegression and LogisticRegression payloads are decoded into the
//     tensors and config of lib/model; other model types are carried as one opaque U8
//     tensor "payload".
//   - "APR\0" (aprender's "v2"): a 64-byte header, JSON metadata, a sorted tensor index,
//     64-byte aligned tensor data and a CRC32 footer.
//
// Read takes the whole file. Every size and offset is checked against the bytes
// present before anything is allocated from it, every multiplication is checked for
// overflow, every CRC is verified, and a file is either imported whole or refused
// with an error that names the offset or field and what was expected. Nothing in
// this package panics on hostile input.
//
// Tensors of plain dtypes alias the input buffer (no copy): do not modify the input
// while the File is in use.
package aprender

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Layout names.
const (
	LayoutAPRN = "aprender APRN v1" // 32-byte header, MessagePack metadata, bincode payload
	LayoutAPR0 = "aprender APR\\0"  // 64-byte header, JSON metadata, tensor index
)

// Caps on what a file may claim.
const (
	// MaxFileSize is the largest file Read accepts (4 GiB).
	MaxFileSize = 4 << 30
	// MaxUncompressed caps the uncompressed payload of an APRN v1 file (1 GiB).
	MaxUncompressed = 1 << 30
	// MaxTensors caps the tensor count of an APR\0 file.
	MaxTensors = 1 << 20
	// MaxDims caps the number of dimensions of one tensor.
	MaxDims = 8
)

// File is an imported aprender file in apr's neutral form.
type File struct {
	// Layout is LayoutAPRN or LayoutAPR0.
	Layout string
	// Version is the container version, e.g. "1.0".
	Version string
	// ModelType is the model type: the header's code for APRN, or for APR\0 the
	// metadata's "model_type" when it names a registry type, else model.Custom.
	ModelType modeltype.Type
	// Metadata is the file's metadata: the MessagePack map (APRN) or the JSON object
	// (APR\0). Numbers are int64, uint64 or float64; objects map[string]any; arrays []any.
	Metadata map[string]any
	// Config is the model's configuration for model.Decode (the hyperparameters read
	// from the payload for APRN; the metadata's "model_config" object, if any, for APR\0).
	Config map[string]any
	// Tensors in file order (APRN: the payload's fields; APR\0: sorted by name).
	Tensors []tensor.Tensor
	// Flags are the header's raw flag bits.
	Flags uint16
	// Signed reports an APRN v1 file carrying an Ed25519 signature block. The
	// signature is not verified here (the key embedded in the file is no trust anchor);
	// the CRC still covers it.
	Signed bool
}

// ErrNotAprender is returned (wrapped) for input that starts with neither
// aprender magic.
var ErrNotAprender = errors.New("not an aprender file")

// ErrTruncated is wrapped by a FormatError when the file ends before a structure.
var ErrTruncated = errors.New("truncated")

// FormatError reports a malformed file: where, which field and what was expected.
type FormatError struct {
	Layout string
	Offset int64  // byte offset of the field in the file
	Field  string // e.g. "header.metadata_size", "index[3].dims"
	Msg    string // what was found and what was expected
	Err    error  // optional wrapped cause (ErrTruncated, ...)
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: offset %d (%s): %s", e.Layout, e.Offset, e.Field, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// ChecksumError is a CRC32 that does not match the bytes it covers.
type ChecksumError struct {
	Layout   string
	Offset   int64  // offset of the stored CRC
	What     string // what the CRC covers
	Expected uint32 // stored in the file
	Actual   uint32 // computed over the bytes
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: checksum mismatch at offset %d (%s): expected 0x%08X, actual 0x%08X",
		e.Layout, e.Offset, e.What, e.Expected, e.Actual)
}

// UnsupportedError is a valid-looking file using a feature this importer refuses
// (encryption, a layout variant, a version).
type UnsupportedError struct {
	Layout  string
	Feature string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: unsupported: %s", e.Layout, e.Feature)
}

// fields reads the little-endian fields of b from position pos; its errors name the
// layout, the field (between prefix and suffix) and its offset, base + position.
type fields struct {
	b              []byte
	pos            int
	base           int64
	layout         string
	prefix, suffix string
	left           string // where the bytes run out, for errors
}

func (r *fields) err(field, format string, args ...any) error {
	return &FormatError{Layout: r.layout, Offset: r.base + int64(r.pos), Field: r.prefix + field + r.suffix, Msg: fmt.Sprintf(format, args...)}
}

func (r *fields) take(field string, n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		e := r.err(field, "needs %d bytes, %d left %s", n, len(r.b)-r.pos, r.left).(*FormatError)
		e.Err = ErrTruncated
		return nil, e
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

func (r *fields) u8(field string) (byte, error) {
	s, err := r.take(field, 1)
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

func (r *fields) u16(field string) (uint16, error) {
	s, err := r.take(field, 2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(s), nil
}

func (r *fields) u32(field string) (uint32, error) {
	s, err := r.take(field, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(s), nil
}

func (r *fields) u64(field string) (uint64, error) {
	s, err := r.take(field, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(s), nil
}

// Detect names the aprender layout that prefix starts with. It needs 5 bytes for
// APRN (magic and major version 1; major 2 is apr's own format, not aprender's) and
// 5 bytes for APR\0 (magic and major version 2).
func Detect(prefix []byte) (layout string, ok bool) {
	if len(prefix) < 5 {
		return "", false
	}
	switch {
	case bytes.Equal(prefix[:4], []byte("APRN")) && prefix[4] == 1:
		return LayoutAPRN, true
	case bytes.Equal(prefix[:4], []byte("APR\x00")) && prefix[4] == 2:
		return LayoutAPR0, true
	}
	return "", false
}

// Read imports a whole aprender file, choosing the layout by its magic.
func Read(data []byte) (*File, error) {
	if int64(len(data)) > MaxFileSize {
		return nil, &FormatError{Layout: "aprender", Offset: 0, Field: "file", Msg: fmt.Sprintf("%d bytes, more than the cap of %d", len(data), int64(MaxFileSize))}
	}
	if len(data) >= 4 {
		switch string(data[:4]) {
		case "APRN":
			return readAPRN(data)
		case "APR\x00":
			return readAPR0(data)
		}
	}
	n := min(len(data), 4)
	return nil, fmt.Errorf("%w: magic %q, expected \"APRN\" (version 1) or \"APR\\x00\" (version 2)", ErrNotAprender, data[:n])
}

// ReadAll reads an aprender file from r, whose first bytes Detect recognized, in
// bounded memory: the header is checked before anything else is buffered (an APR\0
// header's CRC and tensor count; an APRN v1 header's sizes, which give the file's exact
// length, so no more than that is read), and the rest is read as it arrives up to
// that length or MaxFileSize. Read then checks the whole.
func ReadAll(r io.Reader) ([]byte, error) {
	var head [apr0HeaderSize]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	limit := int64(MaxFileSize)
	switch layout, _ := Detect(head[:n]); {
	case layout == LayoutAPRN && n >= aprnHeaderSize:
		h := head[:aprnHeaderSize]
		limit = aprnHeaderSize + int64(binary.LittleEndian.Uint32(h[8:])) + int64(binary.LittleEndian.Uint32(h[12:])) + 4
		if h[21]&aprnFlagSigned != 0 {
			limit += aprnSigSize
		}
	case layout == LayoutAPR0 && n == apr0HeaderSize:
		if err := checkAPR0HeaderCRC(head[:]); err != nil {
			return nil, err
		}
		if count := binary.LittleEndian.Uint32(head[8:]); count > MaxTensors {
			return nil, apr0Err(8, "header.tensor_count", "%d, more than the cap of %d", count, MaxTensors)
		}
	}
	if limit > MaxFileSize {
		return nil, &FormatError{Layout: "aprender", Offset: 8, Field: "header", Msg: fmt.Sprintf("declares a %d-byte file, more than the cap of %d", limit, int64(MaxFileSize))}
	}
	// One byte past the limit, so that Read sees a longer file and says so.
	rest, err := io.ReadAll(io.LimitReader(r, limit+1-int64(n)))
	if err != nil {
		return nil, err
	}
	return append(head[:n:n], rest...), nil
}
