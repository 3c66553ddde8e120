package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Validate checks h as the writer does, before any byte is written: version 2 or 3 (0
// means 3); every KV with a non-empty key free of NUL bytes, unique, and a valid value
// (no arrays of arrays: llama.cpp cannot read them); general.alignment, if present, a
// u32 power of two; tensor names of 1 to 63 bytes without NUL, unique; 1 to 4
// non-negative dims; known ggml types with ne0 a whole number of blocks; offsets in
// info order with no gaps (each tensor at the previous one's end rounded up to the
// alignment, the first at 0; Layout sets them so); Alignment, InfoEnd and DataOffset
// zero or equal to what Layout computes.
func (h *Header) Validate() error {
	_, err := h.plan()
	return err
}

// Layout sets each tensor's Offset (packed in info order), and Alignment, InfoEnd and
// DataOffset, from the KVs and tensor infos, and Version to 3 if it is 0. It fails as
// Validate does.
func (h *Header) Layout() error {
	align, aerr := alignmentOf(h.KVs)
	if aerr != nil {
		aerr.Kind = ErrInvalid
		return aerr
	}
	var off int64
	for i := range h.Tensors {
		t := &h.Tensors[i]
		n, err := t.Size()
		if err != nil {
			return &Error{Kind: ErrInvalid, Offset: -1, Tensor: t.Name, Msg: err.Error()}
		}
		t.Offset = off
		if n > maxDataEnd-off {
			return &Error{Kind: ErrInvalid, Offset: -1, Tensor: t.Name, Msg: "data section too large"}
		}
		off = alignUp(off+n, align)
	}
	h.Alignment, h.InfoEnd, h.DataOffset = 0, 0, 0
	p, err := h.plan()
	if err != nil {
		return err
	}
	h.Version, h.Alignment, h.InfoEnd, h.DataOffset = p.version, p.align, p.infoEnd, p.dataOffset
	return nil
}

type plan struct {
	version    uint32
	align      int64
	infoEnd    int64
	dataOffset int64
	sizes      []int64
}

func invalid(key, tensor, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalid, Offset: -1, Key: key, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
}

func (h *Header) plan() (*plan, error) {
	p := &plan{version: h.Version}
	switch h.Version {
	case 0:
		p.version = Version
	case 2, 3:
	default:
		return nil, invalid("", "", "version %d: only 2 and 3 can be written", h.Version)
	}
	size := int64(4 + 4 + 8 + 8)
	seen := make(map[string]struct{}, len(h.KVs))
	for i := range h.KVs {
		kv := &h.KVs[i]
		if kv.Key == "" {
			return nil, invalid("", "", "KV #%d has an empty key", i)
		}
		if strings.IndexByte(kv.Key, 0) >= 0 {
			return nil, invalid(kv.Key, "", "key contains a NUL byte")
		}
		if _, dup := seen[kv.Key]; dup {
			return nil, invalid(kv.Key, "", "duplicate key (KV #%d)", i)
		}
		seen[kv.Key] = struct{}{}
		n, err := valueSize(kv.Value, 0)
		if err != nil {
			return nil, invalid(kv.Key, "", "%v", err)
		}
		size += 8 + int64(len(kv.Key)) + 4 + n
	}
	align, aerr := alignmentOf(h.KVs)
	if aerr != nil {
		aerr.Kind = ErrInvalid
		return nil, aerr
	}
	p.align = align
	if h.Alignment != 0 && h.Alignment != align {
		return nil, invalid("", "", "Alignment is %d but the KVs give %d", h.Alignment, align)
	}
	names := make(map[string]struct{}, len(h.Tensors))
	p.sizes = make([]int64, len(h.Tensors))
	var off int64
	for i := range h.Tensors {
		t := &h.Tensors[i]
		switch {
		case t.Name == "":
			return nil, invalid("", fmt.Sprintf("#%d", i), "empty tensor name")
		case len(t.Name) > MaxNameLen:
			return nil, invalid("", t.Name, "name is %d bytes, llama.cpp accepts at most %d", len(t.Name), MaxNameLen)
		case strings.IndexByte(t.Name, 0) >= 0:
			return nil, invalid("", t.Name, "name contains a NUL byte")
		}
		if _, dup := names[t.Name]; dup {
			return nil, invalid("", t.Name, "duplicate tensor name (tensor #%d)", i)
		}
		names[t.Name] = struct{}{}
		if len(t.Dims) < 1 || len(t.Dims) > MaxDims {
			return nil, invalid("", t.Name, "%d dims, must be 1 to %d", len(t.Dims), MaxDims)
		}
		if !t.Type.Known() {
			return nil, invalid("", t.Name, "unknown ggml type %d", uint32(t.Type))
		}
		n, err := t.Size()
		if err != nil {
			return nil, invalid("", t.Name, "%v", err)
		}
		if t.Offset != off {
			return nil, invalid("", t.Name, "offset %d, expected %d: offsets must follow info order with no gaps (see Layout)", t.Offset, off)
		}
		if n > maxDataEnd-off {
			return nil, invalid("", t.Name, "data section too large")
		}
		p.sizes[i] = n
		off = alignUp(off+n, align)
		size += 8 + int64(len(t.Name)) + 4 + 8*int64(len(t.Dims)) + 4 + 8
	}
	p.infoEnd = size
	p.dataOffset = alignUp(size, align)
	if h.InfoEnd != 0 && h.InfoEnd != p.infoEnd {
		return nil, invalid("", "", "InfoEnd is %d but the header encodes to %d bytes", h.InfoEnd, p.infoEnd)
	}
	if h.DataOffset != 0 && h.DataOffset != p.dataOffset {
		return nil, invalid("", "", "DataOffset is %d but the data section starts at %d", h.DataOffset, p.dataOffset)
	}
	return p, nil
}

// valueSize returns the encoded size of v (without its type code) and checks that v
// can be written.
func valueSize(v Value, depth int) (int64, error) {
	if !v.ok {
		return 0, fmt.Errorf("invalid (zero) Value")
	}
	switch v.typ {
	case TypeString:
		return 8 + int64(len(v.str)), nil
	case TypeArray:
		if depth > 0 || v.elem == TypeArray {
			return 0, fmt.Errorf("array of arrays: valid GGUF, but llama.cpp cannot read it, so it is not written")
		}
		n := int64(4 + 8)
		if a, ok := v.arr.([]string); ok {
			for _, s := range a {
				n += 8 + int64(len(s))
			}
			return n, nil
		}
		return n + int64(v.Len())*int64(v.elem.Size()), nil
	}
	if !v.typ.Valid() {
		return 0, fmt.Errorf("unknown value type %d", uint32(v.typ))
	}
	return int64(v.typ.Size()), nil
}

// EncodeHeader returns the encoded header: magic, counts, KVs, tensor infos and the
// zero padding up to the data section. It validates h first (see Validate).
func (h *Header) EncodeHeader() ([]byte, error) {
	p, err := h.plan()
	if err != nil {
		return nil, err
	}
	b := h.encode(p)
	return append(b, make([]byte, p.dataOffset-p.infoEnd)...), nil
}

// encode returns the header up to the end of the tensor infos, without the padding.
func (h *Header) encode(p *plan) []byte {
	b := make([]byte, 0, p.infoEnd)
	le := binary.LittleEndian
	b = append(b, Magic...)
	b = le.AppendUint32(b, p.version)
	b = le.AppendUint64(b, uint64(len(h.Tensors)))
	b = le.AppendUint64(b, uint64(len(h.KVs)))
	for i := range h.KVs {
		b = appendString(b, h.KVs[i].Key)
		b = le.AppendUint32(b, uint32(h.KVs[i].Value.typ))
		b = appendValue(b, h.KVs[i].Value)
	}
	for i := range h.Tensors {
		t := &h.Tensors[i]
		b = appendString(b, t.Name)
		b = le.AppendUint32(b, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			b = le.AppendUint64(b, uint64(d))
		}
		b = le.AppendUint32(b, uint32(t.Type))
		b = le.AppendUint64(b, uint64(t.Offset))
	}
	return b
}

// zeroChunk is the source of padding bytes.
var zeroChunk [32 << 10]byte

// writeZeros writes n zero bytes without allocating (alignments may be up to 2^31).
func writeZeros(w io.Writer, n int64) error {
	for n > 0 {
		c := min(n, int64(len(zeroChunk)))
		m, err := w.Write(zeroChunk[:c])
		if err == nil && int64(m) < c {
			err = io.ErrShortWrite
		}
		if err != nil {
			return err
		}
		n -= c
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v Value) []byte {
	le := binary.LittleEndian
	switch v.typ {
	case TypeUint8, TypeInt8, TypeBool:
		return append(b, byte(v.bits))
	case TypeUint16, TypeInt16:
		return le.AppendUint16(b, uint16(v.bits))
	case TypeUint32, TypeInt32, TypeFloat32:
		return le.AppendUint32(b, uint32(v.bits))
	case TypeUint64, TypeInt64, TypeFloat64:
		return le.AppendUint64(b, v.bits)
	case TypeString:
		return appendString(b, v.str)
	}
	b = le.AppendUint32(b, uint32(v.elem))
	b = le.AppendUint64(b, uint64(v.Len()))
	switch a := v.arr.(type) {
	case []uint8:
		b = append(b, a...)
	case []bool:
		for _, x := range a {
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	case []int8, []uint16, []int16, []uint32, []int32, []float32, []uint64, []int64, []float64:
		b, _ = binary.Append(b, le, a) // cannot fail: fixed-size numbers
	case []string:
		for _, s := range a {
			b = appendString(b, s)
		}
	case []Value:
		for _, e := range a {
			b = appendValue(b, e) // nested arrays: element encoding without a type code
		}
	}
	return b
}

// Writer writes a GGUF file: the header at NewWriter, then the tensor data in info
// order through Write or WriteTensor, each tensor zero-padded to the alignment (the
// last one too), as llama.cpp and gguf-py write it.
type Writer struct {
	w      io.Writer
	h      *Header
	p      *plan
	cur    int   // the tensor being written (len(sizes) when done)
	left   int64 // its bytes still to write
	err    error
	closed bool
	buf    []byte // ReadFrom's buffer
}

// NewWriter validates h (see Validate) and writes its header to w; on a validation
// error nothing is written. The Writer keeps h: do not change it while writing.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	p, err := h.plan()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(h.encode(p)); err != nil {
		return nil, err
	}
	if err := writeZeros(w, p.dataOffset-p.infoEnd); err != nil {
		return nil, err
	}
	wr := &Writer{w: w, h: h, p: p}
	if len(p.sizes) > 0 {
		wr.left = p.sizes[0]
	}
	return wr, nil
}

// finish writes the padding after the current tensor, whose bytes are all written,
// and moves to the next one.
func (w *Writer) finish() {
	n := w.p.sizes[w.cur]
	if err := writeZeros(w.w, alignUp(n, w.p.align)-n); err != nil {
		w.err = err
		return
	}
	w.cur++
	w.left = 0
	if w.cur < len(w.p.sizes) {
		w.left = w.p.sizes[w.cur]
	}
}

// Write writes tensor data: the tensors' bytes, concatenated in info order, without
// padding (the Writer inserts it; tensors of zero bytes are passed over). Writing past
// the last tensor is an error.
func (w *Writer) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		for w.err == nil && w.cur < len(w.p.sizes) && w.left == 0 {
			w.finish() // a tensor of zero bytes
		}
		if w.err != nil {
			return written, w.err
		}
		if w.closed || w.cur >= len(w.p.sizes) {
			w.err = invalid("", "", "%d bytes of tensor data beyond the last tensor", len(p))
			return written, w.err
		}
		n := min(int64(len(p)), w.left)
		m, err := w.w.Write(p[:n])
		written += m
		w.left -= int64(m)
		if err == nil && int64(m) < n {
			err = io.ErrShortWrite
		}
		if err != nil {
			w.err = err
			return written, err
		}
		p = p[n:]
		if w.left == 0 {
			w.finish()
		}
	}
	return written, w.err
}

// Wrote accounts for n bytes of tensor data that the caller put into the underlying
// writer itself (with copy_file_range, say), right after everything the Writer had
// written to it; the Writer then writes the padding that follows, as Write would.
// Counting past the last tensor is an error.
func (w *Writer) Wrote(n int64) error {
	for n > 0 {
		for w.err == nil && w.cur < len(w.p.sizes) && w.left == 0 {
			w.finish() // a tensor of zero bytes
		}
		if w.err != nil {
			return w.err
		}
		if w.closed || w.cur >= len(w.p.sizes) {
			w.err = invalid("", "", "%d bytes of tensor data beyond the last tensor", n)
			return w.err
		}
		m := min(n, w.left)
		w.left -= m
		n -= m
		if w.left == 0 {
			w.finish()
		}
	}
	return w.err
}

// ReadFrom copies tensor data from r until io.EOF, as Write does, through one buffer
// the Writer keeps, so io.Copy(w, r) allocates nothing per call.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	if w.buf == nil {
		w.buf = make([]byte, 256<<10)
	}
	var total int64
	for {
		n, rerr := r.Read(w.buf)
		if n > 0 {
			m, err := w.Write(w.buf[:n])
			total += int64(m)
			if err != nil {
				return total, err
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// WriteTensor writes the whole data of the next tensor in info order, which must be
// exactly its size (empty for a tensor with a zero dimension).
func (w *Writer) WriteTensor(data []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed || w.cur >= len(w.p.sizes) {
		return invalid("", "", "WriteTensor after the last tensor")
	}
	t := &w.h.Tensors[w.cur]
	if w.left != w.p.sizes[w.cur] {
		return invalid("", t.Name, "WriteTensor in the middle of the tensor (%d of %d bytes written)", w.p.sizes[w.cur]-w.left, w.p.sizes[w.cur])
	}
	if int64(len(data)) != w.left {
		return invalid("", t.Name, "WriteTensor got %d bytes, the tensor has %d", len(data), w.left)
	}
	if len(data) == 0 {
		w.finish()
		return w.err
	}
	_, err := w.Write(data)
	return err
}

// Next returns the index of the tensor the next bytes belong to, and how many of its
// bytes are still to be written; -1 once every tensor is complete.
func (w *Writer) Next() (int, int64) {
	if w.cur >= len(w.p.sizes) {
		return -1, 0
	}
	return w.cur, w.left
}

// Close checks that every tensor was written in full. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	for w.err == nil && w.cur < len(w.p.sizes) && w.left == 0 {
		w.finish() // trailing tensors of zero bytes
	}
	if w.err != nil {
		return w.err
	}
	if w.cur < len(w.p.sizes) {
		t := &w.h.Tensors[w.cur]
		w.err = invalid("", t.Name, "closed with %d of its %d bytes unwritten (tensor %d of %d)",
			w.left, w.p.sizes[w.cur], w.cur+1, len(w.p.sizes))
	}
	return w.err
}
