package seal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Writer encrypts a byte stream with fixed-size chunks: it writes the stream
// header, then chunks of exactly chunkSize plaintext bytes, and on Close the
// final chunk of 0..chunkSize bytes (empty only when the whole stream is
// empty).
//
// The byte layout is header(56) || chunk_0 || ... || chunk_n-1, each chunk
// being len(plaintext)+16 bytes.
type Writer struct{ chunkWriter }

// NewWriter writes the stream header to dst and returns a Writer. The
// caller must call Close to write the final chunk.
func NewWriter(dst io.Writer, fileKey, context []byte, chunkSize int) (*Writer, error) {
	if chunkSize < 1 || chunkSize > MaxChunkSize {
		return nil, outOfRange("chunk size %d not in 1..%d", chunkSize, MaxChunkSize)
	}
	enc, err := NewEncryptor(fileKey, context)
	if err != nil {
		return nil, err
	}
	if _, err := dst.Write(enc.header[:]); err != nil {
		return nil, fmt.Errorf("seal: writing stream header: %w", err)
	}
	return &Writer{newChunkWriter(dst, chunkSize, enc.SealChunk, errors.New("seal: write to closed Writer"))}, nil
}

// chunkWriter cuts a byte stream into chunks of size bytes, seals each and writes
// it to dst. A full chunk is held back until more data arrives or Close is called,
// because only then is it known whether it is the last one. Errors are sticky.
type chunkWriter struct {
	dst       io.Writer
	size      int
	seal      func(dst []byte, index uint64, chunk []byte, last bool) ([]byte, error)
	closedErr error // what Write returns after Close
	buf, ct   []byte
	index     uint64
	err       error
	closed    bool
}

func newChunkWriter(dst io.Writer, size int, seal func([]byte, uint64, []byte, bool) ([]byte, error), closedErr error) chunkWriter {
	return chunkWriter{dst: dst, size: size, seal: seal, closedErr: closedErr, buf: make([]byte, 0, size)}
}

// Write encrypts p; it returns len(p) unless an error occurred.
func (w *chunkWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, w.closedErr
	}
	written := 0
	for len(p) > 0 {
		if len(w.buf) == w.size {
			// More data follows the buffered full chunk: it is not the last.
			if err := w.flush(false); err != nil {
				return written, err
			}
		}
		n := min(len(p), w.size-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p = p[n:]
		written += n
	}
	return written, nil
}

func (w *chunkWriter) flush(last bool) error {
	ct, err := w.seal(w.ct[:0], w.index, w.buf, last)
	if err != nil {
		w.err = err
		return err
	}
	w.ct = ct
	if _, err := w.dst.Write(ct); err != nil {
		w.err = fmt.Errorf("seal: writing chunk %d: %w", w.index, err)
		return w.err
	}
	w.index++
	w.buf = w.buf[:0]
	return nil
}

// Close writes the last chunk. It does not close the underlying writer.
func (w *chunkWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	w.closed = true
	return w.flush(true)
}

// Reader decrypts a stream written by Writer with the same chunk size. Read
// returns plaintext only from chunks whose tag has verified. A chunk is
// taken as final when it is shorter than a full chunk or is followed by end
// of input; so truncation at a chunk boundary gives ErrMissingFinal, bytes
// after the final chunk give ErrDataAfterFinal or ErrAuthentication, and
// every such error wraps ErrDecryptionFailed. Errors are sticky.
type Reader struct{ chunkReader }

// NewReader reads and checks the stream header (key commitment) from src.
func NewReader(src io.Reader, fileKey, context []byte, chunkSize int) (*Reader, error) {
	if chunkSize < 1 || chunkSize > MaxChunkSize {
		return nil, outOfRange("chunk size %d not in 1..%d", chunkSize, MaxChunkSize)
	}
	var header [HeaderSize]byte
	if _, err := io.ReadFull(src, header[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformed("stream header truncated")
		}
		return nil, fmt.Errorf("seal: reading stream header: %w", err)
	}
	dec, err := NewDecryptor(fileKey, header[:], context)
	if err != nil {
		return nil, err
	}
	missingFinal := func(index uint64) error {
		return decryptErr(ErrMissingFinal, "stream ended after %d chunks without a final chunk", index)
	}
	return &Reader{chunkReader{src: bufio.NewReader(src), ct: make([]byte, chunkSize+TagSize), open: dec.Next, missingFinal: missingFinal}}, nil
}

// chunkReader reads a payload of sealed chunks of len(ct) bytes each, tags
// included: a chunk is the last when it is short or followed by the end of the
// input. Read returns the plaintext of a chunk only once open has authenticated
// it. Errors are sticky.
type chunkReader struct {
	src          *bufio.Reader
	ct           []byte
	open         func(dst []byte, index uint64, ct []byte, last bool) ([]byte, error)
	missingFinal func(index uint64) error // the input ended after index chunks, none of them the last
	pt           []byte
	off          int
	index        uint64
	done         bool
	err          error
}

// Read implements io.Reader over the decrypted payload.
func (r *chunkReader) Read(p []byte) (int, error) {
	for r.off == len(r.pt) {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err, r.pt, r.off = err, nil, 0
			return 0, err
		}
	}
	n := copy(p, r.pt[r.off:])
	r.off += n
	return n, nil
}

// next reads and opens one chunk.
func (r *chunkReader) next() error {
	n, err := io.ReadFull(r.src, r.ct)
	last := false
	switch {
	case err == nil:
		if _, err := r.src.Peek(1); errors.Is(err, io.EOF) {
			last = true
		} else if err != nil {
			return fmt.Errorf("seal: reading after chunk %d: %w", r.index, err)
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		last = true
	case errors.Is(err, io.EOF):
		return r.missingFinal(r.index)
	default:
		return fmt.Errorf("seal: reading chunk %d: %w", r.index, err)
	}
	pt, err := r.open(r.pt[:0], r.index, r.ct[:n], last)
	if err != nil {
		return err
	}
	r.pt, r.off = pt, 0
	r.index++
	r.done = last
	return nil
}
