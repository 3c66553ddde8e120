package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/regfile"
)

// DataReader returns a reader of the h.DataSize data bytes that follow a header
// just read from r by ReadHeader. It yields the data little-endian, converting
// big-endian files element by element as it goes, in bounded memory. It stops at
// h.DataSize bytes without reading further from r; if r ends earlier the error
// unwraps to ErrTruncated and names the expected and actual sizes.
func DataReader(r io.Reader, h Header) io.Reader {
	return newDataReader(r, h, "", false)
}

func newDataReader(r io.Reader, h Header, name string, checkEnd bool) *dataReader {
	d := &dataReader{src: r, h: h, name: name, remain: h.DataSize, checkEnd: checkEnd}
	if h.BigEndian {
		d.size = h.DType.Info().BlockBytes
	}
	return d
}

type dataReader struct {
	src      io.Reader
	h        Header
	name     string
	remain   int64 // data bytes not yet read from src
	size     int   // element size to byte-swap; 0 for none
	checkEnd bool  // after the data, require the end of src
	pend     [8]byte
	pendLo   int // pend[pendLo:pendHi] is swapped data not yet returned
	pendHi   int
	err      error
}

func (d *dataReader) Read(p []byte) (int, error) {
	if d.pendLo < d.pendHi {
		n := copy(p, d.pend[d.pendLo:d.pendHi])
		d.pendLo += n
		return n, nil
	}
	if d.err != nil {
		return 0, d.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if d.remain == 0 {
		d.err = d.end()
		return 0, d.err
	}
	want := int64(len(p))
	if want > d.remain {
		want = d.remain
	}
	if d.size > 1 {
		want -= want % int64(d.size)
		if want == 0 {
			// p is smaller than one element: swap one through pend.
			if err := d.fill(d.pend[:d.size], 0); err != nil {
				return 0, err
			}
			d.remain -= int64(d.size)
			if err := d.lastCheck(); err != nil {
				return 0, err
			}
			swap(d.pend[:d.size], d.size)
			d.pendLo, d.pendHi = 0, d.size
			n := copy(p, d.pend[:d.size])
			d.pendLo = n
			return n, nil
		}
	}
	buf := p[:want]
	n, err := io.ReadAtLeast(d.src, buf, 1)
	if err != nil {
		d.err = d.fail(err, n)
		return 0, d.err
	}
	if d.size > 1 {
		if rem := n % d.size; rem != 0 {
			if err := d.fill(buf[n:n+d.size-rem], n); err != nil {
				return 0, err
			}
			n += d.size - rem
		}
		swap(buf[:n], d.size)
	}
	d.remain -= int64(n)
	if err := d.lastCheck(); err != nil {
		return 0, err
	}
	return n, nil
}

// lastCheck runs before the last data bytes are handed out: bytes after the data make
// the read that would complete the array fail, since a consumer that knows the size
// (a container writer, io.ReadFull) never reads again to see the error at the end.
func (d *dataReader) lastCheck() error {
	if d.remain != 0 || !d.checkEnd {
		return nil
	}
	if err := d.end(); err != io.EOF {
		d.err = err
		return err
	}
	d.checkEnd = false // the end is known: a later Read returns io.EOF
	return nil
}

// fill reads exactly len(b) bytes of data into b, after already bytes read in
// the same call; the caller accounts for them.
func (d *dataReader) fill(b []byte, already int) error {
	n, err := io.ReadFull(d.src, b)
	if err != nil {
		d.err = d.fail(err, already+n)
		return d.err
	}
	return nil
}

// fail turns a read error after n more bytes into the reader's error.
func (d *dataReader) fail(err error, n int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		got := d.h.DataSize - d.remain + int64(n)
		return newErr(d.name, d.h.HeaderLen+got, ErrTruncated,
			"%s %v needs %d data bytes after the %d-byte header, input has only %d",
			d.h.DType, d.h.Shape, d.h.DataSize, d.h.HeaderLen, got)
	}
	return d.wrap(err, d.h.HeaderLen+d.h.DataSize-d.remain+int64(n))
}

// wrap names the file and offset in an error of the underlying reader.
func (d *dataReader) wrap(err error, off int64) error {
	if d.name == "" {
		return fmt.Errorf("npy: offset %d: %w", off, err)
	}
	return fmt.Errorf("npy: %s: offset %d: %w", d.name, off, err)
}

// end is called once all data has been read: it checks that nothing follows
// when asked to, and returns io.EOF.
func (d *dataReader) end() error {
	if !d.checkEnd {
		return io.EOF
	}
	var one [1]byte
	n, err := io.ReadAtLeast(d.src, one[:], 1)
	if n > 0 {
		return newErr(d.name, d.h.HeaderLen+d.h.DataSize, ErrFormat,
			"unexpected bytes after the %d data bytes of %s %v; expected the end of the file",
			d.h.DataSize, d.h.DType, d.h.Shape)
	}
	if err != nil && err != io.EOF {
		return d.wrap(err, d.h.HeaderLen+d.h.DataSize)
	}
	return io.EOF
}

// swap reverses the bytes of each size-byte element of b in place.
func swap(b []byte, size int) {
	switch size {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			b[i], b[i+1], b[i+2], b[i+3], b[i+4], b[i+5], b[i+6], b[i+7] =
				b[i+7], b[i+6], b[i+5], b[i+4], b[i+3], b[i+2], b[i+1], b[i]
		}
	}
}

// Reader reads one whole .npy stream: the header when created, then the data,
// little-endian, through Read. After the last data byte it requires the end of
// the stream, so appended bytes are an error rather than silently ignored.
type Reader struct {
	h Header
	d *dataReader
}

// NewReader reads the header of the .npy stream r. name (a file name, or ""
// when there is none) is used in errors.
func NewReader(r io.Reader, name string) (*Reader, error) {
	h, err := readHeader(r, name)
	if err != nil {
		return nil, err
	}
	return &Reader{h: h, d: newDataReader(r, h, name, true)}, nil
}

// Header returns the array's header.
func (r *Reader) Header() Header { return r.h }

// Read reads little-endian data bytes. It returns io.EOF after exactly
// Header().DataSize bytes when the stream ends there, and an error unwrapping to
// ErrTruncated or ErrFormat when it ends early or continues.
func (r *Reader) Read(p []byte) (int, error) { return r.d.Read(p) }

// ReadAll reads a whole .npy stream into memory, data little-endian. It refuses
// arrays of more than maxData bytes before allocating anything, and grows its
// buffer only as data arrives, so a header announcing more than the stream holds
// costs no more memory than the stream.
func ReadAll(r io.Reader, name string, maxData int64) (Header, []byte, error) {
	nr, err := NewReader(r, name)
	if err != nil {
		return Header{}, nil, err
	}
	h := nr.Header()
	if h.DataSize > maxData {
		return h, nil, newErr(name, h.HeaderLen, ErrUnsupported,
			"%s %v holds %d data bytes, more than the limit of %d", h.DType, h.Shape, h.DataSize, maxData)
	}
	b, err := io.ReadAll(nr)
	if err != nil {
		return h, nil, err
	}
	return h, b, nil
}

// ReadFile reads a whole .npy file into memory, data little-endian. The array
// may not announce more data than the file holds.
func ReadFile(path string) (Header, []byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Header{}, nil, err
	}
	return ReadAll(f, path, fi.Size())
}

// Float64s converts len(dst) little-endian values of dtype d from b (data as Reader
// and ReadAll yield it) to float64, exactly. It fails for a dtype that is not one
// of .npy's numeric types.
func Float64s(dst []float64, b []byte, d dtype.DType) error {
	le := binary.LittleEndian
	switch d {
	case dtype.F64:
		for i := range dst {
			dst[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
	case dtype.F32:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(le.Uint32(b[4*i:])))
		}
	case dtype.F16:
		for i := range dst {
			dst[i] = float64(kernels.F16BitsToF32(le.Uint16(b[2*i:])))
		}
	case dtype.I8:
		for i := range dst {
			dst[i] = float64(int8(b[i]))
		}
	case dtype.U8, dtype.Bool:
		for i := range dst {
			dst[i] = float64(b[i])
		}
	case dtype.I16:
		for i := range dst {
			dst[i] = float64(int16(le.Uint16(b[2*i:])))
		}
	case dtype.U16:
		for i := range dst {
			dst[i] = float64(le.Uint16(b[2*i:]))
		}
	case dtype.I32:
		for i := range dst {
			dst[i] = float64(int32(le.Uint32(b[4*i:])))
		}
	case dtype.U32:
		for i := range dst {
			dst[i] = float64(le.Uint32(b[4*i:]))
		}
	case dtype.I64:
		for i := range dst {
			dst[i] = float64(int64(le.Uint64(b[8*i:])))
		}
	case dtype.U64:
		for i := range dst {
			dst[i] = float64(le.Uint64(b[8*i:]))
		}
	default:
		return fmt.Errorf("npy: dtype %v is not a numeric .npy type", d)
	}
	return nil
}
