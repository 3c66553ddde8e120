// Package manifest computes the canonical content manifest of an APR model and its
// SHA-256 digest: what an apr signature covers.
//
// The manifest describes the model's content, never its encoding: model type,
// metadata, and each tensor's name, dtype, shape and the SHA-256 of its raw
// (decompressed, unshuffled, decrypted) bytes, in file order. Re-compressing a file,
// changing its chunk size or shuffle filter, or decompressing it to plain data leaves
// the digest unchanged; any change to the metadata, a tensor byte, a name, a dtype, a
// shape, or the order of the tensors changes it.
//
// # Encoding
//
// The manifest is a byte string, hashed with SHA-256 as it is produced (it is never
// held in memory). Integers are big-endian; every variable-length field has a length
// prefix and every item a tag, so two different models never give the same string:
//
//	manifest = "apr-manifest-v1" 0x00
//	           model type           u16
//	           metadata length      u64
//	           metadata             the deterministic MessagePack encoding of the
//	                                whole metadata map (container.Metadata.Encode:
//	                                keys sorted at every level, shortest integers)
//	           tensor*              one per tensor, in file order
//	           0x00                 end tag
//	           tensor count         u64
//	tensor   = 0x01                 tensor tag
//	           name length          u16, 1..4096
//	           name                 UTF-8
//	           dtype                u16, the APR dtype code
//	           ndims                u8, 0..32
//	           dims                 u64 each, outermost first
//	           raw size             u64, bytes
//	           SHA-256 of the raw bytes (32)
//	digest   = SHA-256(manifest)
//
// Every top-level metadata key is covered, the well-known ones and any other: a
// key a signer did not see cannot be added to a signed file. Annotations that must
// not invalidate signatures belong in blocks, not in metadata. The metadata is
// hashed in its canonical re-encoding, not as the bytes stored in the file, so two
// files whose metadata decode to the same values have the same digest whatever
// writer produced them.
package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
)

// Domain starts every manifest.
const Domain = "apr-manifest-v1\x00"

const (
	tagEnd    = 0x00
	tagTensor = 0x01
)

// ErrManifest is wrapped by every error of this package: the content cannot be
// described (a name, shape or byte count out of range, calls out of order).
var ErrManifest = errors.New("manifest")

// Builder computes a manifest digest in one streaming pass: create it with the
// header, then for each tensor in file order hash its raw bytes through Tensor,
// then call Sum.
type Builder struct {
	h      hash.Hash
	n      uint64
	open   bool
	done   bool
	err    error
	buf    []byte
	sumBuf [sha256.Size]byte
	bufs   [][]byte // ReadFrom's buffers, allocated on first use
}

// New starts a manifest for a model of type t with metadata md (nil for none).
func New(t modeltype.Type, md *container.Metadata) (*Builder, error) {
	if md == nil {
		md = &container.Metadata{}
	}
	meta, err := md.Encode()
	if err != nil {
		return nil, fmt.Errorf("%w: metadata: %w", ErrManifest, err)
	}
	b := &Builder{h: sha256.New()}
	buf := make([]byte, 0, len(Domain)+10)
	buf = append(buf, Domain...)
	buf = binary.BigEndian.AppendUint16(buf, uint16(t))
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(meta)))
	b.h.Write(buf)
	b.h.Write(meta)
	return b, nil
}

// Tensor starts the next tensor. Write its raw bytes, exactly info.RawSize() of
// them, to the returned hasher (for instance through io.TeeReader while the tensor
// streams elsewhere), then Close it before the next call.
func (b *Builder) Tensor(info container.TensorInfo) (*TensorHasher, error) {
	size, err := b.next(info)
	if err != nil {
		return nil, err
	}
	b.open = true
	return &TensorHasher{b: b, info: info, want: size, h: sha256.New()}, nil
}

// AddDigest adds the next tensor, whose raw bytes (size of them) were hashed
// elsewhere into sum, for instance on another goroutine. It fails when size is not
// the tensor's raw size.
func (b *Builder) AddDigest(info container.TensorInfo, size int64, sum [sha256.Size]byte) error {
	want, err := b.next(info)
	if err != nil {
		return err
	}
	if size != want {
		return b.fail("tensor %q: hashed %d bytes, its raw size is %d", info.Name, size, want)
	}
	b.add(info, want, sum[:])
	return nil
}

// next checks that a tensor may be added now and that its description fits the
// encoding, and returns its raw size.
func (b *Builder) next(info container.TensorInfo) (int64, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return 0, b.fail("tensor %q after Sum", info.Name)
	}
	if b.open {
		return 0, b.fail("tensor %q started before the previous one was closed", info.Name)
	}
	return b.check(info)
}

// check validates a tensor's description and returns its raw size.
func (b *Builder) check(info container.TensorInfo) (int64, error) {
	if len(info.Name) == 0 || len(info.Name) > container.MaxName {
		return 0, b.fail("tensor name of %d bytes (want 1..%d)", len(info.Name), container.MaxName)
	}
	if len(info.Shape) > container.MaxDims {
		return 0, b.fail("tensor %q has %d dims (at most %d)", info.Name, len(info.Shape), container.MaxDims)
	}
	for _, d := range info.Shape {
		if d < 0 {
			return 0, b.fail("tensor %q has a negative dimension %d", info.Name, d)
		}
	}
	size, err := info.RawSize()
	if err != nil {
		return 0, b.fail("tensor %q: %v", info.Name, err)
	}
	return size, nil
}

// add appends a tensor's record, with the SHA-256 sum of its raw bytes, to the
// manifest.
func (b *Builder) add(info container.TensorInfo, size int64, sum []byte) {
	buf := b.buf[:0]
	buf = append(buf, tagTensor)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(info.Name)))
	buf = append(buf, info.Name...)
	buf = binary.BigEndian.AppendUint16(buf, uint16(info.DType))
	buf = append(buf, byte(len(info.Shape)))
	for _, d := range info.Shape {
		buf = binary.BigEndian.AppendUint64(buf, uint64(d))
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(size))
	buf = append(buf, sum...)
	b.h.Write(buf)
	b.buf = buf
	b.n++
}

// AddTensor hashes a tensor held in memory.
func (b *Builder) AddTensor(info container.TensorInfo, data []byte) error {
	th, err := b.Tensor(info)
	if err != nil {
		return err
	}
	th.Write(data)
	return th.Close()
}

// Sum ends the manifest and returns its digest. It fails if a tensor is still open
// or an earlier call failed.
func (b *Builder) Sum() ([32]byte, error) {
	if b.err != nil {
		return [32]byte{}, b.err
	}
	if b.open {
		return [32]byte{}, b.fail("Sum with a tensor still open")
	}
	if !b.done {
		buf := binary.BigEndian.AppendUint64([]byte{tagEnd}, b.n)
		b.h.Write(buf)
		b.h.Sum(b.sumBuf[:0])
		b.done = true
	}
	return b.sumBuf, nil
}

// Count is the number of tensors added so far.
func (b *Builder) Count() int { return int(b.n) }

func (b *Builder) fail(format string, args ...any) error {
	b.err = fmt.Errorf("%w: %s", ErrManifest, fmt.Sprintf(format, args...))
	return b.err
}

// TensorHasher hashes one tensor's raw bytes.
type TensorHasher struct {
	b      *Builder
	info   container.TensorInfo
	want   int64
	n      int64
	h      hash.Hash
	sum    [sha256.Size]byte
	closed bool
}

// Write hashes raw bytes of the tensor. It never fails; Close checks the count.
func (t *TensorHasher) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	t.h.Write(p)
	return len(p), nil
}

// Reading ahead: ReadFrom holds at most hashBuffers buffers of hashBufSize bytes.
const (
	hashBuffers = 4
	hashBufSize = 256 << 10
)

// ReadFrom hashes everything r yields, as Write would, until io.EOF. It reads on the
// calling goroutine while another goroutine hashes what was read before, so that
// reading (I/O, checksums, decompression, decryption) and SHA-256 overlap on two
// cores; a tensor that fits in one buffer is hashed on the calling goroutine. At
// most hashBuffers buffers of hashBufSize bytes are in flight, reused for every
// tensor of the Builder. io.Copy and io.CopyBuffer use it.
func (t *TensorHasher) ReadFrom(r io.Reader) (int64, error) {
	if t.b.bufs == nil {
		for range hashBuffers {
			t.b.bufs = append(t.b.bufs, make([]byte, hashBufSize))
		}
	}
	bufs := t.b.bufs
	n, err := readChunk(r, bufs[0])
	t.n += int64(n)
	if err != nil || n < len(bufs[0]) {
		t.h.Write(bufs[0][:n])
		return int64(n), err
	}
	total := int64(n)
	free := make(chan []byte, len(bufs))
	full := make(chan []byte, len(bufs))
	done := make(chan struct{})
	for _, b := range bufs[1:] {
		free <- b
	}
	full <- bufs[0]
	go func() {
		defer close(done)
		for p := range full {
			clearUpper()
			t.h.Write(p)
			free <- p[:cap(p)]
		}
	}()
	for err == nil && n == hashBufSize {
		p := <-free
		n, err = readChunk(r, p)
		if n > 0 {
			full <- p[:n]
		}
		t.n += int64(n)
		total += int64(n)
	}
	close(full)
	<-done
	return total, err
}

// readChunk fills p from r as io.ReadFull does; the end of the stream, with or
// without bytes before it, is a nil error and a short count.
func readChunk(r io.Reader, p []byte) (int, error) {
	n, err := io.ReadFull(r, p)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return n, err
}

// Close adds the tensor to the manifest. It fails when the bytes written are not
// exactly the tensor's raw size.
func (t *TensorHasher) Close() error {
	b := t.b
	if t.closed {
		return b.err
	}
	t.closed = true
	b.open = false
	if b.err != nil {
		return b.err
	}
	if t.n != t.want {
		return b.fail("tensor %q: hashed %d bytes, its raw size is %d", t.info.Name, t.n, t.want)
	}
	b.add(t.info, t.want, t.h.Sum(t.sum[:0]))
	return nil
}

// Result is the digest of a whole APR v2 stream with what was read on the way.
type Result struct {
	Digest  [32]byte
	Header  container.FileHeader
	Entries []container.Entry
	Blocks  []container.Block
}

// FromReader reads a whole APR v2 stream, verifying every checksum as the
// container reader does, and returns its manifest digest and blocks. The digest of
// a sealed stream is that of its plaintext, so it needs the key
// (container.WithUnsealer); without it the error wraps container.ErrEncrypted.
func FromReader(r io.Reader, opts ...container.ReaderOption) (*Result, error) {
	cr, err := container.NewReader(r, opts...)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	h := cr.Header()
	b, err := New(h.Type, h.Metadata)
	if err != nil {
		return nil, err
	}
	// Tensors are hashed on up to GOMAXPROCS goroutines while the next ones are
	// read, so that SHA-256 is not bound to one CPU.
	p := NewParallel(b, 0)
	defer p.Close()
	err = cr.Each(func(t *container.Tensor) error {
		if _, err := p.ReadTensor(t.TensorInfo, t); err != nil {
			if errors.Is(err, container.ErrEncrypted) {
				return fmt.Errorf("%w: the content of a sealed stream is hashed in plaintext; give its key, or unseal it first", err)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d, err := p.Sum()
	if err != nil {
		return nil, err
	}
	return &Result{Digest: d, Header: h, Entries: cr.Entries(), Blocks: cr.Blocks()}, nil
}
