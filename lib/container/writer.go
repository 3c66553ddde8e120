package container

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"syscall"

	"github.com/apr-go/apr/lib/internal/splice"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Header is what a producer declares before the first tensor.
type Header struct {
	Type     modeltype.Type
	Flags    Flags // FlagSigned, FlagLicensed, FlagQuantized as the content will need; the writer adds the rest
	Metadata Metadata
	// Table, when not nil, is every tensor the producer will write, in order: the
	// writer puts it before the first record (format 2.1) and refuses a tensor that
	// differs from it, or a Close with tensors missing. An empty, non-nil table
	// declares a file without tensors. Producers that know their tensors up front
	// (importers, transforms of a stream that has a table) set it, so that exporters
	// reading a pipe can write their own headers without spooling the data.
	Table []TensorInfo
}

type writerOptions struct {
	compression Compression
	shuffle     bool
	chunk       int
	workers     int
	sealer      Sealer
}

// Option configures a Writer.
type Option func(*writerOptions)

// WithCompression sets the codec for every tensor (default CompressNone).
func WithCompression(c Compression) Option { return func(o *writerOptions) { o.compression = c } }

// WithShuffle turns on the byte-shuffle filter for float and integer tensors whose
// elements are wider than one byte; it needs a codec and is ignored for other dtypes.
func WithShuffle(on bool) Option { return func(o *writerOptions) { o.shuffle = on } }

// WithChunkSize sets the raw bytes per compressed chunk (default 1 MiB).
func WithChunkSize(n int) Option { return func(o *writerOptions) { o.chunk = n } }

// WithWorkers sets how many chunks are compressed at once (default GOMAXPROCS).
// The output bytes do not depend on it.
func WithWorkers(n int) Option { return func(o *writerOptions) { o.workers = n } }

// Writer writes an APR v2 stream: header and metadata at once, then one tensor record
// per WriteTensor call, then index, blocks and footer on Close. It never seeks, so any
// io.Writer works, a pipe included; memory stays bounded by chunk size x workers.
//
// After any error the output is incomplete and every later call returns that error.
type Writer struct {
	out     *bufio.Writer
	dst     io.Writer // under out, for large writes that need no buffering
	pipe    *os.File  // dst, when it is a pipe that file bytes can be spliced into
	crc     uint32    // CRC32 of every byte written (tensor data folded in by crcCombine)
	off     int64
	opts    writerOptions
	flags   Flags
	entries []Entry
	names   map[string]bool
	blocks  []Block
	table   []TensorInfo // the tensor table written, nil if none
	sealed  TensorSealer // nil unless WithSealer
	pool    *bufPool     // chunk buffers, made with the first chunked tensor
	plain   []byte       // copy buffer of uncompressed tensors, made with the first one that needs it
	shift   crcShift     // folds frame CRCs into tensor CRCs
	err     error
	closed  bool
}

// NewWriter writes the header and metadata of a new file to w.
func NewWriter(w io.Writer, h Header, opts ...Option) (*Writer, error) {
	o := writerOptions{chunk: DefaultChunk, workers: runtime.GOMAXPROCS(0)}
	for _, f := range opts {
		f(&o)
	}
	if o.chunk < MinChunk || o.chunk > MaxChunk || o.chunk%8 != 0 {
		return nil, fmt.Errorf("chunk size %d: must be a multiple of 8 from %d to %d", o.chunk, MinChunk, MaxChunk)
	}
	if o.compression < CompressNone || o.compression > CompressLZ4 {
		return nil, fmt.Errorf("unknown compression %v", o.compression)
	}
	if !h.Type.Known() {
		return nil, fmt.Errorf("unknown model type 0x%04X", uint16(h.Type))
	}
	if h.Flags&^(FlagSigned|FlagLicensed|FlagQuantized) != 0 {
		return nil, fmt.Errorf("flags %v are set by the writer, not declared", h.Flags&^(FlagSigned|FlagLicensed|FlagQuantized))
	}
	flags := h.Flags
	if o.compression != CompressNone {
		flags |= FlagCompressed
		if o.shuffle {
			flags |= FlagShuffled
		}
	} else {
		o.shuffle = false
	}
	meta, err := h.Metadata.Encode()
	if err != nil {
		return nil, err
	}
	if len(meta) > MaxMetadata {
		return nil, fmt.Errorf("metadata is %d bytes, the cap is %d", len(meta), MaxMetadata)
	}
	fh := fileHeader{Major: MajorVersion, Minor: 0, Type: h.Type, Flags: flags,
		MetaLen: uint32(len(meta)), MetaCRC: crc32.ChecksumIEEE(meta)}
	var table []byte
	if h.Table != nil {
		if err := checkTable(h.Table); err != nil {
			return nil, err
		}
		table = encodeTable(h.Table)
		if len(table) > MaxTable {
			return nil, fmt.Errorf("tensor table is %d bytes, the cap is %d", len(table), MaxTable)
		}
		fh.Minor, fh.TableLen, fh.TableCRC = 1, uint32(len(table)), crc32.ChecksumIEEE(table)
	}
	var section []byte
	var sealed TensorSealer
	if o.sealer != nil {
		n := o.sealer.SectionLen()
		if n < 1 || n > MaxSeal {
			return nil, fmt.Errorf("seal section of %d bytes: must be 1 to %d", n, MaxSeal)
		}
		fh.Flags |= FlagEncrypted
		fh.SealLen = uint32(n)
		if section, sealed, err = o.sealer.Begin(AuthHeader(fh.encode()), meta); err != nil {
			return nil, err
		}
		if len(section) != n {
			return nil, fmt.Errorf("sealer returned a %d-byte seal section, announced %d", len(section), n)
		}
	}
	wr := &Writer{out: bufio.NewWriterSize(w, 256<<10), dst: w, opts: o, flags: fh.Flags, names: map[string]bool{}, sealed: sealed}
	if f, ok := w.(*os.File); ok && splice.IsPipe(f) {
		wr.pipe = f
	}
	wr.write(fh.encode())
	wr.write(meta)
	wr.pad()
	if sealed != nil {
		wr.write(section)
		wr.pad()
	}
	if table != nil {
		wr.table = cloneTable(h.Table)
		wr.write(table)
		wr.pad()
	}
	return wr, wr.err
}

func (w *Writer) write(b []byte) {
	w.writeData(b)
	w.crc = crcUpdate(w.crc, b)
}

// writeData writes tensor data, whose CRC the caller folds into the file CRC once the
// tensor is complete, so each data byte is checksummed once.
func (w *Writer) writeData(b []byte) {
	if w.err != nil {
		return
	}
	if len(b) >= directWrite {
		// Flush what is buffered and hand the block on as it is, not copied into the
		// buffer first (bufio would copy whenever a small record header was pending).
		if w.err = w.out.Flush(); w.err == nil {
			_, w.err = w.dst.Write(b)
		}
	} else {
		_, w.err = w.out.Write(b)
	}
	w.off += int64(len(b))
}

// directWrite is the size from which writeData bypasses the output buffer.
const directWrite = 64 << 10

var zeros [Align]byte

func (w *Writer) pad() { w.write(zeros[:alignUp(w.off)-w.off]) }

// WriteTensor reads exactly the tensor's raw size from data and writes its record.
func (w *Writer) WriteTensor(t TensorInfo, data io.Reader) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("WriteTensor after Close")
	}
	if err := t.validate(); err != nil {
		return fmt.Errorf("%w", err)
	}
	if w.names[t.Name] {
		return fmt.Errorf("duplicate tensor name %q", t.Name)
	}
	if w.table != nil {
		i := len(w.entries)
		if i >= len(w.table) {
			return fmt.Errorf("tensor %q: tensor %d, but the tensor table lists %d tensors", t.Name, i, len(w.table))
		}
		if want := w.table[i]; !sameInfo(t, want) {
			return fmt.Errorf("tensor %d is %q %v %v, the tensor table says %q %v %v", i, t.Name, t.DType, t.Shape, want.Name, want.DType, want.Shape)
		}
	}
	e := Entry{TensorInfo: t, RecordOffset: w.off}
	e.Shape = append([]int64(nil), t.Shape...)
	e.RawSize, _ = t.RawSize()
	info := t.DType.Info()
	if info.Quantized() && w.flags&FlagQuantized == 0 {
		return fmt.Errorf("tensor %q is %v but the header did not declare quantized tensors", t.Name, t.DType)
	}
	if w.opts.compression != CompressNone && e.RawSize > 0 {
		e.Codec = w.opts.compression.codec()
		e.ChunkSize = uint32(w.opts.chunk)
		e.Shuffle = w.opts.shuffle && info.BlockElems == 1 && info.BlockBytes > 1
	}
	var cs ChunkSealer
	if w.sealed != nil {
		e.Encrypted = true
		e.ChunkSize = uint32(w.opts.chunk)
		var err error
		if cs, err = w.sealed.Tensor(uint64(len(w.entries)), e.encodeRecordHeader()); err != nil {
			w.err = tensor.Wrap(t.Name, err)
			return w.err
		}
	}
	w.write(e.encodeRecordHeader())
	w.pad()
	e.DataOffset = w.off
	start := w.off
	var dataCRC uint32
	var err error
	if e.Chunked() {
		err = w.writeChunks(&e, cs, data, &dataCRC)
	} else {
		err = w.writePlain(&e, data, &dataCRC)
	}
	if err != nil {
		w.err = err
		return err
	}
	e.StoredSize = w.off - start
	e.CRC = dataCRC
	w.crc = crcCombine(w.crc, dataCRC, e.StoredSize)
	var tr [trailerSize]byte
	le.PutUint64(tr[:], uint64(e.StoredSize))
	le.PutUint32(tr[8:], e.CRC)
	copy(tr[12:], magicTrailer[:])
	w.write(tr[:])
	w.pad()
	if w.err != nil {
		return w.err
	}
	w.names[t.Name] = true
	w.entries = append(w.entries, e)
	return nil
}

// WriteTensorBytes writes a tensor held in memory.
func (w *Writer) WriteTensorBytes(t TensorInfo, data []byte) error {
	if n, err := t.RawSize(); err == nil && n != int64(len(data)) {
		return fmt.Errorf("tensor %q: %d bytes given, %v of %v needs %d", t.Name, len(data), t.Shape, t.DType, n)
	}
	return w.WriteTensor(t, bytes.NewReader(data))
}

func (w *Writer) writePlain(e *Entry, data io.Reader, dataCRC *uint32) error {
	if t, ok := data.(*Tensor); ok && t.RawSize == e.RawSize {
		// Decompressed or unsealed chunks straight from a Reader: written from the
		// reader's buffers, their CRCs computed by its workers.
		var got int64
		streamed, err := t.streamChunks(func(b []byte, crc uint32) error {
			*dataCRC = w.shift.combine(*dataCRC, crc, int64(len(b)))
			w.writeData(b)
			got += int64(len(b))
			return w.err
		})
		if streamed {
			if err != nil && w.err == nil {
				return shortData(e, got, err)
			}
			return err
		}
	}
	if src, ok := data.(InPlace); ok && int64(src.Len()) == e.RawSize {
		return w.writeInPlace(e, src, dataCRC)
	}
	// One buffer for the whole file: a buffer a tensor was 16 GB of garbage for a
	// header of 65,536 empty tensors, too fast for the collector under ulimit -v.
	if w.plain == nil && e.RawSize > 0 {
		w.plain = make([]byte, 256<<10)
	}
	buf := w.plain
	for left := e.RawSize; left > 0; {
		n := int(min(left, int64(len(buf))))
		if _, err := io.ReadFull(data, buf[:n]); err != nil {
			return shortData(e, e.RawSize-left, err)
		}
		*dataCRC = crcUpdate(*dataCRC, buf[:n])
		w.writeData(buf[:n])
		if w.err != nil {
			return w.err
		}
		left -= int64(n)
	}
	return nil
}

// InPlace is a tensor's data already in memory (a bytes.Reader, a mapped file's
// pages): WriteTensor checksums and writes its slices as they are, instead of
// copying them through its buffer first. Len is the number of bytes left; only a
// reader holding exactly the tensor's size is written this way, since WriteTo takes
// everything the reader has.
type InPlace interface {
	io.WriterTo
	Len() int
}

func (w *Writer) writeInPlace(e *Entry, src InPlace, dataCRC *uint32) error {
	sink := &plainSink{w: w, crc: dataCRC}
	n, err := src.WriteTo(sink)
	switch {
	case w.err != nil:
		return w.err
	case err != nil:
		return shortData(e, n, err)
	case n != e.RawSize:
		return shortData(e, n, io.ErrUnexpectedEOF)
	}
	return nil
}

// plainSink is the io.Writer an InPlace tensor writes its slices to.
type plainSink struct {
	w   *Writer
	crc *uint32
}

// Write checksums and writes b a piece at a time, so that the write reads from the
// cache what the checksum has just brought in.
func (s *plainSink) Write(b []byte) (int, error) {
	for i := 0; i < len(b); i += inPlacePiece {
		p := b[i:min(i+inPlacePiece, len(b))]
		*s.crc = crcUpdate(*s.crc, p)
		s.w.writeData(p)
		if s.w.err != nil {
			return i, s.w.err
		}
	}
	return len(b), nil
}

const inPlacePiece = 256 << 10

// FileWriter is what the writer offers an InPlace tensor that is a mapped file's
// bytes: WriteFile takes b, the bytes of f from offset off as mapped, checksums them
// and, when the output is a pipe, splices the file's pages into it rather than
// copying b (so a file importer moves no tensor byte through user memory).
type FileWriter interface {
	WriteFile(b []byte, f *os.File, off int64) (int, error)
}

// WriteFileBytes writes b, the bytes of f from offset off as mapped, to w: by
// w.WriteFile when w is a FileWriter (an APR writer's sink), else as plain bytes.
func WriteFileBytes(w io.Writer, b []byte, f *os.File, off int64) (int, error) {
	if fw, ok := w.(FileWriter); ok {
		return fw.WriteFile(b, f, off)
	}
	return w.Write(b)
}

func (s *plainSink) WriteFile(b []byte, f *os.File, off int64) (int, error) {
	w := s.w
	if w.pipe == nil || w.err != nil {
		return s.Write(b)
	}
	*s.crc = crcUpdate(*s.crc, b)
	if w.err = w.out.Flush(); w.err != nil {
		return 0, w.err
	}
	moved, err := splice.FromFile(w.pipe, f, off, int64(len(b)))
	w.off += moved
	if errors.Is(err, splice.ErrUnsupported) || errors.Is(err, syscall.EPIPE) {
		// Not this file system: write the bytes from now on. Or the reader has
		// gone: the write then fails as every write to such a pipe does (on stdout,
		// Go's SIGPIPE), not with an error of the splice.
		w.pipe = nil
		w.writeData(b[moved:])
		if w.err != nil {
			return int(moved), w.err
		}
		return len(b), nil
	}
	if err != nil {
		w.err = err
		return int(moved), err
	}
	return len(b), nil
}

// writeChunks writes the chunk frames of a compressed or sealed (cs != nil) tensor.
func (w *Writer) writeChunks(e *Entry, cs ChunkSealer, data io.Reader, dataCRC *uint32) error {
	esz := 0
	if e.Shuffle {
		esz = e.DType.Info().BlockBytes
	}
	if w.pool == nil {
		w.pool = newBufPool(w.opts.chunk+frameHeader+SealOverhead, 2*w.opts.workers+4)
	}
	left, i, n := e.RawSize, int64(0), e.chunks()
	next := func() ([]byte, bool, error) {
		if i == n {
			return nil, false, nil
		}
		size := min(left, int64(e.ChunkSize))
		buf := w.pool.get(int(size))
		if _, err := io.ReadFull(data, buf); err != nil {
			return nil, false, shortData(e, e.RawSize-left, err)
		}
		left -= size
		i++
		return buf, true, nil
	}
	work := func(idx int64, raw []byte) ([]byte, error) {
		defer w.pool.put(raw) // the frame never aliases the raw chunk
		if cs != nil {
			return sealFrame(cs, idx, n, raw, entryCompression(w.opts.compression, e), esz, w.pool)
		}
		return encodeChunk(raw, w.opts.compression, esz)
	}
	emit := func(frame []byte) error {
		// The frame's header holds the CRC of its payload, computed by the worker.
		*dataCRC = crcUpdate(*dataCRC, frame[:frameHeader])
		*dataCRC = w.shift.combine(*dataCRC, le.Uint32(frame[4:]), int64(len(frame)-frameHeader))
		w.writeData(frame)
		w.pool.put(frame)
		return w.err
	}
	return ordered(context.Background(), w.opts.workers, next, work, emit)
}

func shortData(e *Entry, got int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("tensor %q: data ended after %d of %d bytes", e.Name, got, e.RawSize)
	}
	return fmt.Errorf("tensor %q: reading data: %w", e.Name, err)
}

// AddBlock queues a signature or license block for the blocks section. The header
// must have declared FlagSigned or FlagLicensed accordingly.
func (w *Writer) AddBlock(b Block) error {
	need := blockFlags([]Block{b})
	switch {
	case b.Kind == BlockSeal:
		return fmt.Errorf("the seal MAC block is written by the writer itself (WithSealer)")
	case b.Kind != BlockSignature && b.Kind != BlockLicense:
		return fmt.Errorf("unknown block kind %d", b.Kind)
	case len(b.Payload) > MaxBlock:
		return fmt.Errorf("block of %d bytes exceeds the cap of %d", len(b.Payload), MaxBlock)
	case len(w.blocks) >= MaxBlockCount:
		return fmt.Errorf("more than %d blocks", MaxBlockCount)
	case w.flags&need != need:
		return fmt.Errorf("block needs header flags %v", need)
	}
	w.blocks = append(w.blocks, Block{Kind: b.Kind, Payload: append([]byte(nil), b.Payload...)})
	return nil
}

// Close writes the index, the blocks and the footer, and flushes. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	if w.closed || w.err != nil {
		return w.err
	}
	if w.table != nil && len(w.entries) != len(w.table) {
		w.err = fmt.Errorf("%d tensors written, the tensor table lists %d (the next is %q)", len(w.entries), len(w.table), w.table[len(w.entries)].Name)
		return w.err
	}
	w.closed = true
	idx := make([]byte, indexFixed)
	copy(idx, magicIndex[:])
	for i := range w.entries {
		idx = w.entries[i].encodeIndexEntry(idx)
	}
	le.PutUint64(idx[8:], uint64(len(w.entries)))
	le.PutUint64(idx[16:], uint64(len(idx)-indexFixed))
	f := footer{IndexOff: uint64(w.off), IndexLen: uint64(len(idx)), Count: uint64(len(w.entries)), IndexCRC: crc32.ChecksumIEEE(idx)}
	w.write(idx)
	w.pad()
	blocks := w.blocks
	if w.sealed != nil {
		mac, err := w.sealed.MAC(idx)
		if err == nil && len(mac) != SealMACSize {
			err = fmt.Errorf("sealer returned a %d-byte MAC, expected %d", len(mac), SealMACSize)
		}
		if err != nil {
			w.err = err
			return err
		}
		blocks = append([]Block{{Kind: BlockSeal, Payload: mac}}, blocks...)
	}
	if len(blocks) > 0 {
		b := encodeBlocks(blocks)
		f.BlocksOff, f.BlocksLen = uint64(w.off), uint64(len(b))
		w.write(b)
		w.pad()
	}
	body := f.encodeBody()
	w.crc = crcUpdate(w.crc, body[:52])
	le.PutUint32(body[52:], w.crc)
	if w.err == nil {
		_, w.err = w.out.Write(body)
		w.off += FooterSize
	}
	if w.err == nil {
		w.err = w.out.Flush()
	}
	return w.err
}

// cloneTable copies a table, so that a caller's later changes do not reach the writer.
func cloneTable(t []TensorInfo) []TensorInfo {
	out := make([]TensorInfo, len(t))
	for i, x := range t {
		out[i] = TensorInfo{Name: x.Name, DType: x.DType, Shape: append([]int64(nil), x.Shape...)}
	}
	return out
}

// Entries returns the index entries written so far.
func (w *Writer) Entries() []Entry { return w.entries }
