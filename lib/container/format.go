package container

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Version of the format. Readers accept major 2, minor 0..MinorVersion. Writers write
// minor 1 only for a file with a tensor table (the one feature of 2.1), else minor 0,
// so a file without one stays readable by 2.0 readers and keeps its bytes.
const (
	MajorVersion = 2
	MinorVersion = 1
)

// Fixed sizes and caps. Every length read from a file is checked against these and
// against the bytes actually present before anything is allocated.
const (
	Align        = 64
	HeaderSize   = 64
	FooterSize   = 64
	recordFixed  = 32 // tensor record header before dims and name
	trailerSize  = 16
	entryFixed   = 48 // index entry before dims and name
	indexFixed   = 24
	blocksFixed  = 16
	frameHeader  = 8 // chunk frame: u32 length|raw flag, u32 CRC32
	rawChunkFlag = 1 << 31

	MaxMetadata   = 64 << 20 // bytes of MessagePack metadata
	MaxSeal       = 1 << 20  // bytes of the seal section
	MaxDims       = 32
	MaxName       = 4096 // bytes of a tensor name
	MaxChunk      = 16 << 20
	MinChunk      = 4 << 10
	DefaultChunk  = 1 << 20
	MaxBlock      = 16 << 20 // bytes of one signature or license block
	MaxBlockCount = 1024
)

var (
	magicHeader  = [4]byte{'A', 'P', 'R', 'N'}
	magicRecord  = [4]byte{'A', 'P', 'R', 'T'}
	magicTrailer = [4]byte{'T', 'E', 'N', 'D'}
	magicIndex   = [4]byte{'A', 'P', 'R', 'I'}
	magicBlocks  = [4]byte{'A', 'P', 'R', 'B'}
	magicFooter  = [4]byte{'A', 'P', 'R', 'F'}
	magicEnd     = [8]byte{'A', 'P', 'R', 'N', 'E', 'N', 'D', 0}
)

var le = binary.LittleEndian

// Flags are the header's feature bits. A reader refuses a file with a bit it does not
// know, and a file whose content uses a feature its flags do not declare.
type Flags uint32

const (
	FlagCompressed Flags = 1 << 0 // some tensors use a codec
	FlagEncrypted  Flags = 1 << 1 // tensor data is sealed; a seal section follows the metadata
	FlagSigned     Flags = 1 << 2 // the blocks section holds signatures
	FlagLicensed   Flags = 1 << 3 // the blocks section holds a license
	FlagQuantized  Flags = 1 << 4 // some tensors have a GGML block dtype
	FlagShuffled   Flags = 1 << 5 // some tensors use the byte-shuffle filter
	knownFlags           = FlagCompressed | FlagEncrypted | FlagSigned | FlagLicensed | FlagQuantized | FlagShuffled
)

func (f Flags) String() string {
	names := []string{"compressed", "encrypted", "signed", "licensed", "quantized", "shuffled"}
	s := ""
	for i, n := range names {
		if f&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += n
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// Codec is a tensor's compression codec, stored in its record and index entry.
type Codec uint8

const (
	CodecNone Codec = 0
	CodecZstd Codec = 1
	CodecLZ4  Codec = 2
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecZstd:
		return "zstd"
	case CodecLZ4:
		return "lz4"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// Filter bits of a tensor.
const filterShuffle = 1 << 0

// fileHeader is the fixed 64-byte header.
type fileHeader struct {
	Major, Minor uint8
	Type         modeltype.Type
	Flags        Flags
	MetaLen      uint32
	MetaCRC      uint32
	SealLen      uint32
	TableLen     uint32 // 2.1: bytes of the tensor table section, 0 when there is none
	TableCRC     uint32 // 2.1: CRC32 of the tensor table section
}

func (h *fileHeader) encode() []byte {
	b := make([]byte, HeaderSize)
	copy(b, magicHeader[:])
	b[4], b[5] = h.Major, h.Minor
	le.PutUint16(b[6:], uint16(h.Type))
	le.PutUint32(b[8:], uint32(h.Flags))
	le.PutUint32(b[12:], h.MetaLen)
	le.PutUint32(b[16:], h.MetaCRC)
	le.PutUint32(b[20:], h.SealLen)
	le.PutUint32(b[24:], h.TableLen)
	le.PutUint32(b[28:], h.TableCRC)
	le.PutUint32(b[60:], crc32.ChecksumIEEE(b[:60]))
	return b
}

// otherFormat names the format of a file that is not APR when its first bytes say it
// is one apr reads with another program, so the error says what to run.
func otherFormat(b []byte) string {
	switch {
	case string(b[:4]) == "GGUF":
		return "; this is a GGUF file: apr-gguf import reads it"
	case len(b) < 6:
		return ""
	case len(b) > 9 && binary.LittleEndian.Uint64(b) < 1<<30 && b[8] == '{' && b[9] == '"':
		return "; this looks like a SafeTensors file: apr-st import reads it"
	case string(b[:6]) == "\x93NUMPY":
		return "; this is a NumPy .npy file: apr-encode builds a model from it"
	case string(b[:4]) == "PK\x03\x04":
		return "; this is a zip file (a NumPy .npz?): apr-encode builds a model from .npz files"
	}
	return ""
}

// shortHeader is the error for the first bytes b of an input too short to hold an APR
// header, when they say more than "too short": another format, or another APR version.
func shortHeader(b []byte) error {
	switch {
	case len(b) < 4:
		return nil
	case [4]byte(b[:4]) != magicHeader:
		return formatErr(0, "bad magic %q, expected \"APRN\"%s", b[:4], otherFormat(b))
	case len(b) >= 6 && b[4] != MajorVersion:
		return &VersionError{Major: b[4], Minor: b[5], SupportedMajor: MajorVersion, SupportedMinorTo: MinorVersion}
	}
	return nil
}

func decodeHeader(b []byte) (*fileHeader, error) {
	if len(b) < HeaderSize {
		return nil, formatErr(0, "file is %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	if [4]byte(b[:4]) != magicHeader {
		return nil, formatErr(0, "bad magic %q, expected \"APRN\"%s", b[:4], otherFormat(b))
	}
	if b[4] != MajorVersion || b[5] > MinorVersion {
		return nil, &VersionError{Major: b[4], Minor: b[5], SupportedMajor: MajorVersion, SupportedMinorTo: MinorVersion}
	}
	if want, got := le.Uint32(b[60:]), crc32.ChecksumIEEE(b[:60]); want != got {
		return nil, &ChecksumError{What: "header", Offset: 0, Expected: want, Actual: got}
	}
	h := &fileHeader{
		Major: b[4], Minor: b[5],
		Type:    modeltype.Type(le.Uint16(b[6:])),
		Flags:   Flags(le.Uint32(b[8:])),
		MetaLen: le.Uint32(b[12:]),
		MetaCRC: le.Uint32(b[16:]),
		SealLen: le.Uint32(b[20:]),
	}
	reserved := 24 // bytes 24..31 are the tensor table's from minor 1 on
	if h.Minor >= 1 {
		h.TableLen, h.TableCRC = le.Uint32(b[24:]), le.Uint32(b[28:])
		reserved = 32
	}
	for i := reserved; i < 60; i++ {
		if b[i] != 0 {
			return nil, formatErr(int64(i), "reserved header byte is 0x%02x, expected 0", b[i])
		}
	}
	switch {
	case !h.Type.Known():
		return nil, formatErr(6, "unknown model type 0x%04X", uint16(h.Type))
	case h.Flags&^knownFlags != 0:
		return nil, formatErr(8, "unknown flag bits 0x%08X", uint32(h.Flags&^knownFlags))
	case h.MetaLen > MaxMetadata:
		return nil, formatErr(12, "metadata length %d exceeds the cap of %d", h.MetaLen, MaxMetadata)
	case h.SealLen > MaxSeal:
		return nil, formatErr(20, "seal section length %d exceeds the cap of %d", h.SealLen, MaxSeal)
	case (h.SealLen != 0) != (h.Flags&FlagEncrypted != 0):
		return nil, formatErr(20, "seal section length %d disagrees with the encrypted flag", h.SealLen)
	case h.TableLen > MaxTable:
		return nil, formatErr(24, "tensor table length %d exceeds the cap of %d", h.TableLen, MaxTable)
	case h.TableLen != 0 && h.TableLen < tableFixed:
		return nil, formatErr(24, "tensor table length %d is shorter than its %d-byte head", h.TableLen, tableFixed)
	case h.TableLen == 0 && h.TableCRC != 0:
		return nil, formatErr(28, "tensor table CRC 0x%08X without a tensor table", h.TableCRC)
	}
	return h, nil
}

// tableStart is the offset of the tensor table (right after the seal section, if any).
func (h *fileHeader) tableStart() int64 {
	return alignUp(alignUp(HeaderSize+int64(h.MetaLen)) + int64(h.SealLen))
}

// dataStart is the offset of the first tensor record.
func (h *fileHeader) dataStart() int64 {
	return alignUp(h.tableStart() + int64(h.TableLen))
}

// footer is the fixed 64-byte footer that ends every file.
type footer struct {
	IndexOff, IndexLen   uint64
	Count                uint64
	BlocksOff, BlocksLen uint64
	IndexCRC             uint32
	FileCRC              uint32 // over every byte before the footer, then footer bytes 0..52
}

func (f *footer) encodeBody() []byte {
	b := make([]byte, FooterSize)
	copy(b, magicFooter[:])
	le.PutUint64(b[8:], f.IndexOff)
	le.PutUint64(b[16:], f.IndexLen)
	le.PutUint64(b[24:], f.Count)
	le.PutUint64(b[32:], f.BlocksOff)
	le.PutUint64(b[40:], f.BlocksLen)
	le.PutUint32(b[48:], f.IndexCRC)
	copy(b[56:], magicEnd[:])
	return b
}

func decodeFooter(b []byte, off int64) (*footer, error) {
	if [4]byte(b[:4]) != magicFooter || [8]byte(b[56:64]) != magicEnd {
		return nil, formatErr(off, "no APR footer (file truncated, or bytes appended after its end)")
	}
	if le.Uint32(b[4:]) != 0 {
		return nil, formatErr(off+4, "reserved footer bytes are not zero")
	}
	f := &footer{
		IndexOff: le.Uint64(b[8:]), IndexLen: le.Uint64(b[16:]), Count: le.Uint64(b[24:]),
		BlocksOff: le.Uint64(b[32:]), BlocksLen: le.Uint64(b[40:]),
		IndexCRC: le.Uint32(b[48:]), FileCRC: le.Uint32(b[52:]),
	}
	// Layout: index, optional blocks, footer, each 64-aligned and back to back.
	end := uint64(off)
	if f.IndexOff%Align != 0 || f.IndexLen < indexFixed || f.IndexOff > end || f.IndexLen > end-f.IndexOff {
		return nil, formatErr(off+8, "index at %d length %d does not fit before the footer at %d", f.IndexOff, f.IndexLen, off)
	}
	next := uint64(alignUp(int64(f.IndexOff + f.IndexLen)))
	if f.BlocksLen == 0 {
		if f.BlocksOff != 0 {
			return nil, formatErr(off+32, "blocks offset %d with zero length", f.BlocksOff)
		}
	} else {
		if f.BlocksOff != next || f.BlocksLen > end-f.BlocksOff {
			return nil, formatErr(off+32, "blocks at %d length %d, expected to start at %d and end before %d", f.BlocksOff, f.BlocksLen, next, off)
		}
		next = uint64(alignUp(int64(f.BlocksOff + f.BlocksLen)))
	}
	if next != end {
		return nil, formatErr(off, "footer at %d, expected at %d", off, next)
	}
	return f, nil
}

// TensorInfo describes a tensor as its producer gives it.
type TensorInfo struct {
	Name  string
	DType dtype.DType
	Shape []int64 // outermost dimension first
}

// RawSize is the tensor's size in bytes, uncompressed, with overflow checks.
func (t TensorInfo) RawSize() (int64, error) { return dtype.Size(t.DType, t.Shape) }

func (t TensorInfo) validate() error {
	switch {
	case t.Name == "" || len(t.Name) > MaxName:
		return fmt.Errorf("tensor name must be 1 to %d bytes, got %d", MaxName, len(t.Name))
	case !utf8.ValidString(t.Name):
		return fmt.Errorf("tensor name %q is not valid UTF-8", t.Name)
	case len(t.Shape) > MaxDims:
		return fmt.Errorf("tensor %q has %d dimensions, at most %d allowed", t.Name, len(t.Shape), MaxDims)
	case !t.DType.Valid():
		return fmt.Errorf("tensor %q: unknown dtype code 0x%04x", t.Name, uint16(t.DType))
	}
	if _, err := t.RawSize(); err != nil {
		return tensor.Wrap(t.Name, err)
	}
	return nil
}

// Entry is one tensor of the index: where its record and data are, how they are
// encoded, and the CRC32 of its stored bytes.
type Entry struct {
	TensorInfo
	RecordOffset int64
	DataOffset   int64
	StoredSize   int64 // bytes stored, chunk frames included
	RawSize      int64
	CRC          uint32 // CRC32 of the stored bytes
	ChunkSize    uint32 // raw bytes per chunk; 0 for plain data
	Codec        Codec
	Shuffle      bool
	Encrypted    bool
}

// Chunked reports whether the data is a sequence of chunk frames (any codec or
// encryption) rather than plain contiguous bytes.
func (e *Entry) Chunked() bool { return e.ChunkSize != 0 }

func (e *Entry) filter() byte {
	var f byte
	if e.Shuffle {
		f |= filterShuffle
	}
	return f
}

// encodeRecordHeader returns the record header bytes (CRC included, unpadded).
func (e *Entry) encodeRecordHeader() []byte {
	n := recordFixed + 8*len(e.Shape) + len(e.Name) + 4
	b := make([]byte, n)
	copy(b, magicRecord[:])
	le.PutUint32(b[4:], uint32(n))
	le.PutUint16(b[8:], uint16(e.DType))
	b[10] = byte(e.Codec)
	b[11] = e.filter()
	b[12] = byte(len(e.Shape))
	if e.Encrypted {
		b[13] = 1
	}
	le.PutUint16(b[14:], uint16(len(e.Name)))
	le.PutUint64(b[16:], uint64(e.RawSize))
	le.PutUint32(b[24:], e.ChunkSize)
	p := recordFixed
	for _, d := range e.Shape {
		le.PutUint64(b[p:], uint64(d))
		p += 8
	}
	p += copy(b[p:], e.Name)
	le.PutUint32(b[p:], crc32.ChecksumIEEE(b[:p]))
	return b
}

// parseRecordFixed validates the first recordFixed bytes and returns the full header length.
func parseRecordFixed(b []byte, off int64) (int, error) {
	if [4]byte(b[:4]) != magicRecord {
		return 0, formatErr(off, "expected a tensor record (\"APRT\"), found %q", b[:4])
	}
	n := int(le.Uint32(b[4:]))
	nd, nl := int(b[12]), int(le.Uint16(b[14:]))
	if nd > MaxDims || nl == 0 || nl > MaxName || n != recordFixed+8*nd+nl+4 {
		return 0, formatErr(off+4, "tensor record header length %d does not match %d dims and a %d-byte name", n, nd, nl)
	}
	return n, nil
}

// decodeRecordHeader parses a full record header (as returned by parseRecordFixed's length).
func decodeRecordHeader(b []byte, off int64) (*Entry, error) {
	p := len(b) - 4
	if want, got := le.Uint32(b[p:]), crc32.ChecksumIEEE(b[:p]); want != got {
		return nil, &ChecksumError{What: "tensor record header", Offset: off, Expected: want, Actual: got}
	}
	e := &Entry{RecordOffset: off}
	e.DType = dtype.DType(le.Uint16(b[8:]))
	e.Codec = Codec(b[10])
	e.Shuffle = b[11]&filterShuffle != 0
	e.Encrypted = b[13]&1 != 0
	e.RawSize = int64(le.Uint64(b[16:]))
	e.ChunkSize = le.Uint32(b[24:])
	nd := int(b[12])
	e.Shape = make([]int64, nd)
	q := recordFixed
	for i := range e.Shape {
		e.Shape[i] = int64(le.Uint64(b[q:]))
		q += 8
	}
	e.Name = string(b[q:p])
	if b[11]&^filterShuffle != 0 || b[13]&^1 != 0 || le.Uint32(b[28:]) != 0 {
		return nil, formatErr(off+11, "tensor %q: unknown filter or flag bits", e.Name)
	}
	if err := e.check(); err != nil {
		return nil, &FormatError{Offset: off, Tensor: e.Name, Msg: err.Error()}
	}
	return e, nil
}

// check validates the fields every entry must satisfy, wherever it was read from.
func (e *Entry) check() error {
	if err := e.TensorInfo.validate(); err != nil {
		return err
	}
	raw, _ := e.TensorInfo.RawSize()
	if raw != e.RawSize {
		return fmt.Errorf("raw size %d, but %v of %v is %d bytes", e.RawSize, e.Shape, e.DType, raw)
	}
	if e.Codec > CodecLZ4 {
		return fmt.Errorf("unknown codec %d", e.Codec)
	}
	chunked := e.Codec != CodecNone || e.Encrypted
	if chunked != (e.ChunkSize != 0) || (chunked && (e.ChunkSize < MinChunk || e.ChunkSize > MaxChunk)) {
		return fmt.Errorf("chunk size %d invalid for codec %v", e.ChunkSize, e.Codec)
	}
	if e.Shuffle {
		if !chunked {
			return fmt.Errorf("shuffle filter without a codec")
		}
		if esz := e.DType.Info().BlockBytes; e.DType.Info().BlockElems != 1 || int(e.ChunkSize)%esz != 0 {
			return fmt.Errorf("shuffle filter on %v with chunk size %d", e.DType, e.ChunkSize)
		}
	}
	return nil
}

// chunks returns the number of chunk frames of a chunked tensor (at least one when
// it is sealed).
func (e *Entry) chunks() int64 {
	if e.ChunkSize == 0 {
		return 0
	}
	if e.Encrypted {
		return sealedChunkCount(e)
	}
	return (e.RawSize + int64(e.ChunkSize) - 1) / int64(e.ChunkSize)
}

func (e *Entry) encodeIndexEntry(b []byte) []byte {
	var f [entryFixed]byte
	le.PutUint64(f[0:], uint64(e.RecordOffset))
	le.PutUint64(f[8:], uint64(e.DataOffset))
	le.PutUint64(f[16:], uint64(e.StoredSize))
	le.PutUint64(f[24:], uint64(e.RawSize))
	le.PutUint32(f[32:], e.CRC)
	le.PutUint32(f[36:], e.ChunkSize)
	le.PutUint16(f[40:], uint16(e.DType))
	f[42] = byte(e.Codec)
	f[43] = e.filter()
	f[44] = byte(len(e.Shape))
	if e.Encrypted {
		f[45] = 1
	}
	le.PutUint16(f[46:], uint16(len(e.Name)))
	b = append(b, f[:]...)
	for _, d := range e.Shape {
		b = le.AppendUint64(b, uint64(d))
	}
	return append(b, e.Name...)
}

// decodeIndex parses a whole index section (magic to last entry) located at off.
// The caller has checked its CRC.
func decodeIndex(b []byte, off int64, count uint64) ([]Entry, error) {
	if len(b) < indexFixed || [4]byte(b[:4]) != magicIndex {
		return nil, formatErr(off, "expected the index (\"APRI\")")
	}
	n, body := le.Uint64(b[8:]), le.Uint64(b[16:])
	if le.Uint32(b[4:]) != 0 {
		return nil, formatErr(off+4, "reserved index bytes are not zero")
	}
	if n != count {
		return nil, formatErr(off+8, "index lists %d tensors, footer says %d", n, count)
	}
	if body != uint64(len(b)-indexFixed) {
		return nil, formatErr(off+16, "index body length %d, expected %d", body, len(b)-indexFixed)
	}
	if n > body/entryFixed {
		return nil, formatErr(off+8, "index claims %d tensors in %d bytes", n, body)
	}
	entries := make([]Entry, 0, n)
	names := make(map[string]bool, n)
	p := indexFixed
	for i := uint64(0); i < n; i++ {
		at := off + int64(p)
		if len(b)-p < entryFixed {
			return nil, formatErr(at, "index entry %d truncated", i)
		}
		f := b[p : p+entryFixed]
		nd, nl := int(f[44]), int(le.Uint16(f[46:]))
		size := entryFixed + 8*nd + nl
		if nd > MaxDims || len(b)-p < size {
			return nil, formatErr(at, "index entry %d (%d dims, %d-byte name) overruns the index", i, nd, nl)
		}
		e := Entry{
			RecordOffset: int64(le.Uint64(f[0:])), DataOffset: int64(le.Uint64(f[8:])),
			StoredSize: int64(le.Uint64(f[16:])), RawSize: int64(le.Uint64(f[24:])),
			CRC: le.Uint32(f[32:]), ChunkSize: le.Uint32(f[36:]),
			Codec: Codec(f[42]), Shuffle: f[43]&filterShuffle != 0, Encrypted: f[45]&1 != 0,
		}
		e.DType = dtype.DType(le.Uint16(f[40:]))
		e.Shape = make([]int64, nd)
		q := p + entryFixed
		for j := range e.Shape {
			e.Shape[j] = int64(le.Uint64(b[q:]))
			q += 8
		}
		e.Name = string(b[q : q+nl])
		if f[43]&^filterShuffle != 0 || f[45]&^1 != 0 {
			return nil, formatErr(at, "index entry %d: unknown filter or flag bits", i)
		}
		if err := e.check(); err != nil {
			return nil, &FormatError{Offset: at, Tensor: e.Name, Msg: err.Error()}
		}
		if names[e.Name] {
			return nil, &FormatError{Offset: at, Tensor: e.Name, Msg: "duplicate tensor name in index"}
		}
		names[e.Name] = true
		entries = append(entries, e)
		p += size
	}
	if p != len(b) {
		return nil, formatErr(off+int64(p), "%d unexpected bytes after the last index entry", len(b)-p)
	}
	return entries, nil
}

// checkLayout verifies that the entries describe records that sit back to back from
// dataStart up to the index, in order, each where the previous one ended.
func checkLayout(entries []Entry, dataStart, indexOff int64) error {
	next := dataStart
	for i := range entries {
		e := &entries[i]
		hdr := int64(recordFixed + 8*len(e.Shape) + len(e.Name) + 4)
		if e.RecordOffset != next || e.DataOffset != alignUp(next+hdr) {
			return &FormatError{Offset: e.RecordOffset, Tensor: e.Name,
				Msg: fmt.Sprintf("index places record at %d and data at %d, expected %d and %d", e.RecordOffset, e.DataOffset, next, alignUp(next+hdr))}
		}
		if e.StoredSize < 0 || e.StoredSize > indexOff-e.DataOffset {
			return &FormatError{Offset: e.DataOffset, Tensor: e.Name, Msg: fmt.Sprintf("stored size %d runs past the index at %d", e.StoredSize, indexOff)}
		}
		if !e.Chunked() && e.StoredSize != e.RawSize {
			return &FormatError{Offset: e.DataOffset, Tensor: e.Name, Msg: fmt.Sprintf("plain data stored size %d, expected raw size %d", e.StoredSize, e.RawSize)}
		}
		if e.Chunked() {
			min := e.chunks() * frameHeader
			if e.Encrypted {
				min = e.chunks() * (frameHeader + SealOverhead)
			}
			if e.StoredSize < min {
				return &FormatError{Offset: e.DataOffset, Tensor: e.Name, Msg: fmt.Sprintf("stored size %d too small for %d chunk frames", e.StoredSize, e.chunks())}
			}
		}
		next = alignUp(e.DataOffset + e.StoredSize + trailerSize)
	}
	if next != indexOff {
		return formatErr(indexOff, "index at %d, but the last record ends at %d", indexOff, next)
	}
	return nil
}

func alignUp(n int64) int64 { return (n + Align - 1) &^ (Align - 1) }

// Block kinds of the blocks section.
const (
	BlockSignature uint32 = 1
	BlockLicense   uint32 = 2
)

// Block is an opaque, typed payload after the index: a signature or a license.
type Block struct {
	Kind    uint32
	Payload []byte
}

func encodeBlocks(blocks []Block) []byte {
	b := make([]byte, blocksFixed)
	copy(b, magicBlocks[:])
	le.PutUint32(b[4:], uint32(len(blocks)))
	for _, bl := range blocks {
		b = le.AppendUint32(b, bl.Kind)
		b = le.AppendUint32(b, uint32(len(bl.Payload)))
		b = append(b, bl.Payload...)
	}
	le.PutUint64(b[8:], uint64(len(b)-blocksFixed))
	return b
}

func decodeBlocks(b []byte, off int64) ([]Block, error) {
	if len(b) < blocksFixed || [4]byte(b[:4]) != magicBlocks {
		return nil, formatErr(off, "expected the blocks section (\"APRB\")")
	}
	n := le.Uint32(b[4:])
	if n > MaxBlockCount || le.Uint64(b[8:]) != uint64(len(b)-blocksFixed) {
		return nil, formatErr(off+4, "blocks section header (%d blocks, body %d) disagrees with its length %d", n, le.Uint64(b[8:]), len(b))
	}
	var out []Block
	p := blocksFixed
	for i := uint32(0); i < n; i++ {
		if len(b)-p < 8 {
			return nil, formatErr(off+int64(p), "block %d truncated", i)
		}
		kind, l := le.Uint32(b[p:]), le.Uint32(b[p+4:])
		if l > MaxBlock || int64(l) > int64(len(b)-p-8) {
			return nil, formatErr(off+int64(p), "block %d length %d overruns the section", i, l)
		}
		if kind != BlockSignature && kind != BlockLicense && kind != BlockSeal {
			return nil, formatErr(off+int64(p), "block %d has unknown kind %d", i, kind)
		}
		out = append(out, Block{Kind: kind, Payload: append([]byte(nil), b[p+8:p+8+int(l)]...)})
		p += 8 + int(l)
	}
	if p != len(b) {
		return nil, formatErr(off+int64(p), "%d unexpected bytes after the last block", len(b)-p)
	}
	return out, nil
}

// blockFlags are the flags a set of blocks requires.
func blockFlags(blocks []Block) Flags {
	var f Flags
	for _, b := range blocks {
		switch b.Kind {
		case BlockSignature:
			f |= FlagSigned
		case BlockLicense:
			f |= FlagLicensed
		case BlockSeal:
			f |= FlagEncrypted
		}
	}
	return f
}

// entryFlags are the flags an entry requires.
func entryFlags(e *Entry) Flags {
	var f Flags
	if e.Codec != CodecNone {
		f |= FlagCompressed
	}
	if e.Shuffle {
		f |= FlagShuffled
	}
	if e.Encrypted {
		f |= FlagEncrypted
	}
	if e.DType.Info().Quantized() {
		f |= FlagQuantized
	}
	return f
}
