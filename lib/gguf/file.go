package gguf

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/internal/mmap"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// File is a GGUF file opened for random access.
type File struct {
	Header
	path  string
	ra    io.ReaderAt
	size  int64
	data  []byte // the whole file when memory-mapped
	close func() error
}

// Open opens and parses the GGUF file at path with DefaultLimits; see Limits.Open.
func Open(path string) (*File, error) { return Limits{}.Open(path) }

// Open opens and parses the GGUF file at path. On unix the file is memory-mapped and
// TensorData returns slices of the mapping; elsewhere (js/wasm, wasip1, windows) it is
// read with ReadAt. Errors name the path. As with any mapping, the file must not be
// truncated by someone else while it is open.
//
// Bytes after the last tensor (trailing data, or a last tensor's padding that is
// missing) are not an error; f.DataOffset+f.DataSize() == f.Size() holds for a file
// laid out exactly as llama.cpp writes it.
func (l Limits) Open(path string) (*File, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	var ra io.ReaderAt = f
	closeFn := f.Close
	var data []byte
	if m, ok := mmap.Map(f, size); ok {
		data = m
		ra = bytes.NewReader(m)
		f.Close()
		closeFn = func() error { return mmap.Unmap(m) }
	}
	gf, err := l.newFile(ra, size, path)
	if err != nil {
		closeFn()
		return nil, err
	}
	gf.data = data
	gf.close = closeFn
	return gf, nil
}

// NewFile parses the GGUF file of the given size read through ra, with DefaultLimits.
func NewFile(ra io.ReaderAt, size int64) (*File, error) { return Limits{}.NewFile(ra, size) }

// NewFile parses the GGUF file of the given size read through ra. Every length and
// count is checked against size before anything is allocated, and every tensor must
// lie inside the file, aligned, overlapping no other (offsets may come in any order).
func (l Limits) NewFile(ra io.ReaderAt, size int64) (*File, error) {
	return l.newFile(ra, size, "")
}

func (l Limits) newFile(ra io.ReaderAt, size int64, path string) (*File, error) {
	if size < 0 {
		return nil, &Error{Kind: ErrFormat, Path: path, Offset: -1, Msg: fmt.Sprintf("negative size %d", size)}
	}
	d := newBufferedDecoder(ra, size, l)
	h, err := d.header()
	if err != nil {
		return nil, withPath(err, path)
	}
	if err := checkExtents(h, size); err != nil {
		return nil, withPath(err, path)
	}
	return &File{Header: *h, path: path, ra: ra, size: size}, nil
}

// checkExtents checks that every tensor lies in the file and that none overlap.
func checkExtents(h *Header, size int64) error {
	avail := size - h.DataOffset
	if avail < 0 {
		avail = 0
	}
	order := make([]int, len(h.Tensors))
	for i := range order {
		order[i] = i
	}
	sizes := make([]int64, len(h.Tensors))
	for i := range h.Tensors {
		t := &h.Tensors[i]
		sizes[i], _ = t.Size() // checked by the decoder
		if t.Offset > avail || sizes[i] > avail-t.Offset {
			return &Error{Kind: ErrFormat, Offset: h.DataOffset + t.Offset, Tensor: t.Name,
				Msg: fmt.Sprintf("data [%d, %d) of the data section at %d runs past the end of the file (%d bytes)",
					t.Offset, t.Offset+sizes[i], h.DataOffset, size)}
		}
	}
	h.sortByOffset(order)
	var end int64 = -1
	prev := -1
	for _, c := range order {
		t := &h.Tensors[c]
		if sizes[c] == 0 {
			continue
		}
		if prev >= 0 && t.Offset < end {
			p := &h.Tensors[prev]
			return &Error{Kind: ErrFormat, Offset: h.DataOffset + t.Offset, Tensor: t.Name,
				Msg: fmt.Sprintf("data at offset %d overlaps tensor %s at [%d, %d)", t.Offset,
					quoteShort(p.Name), p.Offset, p.Offset+sizes[prev])}
		}
		if e := t.Offset + sizes[c]; e > end {
			end, prev = e, c
		}
	}
	return nil
}

// Close releases the file (and its mapping: slices from TensorData become invalid).
// It does nothing for a File made by NewFile.
func (f *File) Close() error {
	if f.close == nil {
		return nil
	}
	c := f.close
	f.close = nil
	f.data = nil
	return c()
}

// Path returns the path given to Open, "" for NewFile.
func (f *File) Path() string { return f.path }

// Size returns the file size in bytes.
func (f *File) Size() int64 { return f.size }

// Mapped reports whether the file is memory-mapped.
func (f *File) Mapped() bool { return f.data != nil }

// TensorReader returns a reader of tensor i's bytes (without padding).
func (f *File) TensorReader(i int) *io.SectionReader {
	t := &f.Tensors[i]
	n, _ := t.Size()
	return io.NewSectionReader(f.ra, f.DataOffset+t.Offset, n)
}

// TensorData returns tensor i's bytes (without padding). For a mapped file it is a
// read-only slice of the mapping, valid until Close: never write to it. Otherwise the
// bytes are read into a new buffer (bounded by the file size, checked at open).
func (f *File) TensorData(i int) ([]byte, error) {
	t := &f.Tensors[i]
	n, _ := t.Size()
	start := f.DataOffset + t.Offset
	if f.data != nil {
		return f.data[start : start+n : start+n], nil
	}
	b := make([]byte, n)
	if _, err := f.ra.ReadAt(b, start); err != nil && !(err == io.EOF && n == 0) {
		return nil, &Error{Kind: ErrFormat, Path: f.path, Offset: start, Tensor: t.Name, Msg: "reading tensor data", Err: err}
	}
	return b, nil
}
