package gguf

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// DataReader streams the tensor data that follows a header read by ReadHeader.
//
// Tensors come in ascending offset order, which is the info order in every file that
// llama.cpp and gguf-py write; a file whose tensors overlap is refused. Gaps and
// padding between tensors are skipped. Each tensor's bytes must be read through the
// reader Next returns before the next call to Next (what is left unread is skipped).
type DataReader struct {
	r     io.Reader
	h     *Header
	order []int
	sizes []int64
	next  int
	pos   int64 // bytes of the data section consumed
	cur   *tensorReader
	err   error
}

// NewDataReader returns a DataReader for the data section of h, read from r, which
// must be positioned at the start of the data section (as ReadHeader leaves it).
func NewDataReader(r io.Reader, h *Header) (*DataReader, error) {
	dr := &DataReader{r: r, h: h, order: make([]int, len(h.Tensors)), sizes: make([]int64, len(h.Tensors))}
	for i := range h.Tensors {
		dr.order[i] = i
		n, err := h.Tensors[i].Size()
		if err != nil {
			return nil, &Error{Kind: ErrInvalid, Offset: -1, Tensor: h.Tensors[i].Name, Msg: err.Error()}
		}
		dr.sizes[i] = n
	}
	h.sortByOffset(dr.order)
	var end int64
	for _, i := range dr.order {
		t := &h.Tensors[i]
		if dr.sizes[i] > 0 && t.Offset < end {
			return nil, &Error{Kind: ErrFormat, Offset: h.DataOffset + t.Offset, Tensor: t.Name,
				Msg: fmt.Sprintf("data at offset %d overlaps an earlier tensor ending at %d: cannot be streamed", t.Offset, end)}
		}
		end = max(end, t.Offset+dr.sizes[i])
	}
	return dr, nil
}

// Next skips to the next tensor in offset order and returns its index in h.Tensors
// and a reader of exactly its bytes; a read that hits the end of the input early fails
// with io.ErrUnexpectedEOF. After the last tensor it consumes the final padding, which
// must be there (llama.cpp's reader wants the padded data section), and returns io.EOF.
func (dr *DataReader) Next() (int, io.Reader, error) {
	if dr.err != nil {
		return -1, nil, dr.err
	}
	if dr.cur != nil {
		if err := dr.cur.drain(); err != nil {
			dr.err = err
			return -1, nil, err
		}
		dr.pos += dr.cur.n
		dr.cur = nil
	}
	if dr.next == len(dr.order) {
		pad := alignUp(dr.pos, dr.h.alignment()) - dr.pos
		got, err := io.CopyN(io.Discard, dr.r, pad)
		dr.pos += got
		if errors.Is(err, io.EOF) && len(dr.order) > 0 {
			dr.err = &Error{Kind: ErrFormat, Offset: dr.h.DataOffset + dr.pos,
				Msg: fmt.Sprintf("the final padding is cut short: %d of %d bytes (llama.cpp's writers pad every tensor)", got, pad),
				Err: io.ErrUnexpectedEOF}
			return -1, nil, dr.err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			dr.err = &Error{Kind: ErrFormat, Offset: dr.h.DataOffset + dr.pos, Msg: "reading final padding", Err: err}
			return -1, nil, dr.err
		}
		dr.err = io.EOF
		return -1, nil, io.EOF
	}
	i := dr.order[dr.next]
	dr.next++
	t := &dr.h.Tensors[i]
	if gap := t.Offset - dr.pos; gap > 0 {
		got, err := io.CopyN(io.Discard, dr.r, gap)
		dr.pos += got
		if err != nil {
			dr.err = &Error{Kind: ErrFormat, Offset: dr.h.DataOffset + dr.pos, Tensor: t.Name,
				Msg: fmt.Sprintf("truncated: input ended in the %d bytes before the tensor's data", gap), Err: io.ErrUnexpectedEOF}
			return -1, nil, dr.err
		}
	}
	dr.cur = &tensorReader{r: dr.r, n: dr.sizes[i], left: dr.sizes[i], name: t.Name, off: dr.h.DataOffset + t.Offset}
	if s, ok := dr.r.(Spanner); ok {
		return i, &spanReader{tensorReader: dr.cur, s: s}, nil
	}
	return i, dr.cur, nil
}

// A Spanner hands out its next bytes in place, as a mapped file can: WriteSpan
// writes up to n of them to w without a copy (fewer only at the end of the input,
// none after it). DataReader's tensor readers then pass the data on in place, as
// container.InPlace data.
type Spanner interface {
	io.Reader
	WriteSpan(w io.Writer, n int) (int, error)
}

// A Mapper is a Spanner over a file mapping that also lends its next bytes in place,
// for a consumer that reads them where they are (lib/quant's workers): TakeMapped(n)
// returns the next n bytes and moves past them (nil, and nothing consumed, when fewer
// are left); ReleaseMapped(n) gives back the pages of the first n of them once the
// consumer is done with them.
type Mapper interface {
	TakeMapped(n int) []byte
	ReleaseMapped(n int)
}

// spanReader is a tensorReader over a Spanner, which can also write itself out.
type spanReader struct {
	*tensorReader
	s Spanner
}

// Len is the number of the tensor's bytes not yet read.
func (t *spanReader) Len() int { return int(t.left) }

// TakeMapped returns the rest of the tensor in place when the input is a Mapper, and
// the tensor is then read; nil otherwise (read it instead).
func (t *spanReader) TakeMapped() []byte {
	m, ok := t.s.(Mapper)
	if !ok || t.left <= 0 || t.left > math.MaxInt {
		return nil
	}
	b := m.TakeMapped(int(t.left))
	if b != nil {
		t.left = 0
	}
	return b
}

// ReleaseMapped gives back the pages of the first n bytes TakeMapped returned.
func (t *spanReader) ReleaseMapped(n int) {
	if m, ok := t.s.(Mapper); ok {
		m.ReleaseMapped(n)
	}
}

// WriteTo writes the rest of the tensor to w in spans of the input.
func (t *spanReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for t.left > 0 {
		n, err := t.s.WriteSpan(w, int(min(t.left, 8<<20)))
		t.left -= int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, t.truncated()
		}
	}
	return total, nil
}

// sortByOffset sorts order, indexes of h.Tensors, by the tensors' data offsets,
// keeping the order of equal offsets.
func (h *Header) sortByOffset(order []int) {
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(h.Tensors[a].Offset, h.Tensors[b].Offset) })
}

func (h *Header) alignment() int64 {
	if h.Alignment > 0 {
		return h.Alignment
	}
	return DefaultAlignment
}

type tensorReader struct {
	r    io.Reader
	n    int64 // size
	left int64
	name string
	off  int64 // file offset of the data
}

func (t *tensorReader) Read(p []byte) (int, error) {
	if t.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.r.Read(p)
	t.left -= int64(n)
	if err == io.EOF {
		if t.left > 0 {
			return n, t.truncated()
		}
		err = nil
	} else if err != nil {
		err = &Error{Kind: ErrFormat, Offset: t.off + t.n - t.left, Tensor: t.name, Msg: "reading tensor data", Err: err}
	}
	return n, err
}

func (t *tensorReader) truncated() error {
	return &Error{Kind: ErrFormat, Offset: t.off + t.n - t.left, Tensor: t.name,
		Msg: fmt.Sprintf("truncated: input ended with %d of its %d bytes unread", t.left, t.n), Err: io.ErrUnexpectedEOF}
}

func (t *tensorReader) drain() error {
	if t.left == 0 {
		return nil
	}
	got, err := io.CopyN(io.Discard, t, t.left)
	_ = got
	return err
}

// Order returns the indexes into h.Tensors in the order Next returns them (ascending
// data offset), so that a converter can announce the tensors before reading any.
func (dr *DataReader) Order() []int { return slices.Clone(dr.order) }
