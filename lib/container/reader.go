package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"

	"github.com/apr-go/apr/lib/modeltype"
)

// FileHeader is what a reader knows once header and metadata are read.
type FileHeader struct {
	Major, Minor uint8
	Type         modeltype.Type
	Flags        Flags
	Metadata     *Metadata
	MetadataSize int
	Seal         []byte // the raw seal section of an encrypted file
	// Table is the tensor table of a 2.1 file (every tensor's name, dtype and shape,
	// in order, before the first record), nil when the file has none. Readers check
	// every record and the index against it.
	Table []TensorInfo
}

// source reads the stream, keeping the offset and the CRC32 of every byte consumed
// (tensor data is read with readData and folded in per tensor by crcCombine, so each
// data byte is checksummed once).
type source struct {
	br  *bufio.Reader
	off int64
	crc uint32
}

func (s *source) read(b []byte) error {
	err := s.readData(b)
	s.crc = crcUpdate(s.crc, b)
	return err
}

func (s *source) readData(b []byte) error {
	n, err := io.ReadFull(s.br, b)
	s.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return formatErr(s.off, "file truncated: expected %d more bytes", len(b)-n)
		}
		return err
	}
	return nil
}

// readAll reads n bytes, growing the buffer only as bytes arrive, so a hostile length
// costs no more memory than the bytes actually present.
func (s *source) readAll(n int64) ([]byte, error) {
	var out []byte
	for n > 0 {
		step := min(n, 1<<20)
		buf := make([]byte, step)
		if err := s.read(buf); err != nil {
			return nil, err
		}
		out = append(out, buf...)
		n -= step
	}
	return out, nil
}

// skipPad consumes the zero padding up to the next 64-byte boundary.
func (s *source) skipPad() error {
	n := alignUp(s.off) - s.off
	var b [Align]byte
	if err := s.read(b[:n]); err != nil {
		return err
	}
	for i, v := range b[:n] {
		if v != 0 {
			return formatErr(s.off-n+int64(i), "padding byte is 0x%02x, expected 0", v)
		}
	}
	return nil
}

// Reader reads an APR v2 stream from any io.Reader, in order, verifying as it goes:
// the header and metadata CRCs before NewReader returns, each record header's CRC,
// each chunk's CRC before it is decompressed, each tensor's data CRC when its last
// byte is read (a tensor reader returns the error instead of io.EOF), and the index,
// blocks, footer and whole-file CRC before Next reports io.EOF. Memory stays bounded
// by chunk size x workers whatever the file size.
//
// Plain (uncompressed) data reaches the caller before its tensor CRC is checked; a
// caller that must not act on unverified bytes writes to a temporary file and keeps
// it only when Next has returned io.EOF.
type Reader struct {
	src     *source
	hdr     FileHeader
	workers int
	cur     *Tensor
	seen    []Entry
	blocks  []Block
	opener  TensorOpener // set when the file is sealed and an unsealer opened it
	pool    *bufPool     // frame and chunk buffers, made with the first chunked tensor
	shift   crcShift     // folds frame CRCs into tensor CRCs
	sealMAC []byte
	done    bool
	err     error
	ctx     context.Context
	cancel  context.CancelFunc
}

type readerOptions struct {
	workers  int
	unsealer Unsealer
	opener   TensorOpener // an open seal, passed by File.Verify
}

// ReaderOption configures a Reader or a File.
type ReaderOption func(*readerOptions)

// WithReadWorkers sets how many chunks are decompressed at once (default GOMAXPROCS).
func WithReadWorkers(n int) ReaderOption { return func(o *readerOptions) { o.workers = n } }

func readOptions(opts []ReaderOption) readerOptions {
	o := readerOptions{workers: runtime.GOMAXPROCS(0)}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// NewReader reads and verifies the header and metadata (and, for a sealed file read
// with WithUnsealer, opens the seal: a wrong key is an error here).
func NewReader(r io.Reader, opts ...ReaderOption) (*Reader, error) {
	ctx, cancel := context.WithCancel(context.Background())
	o := readOptions(opts)
	rd := &Reader{src: &source{br: bufio.NewReaderSize(r, readBuffer)}, workers: o.workers, ctx: ctx, cancel: cancel}
	hb := make([]byte, HeaderSize)
	if err := rd.src.read(hb); err != nil {
		cancel()
		if fe := (*FormatError)(nil); errors.As(err, &fe) && rd.src.off < 4 {
			return nil, formatErr(0, "empty or too short to be an APR file (%d bytes)", rd.src.off)
		}
		if err := shortHeader(hb[:rd.src.off]); err != nil {
			return nil, err
		}
		return nil, err
	}
	h, err := decodeHeader(hb)
	if err != nil {
		cancel()
		return nil, err
	}
	meta, err := rd.src.readAll(int64(h.MetaLen))
	if err == nil {
		err = checkMeta(h, meta)
	}
	var md *Metadata
	if err == nil {
		md, err = DecodeMetadata(meta)
		if err != nil {
			err = formatErr(HeaderSize, "%v", err)
		}
	}
	if err == nil {
		err = rd.src.skipPad()
	}
	var seal []byte
	if err == nil && h.SealLen > 0 {
		seal, err = rd.src.readAll(int64(h.SealLen))
		if err == nil {
			err = rd.src.skipPad()
		}
	}
	var table []TensorInfo
	if err == nil && h.TableLen > 0 {
		table, err = rd.readTable(h)
	}
	if err == nil && seal != nil {
		if o.opener != nil {
			rd.opener = o.opener
		} else if o.unsealer != nil {
			rd.opener, err = o.unsealer.Begin(AuthHeader(hb), meta, seal)
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	rd.hdr = FileHeader{Major: h.Major, Minor: h.Minor, Type: h.Type, Flags: h.Flags, Metadata: md, MetadataSize: len(meta), Seal: seal, Table: table}
	return rd, nil
}

// readTable reads, checks and decodes the tensor table at the stream's offset.
func (r *Reader) readTable(h *fileHeader) ([]TensorInfo, error) {
	off := r.src.off
	b, err := r.src.readAll(int64(h.TableLen))
	if err != nil {
		return nil, err
	}
	if got := crc32.ChecksumIEEE(b); got != h.TableCRC {
		return nil, &ChecksumError{What: "tensor table", Offset: off, Expected: h.TableCRC, Actual: got}
	}
	t, err := decodeTable(b, off)
	if err != nil {
		return nil, err
	}
	return t, r.src.skipPad()
}

// readBuffer is the size of the Reader's buffer. bufio reads straight into the
// caller's slice when it is empty and the slice is at least this large, so with a
// buffer smaller than a chunk, frames and plain tensor data mostly skip the copy
// through it; only record headers, trailers and other small fields are buffered.
const readBuffer = 64 << 10

func checkMeta(h *fileHeader, meta []byte) error {
	if got := crc32.ChecksumIEEE(meta); got != h.MetaCRC {
		return &ChecksumError{What: "metadata", Offset: HeaderSize, Expected: h.MetaCRC, Actual: got}
	}
	return nil
}

// Header returns the file header and metadata.
func (r *Reader) Header() FileHeader { return r.hdr }

// Blocks returns the signature and license blocks; valid after Next returned io.EOF.
func (r *Reader) Blocks() []Block { return r.blocks }

// SealMAC returns the payload of a sealed file's seal MAC block (the first block,
// kind BlockSeal, which Blocks does not list), for tools that rewrite the blocks
// section of a sealed file without its key and must keep that block first; valid
// after Next returned io.EOF, nil for a file that is not sealed.
func (r *Reader) SealMAC() []byte { return r.sealMAC }

// Entries returns the index entries verified so far (all of them after io.EOF).
func (r *Reader) Entries() []Entry { return r.seen }

// Close stops background decompression. It does not close the underlying reader.
func (r *Reader) Close() error { r.cancel(); return nil }

// Each calls fn for every remaining tensor, in order, and returns nil at the end of
// the stream (index, blocks and footer verified), or the first error of Next or fn.
func (r *Reader) Each(fn func(*Tensor) error) error {
	for {
		t, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
	}
}

// Next returns the next tensor, after finishing (and verifying) the previous one. At
// the end of the stream it verifies index, blocks and footer and returns io.EOF.
func (r *Reader) Next() (*Tensor, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	if r.cur != nil {
		if err := r.cur.finish(); err != nil {
			return nil, r.fail(err)
		}
		r.seen = append(r.seen, r.cur.Entry)
		r.cur = nil
	}
	peek, err := r.src.br.Peek(4)
	if err != nil {
		return nil, r.fail(formatErr(r.src.off, "file truncated: expected a tensor record or the index"))
	}
	switch [4]byte(peek) {
	case magicRecord:
		t, err := r.readRecord()
		if err != nil {
			return nil, r.fail(err)
		}
		r.cur = t
		return t, nil
	case magicIndex:
		if err := r.readEnd(); err != nil {
			return nil, r.fail(err)
		}
		r.done = true
		r.cancel()
		return nil, io.EOF
	}
	return nil, r.fail(formatErr(r.src.off, "expected a tensor record or the index, found %q", peek))
}

func (r *Reader) fail(err error) error {
	r.err = err
	r.cancel()
	return err
}

func (r *Reader) readRecord() (*Tensor, error) {
	off := r.src.off
	fixed := make([]byte, recordFixed)
	if err := r.src.read(fixed); err != nil {
		return nil, err
	}
	n, err := parseRecordFixed(fixed, off)
	if err != nil {
		return nil, err
	}
	rest := make([]byte, n-recordFixed)
	if err := r.src.read(rest); err != nil {
		return nil, err
	}
	e, err := decodeRecordHeader(append(fixed, rest...), off)
	if err != nil {
		return nil, err
	}
	if need := entryFlags(e); r.hdr.Flags&need != need {
		return nil, &FormatError{Offset: off, Tensor: e.Name, Msg: fmt.Sprintf("tensor uses %v, which the header flags (%v) do not declare", need, r.hdr.Flags)}
	}
	for i := range r.seen {
		if r.seen[i].Name == e.Name {
			return nil, &FormatError{Offset: off, Tensor: e.Name, Msg: "duplicate tensor name"}
		}
	}
	if table := r.hdr.Table; table != nil {
		i := len(r.seen)
		if i >= len(table) {
			return nil, tableMismatch(off, i, e.TensorInfo, nil, len(table))
		}
		if !sameInfo(e.TensorInfo, table[i]) {
			return nil, tableMismatch(off, i, e.TensorInfo, &table[i], len(table))
		}
	}
	if err := r.src.skipPad(); err != nil {
		return nil, err
	}
	e.DataOffset = r.src.off
	t := &Tensor{Entry: *e, r: r, left: e.RawSize, start: r.src.off}
	if e.Encrypted && r.opener != nil {
		if t.co, err = r.opener.Tensor(uint64(len(r.seen)), e.encodeRecordHeader()); err != nil {
			return nil, tensorErr(e.Name, err)
		}
	}
	return t, nil
}

// readEnd reads index, blocks and footer and checks them against the records seen.
func (r *Reader) readEnd() error {
	s := r.src
	indexOff := s.off
	head := make([]byte, indexFixed)
	if err := s.read(head); err != nil {
		return err
	}
	count, body := le.Uint64(head[8:]), le.Uint64(head[16:])
	if count != uint64(len(r.seen)) {
		return formatErr(indexOff+8, "index lists %d tensors, the file holds %d", count, len(r.seen))
	}
	if t := r.hdr.Table; t != nil && len(t) != len(r.seen) {
		// Every record was checked against the table as it came; only missing ones are left.
		return &FormatError{Offset: indexOff, Tensor: t[len(r.seen)].Name,
			Msg: fmt.Sprintf("the file holds %d tensors, the tensor table lists %d (this one is missing)", len(r.seen), len(t))}
	}
	if body > uint64(len(r.seen))*(entryFixed+8*MaxDims+MaxName) {
		return formatErr(indexOff+16, "index body length %d too large for %d tensors", body, count)
	}
	rest, err := s.readAll(int64(body))
	if err != nil {
		return err
	}
	idx := append(head, rest...)
	indexCRC := crc32.ChecksumIEEE(idx)
	entries, err := decodeIndex(idx, indexOff, count)
	if err != nil {
		return err
	}
	for i := range entries {
		if err := sameEntry(&entries[i], &r.seen[i]); err != nil {
			return err
		}
	}
	if err := s.skipPad(); err != nil {
		return err
	}
	var blocksOff, blocksLen int64
	if peek, err := s.br.Peek(4); err == nil && [4]byte(peek) == magicBlocks {
		blocksOff = s.off
		bh := make([]byte, blocksFixed)
		if err := s.read(bh); err != nil {
			return err
		}
		bl := le.Uint64(bh[8:])
		if bl > MaxBlockCount*(MaxBlock+8) {
			return formatErr(blocksOff+8, "blocks section length %d exceeds the cap", bl)
		}
		rest, err := s.readAll(int64(bl))
		if err != nil {
			return err
		}
		r.blocks, err = decodeBlocks(append(bh, rest...), blocksOff)
		if err != nil {
			return err
		}
		if need := blockFlags(r.blocks); r.hdr.Flags&need != need {
			return formatErr(blocksOff, "blocks need flags %v, which the header (%v) does not declare", need, r.hdr.Flags)
		}
		blocksLen = s.off - blocksOff
		if err := s.skipPad(); err != nil {
			return err
		}
	}
	footOff := s.off
	fb := make([]byte, FooterSize)
	if _, err := io.ReadFull(s.br, fb); err != nil {
		return formatErr(footOff, "file truncated: expected the %d-byte footer", FooterSize)
	}
	s.crc = crcUpdate(s.crc, fb[:52])
	f, err := decodeFooter(fb, footOff)
	if err != nil {
		return err
	}
	switch {
	case f.IndexOff != uint64(indexOff) || f.IndexLen != uint64(len(idx)) || f.Count != count:
		return formatErr(footOff, "footer places the index at %d (%d bytes, %d tensors), found at %d (%d bytes, %d tensors)",
			f.IndexOff, f.IndexLen, f.Count, indexOff, len(idx), count)
	case f.BlocksOff != uint64(blocksOff) || f.BlocksLen != uint64(blocksLen):
		return formatErr(footOff+32, "footer places blocks at %d (%d bytes), found at %d (%d bytes)", f.BlocksOff, f.BlocksLen, blocksOff, blocksLen)
	case f.IndexCRC != indexCRC:
		return &ChecksumError{What: "index", Offset: indexOff, Expected: f.IndexCRC, Actual: indexCRC}
	}
	if got := s.crc; got != f.FileCRC {
		return &ChecksumError{What: "file", Offset: 0, Expected: f.FileCRC, Actual: got}
	}
	if _, err := s.br.Peek(1); err != io.EOF {
		return formatErr(footOff+FooterSize, "unexpected bytes after the footer")
	}
	if r.blocks, r.sealMAC, err = splitSealBlock(r.blocks, r.hdr.Flags, blocksOff); err != nil {
		return err
	}
	if r.opener != nil {
		return r.opener.VerifyMAC(idx, r.sealMAC)
	}
	return nil
}

func sameEntry(idx, rec *Entry) error {
	same := idx.Name == rec.Name && idx.DType == rec.DType && idx.RecordOffset == rec.RecordOffset &&
		idx.DataOffset == rec.DataOffset && idx.StoredSize == rec.StoredSize && idx.RawSize == rec.RawSize &&
		idx.CRC == rec.CRC && idx.ChunkSize == rec.ChunkSize && idx.Codec == rec.Codec &&
		idx.Shuffle == rec.Shuffle && idx.Encrypted == rec.Encrypted && len(idx.Shape) == len(rec.Shape)
	for i := 0; same && i < len(idx.Shape); i++ {
		same = idx.Shape[i] == rec.Shape[i]
	}
	if !same {
		return &FormatError{Offset: rec.RecordOffset, Tensor: rec.Name,
			Msg: fmt.Sprintf("index entry (%q at %d) disagrees with the tensor record", idx.Name, idx.RecordOffset)}
	}
	return nil
}

// Tensor is the tensor being read from a stream. Read yields its raw bytes
// (decompressed, unshuffled); the last Read reports a checksum failure, if any, in
// place of io.EOF.
type Tensor struct {
	Entry
	r     *Reader
	co    ChunkOpener // for a sealed tensor read with an unsealer
	left  int64       // raw bytes not yet returned
	crc   uint32
	start int64
	// chunked reading
	decoded chan chunk
	errc    chan error
	pending chunk // the rest of the chunk being read
	withCRC bool  // the decoding workers also compute each chunk's CRC
	ended   bool
	err     error
}

// Read implements io.Reader over the tensor's raw bytes.
func (t *Tensor) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.Encrypted && t.co == nil {
		return 0, t.setErr(fmt.Errorf("tensor %q: %w (read it with an unsealer)", t.Name, ErrEncrypted))
	}
	if t.left == 0 {
		if err := t.end(); err != nil {
			return 0, err
		}
		return 0, io.EOF
	}
	var n int
	if !t.Chunked() {
		if int64(len(p)) > t.left {
			p = p[:t.left]
		}
		var err error
		n, err = t.r.src.br.Read(p)
		t.r.src.off += int64(n)
		t.crc = crcUpdate(t.crc, p[:n])
		if err != nil && n == 0 {
			if err == io.EOF {
				err = formatErr(t.r.src.off, "file truncated in tensor data: %d bytes missing", t.left)
			}
			return 0, t.setErr(tensorErr(t.Name, err))
		}
	} else {
		if len(t.pending.data) == 0 {
			c, err := t.nextChunk()
			if err != nil {
				return 0, err
			}
			t.pending = c
		}
		n = copy(p, t.pending.data)
		t.pending.data = t.pending.data[n:]
		if len(t.pending.data) == 0 {
			t.r.pool.put(t.pending.buf)
			t.pending = chunk{}
		}
	}
	t.left -= int64(n)
	return n, nil
}

// nextChunk returns the next decoded chunk, starting the decoding on first use.
func (t *Tensor) nextChunk() (chunk, error) {
	if t.decoded == nil {
		t.startChunks()
	}
	c, ok := <-t.decoded
	if !ok {
		err := <-t.errc
		if err == nil {
			err = formatErr(t.r.src.off, "chunks ended early")
		}
		return chunk{}, t.setErr(tensorErr(t.Name, err))
	}
	return c, nil
}

// streamChunks hands the decoded chunks of a chunked tensor that was not read yet to
// fn, in order, each with its CRC32 computed by the decoding workers, and then ends
// the tensor as a Read to its end would. fn must not keep the slice. It reports
// false (and does nothing) for a tensor it cannot stream this way: plain data, an
// empty or sealed tensor without a key, or one already read from.
func (t *Tensor) streamChunks(fn func(b []byte, crc uint32) error) (bool, error) {
	if !t.Chunked() || t.decoded != nil || t.left != t.RawSize || t.RawSize == 0 || t.err != nil ||
		(t.Encrypted && t.co == nil) {
		return false, nil
	}
	t.withCRC = true
	for t.left > 0 {
		c, err := t.nextChunk()
		if err != nil {
			return true, err
		}
		err = fn(c.data, c.crc)
		t.left -= int64(len(c.data))
		t.r.pool.put(c.buf)
		if err != nil {
			return true, t.setErr(err)
		}
	}
	return true, t.end()
}

func (t *Tensor) setErr(err error) error {
	t.err = err
	return err
}

// startChunks reads the frames in order in the background and decompresses them in
// parallel; the decoded chunks arrive in order on t.decoded.
func (t *Tensor) startChunks() {
	t.decoded = make(chan chunk, 1)
	t.errc = make(chan error, 1)
	ctx := t.r.ctx
	if t.r.pool == nil {
		t.r.pool = newBufPool(int(t.ChunkSize)+frameHeader+SealOverhead, 2*t.r.workers+6)
	}
	pool, withCRC := t.r.pool, t.withCRC
	go func() {
		defer close(t.decoded)
		i, n := int64(0), t.Entry.chunks()
		next := func() ([]byte, bool, error) {
			if i == n {
				return nil, false, nil
			}
			frame, err := t.readFrame(i)
			i++
			return frame, err == nil, err
		}
		work := func(idx int64, frame []byte) (chunk, error) {
			c, err := decodeFrame(&t.Entry, t.co, idx, n, frame, pool)
			if err == nil && withCRC {
				c.crc = crc32.ChecksumIEEE(c.data)
			}
			return c, err
		}
		emit := func(c chunk) error {
			select {
			case t.decoded <- c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		t.errc <- ordered(ctx, t.r.workers, next, work, emit)
	}()
}

// readFrame reads chunk frame idx from the stream, into a buffer of the reader's pool,
// and feeds the tensor CRC. The payload's bytes are not checksummed here: the frame
// header's CRC is folded in, and every caller checks the payload against it before
// using the frame, so the tensor CRC is that of the bytes read whenever it matters.
func (t *Tensor) readFrame(idx int64) ([]byte, error) {
	s := t.r.src
	off := s.off
	var h [frameHeader]byte
	if err := s.readData(h[:]); err != nil {
		return nil, err
	}
	l := le.Uint32(h[:])
	size := int64(l &^ rawChunkFlag)
	if err := checkFrameLen(&t.Entry, idx, l, off); err != nil {
		return nil, err
	}
	frame := t.r.pool.get(int(frameHeader + size))
	copy(frame, h[:])
	if err := s.readData(frame[frameHeader:]); err != nil {
		return nil, err
	}
	t.crc = crcUpdate(t.crc, h[:])
	t.crc = t.r.shift.combine(t.crc, le.Uint32(h[4:]), size)
	return frame, nil
}

// end reads and checks the trailer once all raw bytes were delivered.
func (t *Tensor) end() error {
	if t.ended {
		return t.err
	}
	t.ended = true
	if t.decoded != nil {
		if err := <-t.errc; err != nil {
			return t.setErr(tensorErr(t.Name, err))
		}
	} else if t.RawSize == 0 && t.Entry.chunks() > 0 {
		// A sealed empty tensor: its one empty chunk still authenticates.
		if err := t.skipFrames(t.co != nil); err != nil {
			return t.setErr(err)
		}
	}
	s := t.r.src
	t.StoredSize = s.off - t.start
	t.CRC = t.crc
	s.crc = crcCombine(s.crc, t.crc, t.StoredSize)
	trOff := s.off
	var tr [trailerSize]byte
	if err := s.read(tr[:]); err != nil {
		return t.setErr(tensorErr(t.Name, err))
	}
	if [4]byte(tr[12:]) != magicTrailer || int64(le.Uint64(tr[:])) != t.StoredSize {
		return t.setErr(&FormatError{Offset: trOff, Tensor: t.Name, Msg: fmt.Sprintf("bad tensor trailer (stored size %d, expected %d)", le.Uint64(tr[:]), t.StoredSize)})
	}
	if want := le.Uint32(tr[8:]); want != t.CRC {
		return t.setErr(&ChecksumError{What: "tensor data", Tensor: t.Name, Offset: t.DataOffset, Expected: want, Actual: t.CRC})
	}
	if err := s.skipPad(); err != nil {
		return t.setErr(tensorErr(t.Name, err))
	}
	return nil
}

// finish consumes what the caller did not read, verifying it, and ends the tensor.
func (t *Tensor) finish() error {
	if t.err != nil {
		return t.err
	}
	if t.Chunked() && t.decoded == nil && t.left == t.RawSize && t.RawSize > 0 {
		// Never started: check the frames and their CRCs without decompressing.
		if err := t.skipFrames(false); err != nil {
			return t.setErr(err)
		}
		t.left = 0
		return t.end()
	}
	if t.Encrypted && t.co == nil {
		// Sealed and no key: only the empty chunk of an empty tensor is left to check.
		t.left = 0
		return t.end()
	}
	_, err := io.Copy(io.Discard, t)
	return err
}

// skipFrames reads every chunk frame of a tensor that was not read, checking each
// CRC; with open set (a sealed empty tensor and its opener) it also authenticates
// the chunk.
func (t *Tensor) skipFrames(open bool) error {
	for i, n := int64(0), t.Entry.chunks(); i < n; i++ {
		frame, err := t.readFrame(i)
		if err != nil {
			return tensorErr(t.Name, err)
		}
		if open {
			c, err := decodeFrame(&t.Entry, t.co, i, n, frame, t.r.pool)
			if err != nil {
				return tensorErr(t.Name, err)
			}
			t.r.pool.put(c.buf)
			continue
		}
		if want, got := le.Uint32(frame[4:]), crc32.ChecksumIEEE(frame[frameHeader:]); want != got {
			return &ChecksumError{What: fmt.Sprintf("chunk %d", i), Tensor: t.Name, Offset: -1, Expected: want, Actual: got}
		}
		t.r.pool.put(frame)
	}
	return nil
}
