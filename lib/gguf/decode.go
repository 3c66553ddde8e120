package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits caps what the reader accepts, so that a hostile file cannot make it allocate
// without bound. A zero field takes the value in DefaultLimits. Whatever the caps, no
// buffer is allocated for more bytes than the input actually holds: when its size is
// known (NewFile, Open) every length and count is checked against the bytes remaining,
// and with a plain io.Reader buffers grow only as bytes arrive.
type Limits struct {
	MaxTensors     uint64 // tensor infos
	MaxKVs         uint64 // KV pairs
	MaxStringLen   uint64 // bytes in one key, name or string value
	MaxArrayLen    uint64 // elements in one array value
	MaxArrayDepth  int    // nesting of arrays of arrays (1: no nesting)
	MaxHeaderBytes int64  // bytes from the start of the file to the data section
}

// DefaultLimits are far above any real model (the largest vocabularies have ~256k
// tokens, a header of about 10 MB; the largest models a few tens of thousands of
// tensors; 4M elements in an array are 16 of the largest vocabularies). The header cap bounds memory: decoded, a header costs up to about four
// times its bytes (an array of empty strings, 8 bytes each in the file, is 16 bytes of
// Go string each, and its slice grows by doubling), so 64 MiB keeps a hostile header
// to a few hundred MB, where 1 GiB (the cap until issue 14) let one crash a program
// under ulimit -v 2000000.
var DefaultLimits = Limits{
	MaxTensors:     1 << 22,
	MaxKVs:         1 << 20,
	MaxStringLen:   1 << 26,
	MaxArrayLen:    1 << 22,
	MaxArrayDepth:  4,
	MaxHeaderBytes: 64 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxTensors != 0 {
		d.MaxTensors = l.MaxTensors
	}
	if l.MaxKVs != 0 {
		d.MaxKVs = l.MaxKVs
	}
	if l.MaxStringLen != 0 {
		d.MaxStringLen = l.MaxStringLen
	}
	if l.MaxArrayLen != 0 {
		d.MaxArrayLen = l.MaxArrayLen
	}
	if l.MaxArrayDepth != 0 {
		d.MaxArrayDepth = l.MaxArrayDepth
	}
	if l.MaxHeaderBytes != 0 {
		d.MaxHeaderBytes = l.MaxHeaderBytes
	}
	return d
}

// ReadHeader reads a GGUF header with DefaultLimits; see Limits.ReadHeader.
func ReadHeader(r io.Reader) (*Header, error) { return Limits{}.ReadHeader(r) }

// ReadHeader reads the header, KVs and tensor infos from r and consumes the padding
// up to the data section, and not one byte more: the tensor data follows on r (see
// NewDataReader). Tensor offsets are checked for alignment and overflow but, the
// input size being unknown, not against the end of the data.
//
// ReadHeader reads r field by field; wrap an unbuffered reader (a pipe, an *os.File)
// in a bufio.Reader and keep reading the data from that bufio.Reader.
func (l Limits) ReadHeader(r io.Reader) (*Header, error) {
	d := &decoder{r: r, size: -1, lim: l.withDefaults()}
	return d.header()
}

// decoder parses a header from r; size is the number of bytes r holds from the
// current position when known, else -1.
type decoder struct {
	r    io.Reader
	pos  int64
	size int64
	lim  Limits
	buf  [8]byte

	key    string // the KV being read, for errors
	tensor string // the tensor being read, for errors
}

func (d *decoder) errAt(kind error, off int64, format string, args ...any) *Error {
	return &Error{Kind: kind, Offset: off, Key: d.key, Tensor: d.tensor, Msg: fmt.Sprintf(format, args...)}
}

// capErr is an ErrLimit error about the cap in the Limits field named field.
func (d *decoder) capErr(field string, off int64, format string, args ...any) *Error {
	e := d.errAt(ErrLimit, off, format, args...)
	e.Limit = field
	return e
}

// remaining returns the bytes left in the input, or MaxInt64 when unknown.
func (d *decoder) remaining() int64 {
	if d.size < 0 {
		return math.MaxInt64
	}
	return d.size - d.pos
}

// need fails unless n more bytes (of what) can be read.
func (d *decoder) need(n uint64, what string) error {
	if d.size >= 0 && n > uint64(d.remaining()) {
		return d.errAt(ErrFormat, d.pos, "%s needs %d bytes but the file has only %d left (truncated or corrupt length)",
			what, n, d.remaining())
	}
	if n > uint64(d.lim.MaxHeaderBytes) || d.pos+int64(n) > d.lim.MaxHeaderBytes {
		return d.capErr("MaxHeaderBytes", d.pos, "%s of %d bytes would take the header past the %d-byte cap (Limits.MaxHeaderBytes)",
			what, n, d.lim.MaxHeaderBytes)
	}
	return nil
}

func (d *decoder) readFull(p []byte, what string) error {
	if err := d.need(uint64(len(p)), what); err != nil {
		return err
	}
	n, err := io.ReadFull(d.r, p)
	start := d.pos
	d.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &Error{Kind: ErrFormat, Offset: start, Key: d.key, Tensor: d.tensor,
				Msg: fmt.Sprintf("truncated: %s needs %d bytes, input ended after %d", what, len(p), n),
				Err: io.ErrUnexpectedEOF}
		}
		return &Error{Kind: ErrFormat, Offset: start, Key: d.key, Tensor: d.tensor,
			Msg: "reading " + what, Err: err}
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.readFull(d.buf[:4], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d.buf[:4]), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.readFull(d.buf[:8], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.buf[:8]), nil
}

// chunk is the largest buffer allocated ahead of the bytes that fill it.
const chunk = 64 << 10

// bytes reads n bytes, growing the buffer only as bytes arrive.
func (d *decoder) bytes(n uint64, what string) ([]byte, error) {
	if err := d.need(n, what); err != nil {
		return nil, err
	}
	if n <= chunk || d.size >= 0 {
		b := make([]byte, n)
		return b, d.readFull(b, what)
	}
	b := make([]byte, 0, chunk)
	for uint64(len(b)) < n {
		step := min(n-uint64(len(b)), uint64(max(len(b), chunk)))
		if cap(b)-len(b) < int(step) {
			nb := make([]byte, len(b), len(b)+int(step))
			copy(nb, b)
			b = nb
		}
		if err := d.readFull(b[len(b):len(b)+int(step)], what); err != nil {
			return nil, err
		}
		b = b[:len(b)+int(step)]
	}
	return b, nil
}

func (d *decoder) str(what string) (string, error) {
	at := d.pos
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > d.lim.MaxStringLen {
		return "", d.capErr("MaxStringLen", at, "%s length %d exceeds the %d-byte cap (Limits.MaxStringLen)", what, n, d.lim.MaxStringLen)
	}
	b, err := d.bytes(n, what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) header() (*Header, error) {
	var magic [4]byte
	if err := d.readFull(magic[:], "magic"); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		return nil, d.errAt(ErrFormat, 0, "bad magic %q, expected %q", magic[:], Magic)
	}
	ver, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case ver == 2 || ver == 3:
	case ver == 1:
		return nil, d.errAt(ErrUnsupported, 4, "GGUF version 1 is not supported (only 2 and 3)")
	case ver&0xFFFF == 0 && ver != 0:
		return nil, d.errAt(ErrUnsupported, 4, "version field 0x%08x: a big-endian GGUF file, only little-endian is supported", ver)
	default:
		return nil, d.errAt(ErrUnsupported, 4, "GGUF version %d is not supported (only 2 and 3)", ver)
	}
	h := &Header{Version: ver}
	nt, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nkv, err := d.u64("KV count")
	if err != nil {
		return nil, err
	}
	if nt > d.lim.MaxTensors {
		return nil, d.capErr("MaxTensors", 8, "tensor count %d exceeds the cap of %d (Limits.MaxTensors)", nt, d.lim.MaxTensors)
	}
	if nkv > d.lim.MaxKVs {
		return nil, d.capErr("MaxKVs", 16, "KV count %d exceeds the cap of %d (Limits.MaxKVs)", nkv, d.lim.MaxKVs)
	}
	// Smallest encodings: a KV is a key length, a type and one byte (13 bytes); a
	// tensor info a name length, n_dims, type and offset (24 bytes).
	if rem := d.remaining(); nkv > uint64(rem)/13 || nt > uint64(rem)/24 || nkv*13+nt*24 > uint64(rem) {
		return nil, d.errAt(ErrFormat, 8, "%d KVs and %d tensor infos cannot fit in the %d bytes left", nkv, nt, rem)
	}

	h.KVs = make([]KV, 0, min(nkv, 1024))
	seen := make(map[string]struct{}, min(nkv, 1024))
	for i := uint64(0); i < nkv; i++ {
		d.key = ""
		at := d.pos
		key, err := d.str(fmt.Sprintf("key of KV #%d", i))
		if err != nil {
			return nil, err
		}
		d.key = key
		if _, dup := seen[key]; dup {
			return nil, d.errAt(ErrFormat, at, "duplicate key (KV #%d)", i)
		}
		seen[key] = struct{}{}
		at = d.pos
		t, err := d.u32("value type")
		if err != nil {
			return nil, err
		}
		v, err := d.value(ValueType(t), at, 0)
		if err != nil {
			return nil, err
		}
		h.KVs = append(h.KVs, KV{Key: key, Value: v})
	}
	d.key = ""
	align, aerr := alignmentOf(h.KVs)
	if aerr != nil {
		return nil, aerr
	}
	h.Alignment = align

	h.Tensors = make([]TensorInfo, 0, min(nt, 1024))
	names := make(map[string]struct{}, min(nt, 1024))
	for i := uint64(0); i < nt; i++ {
		d.tensor = fmt.Sprintf("#%d", i)
		at := d.pos
		name, err := d.str("tensor name")
		if err != nil {
			return nil, err
		}
		if len(name) > MaxNameLen {
			return nil, d.errAt(ErrFormat, at, "name of %d bytes is longer than %d (%s)", len(name), MaxNameLen, quoteShort(name))
		}
		d.tensor = name
		if _, dup := names[name]; dup {
			return nil, d.errAt(ErrFormat, at, "duplicate tensor name (tensor info #%d)", i)
		}
		names[name] = struct{}{}
		at = d.pos
		nd, err := d.u32("n_dims")
		if err != nil {
			return nil, err
		}
		if nd > MaxDims {
			return nil, d.errAt(ErrFormat, at, "n_dims is %d, at most %d allowed", nd, MaxDims)
		}
		ti := TensorInfo{Name: name, Dims: make([]int64, nd)}
		for j := range ti.Dims {
			at = d.pos
			v, err := d.u64("dimension")
			if err != nil {
				return nil, err
			}
			if v > math.MaxInt64 {
				return nil, d.errAt(ErrFormat, at, "dimension %d is %d, above 2^63-1", j, v)
			}
			ti.Dims[j] = int64(v)
		}
		at = d.pos
		tt, err := d.u32("ggml type")
		if err != nil {
			return nil, err
		}
		ti.Type = TensorType(tt)
		if !ti.Type.Known() {
			return nil, d.errAt(ErrUnsupported, at, "unknown ggml type %d", tt)
		}
		size, serr := ti.Size()
		if serr != nil {
			return nil, d.errAt(ErrFormat, at, "%v", serr)
		}
		at = d.pos
		off, err := d.u64("offset")
		if err != nil {
			return nil, err
		}
		if off%uint64(align) != 0 {
			return nil, d.errAt(ErrFormat, at, "offset %d is not a multiple of the alignment %d", off, align)
		}
		if off > maxDataEnd || uint64(size) > maxDataEnd-off {
			return nil, d.errAt(ErrFormat, at, "offset %d + size %d is beyond any possible file", off, size)
		}
		ti.Offset = int64(off)
		h.Tensors = append(h.Tensors, ti)
	}
	d.tensor = ""
	h.InfoEnd = d.pos
	h.DataOffset = alignUp(d.pos, align)
	if h.DataOffset > d.lim.MaxHeaderBytes {
		return nil, d.capErr("MaxHeaderBytes", d.pos, "data section at %d (alignment %d) is past the %d-byte header cap (Limits.MaxHeaderBytes)",
			h.DataOffset, align, d.lim.MaxHeaderBytes)
	}
	if err := d.skipPadding(h.DataOffset-d.pos, len(h.Tensors) == 0); err != nil {
		return nil, err
	}
	return h, nil
}

// maxDataEnd bounds offsets and sizes so that sums with the data offset and padding
// never overflow an int64.
const maxDataEnd = 1 << 62

// skipPadding consumes n padding bytes; at the end of a file without tensors the
// padding may be missing, in part or in whole.
func (d *decoder) skipPadding(n int64, optional bool) error {
	if n == 0 {
		return nil
	}
	if d.size >= 0 && d.remaining() < n {
		if optional {
			return nil
		}
		return d.errAt(ErrFormat, d.pos, "truncated: %d bytes of padding to the data section, only %d left", n, d.remaining())
	}
	got, err := io.CopyN(io.Discard, d.r, n)
	d.pos += got
	if err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return &Error{Kind: ErrFormat, Offset: d.pos, Msg: fmt.Sprintf("truncated: %d bytes of padding to the data section, input ended after %d", n, got), Err: io.ErrUnexpectedEOF}
	}
	return nil
}

// value reads one value of type t (whose type code is at offset at).
func (d *decoder) value(t ValueType, at int64, depth int) (Value, error) {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeFloat32,
		TypeUint64, TypeInt64, TypeFloat64:
		sz := t.Size()
		if err := d.readFull(d.buf[:sz], t.String()+" value"); err != nil {
			return Value{}, err
		}
		var bits uint64
		switch sz {
		case 1:
			bits = uint64(d.buf[0])
		case 2:
			bits = uint64(binary.LittleEndian.Uint16(d.buf[:2]))
		case 4:
			bits = uint64(binary.LittleEndian.Uint32(d.buf[:4]))
		case 8:
			bits = binary.LittleEndian.Uint64(d.buf[:8])
		}
		return Value{typ: t, ok: true, bits: bits}, nil
	case TypeBool:
		vat := d.pos
		if err := d.readFull(d.buf[:1], "bool value"); err != nil {
			return Value{}, err
		}
		if d.buf[0] > 1 {
			return Value{}, d.errAt(ErrFormat, vat, "bool byte is %d, expected 0 or 1", d.buf[0])
		}
		return Value{typ: t, ok: true, bits: uint64(d.buf[0])}, nil
	case TypeString:
		s, err := d.str("string value")
		if err != nil {
			return Value{}, err
		}
		return Value{typ: t, ok: true, str: s}, nil
	case TypeArray:
		return d.array(depth + 1)
	}
	return Value{}, d.errAt(ErrUnsupported, at, "unknown value type %d", uint32(t))
}

func (d *decoder) array(depth int) (Value, error) {
	if depth > d.lim.MaxArrayDepth {
		return Value{}, d.capErr("MaxArrayDepth", d.pos, "arrays nested %d deep, the cap is %d (Limits.MaxArrayDepth)", depth, d.lim.MaxArrayDepth)
	}
	at := d.pos
	et32, err := d.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	et := ValueType(et32)
	if !et.Valid() {
		return Value{}, d.errAt(ErrUnsupported, at, "unknown array element type %d", et32)
	}
	at = d.pos
	n, err := d.u64("array length")
	if err != nil {
		return Value{}, err
	}
	if n > d.lim.MaxArrayLen {
		return Value{}, d.capErr("MaxArrayLen", at, "array of %d %s exceeds the cap of %d elements (Limits.MaxArrayLen)", n, et, d.lim.MaxArrayLen)
	}
	minSize := uint64(et.Size())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if rem := d.remaining(); n > uint64(rem)/minSize {
		return Value{}, d.errAt(ErrFormat, at, "array of %d %s needs at least %d bytes, only %d left", n, et, n*minSize, rem)
	}
	switch et {
	case TypeString:
		a := make([]string, 0, min(n, 4096))
		for i := uint64(0); i < n; i++ {
			s, err := d.str("array string")
			if err != nil {
				return Value{}, err
			}
			a = appendUpTo(a, s, n)
		}
		return arrayValue(a), nil
	case TypeArray:
		a := make([]Value, 0, min(n, 4096))
		for i := uint64(0); i < n; i++ {
			v, err := d.array(depth + 1)
			if err != nil {
				return Value{}, err
			}
			a = appendUpTo(a, v, n)
		}
		return arrayValue(a), nil
	}
	raw, err := d.bytes(n*minSize, "array of "+et.String())
	if err != nil {
		return Value{}, err
	}
	return decodeFixedArray(et, raw, at, d)
}

// appendUpTo appends v to a slice that will hold n elements: it doubles up to exactly
// n, so the slice costs what the elements read so far need and at most n, and the
// garbage of its growth is less than the final slice (append grows by a quarter past
// 256 elements and rounds up, several large blocks that a limited address space, as
// under ulimit -v, cannot hold at once).
func appendUpTo[T any](a []T, v T, n uint64) []T {
	if len(a) == cap(a) {
		b := make([]T, len(a), min(n, 2*uint64(cap(a))+1))
		copy(b, a)
		a = b
	}
	return append(a, v)
}

func decodeFixedArray(et ValueType, raw []byte, at int64, d *decoder) (Value, error) {
	switch et {
	case TypeUint8:
		return arrayValue(raw), nil
	case TypeBool:
		a := make([]bool, len(raw))
		for i, b := range raw {
			if b > 1 {
				return Value{}, d.errAt(ErrFormat, at+8+int64(i), "bool array element %d is %d, expected 0 or 1", i, b)
			}
			a[i] = b == 1
		}
		return arrayValue(a), nil
	case TypeInt8:
		return decodeNumbers[int8](raw), nil
	case TypeUint16:
		return decodeNumbers[uint16](raw), nil
	case TypeInt16:
		return decodeNumbers[int16](raw), nil
	case TypeUint32:
		return decodeNumbers[uint32](raw), nil
	case TypeInt32:
		return decodeNumbers[int32](raw), nil
	case TypeFloat32:
		return decodeNumbers[float32](raw), nil
	case TypeUint64:
		return decodeNumbers[uint64](raw), nil
	case TypeInt64:
		return decodeNumbers[int64](raw), nil
	case TypeFloat64:
		return decodeNumbers[float64](raw), nil
	}
	return Value{}, d.errAt(ErrUnsupported, at, "unknown array element type %d", uint32(et))
}

// decodeNumbers is an array of little-endian numbers; raw holds a whole number of them.
func decodeNumbers[T int8 | uint16 | int16 | uint32 | int32 | float32 | uint64 | int64 | float64](raw []byte) Value {
	a := make([]T, len(raw)/binary.Size(T(0)))
	binary.Decode(raw, binary.LittleEndian, a)
	return arrayValue(a)
}

// newBufferedDecoder reads from a ReaderAt of known size.
func newBufferedDecoder(ra io.ReaderAt, size int64, lim Limits) *decoder {
	return &decoder{r: bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), 64<<10), size: size, lim: lim.withDefaults()}
}
