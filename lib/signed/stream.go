package signed

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"sync/atomic"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/manifest"
	"github.com/apr-go/apr/lib/sign"
	"github.com/apr-go/apr/lib/tensor"
)

// SignStream reads an APR v2 stream from src and writes it to dst with one more
// signature block, by key, over the content digest. Existing signature and license
// blocks are kept.
//
// The output is the input byte for byte, except the header's flags (SIGNED is set)
// and CRC, the blocks section and the footer: tensors are not re-compressed, so
// signing runs at the speed of reading and hashing. Every checksum of the input is
// verified before the signature is made; on any error the output is incomplete (a
// reader refuses it) and the caller must discard it.
func SignStream(dst io.Writer, src io.Reader, key *sign.PrivateKey, opts ...Option) (*sign.Signature, error) {
	if key == nil {
		return nil, errors.New("no signing key")
	}
	c, err := newSignConfigChecked(opts)
	if err != nil {
		return nil, err
	}
	var sig *sign.Signature
	err = appendBlocks(dst, src, c.unsealer, container.FlagSigned, func(digest [32]byte, old []container.Block) ([]container.Block, error) {
		b, s, err := SignatureBlock(key, digest, opts...)
		if err != nil {
			return nil, err
		}
		sig = s
		return append(old, b), nil
	})
	return sig, err
}

// LicenseStream is SignStream for a license: it adds a license block issued by
// issuer and bound to the stream's content, replacing any license block the input
// had (a file holds at most one). lic.IssuedAt zero means SOURCE_DATE_EPOCH or now.
// It returns the signed license and whether an older license was replaced.
// WithSealedInput is the only option it uses.
func LicenseStream(dst io.Writer, src io.Reader, lic sign.License, issuer *sign.PrivateKey, opts ...Option) (*sign.License, bool, error) {
	if issuer == nil {
		return nil, false, errors.New("no issuer key")
	}
	// Check the license fields before any byte is written.
	if lic.IssuedAt.IsZero() {
		c, err := newSignConfig(nil)
		if err != nil {
			return nil, false, err
		}
		lic.IssuedAt = c.time
	}
	if _, err := sign.SignLicense(lic, issuer); err != nil {
		return nil, false, err
	}
	c, err := newSignConfig(opts)
	if err != nil {
		return nil, false, err
	}
	var signed *sign.License
	replaced := false
	err = appendBlocks(dst, src, c.unsealer, container.FlagLicensed, func(digest [32]byte, old []container.Block) ([]container.Block, error) {
		b, l, err := LicenseBlock(lic, issuer, digest)
		if err != nil {
			return nil, err
		}
		signed = l
		var out []container.Block
		for _, o := range old {
			if o.Kind == container.BlockLicense {
				replaced = true
				continue
			}
			out = append(out, o)
		}
		return append(out, b), nil
	})
	return signed, replaced, err
}

// spliceHold is how many trailing bytes appendBlocks holds back: the input's blocks
// section and footer must fit in it (a signature block is about 100 bytes plus its
// comment, so thousands of them fit). A variable so that tests can lower it.
var spliceHold = 4 << 20

// appendBlocks copies an APR v2 stream from src to dst with the header flag set
// and the blocks section replaced by what add returns; add gets the content
// digest and the input's blocks once the whole input has been verified.
func appendBlocks(dst io.Writer, src io.Reader, u container.Unsealer, set container.Flags, add func(digest [32]byte, old []container.Block) ([]container.Block, error)) error {
	var hdr [container.HeaderSize]byte
	if n, err := io.ReadFull(src, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: not an APR file (%d bytes)", container.ErrFormat, n)
		}
		return err
	}
	if string(hdr[:4]) != "APRN" || hdr[4] != container.MajorVersion {
		return fmt.Errorf("%w: not an APR v2 stream (only APR v2 files carry signatures; convert with apr-encode first)", container.ErrFormat)
	}
	flags := container.Flags(binary.LittleEndian.Uint32(hdr[8:]))
	if flags&container.FlagEncrypted != 0 && u == nil {
		return fmt.Errorf("%w: the input is sealed, so its content cannot be hashed; sign before sealing (apr-sign | apr-seal), give the key or password that opens it, or unseal first", container.ErrEncrypted)
	}
	// Reader side: the original bytes. Writer side: the patched header, then the
	// input delayed by spliceHold bytes, so that its old blocks and footer can be
	// cut off once the reader has verified them.
	out := bufio.NewWriterSize(dst, 1<<20)
	crc := crc32.NewIEEE()
	w := io.MultiWriter(out, crc)
	patched := hdr
	binary.LittleEndian.PutUint32(patched[8:], uint32(flags|set))
	binary.LittleEndian.PutUint32(patched[60:], crc32.ChecksumIEEE(patched[:60]))
	if _, err := w.Write(patched[:]); err != nil {
		return err
	}
	delay := newDelayWriter(out, dst, crc, spliceHold)
	defer delay.finish()
	var ro []container.ReaderOption
	if u != nil {
		ro = append(ro, container.WithUnsealer(u))
	}
	cr, err := container.NewReader(io.MultiReader(bytes.NewReader(hdr[:]), io.TeeReader(src, delay)), ro...)
	if err != nil {
		return err
	}
	defer cr.Close()
	fh := cr.Header()
	mb, err := manifest.New(fh.Type, fh.Metadata)
	if err != nil {
		return err
	}
	// Tensors are hashed on up to GOMAXPROCS goroutines while the next ones are
	// read: SHA-256 on one CPU would be the slowest stage.
	hp := manifest.NewParallel(mb, 0)
	defer hp.Close()
	err = cr.Each(func(t *container.Tensor) error {
		if _, err := hp.ReadTensor(t.TensorInfo, t); err != nil {
			return tensor.Wrap(t.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	tail, err := delay.finish()
	if err != nil {
		return err
	}
	digest, err := hp.Sum()
	if err != nil {
		return err
	}
	// The reader has verified the footer, which is the last 64 bytes read.
	if len(tail) < container.FooterSize {
		return fmt.Errorf("%w: stream too short", container.ErrFormat)
	}
	foot := tail[len(tail)-container.FooterSize:]
	indexOff := binary.LittleEndian.Uint64(foot[8:])
	indexLen := binary.LittleEndian.Uint64(foot[16:])
	blocksOff := uint64(alignUp64(indexOff + indexLen))
	tailOff := uint64(container.HeaderSize) + uint64(delay.flushed)
	end := tailOff + uint64(len(tail)) - container.FooterSize
	if blocksOff < tailOff || blocksOff > end {
		return fmt.Errorf("the input's blocks section is larger than %d bytes; cannot add a block in a stream", spliceHold)
	}
	if _, err := w.Write(tail[:blocksOff-tailOff]); err != nil {
		return err
	}
	blocks, err := add(digest, cr.Blocks())
	if err != nil {
		return err
	}
	if mac := cr.SealMAC(); mac != nil { // a sealed file's seal MAC block stays first
		blocks = append([]container.Block{{Kind: container.BlockSeal, Payload: mac}}, blocks...)
	}
	if len(blocks) > container.MaxBlockCount {
		return fmt.Errorf("too many blocks: %d (at most %d)", len(blocks), container.MaxBlockCount)
	}
	sec := make([]byte, 16, 64)
	copy(sec, "APRB")
	binary.LittleEndian.PutUint32(sec[4:], uint32(len(blocks)))
	for _, b := range blocks {
		if len(b.Payload) > container.MaxBlock {
			return fmt.Errorf("block of %d bytes (at most %d)", len(b.Payload), container.MaxBlock)
		}
		sec = binary.LittleEndian.AppendUint32(sec, b.Kind)
		sec = binary.LittleEndian.AppendUint32(sec, uint32(len(b.Payload)))
		sec = append(sec, b.Payload...)
	}
	binary.LittleEndian.PutUint64(sec[8:], uint64(len(sec)-16))
	secLen := len(sec)
	sec = append(sec, make([]byte, alignUp64(uint64(secLen))-uint64(secLen))...)
	if _, err := w.Write(sec); err != nil {
		return err
	}
	var nf [container.FooterSize]byte
	copy(nf[:], foot[:32]) // magic, reserved, index offset and length, tensor count
	binary.LittleEndian.PutUint64(nf[32:], blocksOff)
	binary.LittleEndian.PutUint64(nf[40:], uint64(secLen))
	copy(nf[48:52], foot[48:52]) // index CRC
	crc.Write(nf[:52])
	binary.LittleEndian.PutUint32(nf[52:], crc.Sum32())
	copy(nf[56:], foot[56:]) // end magic
	if _, err := out.Write(nf[:]); err != nil {
		return err
	}
	return out.Flush()
}

func alignUp64(n uint64) uint64 { return (n + container.Align - 1) &^ (container.Align - 1) }

// delayWriter passes the bytes written to it on to dst, holding back at least the
// last hold bytes. The bytes it lets go are written to dst (and added to crc) by a
// goroutine of its own, so that writing the output overlaps reading and hashing the
// input; each byte is copied once, into one of a bounded set of chunk buffers (about
// hold plus 5 chunks of hold/8, at most 1 MiB). Until finish, nothing else may write to dst,
// out or crc; out is flushed before the first chunk goes to dst.
type delayWriter struct {
	out     *bufio.Writer
	dst     io.Writer
	crc     hash.Hash32
	hold    int
	chunk   int
	held    [][]byte // oldest first; only the last one may be partly filled
	heldN   int
	flushed int64 // bytes handed on
	bufs    int   // chunk buffers allocated
	maxBufs int
	free    chan []byte
	send    chan []byte
	done    chan struct{}
	werr    atomic.Pointer[error] // the goroutine's write error
	err     error
	ended   bool
	tail    []byte
}

const delayInFlight = 2 // chunks queued for the writing goroutine

func newDelayWriter(out *bufio.Writer, dst io.Writer, crc hash.Hash32, hold int) *delayWriter {
	chunk := min(1<<20, max(hold/8, 1)) // bytes held back: hold to hold+chunk
	maxBufs := (hold+chunk-1)/chunk + 3 + delayInFlight
	return &delayWriter{out: out, dst: dst, crc: crc, hold: hold, chunk: chunk, maxBufs: maxBufs,
		free: make(chan []byte, maxBufs)}
}

func (d *delayWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if e := d.werr.Load(); e != nil {
		d.err = *e
		return 0, d.err
	}
	n := len(p)
	for len(p) > 0 {
		if k := len(d.held); k == 0 || len(d.held[k-1]) == cap(d.held[k-1]) {
			d.held = append(d.held, d.buffer())
		}
		last := &d.held[len(d.held)-1]
		c := copy((*last)[len(*last):cap(*last)], p)
		*last = (*last)[:len(*last)+c]
		p = p[c:]
		d.heldN += c
		for len(d.held) > 1 && d.heldN-len(d.held[0]) >= d.hold {
			if err := d.pass(d.held[0]); err != nil {
				d.err = err
				return 0, err
			}
			d.heldN -= len(d.held[0])
			d.flushed += int64(len(d.held[0]))
			d.held[0] = nil
			d.held = d.held[1:]
		}
	}
	return n, nil
}

// buffer returns an empty chunk buffer, a new one while fewer than maxBufs exist.
func (d *delayWriter) buffer() []byte {
	select {
	case b := <-d.free:
		return b
	default:
	}
	if d.bufs < d.maxBufs {
		d.bufs++
		return make([]byte, 0, d.chunk)
	}
	return <-d.free // the writing goroutine holds at least one
}

// pass queues a full chunk for the writing goroutine, starting it first.
func (d *delayWriter) pass(b []byte) error {
	if d.send == nil {
		if err := d.out.Flush(); err != nil {
			return err
		}
		d.send = make(chan []byte, delayInFlight)
		d.done = make(chan struct{})
		go d.write()
	}
	d.send <- b
	return nil
}

func (d *delayWriter) write() {
	defer close(d.done)
	failed := false
	for b := range d.send {
		if !failed {
			if _, err := d.dst.Write(b); err != nil {
				d.werr.Store(&err)
				failed = true
			} else {
				d.crc.Write(b)
			}
		}
		d.free <- b[:0]
	}
}

// finish waits for the writing goroutine and returns the bytes held back, in one
// slice. It may be called again (it is deferred for the error paths).
func (d *delayWriter) finish() ([]byte, error) {
	if !d.ended {
		d.ended = true
		if d.send != nil {
			close(d.send)
			<-d.done
		}
		if e := d.werr.Load(); e != nil && d.err == nil {
			d.err = *e
		}
		d.tail = make([]byte, 0, d.heldN)
		for _, b := range d.held {
			d.tail = append(d.tail, b...)
		}
		d.held = nil
	}
	return d.tail, d.err
}
