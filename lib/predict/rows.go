package predict

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/npy"
)

// Format is a file family of features and predictions.
type Format int

const (
	CSV Format = iota + 1
	NPY
	NPZ
)

func (f Format) String() string {
	switch f {
	case CSV:
		return "csv"
	case NPY:
		return "npy"
	case NPZ:
		return "npz"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat reads csv, npy or npz.
func ParseFormat(s string) (Format, error) {
	for f := CSV; f <= NPZ; f++ {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("format %q: expected csv, npy or npz", s)
}

// Sniff tells the format of a stream from its first bytes: .npy's magic, a zip
// archive (.npz), else CSV (plain or gzip).
func Sniff(prefix []byte) Format {
	switch {
	case bytes.HasPrefix(prefix, []byte("\x93NUMPY")):
		return NPY
	case bytes.HasPrefix(prefix, []byte("PK\x03\x04")), bytes.HasPrefix(prefix, []byte("PK\x05\x06")):
		return NPZ
	}
	return CSV
}

// Rows reads feature rows in batches.
type Rows interface {
	// Cols is the number of features of every row.
	Cols() int
	// Total is the number of rows when the input says it up front (.npy, .npz), else -1.
	Total() int64
	// Next returns the next batch of at most max rows, reusing dst's storage; after the
	// last row it returns io.EOF.
	Next(dst model.Matrix, max int) (model.Matrix, error)
}

// CSV caps (docs/SECURITY.md). A line holds at most the model's features, each a
// number, which the usual writers put in at most 25 bytes (-1.2345678901234567e-308,
// or NumPy's %.18e with a sign); a line may take 64 bytes a feature, over twice that,
// and 64 KiB more for a header of long names or padding, but never more than
// MaxCSVLine: a row of over a million features wants .npy. So memory follows the
// model, not the input: the line (about 8 times the row's float64s at most), and the
// fields cut from it, no more than the model's.
const (
	// MaxCSVLine caps any CSV line, whatever the model.
	MaxCSVLine = 64 << 20
	// CSVFeatureBytes and CSVLineSlack make a model's line cap (CSVLineCap).
	CSVFeatureBytes = 64
	CSVLineSlack    = 64 << 10
)

// CSVLineCap is the longest CSV line, newline excluded, read for a model of
// features features.
func CSVLineCap(features int) int {
	return min(MaxCSVLine, CSVLineSlack+CSVFeatureBytes*max(features, 0))
}

// CSVRows reads comma-separated (or space-separated, as lib/model's ReadCSV) rows of
// numbers, one per line, plain or gzip. A first line that is not all numbers is a
// header and is skipped. Blank lines, and a UTF-8 byte order mark at the start, are
// skipped.
type CSVRows struct {
	sc       *bufio.Scanner
	line     int
	cols     int
	features int // the most fields a line may have
	lineCap  int
	Header   []string // the header's fields, nil when there was none
	first    []float64
	fields   [][]byte
}

// NewCSVRows reads up to the first row (so Cols is known). features is the model's
// feature count: a line of more fields is an error as soon as it is cut, and lines
// are capped by CSVLineCap(features).
func NewCSVRows(r io.Reader, features int) (*CSVRows, error) {
	if features < 1 {
		return nil, fmt.Errorf("csv: rows for a model of %d features", features)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("csv: gzip: %w", err)
		}
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	// A UTF-8 byte order mark (Excel's "CSV UTF-8") made the first line not numbers,
	// so a first row of data was skipped as a header.
	if bom, err := br.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		br.Discard(3)
	}
	c := &CSVRows{sc: bufio.NewScanner(br), features: features, lineCap: CSVLineCap(features)}
	// the scanner's buffer holds a line and its newline
	c.sc.Buffer(make([]byte, 0, min(64<<10, c.lineCap+1)), c.lineCap+1)
	for {
		fields, err := c.nextLine()
		if err == io.EOF {
			return c, nil // no rows at all: Cols is 0
		}
		if err != nil {
			return nil, err
		}
		c.cols = len(fields)
		vals := make([]float64, len(fields))
		if err := c.parse(vals, fields); err != nil {
			var nf *nonFiniteError
			if c.Header != nil || c.line > 1 && c.first != nil || errors.As(err, &nf) {
				return nil, err
			}
			for _, f := range fields {
				c.Header = append(c.Header, string(bytes.TrimSpace(f)))
			}
			continue
		}
		c.first = vals
		return c, nil
	}
}

// nextLine returns the fields of the next non-blank line, refusing one of more
// fields than the model's features as soon as they are counted.
func (c *CSVRows) nextLine() ([][]byte, error) {
	for c.sc.Scan() {
		c.line++
		text := bytes.TrimSpace(c.sc.Bytes())
		if len(text) == 0 {
			continue
		}
		c.fields = c.fields[:0]
		add := func(f []byte) error {
			if len(c.fields) == c.features {
				return fmt.Errorf("csv: line %d: more than %d fields; the model takes %d features", c.line, c.features, c.features)
			}
			c.fields = append(c.fields, f)
			return nil
		}
		if bytes.IndexByte(text, ',') >= 0 {
			for {
				i := bytes.IndexByte(text, ',')
				if i < 0 {
					i = len(text)
				}
				if err := add(text[:i]); err != nil {
					return nil, err
				}
				if i == len(text) {
					break
				}
				text = text[i+1:]
			}
		} else {
			// runs of white space, as bytes.Fields cuts (text is trimmed)
			for len(text) > 0 {
				i := bytes.IndexFunc(text, unicode.IsSpace)
				if i < 0 {
					i = len(text)
				}
				if err := add(text[:i]); err != nil {
					return nil, err
				}
				text = bytes.TrimLeftFunc(text[i:], unicode.IsSpace)
			}
		}
		return c.fields, nil
	}
	if err := c.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("csv: line %d is longer than %d bytes, the cap for a row of %d features (%d KiB and %d bytes a feature, at most %d MiB)",
				c.line+1, c.lineCap, c.features, CSVLineSlack>>10, CSVFeatureBytes, MaxCSVLine>>20)
		}
		return nil, fmt.Errorf("csv: after line %d: %w", c.line, err)
	}
	return nil, io.EOF
}

func (c *CSVRows) parse(dst []float64, fields [][]byte) error {
	for j, f := range fields {
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(f)), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("csv: line %d field %d: %q is not a number", c.line, j+1, f)
		}
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return &nonFiniteError{line: c.line, field: j + 1, text: string(f)}
		}
		dst[j] = v
	}
	return nil
}

// nonFiniteError is a field that is a number but not a finite one (NaN, an
// infinity, or out of float64's range): an error even on the first line, which
// is not taken for a header then.
type nonFiniteError struct {
	line, field int
	text        string
}

func (e *nonFiniteError) Error() string {
	return fmt.Sprintf("csv: line %d field %d: %q is not a finite number; features must be finite", e.line, e.field, e.text)
}

// Cols implements Rows.
func (c *CSVRows) Cols() int { return c.cols }

// Total implements Rows: a CSV stream does not say.
func (c *CSVRows) Total() int64 { return -1 }

// Next implements Rows.
func (c *CSVRows) Next(dst model.Matrix, max int) (model.Matrix, error) {
	dst.Rows, dst.Cols, dst.Data = 0, c.cols, dst.Data[:0]
	if c.first != nil {
		dst.Data = append(dst.Data, c.first...)
		dst.Rows, c.first = 1, nil
	}
	for dst.Rows < max {
		fields, err := c.nextLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst, err
		}
		if len(fields) != c.cols {
			return dst, fmt.Errorf("csv: line %d: %d fields, expected %d like the first row", c.line, len(fields), c.cols)
		}
		n := len(dst.Data)
		dst.Data = append(dst.Data, make([]float64, c.cols)...)
		if err := c.parse(dst.Data[n:], fields); err != nil {
			return dst, err
		}
		dst.Rows++
	}
	if dst.Rows == 0 {
		return dst, io.EOF
	}
	return dst, nil
}

// NPYRows streams the rows of a 2-D .npy array of any plain numeric dtype.
type NPYRows struct {
	r     io.Reader
	h     npy.Header
	size  int // bytes per element
	left  int64
	buf   []byte
	cols  int
	total int64
}

// NewNPYRows reads the header of the .npy stream r; name is used in errors.
func NewNPYRows(r io.Reader, name string) (*NPYRows, error) {
	nr, err := npy.NewReader(r, name)
	if err != nil {
		return nil, err
	}
	return npyRows(nr, name)
}

func npyRows(nr *npy.Reader, name string) (*NPYRows, error) {
	h := nr.Header()
	if len(h.Shape) != 2 {
		return nil, fmt.Errorf("%s: shape %v, expected two dimensions (rows, features)", name, h.Shape)
	}
	info, ok := dtype.Lookup(h.DType)
	if !ok || info.BlockElems != 1 || npy.Float64s(nil, nil, h.DType) != nil {
		return nil, fmt.Errorf("%s: dtype %v, expected a float or integer type", name, h.DType)
	}
	if h.Shape[1] > math.MaxInt32 {
		return nil, fmt.Errorf("%s: %d features is too many", name, h.Shape[1])
	}
	return &NPYRows{r: nr, h: h, size: info.BlockBytes, left: h.Shape[0], cols: int(h.Shape[1]), total: h.Shape[0]}, nil
}

// Cols implements Rows.
func (n *NPYRows) Cols() int { return n.cols }

// Total implements Rows.
func (n *NPYRows) Total() int64 { return n.total }

// Next implements Rows.
func (n *NPYRows) Next(dst model.Matrix, max int) (model.Matrix, error) {
	rows := int(min(int64(max), n.left))
	if rows <= 0 {
		// read to the end, so that the reader checks that nothing follows the data
		// (and an .npz member's CRC)
		if _, err := io.Copy(io.Discard, n.r); err != nil {
			return dst, err
		}
		return model.Matrix{Cols: n.cols}, io.EOF
	}
	cnt := rows * n.cols
	need := cnt * n.size
	if cap(n.buf) < need {
		n.buf = make([]byte, need)
	}
	b := n.buf[:need]
	if _, err := io.ReadFull(n.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return dst, err
	}
	if cap(dst.Data) < cnt {
		dst.Data = make([]float64, cnt)
	}
	dst.Rows, dst.Cols, dst.Data = rows, n.cols, dst.Data[:cnt]
	if err := npy.Float64s(dst.Data, b, n.h.DType); err != nil {
		return dst, err
	}
	n.left -= int64(rows)
	return dst, nil
}

// NPZRows opens the features of an .npz archive: the member named member, or with
// member "" the one called "x" (or "X"), or the only member.
func NPZRows(r io.ReaderAt, size int64, name, member string) (Rows, io.Closer, error) {
	z, err := npy.OpenNPZ(r, size, name)
	if err != nil {
		return nil, nil, err
	}
	if member == "" {
		for _, c := range []string{"x", "X"} {
			if _, ok := z.Lookup(c); ok {
				member = c
				break
			}
		}
	}
	if member == "" {
		es := z.Entries()
		if len(es) != 1 {
			var names []string
			for _, e := range es {
				names = append(names, e.Name)
			}
			return nil, nil, fmt.Errorf("%s: %d arrays %v and none is called x: name the features' array", name, len(es), names)
		}
		member = es[0].Name
	}
	a, err := z.Open(member)
	if err != nil {
		return nil, nil, err
	}
	rows, err := npyRows(a.Reader, name+":"+member)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	rows.r = a
	return rows, a, nil
}
