package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/apr-go/apr/lib/internal/mmap"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// File is an APR file opened for random access. Open reads the header, metadata, footer
// and index in a fixed number of reads whatever the file size, and checks their CRCs
// and the placement of every record. Tensor data is read on demand and verified
// against its CRC on every read; Verify checks the whole file.
type File struct {
	ra      io.ReaderAt
	size    int64
	mapped  []byte // the whole file when memory-mapped, else nil
	closer  func() error
	hdr     FileHeader
	entries []Entry
	byName  map[string]int
	blocks  []Block
	workers int
	opts    []ReaderOption
	opener  TensorOpener // set for a sealed file opened with an unsealer
	sealMAC []byte
}

// Open opens the named file, memory-mapping it where the platform allows.
func Open(path string, opts ...ReaderOption) (*File, error) {
	fh, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	var ra io.ReaderAt = fh
	mapped, ok := mmap.Map(fh, st.Size()) // where it cannot, the File reads with ReadAt
	if ok {
		ra = bytes.NewReader(mapped)
	}
	closer := func() error {
		if mapped != nil {
			mmap.Unmap(mapped)
		}
		return fh.Close()
	}
	f, err := NewFile(ra, st.Size(), opts...)
	if err != nil {
		closer()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.mapped = mapped
	f.closer = closer
	return f, nil
}

// NewFile reads an APR file of the given size from ra. For a sealed file opened
// WithUnsealer, it also opens the seal and checks the seal MAC over header, metadata,
// seal section and index before it returns.
func NewFile(ra io.ReaderAt, size int64, opts ...ReaderOption) (*File, error) {
	o := readOptions(opts)
	f := &File{ra: ra, size: size, workers: o.workers, opts: opts}
	if size < HeaderSize+FooterSize {
		b := make([]byte, size)
		if _, err := ra.ReadAt(b, 0); err == nil {
			if err := shortHeader(b); err != nil {
				return nil, err
			}
		}
		return nil, formatErr(0, "file is %d bytes, too short for an APR v2 file", size)
	}
	hb, err := f.read(0, HeaderSize)
	if err != nil {
		return nil, err
	}
	h, err := decodeHeader(hb)
	if err != nil {
		return nil, err
	}
	dataStart := h.dataStart()
	if dataStart > size-FooterSize {
		return nil, formatErr(12, "metadata (%d bytes), seal section (%d bytes) and tensor table (%d bytes) run past the end of the %d-byte file", h.MetaLen, h.SealLen, h.TableLen, size)
	}
	meta, err := f.read(HeaderSize, int64(h.MetaLen))
	if err != nil {
		return nil, err
	}
	if err := checkMeta(h, meta); err != nil {
		return nil, err
	}
	md, err := DecodeMetadata(meta)
	if err != nil {
		return nil, formatErr(HeaderSize, "%v", err)
	}
	var seal []byte
	if h.SealLen > 0 {
		if seal, err = f.read(alignUp(HeaderSize+int64(h.MetaLen)), int64(h.SealLen)); err != nil {
			return nil, err
		}
	}
	var table []TensorInfo
	if h.TableLen > 0 {
		off := h.tableStart()
		b, err := f.read(off, int64(h.TableLen))
		if err != nil {
			return nil, err
		}
		if got := crc32.ChecksumIEEE(b); got != h.TableCRC {
			return nil, &ChecksumError{What: "tensor table", Offset: off, Expected: h.TableCRC, Actual: got}
		}
		if table, err = decodeTable(b, off); err != nil {
			return nil, err
		}
	}
	f.hdr = FileHeader{Major: h.Major, Minor: h.Minor, Type: h.Type, Flags: h.Flags, Metadata: md, MetadataSize: len(meta), Seal: seal, Table: table}

	footOff := size - FooterSize
	if footOff%Align != 0 {
		return nil, formatErr(size, "file size %d is not a multiple of %d (truncated, or bytes appended)", size, Align)
	}
	fb, err := f.read(footOff, FooterSize)
	if err != nil {
		return nil, err
	}
	ft, err := decodeFooter(fb, footOff)
	if err != nil {
		return nil, err
	}
	if int64(ft.IndexOff) < dataStart {
		return nil, formatErr(footOff+8, "index offset %d lies before the first record at %d", ft.IndexOff, dataStart)
	}
	idx, err := f.read(int64(ft.IndexOff), int64(ft.IndexLen))
	if err != nil {
		return nil, err
	}
	if got := crc32.ChecksumIEEE(idx); got != ft.IndexCRC {
		return nil, &ChecksumError{What: "index", Offset: int64(ft.IndexOff), Expected: ft.IndexCRC, Actual: got}
	}
	if f.entries, err = decodeIndex(idx, int64(ft.IndexOff), ft.Count); err != nil {
		return nil, err
	}
	if err := checkLayout(f.entries, dataStart, int64(ft.IndexOff)); err != nil {
		return nil, err
	}
	if table != nil {
		if err := checkAgainstTable(f.entries, table, int64(ft.IndexOff)); err != nil {
			return nil, err
		}
	}
	f.byName = make(map[string]int, len(f.entries))
	for i := range f.entries {
		e := &f.entries[i]
		if need := entryFlags(e); h.Flags&need != need {
			return nil, &FormatError{Offset: e.RecordOffset, Tensor: e.Name, Msg: fmt.Sprintf("tensor uses %v, which the header flags (%v) do not declare", need, h.Flags)}
		}
		f.byName[e.Name] = i
	}
	if ft.BlocksLen > 0 {
		b, err := f.read(int64(ft.BlocksOff), int64(ft.BlocksLen))
		if err != nil {
			return nil, err
		}
		if f.blocks, err = decodeBlocks(b, int64(ft.BlocksOff)); err != nil {
			return nil, err
		}
		if need := blockFlags(f.blocks); h.Flags&need != need {
			return nil, formatErr(int64(ft.BlocksOff), "blocks need flags %v, which the header (%v) does not declare", need, h.Flags)
		}
	}
	if f.blocks, f.sealMAC, err = splitSealBlock(f.blocks, h.Flags, int64(ft.BlocksOff)); err != nil {
		return nil, err
	}
	if seal != nil && o.unsealer != nil {
		if f.opener, err = o.unsealer.Begin(AuthHeader(hb), meta, seal); err != nil {
			return nil, err
		}
		if err := f.opener.VerifyMAC(idx, f.sealMAC); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// read returns n bytes at off, which the caller has bounded by the file size.
func (f *File) read(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > f.size || n > f.size-off {
		return nil, formatErr(off, "%d bytes at %d run past the end of the %d-byte file", n, off, f.size)
	}
	b := make([]byte, n)
	if _, err := f.ra.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("reading %d bytes at %d: %w", n, off, err)
	}
	return b, nil
}

// Close releases the file (and its mapping).
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer()
	}
	return nil
}

// Size is the file size in bytes.
func (f *File) Size() int64 { return f.size }

// Header returns header and metadata.
func (f *File) Header() FileHeader { return f.hdr }

// Entries returns the index, in file order.
func (f *File) Entries() []Entry { return f.entries }

// Blocks returns the signature and license blocks.
func (f *File) Blocks() []Block { return f.blocks }

// SealMAC returns the payload of a sealed file's seal MAC block (see Reader.SealMAC).
func (f *File) SealMAC() []byte { return f.sealMAC }

// Mapped reports whether the file is memory-mapped.
func (f *File) Mapped() bool { return f.mapped != nil }

// Entry returns the index entry of the named tensor.
func (f *File) Entry(name string) (*Entry, error) {
	i, ok := f.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return &f.entries[i], nil
}

// stored returns a tensor's stored bytes, checked against its CRC and trailer. For a
// memory-mapped file it is a view of the mapping, not a copy.
func (f *File) stored(e *Entry) ([]byte, error) {
	var b []byte
	if f.mapped != nil {
		b = f.mapped[e.DataOffset : e.DataOffset+e.StoredSize+trailerSize]
	} else {
		var err error
		if b, err = f.read(e.DataOffset, e.StoredSize+trailerSize); err != nil {
			return nil, err
		}
	}
	data, tr := b[:e.StoredSize], b[e.StoredSize:]
	if [4]byte(tr[12:]) != magicTrailer || int64(le.Uint64(tr)) != e.StoredSize || le.Uint32(tr[8:]) != e.CRC {
		return nil, &FormatError{Offset: e.DataOffset + e.StoredSize, Tensor: e.Name, Msg: "tensor trailer disagrees with the index"}
	}
	if got := crc32.ChecksumIEEE(data); got != e.CRC {
		return nil, &ChecksumError{What: "tensor data", Tensor: e.Name, Offset: e.DataOffset, Expected: e.CRC, Actual: got}
	}
	return data, nil
}

// TensorBytes returns the raw bytes of the named tensor after verifying its CRC. For
// plain data in a memory-mapped file the slice aliases the mapping (no copy; do not
// modify it, and do not use it after Close); otherwise it is a fresh buffer of the
// tensor's raw size.
func (f *File) TensorBytes(name string) ([]byte, error) {
	e, err := f.Entry(name)
	if err != nil {
		return nil, err
	}
	var co ChunkOpener
	if e.Encrypted {
		if f.opener == nil {
			return nil, fmt.Errorf("tensor %q: %w (open the file with an unsealer)", e.Name, ErrEncrypted)
		}
		if co, err = f.opener.Tensor(uint64(f.byName[name]), e.encodeRecordHeader()); err != nil {
			return nil, tensorErr(e.Name, err)
		}
	}
	data, err := f.stored(e)
	if err != nil {
		return nil, err
	}
	if !e.Chunked() {
		return data, nil
	}
	out := make([]byte, 0, min(e.RawSize, 64<<20)) // grows with decoded data, not with a claim
	err = f.decodeChunks(e, co, data, func(b []byte) error { out = append(out, b...); return nil })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeChunks splits verified stored bytes into frames and decodes them in parallel,
// in order.
func (f *File) decodeChunks(e *Entry, co ChunkOpener, data []byte, emit func([]byte) error) error {
	p, i, n := int64(0), int64(0), e.chunks()
	next := func() ([]byte, bool, error) {
		if i == n {
			if p != int64(len(data)) {
				return nil, false, &FormatError{Offset: e.DataOffset + p, Tensor: e.Name, Msg: "bytes after the last chunk"}
			}
			return nil, false, nil
		}
		if int64(len(data))-p < frameHeader {
			return nil, false, &FormatError{Offset: e.DataOffset + p, Tensor: e.Name, Msg: fmt.Sprintf("chunk %d truncated", i)}
		}
		l := le.Uint32(data[p:])
		size := int64(l &^ rawChunkFlag)
		if err := checkFrameLen(e, i, l, e.DataOffset+p); err != nil {
			return nil, false, tensorErr(e.Name, err)
		}
		if size > int64(len(data))-p-frameHeader {
			return nil, false, &FormatError{Offset: e.DataOffset + p, Tensor: e.Name, Msg: fmt.Sprintf("chunk %d length %d overruns the tensor", i, size)}
		}
		frame := data[p : p+frameHeader+size]
		p += frameHeader + size
		i++
		return frame, true, nil
	}
	work := func(idx int64, frame []byte) (chunk, error) { return decodeFrame(e, co, idx, n, frame, nil) }
	return ordered(context.Background(), f.workers, next, work, func(c chunk) error { return emit(c.data) })
}

// Verify reads the whole file in order and checks every CRC, every record against the
// index, and the whole-file CRC, decompressing every chunk. Sealed tensors are
// decrypted (every tag checked) when the file was opened with an unsealer; otherwise
// only the CRCs of their chunks are checked.
func (f *File) Verify() error {
	opts := f.opts
	if f.opener != nil { // the seal is open already: do not unwrap the key again
		opts = append(opts[:len(opts):len(opts)], func(o *readerOptions) { o.opener = f.opener })
	}
	r, err := NewReader(io.NewSectionReader(f.ra, 0, f.size), opts...)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Each(func(t *Tensor) error {
		if t.Encrypted && r.opener == nil {
			return nil // Next checks the frames of sealed data without decrypting them
		}
		_, err := io.Copy(io.Discard, t)
		return err
	})
}
