package ggufconv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/apr-go/apr/lib/container"
)

// ImportFile imports the GGUF file at path as an APR stream on w, with the file's
// size and (unless o.NoDigest) SHA-256 in the provenance, as Import of OpenFile does,
// and gives the same bytes.
//
// The digest is part of the metadata, which comes first in an APR file, so OpenFile
// reads the whole file once for it before the conversion starts. ImportFile does not
// wait when w is a regular file it can rewrite in place (an *os.File or a type
// embedding one, not opened with O_APPEND): it converts at once, with a digest of the
// same length as a placeholder, while a second goroutine hashes the file (from a
// read-only mapping where the platform allows); then it writes the real header and
// metadata over the placeholder ones with WriteAt and corrects the whole-file CRC in
// the footer (CRC32 is linear: the change of a prefix changes the CRC by a value
// computed from the two prefixes and the length that follows them). Other outputs get
// the digest first. opts must not seal (container.WithSealer): a seal authenticates
// the metadata.
func ImportFile(w io.Writer, path string, o ImportOptions, opts ...container.Option) error {
	out, ok := regularFile(w)
	var fd interface{ Fd() uintptr }
	var wa io.WriterAt
	var sk io.Seeker
	if ok {
		fd, _ = w.(interface{ Fd() uintptr })
		wa, _ = w.(io.WriterAt)
		sk, _ = w.(io.Seeker)
	}
	if o.NoDigest || fd == nil || wa == nil || sk == nil || !patchable(fd) {
		s, err := OpenFile(path, o)
		if err != nil {
			return err
		}
		defer s.Close()
		return Import(w, s, opts...)
	}
	start, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = path
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	placeholder := strings.Repeat("0", 2*sha256.Size)
	s, err := newStream(f, o, map[string]any{ProvSHA256: placeholder, ProvSize: st.Size()})
	if err != nil {
		return err
	}
	type result struct {
		sum string
		err error
	}
	digest := make(chan result, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		h := sha256.New()
		var buf []byte
		err := eachWindow(f, 0, st.Size(), &buf, func(b []byte) error {
			select {
			case <-done:
				return errors.New("stopped")
			default:
			}
			h.Write(b)
			return nil
		})
		digest <- result{hex.EncodeToString(h.Sum(nil)), err}
	}()
	cw := &countWriter{w: out}
	if err := Import(cw, s, opts...); err != nil {
		return err
	}
	d := <-digest
	if d.err != nil {
		return fmt.Errorf("%s: %w", o.Name, d.err)
	}
	final := s.hdr
	final.Metadata.Provenance = maps.Clone(final.Metadata.Provenance)
	final.Metadata.Provenance[ProvSHA256] = d.sum
	return patchPrefix(wa, start, cw.n, &cw.tail, s.hdr, final, opts)
}

// countWriter counts the bytes written through it and keeps the last FooterSize.
type countWriter struct {
	w    io.Writer
	n    int64
	tail [container.FooterSize]byte
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if n >= len(c.tail) {
		copy(c.tail[:], p[n-len(c.tail):n])
	} else {
		k := copy(c.tail[:], c.tail[n:])
		copy(c.tail[k:], p[:n])
	}
	return n, err
}

// patchPrefix turns the APR file of size bytes at start of w, which ends with footer,
// written with header was, into the file that header now would have given, where the two differ only in
// metadata of the same encoded length: it writes the new header and metadata over the
// old ones and corrects the whole-file CRC in the footer.
func patchPrefix(w io.WriterAt, start, size int64, footer *[container.FooterSize]byte, was, now container.Header, opts []container.Option) error {
	oldP, err := prefix(was, opts)
	if err != nil {
		return err
	}
	newP, err := prefix(now, opts)
	if err != nil {
		return err
	}
	if len(oldP) != len(newP) || size < int64(len(oldP))+container.FooterSize {
		return fmt.Errorf("internal error: header and metadata of %d bytes become %d bytes (file of %d bytes)", len(oldP), len(newP), size)
	}
	// The file CRC covers everything up to byte 52 of the footer; it is stored there.
	crcOff := size - container.FooterSize + 52
	var b [4]byte
	copy(b[:], footer[52:])
	delta := crc32.ChecksumIEEE(oldP) ^ crc32.ChecksumIEEE(newP)
	fileCRC := binary.LittleEndian.Uint32(b[:]) ^ crcShift(delta, crcOff-int64(len(oldP)))
	binary.LittleEndian.PutUint32(b[:], fileCRC)
	if _, err := w.WriteAt(newP, start); err != nil {
		return err
	}
	_, err = w.WriteAt(b[:], start+crcOff)
	return err
}

// prefix returns the header, metadata and padding that a container writer puts before
// the first tensor for h.
func prefix(h container.Header, opts []container.Option) ([]byte, error) {
	meta, err := h.Metadata.Encode()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	cw, err := container.NewWriter(&buf, h, opts...)
	if err != nil {
		return nil, err
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	n := container.HeaderSize + (len(meta)+container.Align-1)/container.Align*container.Align
	if buf.Len() < n {
		return nil, fmt.Errorf("internal error: an empty APR file of %d bytes, header and metadata of %d", buf.Len(), n)
	}
	return buf.Bytes()[:n], nil
}

// crcShift returns the CRC32 (IEEE, reflected) register value v advanced over n zero
// bytes without the initial and final inversion: the term by which a change of the
// first bytes of a message, whose CRCs differ by v, changes the CRC of the message
// when n more bytes follow. It multiplies by x^(8n) modulo the polynomial, by
// repeated squaring of the one-zero-bit operator.
func crcShift(v uint32, n int64) uint32 {
	// op[i] is the image of bit i under the current operator; start with one zero bit.
	var op [32]uint32
	op[0] = 0xEDB88320
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	square := func(m *[32]uint32) {
		var sq [32]uint32
		for i := range sq {
			sq[i] = gf2Apply(m, m[i])
		}
		*m = sq
	}
	square(&op) // 2 bits
	square(&op) // 4 bits
	square(&op) // 1 byte
	for n > 0 {
		if n&1 != 0 {
			v = gf2Apply(&op, v)
		}
		n >>= 1
		if n > 0 {
			square(&op)
		}
	}
	return v
}

// gf2Apply applies the GF(2) matrix m (by columns) to v.
func gf2Apply(m *[32]uint32, v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}
