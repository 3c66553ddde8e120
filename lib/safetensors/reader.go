package safetensors

import (
	"io"
	"strconv"
)

// ReadHeader reads the length prefix and the header from r and checks them (every
// check but the final one on the file size, which needs the end of the data). It
// consumes exactly 8+N bytes, so r is left at the start of the data. Memory is
// bounded by the header bytes actually present: a prefix claiming a large N on a
// short stream fails without allocating N bytes.
func ReadHeader(r io.Reader) (*Header, error) {
	var prefix [8]byte
	if n, err := io.ReadFull(r, prefix[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errf(HeaderTooSmall, 0, "stream ended after %d bytes: need 8 for the header length", n)
		}
		return nil, err
	}
	n, err := headerLength(prefix[:])
	if err != nil {
		return nil, err
	}
	// The buffer doubles from 1 MiB up to exactly n as bytes arrive: a short stream
	// costs what it sent, and a full one at most n plus the half it grew from (a
	// bytes.Buffer overshot to the next power of two, 128 MiB for a 90 MB header).
	buf := make([]byte, 0, min(n, 1<<20))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(n, 2*int64(cap(buf))))
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errf(InvalidHeaderLength, 8, "header length %d runs past the end of the stream (%d header bytes present)", n, len(buf))
		}
		if err != nil {
			return nil, err
		}
	}
	return parseHeader(buf)
}

// Reader reads a SafeTensors stream: the header, then each tensor's data in offset
// order, holding no more than one read buffer of data at a time.
type Reader struct {
	src     io.Reader
	h       *Header
	next    int   // index of the next tensor Next returns
	pos     int64 // bytes of data consumed so far
	cur     *tensorReader
	done    bool
	doneErr error
}

// NewReader reads and checks the header of the stream r.
func NewReader(r io.Reader) (*Reader, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return nil, err
	}
	return &Reader{src: r, h: h}, nil
}

// Header returns the stream's header.
func (r *Reader) Header() *Header { return r.h }

// Next skips what is left of the previous tensor's data and returns the next tensor
// with a reader of exactly its bytes. After the last tensor it checks that the stream
// ends exactly where the data does and returns io.EOF; a stream that is shorter or
// longer than the header says gives MetadataIncompleteBuffer.
func (r *Reader) Next() (TensorInfo, io.Reader, error) {
	if r.done {
		return TensorInfo{}, nil, r.doneErr
	}
	if r.cur != nil {
		if _, err := io.Copy(io.Discard, r.cur); err != nil {
			return r.fail(err)
		}
		r.cur = nil
	}
	if r.next == len(r.h.Tensors) {
		// The data must end exactly at the end of the stream.
		var one [1]byte
		for {
			n, err := r.src.Read(one[:])
			if n > 0 {
				return r.fail(errf(MetadataIncompleteBuffer, r.h.DataStart()+r.pos,
					"trailing bytes after the last tensor's data (expected the stream to end at offset %d)", r.h.FileSize()))
			}
			if err == io.EOF {
				r.done, r.doneErr = true, io.EOF
				return TensorInfo{}, nil, io.EOF
			}
			if err != nil {
				return r.fail(err)
			}
		}
	}
	t := r.h.Tensors[r.next]
	r.next++
	r.cur = &tensorReader{r: r, t: t, left: t.Size()}
	return t, r.cur, nil
}

func (r *Reader) fail(err error) (TensorInfo, io.Reader, error) {
	r.done, r.doneErr = true, err
	return TensorInfo{}, nil, err
}

// tensorReader yields one tensor's bytes and turns a premature end of stream into
// MetadataIncompleteBuffer.
type tensorReader struct {
	r    *Reader
	t    TensorInfo
	left int64
}

func (tr *tensorReader) Read(p []byte) (int, error) {
	if tr.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > tr.left {
		p = p[:tr.left]
	}
	n, err := tr.r.src.Read(p)
	tr.left -= int64(n)
	tr.r.pos += int64(n)
	if err == io.EOF {
		if tr.left > 0 {
			return n, &Error{Kind: MetadataIncompleteBuffer, Tensor: tr.t.Name, Offset: tr.r.h.DataStart() + tr.r.pos,
				Msg: "stream ended inside the tensor's data (expected it to run to offset " +
					strconv.FormatInt(tr.r.h.DataStart()+tr.t.End, 10) + ")"}
		}
		err = nil
	}
	return n, err
}

// ReadAll reads every tensor of a stream, calling fn with each in data order; fn must
// consume or ignore the reader before returning. It ends with the end-of-stream check.
func (r *Reader) ReadAll(fn func(TensorInfo, io.Reader) error) error {
	for {
		t, tr, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(t, tr); err != nil {
			return err
		}
	}
}
