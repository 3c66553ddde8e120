package container

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// PatchFile is an output whose bytes can be rewritten after they are written: an
// *os.File, or a type that embeds one (as atomicfile.File does).
type PatchFile interface {
	io.Writer
	io.WriterAt
	io.Seeker
	Stat() (os.FileInfo, error)
	Fd() uintptr
}

// Patchable returns w as a PatchFile when it is a regular file whose bytes can be
// rewritten in place with WriteAt: not opened with O_APPEND (where pwrite appends on
// some systems), and on a platform that can tell.
func Patchable(w io.Writer) (PatchFile, bool) {
	f, ok := w.(PatchFile)
	if !ok {
		return nil, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !notAppending(f) {
		return nil, false
	}
	return f, true
}

// A Patcher writes an APR file to a PatchFile, from the file's current offset on, and
// then rewrites its metadata in place (Patch): a producer can write the file at once
// with a placeholder for a metadata value it learns only at the end (a digest of the
// source, computed beside the conversion) and put the real value in afterwards, and
// the result is the file it would have written with the real value from the start.
// Write the file with a Writer on the Patcher, close that Writer, then call Patch.
type Patcher struct {
	f     PatchFile
	start int64            // offset of the APR file in f
	n     int64            // bytes written
	tail  [FooterSize]byte // the last bytes written
}

// NewPatcher returns a Patcher that writes to f at its current offset.
func NewPatcher(f PatchFile) (*Patcher, error) {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	return &Patcher{f: f, start: start}, nil
}

// Write writes p to the file.
func (p *Patcher) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	p.n += int64(n)
	if n >= len(p.tail) {
		copy(p.tail[:], b[n-len(p.tail):n])
	} else {
		k := copy(p.tail[:], p.tail[n:])
		copy(p.tail[k:], b[:n])
	}
	return n, err
}

// Patch turns the APR file written through p by a Writer for header was (with opts)
// into the file a Writer for header now (with the same opts and tensors) gives: was
// and now must differ only in metadata of the same encoded length. It writes the new
// header (with its metadata CRC) and metadata over the old ones and corrects the
// whole-file CRC in the footer arithmetically (CRC32 is linear: changing the first
// bytes of a message changes its CRC by the change of their own CRC advanced over the
// length that follows), without reading the file back. opts must not seal
// (WithSealer): a seal authenticates the metadata.
func (p *Patcher) Patch(was, now Header, opts ...Option) error {
	return PatchMetadata(p.f, p.start, p.n, &p.tail, was, now, opts...)
}

// PatchMetadata is Patch for the APR file of size bytes at start of w, whose last
// FooterSize bytes are footer, written by a Writer for header was with opts.
func PatchMetadata(w io.WriterAt, start, size int64, footer *[FooterSize]byte, was, now Header, opts ...Option) error {
	var o writerOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.sealer != nil {
		return errors.New("container: cannot patch the metadata of a sealed file")
	}
	oldP, oldM, err := filePrefix(was, opts)
	if err != nil {
		return err
	}
	newP, newM, err := filePrefix(now, opts)
	if err != nil {
		return err
	}
	if oldM != newM || len(oldP) != len(newP) {
		return fmt.Errorf("container: metadata of %d bytes would become %d bytes", oldM, newM)
	}
	if size < int64(len(oldP))+FooterSize {
		return fmt.Errorf("container: a file of %d bytes does not hold header and metadata of %d bytes and a footer", size, len(oldP))
	}
	if [4]byte(footer[:4]) != magicFooter {
		return errors.New("container: the bytes to patch do not end with an APR footer")
	}
	// The file CRC covers everything before its own place, byte 52 of the footer.
	crcOff := size - FooterSize + 52
	delta := crc32.ChecksumIEEE(oldP) ^ crc32.ChecksumIEEE(newP)
	fileCRC := binary.LittleEndian.Uint32(footer[52:56]) ^ crcCombine(delta, 0, crcOff-int64(len(oldP)))
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], fileCRC)
	if _, err := w.WriteAt(newP, start); err != nil {
		return err
	}
	if _, err := w.WriteAt(b[:], start+crcOff); err != nil {
		return err
	}
	copy(footer[52:56], b[:])
	return nil
}

// filePrefix returns the header, metadata and padding that a Writer for h with opts
// puts before the first tensor, and the length of the encoded metadata.
func filePrefix(h Header, opts []Option) ([]byte, int, error) {
	meta, err := h.Metadata.Encode()
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	cw, err := NewWriter(&buf, h, opts...)
	if err != nil {
		return nil, 0, err
	}
	// What NewWriter wrote, without Close: a file with a tensor table cannot close
	// before its tensors are written.
	if err := cw.out.Flush(); err != nil {
		return nil, 0, err
	}
	n := HeaderSize + (len(meta)+Align-1)/Align*Align
	if buf.Len() < n {
		return nil, 0, fmt.Errorf("container: an empty file of %d bytes, header and metadata of %d", buf.Len(), n)
	}
	return buf.Bytes()[:n], len(meta), nil
}
