package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apr-go/apr/lib/dtype"
)

// TensorSpec is what the writer needs to know of a tensor before its data.
type TensorSpec struct {
	Name  string
	DType dtype.DType
	Shape []int64
}

// Tensor is a tensor with its data in memory, for Encode.
type Tensor struct {
	TensorSpec
	Data []byte
}

// Spec returns the TensorSpec part of t.
func (t TensorInfo) Spec() TensorSpec {
	return TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}
}

// SpecSize returns the byte count of a tensor of dtype d and shape, with the crate's
// rules (the total bit count must be whole bytes), or an InvalidTensor error.
func SpecSize(s TensorSpec) (int64, error) {
	_, st, ok := lookupDType(s.DType)
	if !ok {
		return 0, tensorErr(InvalidTensor, s.Name, -1, "dtype %v has no SafeTensors name", s.DType)
	}
	for _, d := range s.Shape {
		if d < 0 {
			return 0, tensorErr(InvalidTensor, s.Name, -1, "negative dimension %d in shape %v", d, s.Shape)
		}
	}
	size, k := byteSize(s.Shape, st.bits)
	switch {
	case k == MisalignedSlice:
		return 0, tensorErr(InvalidTensor, s.Name, -1, "shape %v of %v is not a whole number of bytes", s.Shape, s.DType)
	case k != 0 || size > math.MaxInt64:
		return 0, tensorErr(InvalidTensor, s.Name, -1, "shape %v of %v overflows", s.Shape, s.DType)
	}
	return int64(size), nil
}

// Layout plans a file as the crate's serializer does: tensors sorted by dtype (the
// crate's enum order, descending: U64, I64, F64, F32, ..., F4, BOOL) then by name
// (byte order), with contiguous offsets from 0, and the header size N (the compact
// JSON padded with spaces to a multiple of 8). The specs may come in any order; names
// must be unique, valid UTF-8 and not "__metadata__", as must metadata keys.
func Layout(meta Metadata, specs []TensorSpec) (*Header, error) {
	type item struct {
		s    TensorSpec
		name string
		rank int
		size int64
	}
	items := make([]item, len(specs))
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		if !utf8.ValidString(s.Name) {
			return nil, tensorErr(InvalidTensor, s.Name, -1, "name is not valid UTF-8")
		}
		if s.Name == MetadataKey {
			return nil, tensorErr(InvalidTensor, s.Name, -1, "a tensor cannot be named %s", MetadataKey)
		}
		if seen[s.Name] {
			return nil, tensorErr(InvalidTensor, s.Name, -1, "duplicate tensor name")
		}
		seen[s.Name] = true
		size, err := SpecSize(s) // fails for a dtype without a SafeTensors name
		if err != nil {
			return nil, err
		}
		name, st, _ := lookupDType(s.DType)
		items[i] = item{s, name, st.rank, size}
	}
	keys := make(map[string]bool, len(meta))
	for _, e := range meta {
		if !utf8.ValidString(e.Key) || !utf8.ValidString(e.Value) {
			return nil, errf(InvalidTensor, -1, "metadata key %q or its value is not valid UTF-8", e.Key)
		}
		if keys[e.Key] {
			return nil, errf(InvalidTensor, -1, "duplicate metadata key %q", e.Key)
		}
		keys[e.Key] = true
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].rank != items[j].rank {
			return items[i].rank > items[j].rank
		}
		return items[i].s.Name < items[j].s.Name
	})
	h := &Header{Metadata: meta, Tensors: make([]TensorInfo, len(items))}
	var off int64
	for i, it := range items {
		if it.size > math.MaxInt64-off {
			return nil, tensorErr(InvalidTensor, it.s.Name, -1, "total data size overflows")
		}
		h.Tensors[i] = TensorInfo{
			Name: it.s.Name, DType: it.s.DType, DTypeName: it.name,
			Shape: append([]int64{}, it.s.Shape...), Begin: off, End: off + it.size,
		}
		off += it.size
	}
	h.DataSize = off
	h.HeaderSize = int64(len(appendHeaderJSON(nil, h)))
	h.HeaderSize += (8 - h.HeaderSize%8) % 8
	return h, nil
}

// appendHeaderJSON writes the compact header JSON as serde_json does for the crate's
// Metadata: "__metadata__" first (when present), then the tensors in h's order.
func appendHeaderJSON(b []byte, h *Header) []byte {
	b = append(b, '{')
	first := true
	if h.Metadata != nil {
		b = appendJSONString(b, MetadataKey)
		b = append(b, ':', '{')
		for i, e := range h.Metadata {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e.Key)
			b = append(b, ':')
			b = appendJSONString(b, e.Value)
		}
		b = append(b, '}')
		first = false
	}
	for _, t := range h.Tensors {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, t.Name)
		b = append(b, `:{"dtype":`...)
		b = appendJSONString(b, t.DTypeName)
		b = append(b, `,"shape":[`...)
		for i, d := range t.Shape {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendInt(b, t.Begin, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, t.End, 10)
		b = append(b, ']', '}')
	}
	return append(b, '}')
}

// The characters that serde_json and Python's json both escape as a backslash and
// a letter (or themselves): namedEscapes[k] is written as '\\', escapedAs[k].
const (
	namedEscapes = "\"\\\b\t\n\f\r"
	escapedAs    = "\"\\btnfr"
)

// appendJSONString quotes s as serde_json does: only '"', '\\' and C0 controls are
// escaped (\b \t \n \f \r by name, the rest as lowercase \u00XX); everything else,
// including DEL, U+2028/9 and non-ASCII, is written as raw UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		if k := strings.IndexByte(namedEscapes, c); k >= 0 {
			b = append(b, '\\', escapedAs[k])
		} else {
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// MarshalHeader returns the first 8+HeaderSize bytes of the file h describes: the
// length prefix and the header JSON in h's tensor order, padded with spaces. h's
// offsets must be contiguous in that order (as Layout and the readers give them).
func (h *Header) MarshalHeader() ([]byte, error) {
	var off int64
	for _, t := range h.Tensors {
		if t.Begin != off || t.End < t.Begin {
			return nil, tensorErr(InvalidOffset, t.Name, -1, "data_offsets [%d, %d]: expected begin %d", t.Begin, t.End, off)
		}
		off = t.End
	}
	if off != h.DataSize {
		return nil, errf(InvalidOffset, -1, "tensors end at %d but DataSize is %d", off, h.DataSize)
	}
	b := make([]byte, 8, 8+h.HeaderSize+8)
	b = appendHeaderJSON(b, h)
	for (len(b)-8)%8 != 0 {
		b = append(b, ' ')
	}
	n := int64(len(b) - 8)
	if n > MaxHeaderSize {
		return nil, errf(HeaderTooLarge, 0, "header of %d bytes is over the limit of %d", n, MaxHeaderSize)
	}
	binary.LittleEndian.PutUint64(b, uint64(n))
	return b, nil
}

// Writer writes a SafeTensors file to a stream: the header first (it needs every
// tensor's dtype and shape), then the data in the writer's order, Header().Tensors.
type Writer struct {
	w    io.Writer
	h    *Header
	idx  int   // tensor being written
	done int64 // data bytes written
	err  error
}

// NewWriter plans the layout of meta and specs (see Layout), writes the header to w
// and returns a Writer that takes the tensor data.
func NewWriter(w io.Writer, meta Metadata, specs []TensorSpec) (*Writer, error) {
	h, err := Layout(meta, specs)
	if err != nil {
		return nil, err
	}
	return NewWriterHeader(w, h)
}

// NewWriterHeader writes h as it is (its tensor order and offsets, which must be
// contiguous) and returns a Writer for its data.
func NewWriterHeader(w io.Writer, h *Header) (*Writer, error) {
	hb, err := h.MarshalHeader()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hb); err != nil {
		return nil, err
	}
	return &Writer{w: w, h: h}, nil
}

// Header returns the layout being written: Tensors lists the order the data must come in.
func (w *Writer) Header() *Header { return w.h }

// Write writes data bytes, in the header's tensor order, with no separation between
// tensors. Writing past the end of the last tensor is an error.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if int64(len(p)) > w.h.DataSize-w.done {
		return 0, errf(InvalidTensor, w.h.DataStart()+w.done, "%d bytes written past the end of the data (%d bytes)", int64(len(p))-(w.h.DataSize-w.done), w.h.DataSize)
	}
	n, err := w.w.Write(p)
	w.done += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// WriteTensor writes the whole data of the next tensor in Header().Tensors (zero-size
// ones included), which must be called name and have exactly its size.
func (w *Writer) WriteTensor(name string, data []byte) error {
	if w.idx >= len(w.h.Tensors) {
		return tensorErr(InvalidTensor, name, w.h.DataStart()+w.done, "no tensor left to write")
	}
	t := w.h.Tensors[w.idx]
	if t.Name != name {
		return tensorErr(InvalidTensor, name, w.h.DataStart()+w.done, "out of order: expected tensor %q next", t.Name)
	}
	if t.Begin != w.done {
		return tensorErr(InvalidTensor, name, w.h.DataStart()+w.done, "previous tensor incomplete: at data offset %d, expected %d", w.done, t.Begin)
	}
	if int64(len(data)) != t.Size() {
		return tensorErr(InvalidTensor, name, w.h.DataStart()+w.done, "%d bytes of data, expected %d for %s %v", len(data), t.Size(), t.DTypeName, t.Shape)
	}
	w.idx++
	_, err := w.Write(data)
	return err
}

// Close checks that all the data was written. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.done != w.h.DataSize {
		return errf(InvalidTensor, w.h.DataStart()+w.done, "only %d of %d data bytes written", w.done, w.h.DataSize)
	}
	return nil
}

// Encode writes a whole file from tensors in memory, as the crate's serialize does.
// The data of each tensor must have exactly its size.
func Encode(w io.Writer, meta Metadata, tensors []Tensor) error {
	specs := make([]TensorSpec, len(tensors))
	data := make(map[string][]byte, len(tensors))
	for i, t := range tensors {
		specs[i] = t.TensorSpec
		data[t.Name] = t.Data
	}
	sw, err := NewWriter(w, meta, specs)
	if err != nil {
		return err
	}
	for _, t := range sw.Header().Tensors {
		if err := sw.WriteTensor(t.Name, data[t.Name]); err != nil {
			return err
		}
	}
	return sw.Close()
}

// String formats a spec for messages.
func (s TensorSpec) String() string { return fmt.Sprintf("%q %v %v", s.Name, s.DType, s.Shape) }
