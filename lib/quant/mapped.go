package quant

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/mmap"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/tensor"
)

// FileStream reads a plain APR v2 file through a read-only memory mapping; it is an
// apr.Stream. Converted tensors are quantized straight from the mapping (no read
// syscalls, no copies), each worker checksums its own chunks, and each tensor's CRC-32
// is joined from them in order and checked at the tensor's end, where the stream
// reader checks it. Pages are released behind the conversion, so the resident size
// stays bounded by the chunks in flight whatever the file size.
//
// Header, metadata and index are read and checked as container.File checks them
// (CRCs, the placement of every record); record headers and trailers, which repeat
// the index, are not read.
type FileStream struct {
	f       *os.File
	file    *container.File
	mapped  []byte
	entries []container.Entry
	i       int
	cur     *mappedTensor
	err     error
}

// MapFile opens path as a FileStream. It returns nil (and the caller streams the file
// with apr.OpenStream instead, which also reports any error) when the file is not a
// readable APR v2 file, holds compressed or sealed tensors, or cannot be mapped.
func MapFile(path string) *FileStream {
	f, err := regfile.Open(path)
	if err != nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil
	}
	file, err := container.NewFile(f, st.Size())
	if err != nil || file.Header().Seal != nil {
		f.Close()
		return nil
	}
	for _, e := range file.Entries() {
		if e.Chunked() || e.Encrypted {
			f.Close()
			return nil
		}
	}
	m, ok := mmap.Map(f, st.Size())
	if !ok {
		f.Close()
		return nil
	}
	return &FileStream{f: f, file: file, mapped: m, entries: file.Entries()}
}

// Plan is the tensor list of the index, for Options.Plan.
func (s *FileStream) Plan() []container.TensorInfo {
	p := make([]container.TensorInfo, len(s.entries))
	for i, e := range s.entries {
		p[i] = e.TensorInfo
	}
	return p
}

// Header is as apr.OpenStream reports it for the same file.
func (s *FileStream) Header() container.Header {
	h := s.file.Header()
	return container.Header{Type: h.Type, Flags: h.Flags & (container.FlagSigned | container.FlagLicensed | container.FlagQuantized), Metadata: *h.Metadata, Table: h.Table}
}

// Blocks returns the file's signature and license blocks.
func (s *FileStream) Blocks() []container.Block { return s.file.Blocks() }

// Next returns the next tensor and a reader of its bytes; the previous tensor's
// checksum is verified first (its unread bytes too).
func (s *FileStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.err != nil {
		return container.TensorInfo{}, nil, s.err
	}
	if s.mapped == nil {
		return container.TensorInfo{}, nil, errors.New("quant: Next after Close")
	}
	if s.cur != nil {
		err := s.cur.finish()
		s.cur = nil
		if err != nil {
			s.err = err
			return container.TensorInfo{}, nil, err
		}
	}
	if s.i == len(s.entries) {
		return container.TensorInfo{}, nil, io.EOF
	}
	e := s.entries[s.i]
	s.i++
	raw, err := e.TensorInfo.RawSize()
	if err == nil && (e.StoredSize != raw || e.RawSize != raw) {
		err = fmt.Errorf("the index gives %d stored and %d raw bytes, its shape needs %d", e.StoredSize, e.RawSize, raw)
	}
	if err != nil {
		s.err = tensor.Wrap(e.Name, err)
		return container.TensorInfo{}, nil, s.err
	}
	s.cur = &mappedTensor{s: s, e: e, data: s.mapped[e.DataOffset : e.DataOffset+e.StoredSize]}
	return e.TensorInfo, s.cur, nil
}

// Close unmaps and closes the file.
func (s *FileStream) Close() error {
	if s.mapped == nil {
		return nil
	}
	mmap.Unmap(s.mapped)
	s.mapped, s.cur = nil, nil
	return s.f.Close()
}

// mappedTensor is one tensor's bytes in the mapping. Read copies them out (for
// tensors that pass through unchanged) and checksums them; a conversion takes the
// bytes directly (see convertReader.produce) and hands back the joined checksum.
type mappedTensor struct {
	s        *FileStream
	e        container.Entry
	data     []byte
	off      int    // bytes returned by Read
	crc      uint32 // of data[:off]
	released int    // data[:released] has had its whole pages released
	taken    bool   // a conversion reads data directly and ends the tensor
	ended    bool
	err      error
}

func (m *mappedTensor) Read(p []byte) (int, error) {
	if m.ended {
		if m.err != nil {
			return 0, m.err
		}
		return 0, io.EOF
	}
	if m.off == len(m.data) {
		return 0, m.end(m.crc)
	}
	n := copy(p, m.data[m.off:])
	m.crc = crc32.Update(m.crc, crc32.IEEETable, m.data[m.off:m.off+n])
	m.off += n
	if m.off-m.released >= 4<<20 {
		m.release(m.off)
	}
	return n, nil
}

// end checks the CRC of all the tensor's bytes and releases its pages.
func (m *mappedTensor) end(crc uint32) error {
	if !m.ended {
		m.ended = true
		m.release(len(m.data))
		if crc != m.e.CRC {
			m.err = &container.ChecksumError{What: "tensor data", Tensor: m.e.Name, Offset: m.e.DataOffset, Expected: m.e.CRC, Actual: crc}
		}
	}
	if m.err != nil {
		return m.err
	}
	return io.EOF
}

// finish verifies a tensor its consumer did not read to the end.
func (m *mappedTensor) finish() error {
	if m.ended {
		return m.err
	}
	if m.taken {
		return fmt.Errorf("tensor %q: conversion stopped before the end of the data", m.e.Name)
	}
	m.crc = crc32.Update(m.crc, crc32.IEEETable, m.data[m.off:])
	m.off = len(m.data)
	if err := m.end(m.crc); err != io.EOF {
		return err
	}
	return nil
}

// release drops the whole pages of data[:upto] not yet released.
func (m *mappedTensor) release(upto int) {
	base := m.e.DataOffset
	mmap.DropPages(m.s.mapped, base+int64(m.released), base+int64(upto))
	m.released = upto
}
