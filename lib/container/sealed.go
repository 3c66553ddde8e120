package container

import (
	"fmt"
	"hash/crc32"

	"github.com/apr-go/apr/lib/tensor"
)

// Sealing (encryption of tensor data) is pluggable: the container frames sealed
// chunks, checks their CRCs and sequence, and stores the seal section and the seal
// MAC, while the cryptography lives behind the interfaces below (lib/apr implements
// them with lib/seal: AES-256-GCM chunks, X25519 and Argon2id key wrapping, an
// HMAC-SHA256 seal MAC). A file's seal section, record headers and index are passed
// to the implementation as bytes, so it can bind them into its keys and tags.

// Sizes fixed by the sealed format.
const (
	// SealOverhead is the bytes a sealed chunk adds to its plaintext (the AES-GCM tag).
	SealOverhead = 16
	// SealMACSize is the size of the seal MAC block's payload.
	SealMACSize = 32
)

// BlockSeal is the kind of the seal MAC block: the first block of every sealed file
// and of no other file. It is managed by the writer and the readers; Blocks and
// AddBlock never show or accept it.
const BlockSeal uint32 = 3

// A Sealer starts the encryption of one file: WithSealer hands it to a Writer.
type Sealer interface {
	// SectionLen is the length of the seal section Begin will return, 1..MaxSeal.
	SectionLen() int
	// Begin is called once, before anything is written, with the authenticated header
	// (AuthHeader of the header being written, whose seal length is SectionLen) and
	// the metadata bytes. It returns the seal section and the file's TensorSealer.
	Begin(header, metadata []byte) (section []byte, ts TensorSealer, err error)
}

// A TensorSealer seals the tensors of one file.
type TensorSealer interface {
	// Tensor returns the chunk sealer of the file's tensor number index (0 for the
	// first), whose record header bytes (CRC included) are record.
	Tensor(index uint64, record []byte) (ChunkSealer, error)
	// MAC returns the SealMACSize-byte seal MAC over the index section (from its magic
	// to its last entry); the implementation binds it to the header, metadata and
	// seal section it was begun with.
	MAC(index []byte) ([]byte, error)
}

// A ChunkSealer encrypts the chunks of one tensor. SealChunk must be safe for
// concurrent calls with different indexes; it appends len(plaintext)+SealOverhead
// bytes to dst. final is set for the last chunk of the tensor and only for it.
type ChunkSealer interface {
	SealChunk(dst []byte, index uint64, plaintext []byte, final bool) ([]byte, error)
}

// An Unsealer opens sealed files: WithUnsealer hands it to a Reader or File.
type Unsealer interface {
	// Begin is called with the authenticated header, the metadata and the seal
	// section of a sealed file before any tensor is read. A wrong key or password, or
	// a header, metadata or seal section that does not authenticate, is an error.
	Begin(header, metadata, section []byte) (TensorOpener, error)
}

// A TensorOpener opens the tensors of one file.
type TensorOpener interface {
	// Tensor returns the chunk opener of tensor number index with record header bytes
	// record (as for TensorSealer.Tensor).
	Tensor(index uint64, record []byte) (ChunkOpener, error)
	// VerifyMAC checks the seal MAC against the index section.
	VerifyMAC(index, mac []byte) error
}

// A ChunkOpener authenticates and decrypts the chunks of one tensor. OpenChunk must
// be safe for concurrent calls, append nothing to dst unless the chunk
// authenticates, and fail for a chunk sealed under another index or final flag.
type ChunkOpener interface {
	OpenChunk(dst []byte, index uint64, ciphertext []byte, final bool) ([]byte, error)
}

// WithSealer seals every tensor of the file with s: the writer sets the ENCRYPTED
// flag, writes the seal section after the metadata, stores every tensor as chunks
// (plain tensors too; an empty tensor as one empty chunk) whose payloads are
// encrypted after compression, and writes the seal MAC block on Close.
func WithSealer(s Sealer) Option { return func(o *writerOptions) { o.sealer = s } }

// WithUnsealer lets a Reader or File decrypt sealed tensors. For a sealed file, u's
// Begin runs when the file is opened (NewReader, NewFile, Open), and the seal MAC
// is checked with the index (by NewFile and Open at once, by a Reader at the end of
// the stream). Without an unsealer, sealed files still open, inspect and verify
// (every chunk CRC covers the ciphertext), but reading a sealed tensor is
// ErrEncrypted. For a file that is not sealed, u is not used.
func WithUnsealer(u Unsealer) ReaderOption { return func(o *readerOptions) { o.unsealer = u } }

// AuthHeader returns the part of a 64-byte file header that a seal authenticates:
// bytes 0..59 with the SIGNED and LICENSED flags cleared, so that signature and
// license blocks can be added to or removed from a sealed file without its key
// (they carry their own signatures).
func AuthHeader(header []byte) []byte {
	b := append([]byte(nil), header[:60]...)
	f := Flags(le.Uint32(b[8:])) &^ (FlagSigned | FlagLicensed)
	le.PutUint32(b[8:], uint32(f))
	return b
}

// sealedChunkCount is the number of chunk frames of a sealed tensor: at least one,
// so that even an empty tensor carries an authenticated (empty, final) chunk.
func sealedChunkCount(e *Entry) int64 {
	return max((e.RawSize+int64(e.ChunkSize)-1)/int64(e.ChunkSize), 1)
}

// chunkRawLen is the raw length of chunk idx of a chunked tensor.
func chunkRawLen(e *Entry, idx int64) int64 {
	return max(min(int64(e.ChunkSize), e.RawSize-idx*int64(e.ChunkSize)), 0)
}

// checkFrameLen checks a frame's length word against the chunk's raw length.
func checkFrameLen(e *Entry, idx int64, l uint32, off int64) error {
	size, raw := int64(l&^rawChunkFlag), l&rawChunkFlag != 0
	rawLen := chunkRawLen(e, idx)
	if e.Encrypted {
		// A sealed payload is the tag plus the raw chunk (raw flag set) or plus a
		// compressed payload strictly shorter than the raw chunk (flag clear).
		if size < SealOverhead || size > rawLen+SealOverhead || raw != (size == rawLen+SealOverhead) {
			return formatErr(off, "sealed chunk %d claims %d bytes (raw flag %v) for %d raw bytes", idx, size, raw, rawLen)
		}
		return nil
	}
	if size > rawLen || (raw && size != rawLen) {
		return formatErr(off, "chunk %d claims %d bytes for %d raw bytes", idx, size, rawLen)
	}
	return nil
}

// entryCompression is the compression a writer set to c uses for e: none for a
// tensor stored without a codec (an empty one).
func entryCompression(c Compression, e *Entry) Compression {
	if e.Codec == CodecNone {
		return CompressNone
	}
	return c
}

// sealFrame compresses (when c is a codec) and seals one raw chunk into a frame whose
// CRC covers the ciphertext.
func sealFrame(cs ChunkSealer, idx, n int64, raw []byte, c Compression, esz int, pool *bufPool) ([]byte, error) {
	inner := raw
	if c != CompressNone {
		f, err := encodeChunk(raw, c, esz)
		if err != nil {
			return nil, err
		}
		inner = f[frameHeader:]
	}
	out := pool.get(frameHeader + len(inner) + SealOverhead)[:frameHeader]
	out, err := cs.SealChunk(out, uint64(idx), inner, idx == n-1)
	if err != nil {
		return nil, err
	}
	if len(out) != frameHeader+len(inner)+SealOverhead {
		return nil, fmt.Errorf("sealer returned %d bytes for a %d-byte chunk", len(out)-frameHeader, len(inner))
	}
	l := uint32(len(out) - frameHeader)
	if len(inner) == len(raw) {
		l |= rawChunkFlag
	}
	le.PutUint32(out, l)
	le.PutUint32(out[4:], crc32.ChecksumIEEE(out[frameHeader:]))
	return out, nil
}

// chunk is a decoded chunk: its bytes, the pool buffer they live in (handed back to
// the pool once the bytes are consumed; nil when they are not in one), and their
// CRC32 when the reader asked the workers for it.
type chunk struct {
	data []byte
	buf  []byte
	crc  uint32
}

// decodeFrame verifies and decodes chunk idx of n from its frame: the CRC first, then
// for sealed data the AEAD tag (nothing is decrypted or decompressed before both
// pass), then decompression. With a pool, the frame is a buffer of that pool which
// decodeFrame takes over, and the plaintext of a sealed chunk is opened into another
// (a separate one, so that the ciphertext is intact for the diagnosis of a failed
// tag); without one (frames in a mapped file), results are allocated.
func decodeFrame(e *Entry, co ChunkOpener, idx, n int64, frame []byte, pool *bufPool) (chunk, error) {
	l, crc, payload := le.Uint32(frame), le.Uint32(frame[4:]), frame[frameHeader:]
	rawLen := int(chunkRawLen(e, idx))
	if !e.Encrypted {
		raw := l&rawChunkFlag != 0
		out, err := decodeChunk(e, idx, payload, raw, crc, rawLen, -1)
		if err != nil || raw {
			return chunk{data: out, buf: frame}, err // a raw chunk is the frame's payload
		}
		pool.put(frame)
		return chunk{data: out}, nil
	}
	if co == nil {
		return chunk{}, tensor.Wrap(e.Name, ErrEncrypted)
	}
	if got := crc32.ChecksumIEEE(payload); got != crc {
		return chunk{}, &ChecksumError{What: fmt.Sprintf("chunk %d", idx), Tensor: e.Name, Offset: -1, Expected: crc, Actual: got}
	}
	dst := pool.get(len(payload))[:0]
	pt, err := co.OpenChunk(dst, uint64(idx), payload, idx == n-1)
	if err != nil {
		return chunk{}, fmt.Errorf("tensor %q: chunk %d: %w", e.Name, idx, err)
	}
	pool.put(frame)
	if len(pt) == rawLen {
		return chunk{data: pt, buf: dst}, nil
	}
	if e.Codec == CodecNone || len(pt) > rawLen {
		return chunk{}, &FormatError{Offset: -1, Tensor: e.Name, Msg: fmt.Sprintf("sealed chunk %d opens to %d bytes, expected %d", idx, len(pt), rawLen)}
	}
	out, err := decodeChunk(e, idx, pt, false, crc32.ChecksumIEEE(pt), rawLen, -1)
	pool.put(dst)
	return chunk{data: out}, err
}

// splitSealBlock separates the seal MAC block from the signature and license blocks
// and checks that it is present exactly when the file is sealed, and first.
func splitSealBlock(blocks []Block, flags Flags, off int64) ([]Block, []byte, error) {
	var mac []byte
	var rest []Block
	for i, b := range blocks {
		if b.Kind != BlockSeal {
			rest = append(rest, b)
			continue
		}
		if i != 0 || len(b.Payload) != SealMACSize {
			return nil, nil, formatErr(off, "seal MAC block %d of %d bytes: must be the first block, of %d bytes", i, len(b.Payload), SealMACSize)
		}
		mac = b.Payload
	}
	if (mac != nil) != (flags&FlagEncrypted != 0) {
		return nil, nil, formatErr(off, "a sealed file must have a seal MAC block, and only a sealed file may (flags %v)", flags)
	}
	return rest, mac, nil
}
