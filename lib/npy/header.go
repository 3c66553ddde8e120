// Package npy reads and writes NumPy's .npy array files (format versions 1.0, 2.0
// and 3.0) and .npz archives (a zip of .npy files, stored or deflated).
//
// Reading streams: ReadHeader consumes exactly the header of a .npy and leaves the
// reader at the first data byte, so a multi-gigabyte array is read in bounded memory
// through DataReader or Reader, which also convert big-endian data to little-endian
// on the fly (apr tensors are always little-endian). Only C-order numeric arrays are
// supported: bool, signed and unsigned integers of 1, 2, 4 and 8 bytes, and floats
// of 2, 4 and 8 bytes. Fortran-order, object, string, complex, datetime and
// structured arrays are rejected with an error that says so.
//
// Writing produces the same bytes as numpy.save for the same array: format 1.0
// when the header fits (2.0 otherwise), the header dict in numpy's key order, and
// padding with spaces and a newline so the data starts on a 64-byte boundary.
//
// Decisions where numpy is lenient or silent:
//   - A multi-byte type must carry an explicit byte order ('<' or '>'); numpy
//     never writes '|f4' or '=f4' (which numpy reads as the reading machine's
//     order), so they are refused rather than guessed. One-byte types accept
//     '|', '<', '>' and '='.
//   - fortran_order True is accepted when at most one dimension exceeds 1, since
//     those bytes are the same in both orders; otherwise it is refused.
//   - Reader and ReadAll require the stream to end right after the data: bytes
//     appended to a .npy are an error, not ignored. DataReader, for callers that
//     keep reading the same stream, stops at the data's end.
//   - Python 2's "3L" integers are accepted in versions 1.0 and 2.0, as numpy does.
//
// Every parser here treats its input as hostile: header sizes are capped and never
// trusted beyond the bytes present, shapes are checked for overflow, and every error
// is an *Error naming the file (or archive entry), the byte offset and what was
// expected.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/apr-go/apr/lib/dtype"
)

// Magic is the first six bytes of every .npy file.
const Magic = "\x93NUMPY"

// Limits applied when reading. A header or archive beyond them is refused before
// anything is allocated for it.
const (
	// MaxHeaderLen caps the header dict of a version 2.0 or 3.0 file (version 1.0
	// cannot exceed 65535 bytes). numpy itself refuses headers over 10000 bytes by
	// default; a numeric array's header is under 200 bytes.
	MaxHeaderLen = 1 << 20
	// MaxDims caps the number of dimensions (NumPy 2 allows at most 64).
	MaxDims = 64
)

// Sentinel errors; every *Error unwraps to one of them.
var (
	// ErrFormat: the bytes are not a valid .npy / .npz.
	ErrFormat = errors.New("malformed")
	// ErrUnsupported: a valid file that apr does not handle (Fortran order,
	// non-numeric dtypes, unknown format versions).
	ErrUnsupported = errors.New("unsupported")
	// ErrTruncated: the input ends before the bytes its header announces.
	ErrTruncated = errors.New("truncated")
)

// Error describes a problem in a .npy file or .npz archive.
type Error struct {
	File   string // file name or "archive.npz:entry.npy"; "" when the caller gave none
	Offset int64  // byte offset in the .npy stream (or archive) where the problem is; -1 when none applies
	Kind   error  // ErrFormat, ErrUnsupported or ErrTruncated
	Msg    string // what was found and what was expected
}

func (e *Error) Error() string {
	var b []byte
	b = append(b, "npy: "...)
	if e.File != "" {
		b = append(b, e.File...)
		b = append(b, ": "...)
	}
	if e.Offset >= 0 {
		b = fmt.Appendf(b, "offset %d: ", e.Offset)
	}
	b = append(b, e.Kind.Error()...)
	b = append(b, ": "...)
	b = append(b, e.Msg...)
	return string(b)
}

// Unwrap returns the sentinel kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

func newErr(file string, off int64, kind error, format string, args ...any) *Error {
	return &Error{File: file, Offset: off, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Header is what a .npy header says about its array.
type Header struct {
	Major, Minor int         // format version: 1.0, 2.0 or 3.0
	DType        dtype.DType // element type
	Shape        []int64     // dimensions, outermost first; empty for a scalar
	// BigEndian reports that the data in the file is big-endian ('>'). Readers
	// from this package (DataReader, Reader) convert it to little-endian.
	BigEndian bool
	// HeaderLen is the number of bytes before the data: magic, version, length
	// field and header dict. ReadHeader consumed exactly this many bytes.
	HeaderLen int64
	// DataSize is the number of data bytes that follow the header.
	DataSize int64
}

// ByteOrder returns the byte order of the data as stored in the file.
func (h Header) ByteOrder() binary.ByteOrder {
	if h.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// Elems returns the number of elements.
func (h Header) Elems() int64 {
	n, _ := dtype.Elems(h.Shape)
	return n
}

// ReadHeader reads a .npy header from r and returns it, leaving r at the first
// byte of the data. It reads exactly Header.HeaderLen bytes and never more, so
// the data can be streamed from the same reader (see DataReader).
func ReadHeader(r io.Reader) (Header, error) { return readHeader(r, "") }

func readHeader(r io.Reader, name string) (Header, error) {
	var h Header
	var pre [12]byte
	n, _ := io.ReadFull(r, pre[:10])
	if n < 10 {
		m := min(n, len(Magic))
		switch {
		case n == 0:
			return h, newErr(name, 0, ErrTruncated, "empty input; expected a .npy file starting with %q", Magic)
		case string(pre[:m]) != Magic[:m]:
			return h, newErr(name, 0, ErrFormat, "not a .npy file: starts with %q, expected %q", pre[:m], Magic)
		default:
			return h, newErr(name, int64(n), ErrTruncated, "input ends after %d bytes, inside the 10-byte .npy preamble", n)
		}
	}
	if string(pre[:len(Magic)]) != Magic {
		return h, newErr(name, 0, ErrFormat, "not a .npy file: starts with %q, expected %q", pre[:len(Magic)], Magic)
	}
	h.Major, h.Minor = int(pre[6]), int(pre[7])
	var hlen int64
	switch {
	case h.Major == 1 && h.Minor == 0:
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
		h.HeaderLen = 10
	case (h.Major == 2 || h.Major == 3) && h.Minor == 0:
		if m, err := io.ReadFull(r, pre[10:12]); err != nil {
			return h, newErr(name, int64(10+m), ErrTruncated, "input ends inside the 4-byte header length of a version %d.0 file", h.Major)
		}
		hlen = int64(binary.LittleEndian.Uint32(pre[8:12]))
		h.HeaderLen = 12
		if hlen > MaxHeaderLen {
			return h, newErr(name, 8, ErrFormat, "header length %d exceeds the limit of %d bytes", hlen, MaxHeaderLen)
		}
	default:
		return h, newErr(name, 6, ErrUnsupported, "format version %d.%d; supported versions are 1.0, 2.0 and 3.0", h.Major, h.Minor)
	}
	// Grow the buffer only as bytes actually arrive.
	var buf bytes.Buffer
	if hlen <= 4096 {
		buf.Grow(int(hlen))
	}
	got, err := io.CopyN(&buf, r, hlen)
	if err != nil {
		if err == io.EOF {
			return h, newErr(name, h.HeaderLen+got, ErrTruncated,
				"header announces %d bytes at offset %d, input ends after %d of them", hlen, h.HeaderLen, got)
		}
		return h, newErr(name, h.HeaderLen+got, ErrTruncated, "reading the header: %v", err)
	}
	start := h.HeaderLen
	h.HeaderLen += hlen
	d, perr := parseDict(buf.Bytes(), start, h.Major)
	if perr != nil {
		perr.File = name
		return h, perr
	}
	if perr := d.resolve(&h); perr != nil {
		perr.File = name
		return h, perr
	}
	return h, nil
}

// dict is the parsed header dictionary.
type dict struct {
	descr    string
	descrOff int64
	fortran  bool
	shape    []int64
	shapeOff int64
	seen     [3]bool // descr, fortran_order, shape
}

type parser struct {
	s     []byte
	i     int
	base  int64 // file offset of s[0]
	major int
}

func (p *parser) off() int64 { return p.base + int64(p.i) }

func (p *parser) errf(format string, args ...any) *Error {
	return newErr("", p.off(), ErrFormat, format, args...)
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// found describes the byte at the cursor for error messages.
func (p *parser) found() string {
	if p.i >= len(p.s) {
		return "end of header"
	}
	return strconv.QuoteRune(rune(p.s[p.i]))
}

func (p *parser) expect(c byte, what string) *Error {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return nil
	}
	return p.errf("expected %q %s in header dict, found %s", c, what, p.found())
}

// str parses a Python string literal without escapes: '...' or "...".
func (p *parser) str() (string, *Error) {
	p.ws()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", p.errf("expected a quoted string, found %s", p.found())
	}
	q := p.s[p.i]
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		switch p.s[j] {
		case q:
			p.i = j + 1
			return string(p.s[start:j]), nil
		case '\\', '\n', '\r':
			p.i = j
			return "", p.errf("unsupported character %q inside a header string", p.s[j])
		}
	}
	return "", p.errf("unterminated string in header dict")
}

func (p *parser) ident() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	return string(p.s[start:p.i])
}

// integer parses a non-negative decimal literal (with Python 2's L suffix in
// versions 1.0 and 2.0, which numpy still accepts there).
func (p *parser) integer() (int64, *Error) {
	p.ws()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		return 0, p.errf("negative dimension in shape")
	}
	var v uint64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		d := uint64(p.s[p.i] - '0')
		if v > (math.MaxInt64-d)/10 {
			p.i = start
			return 0, p.errf("dimension does not fit in 64 bits")
		}
		v = v*10 + d
		p.i++
	}
	if p.i == start {
		return 0, p.errf("expected a dimension (decimal integer) in shape, found %s", p.found())
	}
	if p.major <= 2 && p.i < len(p.s) && (p.s[p.i] == 'L' || p.s[p.i] == 'l') {
		p.i++
	}
	return int64(v), nil
}

// tuple parses a Python tuple of integers: (), (3,), (2, 3) or (2, 3,).
func (p *parser) tuple() ([]int64, *Error) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, p.errf("shape must be a tuple such as (2, 3), found %s", p.found())
	}
	open := p.i
	p.i++
	var dims []int64
	for {
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ')' {
			if len(dims) == 1 && !trailingComma(p.s[open:p.i]) {
				return nil, p.errf("shape (%d) is an integer, not a tuple; a one-dimensional shape is written (%d,)", dims[0], dims[0])
			}
			p.i++
			return dims, nil
		}
		if len(dims) == MaxDims {
			return nil, p.errf("shape has more than %d dimensions", MaxDims)
		}
		v, err := p.integer()
		if err != nil {
			return nil, err
		}
		dims = append(dims, v)
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ')' {
			continue
		}
		return nil, p.errf("expected ',' or ')' in shape, found %s", p.found())
	}
}

// trailingComma reports whether the tuple text ends, before its closing
// parenthesis and whitespace, with a comma.
func trailingComma(s []byte) bool {
	return bytes.HasSuffix(bytes.TrimRight(s, " \t\n\r"), []byte{','})
}

var keyNames = [3]string{"descr", "fortran_order", "shape"}

func parseDict(s []byte, base int64, major int) (*dict, *Error) {
	p := &parser{s: s, base: base, major: major}
	d := &dict{}
	if err := p.expect('{', "opening the header"); err != nil {
		return nil, err
	}
	for {
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			break
		}
		keyOff := p.off()
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		k := slices.Index(keyNames[:], key)
		if k < 0 {
			p.i = int(keyOff - base)
			return nil, p.errf("unexpected key %q; a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape'", key)
		}
		if d.seen[k] {
			p.i = int(keyOff - base)
			return nil, p.errf("duplicate key %q", key)
		}
		d.seen[k] = true
		if err := p.expect(':', "after key "+strconv.Quote(key)); err != nil {
			return nil, err
		}
		p.ws()
		switch k {
		case 0:
			d.descrOff = p.off()
			if p.i < len(p.s) && p.s[p.i] == '[' {
				return nil, newErr("", p.off(), ErrUnsupported, "structured dtype (a list of fields) in 'descr'; only plain numeric arrays are supported")
			}
			if d.descr, err = p.str(); err != nil {
				return nil, err
			}
		case 1:
			switch v := p.ident(); v {
			case "True":
				d.fortran = true
			case "False":
			default:
				p.i -= len(v)
				return nil, p.errf("'fortran_order' must be True or False, found %s", p.found())
			}
		case 2:
			d.shapeOff = p.off()
			if d.shape, err = p.tuple(); err != nil {
				return nil, err
			}
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, p.errf("expected ',' or '}' after the value of %q, found %s", key, p.found())
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, p.errf("unexpected %s after the header dict (only space padding may follow)", p.found())
	}
	for i, ok := range d.seen {
		if !ok {
			return nil, newErr("", base, ErrFormat, "header dict has no %q key", keyNames[i])
		}
	}
	return d, nil
}

// resolve checks the dict's values and fills in h.
func (d *dict) resolve(h *Header) *Error {
	dt, big, err := parseDescr(d.descr)
	if err != nil {
		err.Offset = d.descrOff
		return err
	}
	if d.fortran && !fortranIsC(d.shape) {
		return newErr("", d.shapeOff, ErrUnsupported,
			"fortran_order arrays are not supported; save with np.ascontiguousarray (shape %v)", d.shape)
	}
	size, serr := dtype.Size(dt, d.shape)
	if serr != nil {
		return newErr("", d.shapeOff, ErrFormat, "shape %v of %s: %v", d.shape, d.descr, serr)
	}
	h.DType, h.BigEndian, h.DataSize = dt, big, size
	h.Shape = d.shape
	if h.Shape == nil {
		h.Shape = []int64{}
	}
	return nil
}

// fortranIsC reports whether an array of this shape has the same bytes in
// Fortran and C order: at most one dimension is larger than one (or it is empty).
func fortranIsC(shape []int64) bool {
	big := 0
	for _, s := range shape {
		if s == 0 {
			return true
		}
		if s > 1 {
			big++
		}
	}
	return big <= 1
}

// parseDescr maps a numpy type string such as "<f4" to a dtype and byte order.
func parseDescr(s string) (dtype.DType, bool, *Error) {
	bad := func(kind error, format string, args ...any) (dtype.DType, bool, *Error) {
		return dtype.Invalid, false, newErr("", -1, kind, format, args...)
	}
	if len(s) < 2 {
		return bad(ErrFormat, "descr %q is not a numpy type string such as '<f4'", s)
	}
	order, kind, sz := s[0], s[1], s[2:]
	if order != '<' && order != '>' && order != '|' && order != '=' {
		return bad(ErrFormat, "descr %q has no byte-order character ('<', '>' or '|') before the type", s)
	}
	switch kind {
	case 'O':
		return bad(ErrUnsupported, "descr %q: object arrays (pickled Python objects) are not supported", s)
	case 'S', 'a', 'U':
		return bad(ErrUnsupported, "descr %q: string arrays are not supported; only numeric dtypes are", s)
	case 'V':
		return bad(ErrUnsupported, "descr %q: void/structured arrays are not supported; only numeric dtypes are", s)
	case 'M', 'm':
		return bad(ErrUnsupported, "descr %q: datetime/timedelta arrays are not supported; only numeric dtypes are", s)
	case 'c':
		return bad(ErrUnsupported, "descr %q: complex arrays are not supported; store the real and imaginary parts as separate arrays", s)
	}
	n, err := strconv.Atoi(sz)
	if err != nil || n <= 0 || sz[0] == '0' || sz[0] == '+' {
		return bad(ErrFormat, "descr %q: bad item size %q", s, sz)
	}
	var dt dtype.DType
	switch kind {
	case 'b':
		if n == 1 {
			dt = dtype.Bool
		}
	case 'i':
		dt = map[int]dtype.DType{1: dtype.I8, 2: dtype.I16, 4: dtype.I32, 8: dtype.I64}[n]
	case 'u':
		dt = map[int]dtype.DType{1: dtype.U8, 2: dtype.U16, 4: dtype.U32, 8: dtype.U64}[n]
	case 'f':
		dt = map[int]dtype.DType{2: dtype.F16, 4: dtype.F32, 8: dtype.F64}[n]
		if dt == dtype.Invalid {
			return bad(ErrUnsupported, "descr %q: %d-byte floats (long double) are not supported; use float16, float32 or float64", s, n)
		}
	default:
		return bad(ErrUnsupported, "descr %q: unknown type kind %q", s, kind)
	}
	if dt == dtype.Invalid {
		return bad(ErrUnsupported, "descr %q: no %d-byte %q type", s, n, kind)
	}
	if n > 1 && (order == '|' || order == '=') {
		return bad(ErrFormat, "descr %q: a %d-byte type needs an explicit byte order, '<' or '>'", s, n)
	}
	return dt, order == '>' && n > 1, nil
}
