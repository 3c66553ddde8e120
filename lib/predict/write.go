package predict

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/apr-go/apr/lib/cleanup"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/npy"
)

// Options say how Run reads and writes.
type Options struct {
	// Format of the predictions.
	Format Format
	// Proba writes class probabilities (a classifier only) instead of predictions.
	Proba bool
	// BatchRows is the rows predicted at once (0: about 1 MiB of features).
	BatchRows int
	// TempDir is where predictions are spooled when the output is .npy or .npz and
	// the input does not say its row count up front (CSV); "" is the system's.
	TempDir string
}

// NPZ member names of the predictions.
const (
	MemberPredictions   = "y"
	MemberProbabilities = "proba"
)

// Run predicts every row of src with p and writes the predictions to dst in o's
// format: CSV, one line per row (a label, a value, or with Proba one column per
// class under a header p0,p1,...); .npy (int64 labels, float64 values; [rows] or
// [rows, cols]); .npz, the .npy array as member "y" ("proba" with Proba). It holds
// one batch of rows at a time; an .npy or .npz output of a CSV input is spooled to
// a temporary file, since its header needs the row count. It returns the rows
// predicted.
func Run(dst io.Writer, src Rows, p *Predictor, o Options) (int64, error) {
	cols, labels, vector, err := p.Shape(o.Proba)
	if err != nil {
		return 0, err
	}
	if src.Cols() != p.Features() && (src.Cols() != 0 || src.Total() > 0) {
		return 0, fmt.Errorf("rows of %d features; the %v model takes %d", src.Cols(), p.m.Type(), p.Features())
	}
	batch := o.BatchRows
	if batch <= 0 {
		batch = max(1, min(1<<16, (1<<20)/(8*max(1, src.Cols()))))
	}
	var out sink
	switch o.Format {
	case CSV:
		c := &csvSink{w: bufio.NewWriterSize(dst, 1<<16)}
		if o.Proba {
			for k := range cols {
				if k > 0 {
					c.b = append(c.b, ',')
				}
				c.b = append(c.b, 'p')
				c.b = strconv.AppendInt(c.b, int64(k), 10)
			}
			c.b = append(c.b, '\n')
		}
		out = c
	case NPY, NPZ:
		a := &arraySink{dst: dst, format: o.Format, dtype: dtype.F64, cols: cols, vector: vector, total: src.Total(), name: MemberPredictions}
		if labels {
			a.dtype = dtype.I64
		}
		if o.Proba {
			a.name = MemberProbabilities
		}
		if err := a.start(o.TempDir); err != nil {
			return 0, err
		}
		defer a.cleanup()
		out = a
	default:
		return 0, fmt.Errorf("output format %v", o.Format)
	}
	var x model.Matrix
	var n int64
	for {
		x, err = src.Next(x, batch)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		if i := slices.IndexFunc(x.Data, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }); i >= 0 {
			return n, fmt.Errorf("row %d, feature %d: %v; features must be finite numbers", n+int64(i/x.Cols)+1, i%x.Cols+1, x.Data[i])
		}
		res, err := p.Predict(x, o.Proba)
		if err != nil {
			return n, fmt.Errorf("rows %d-%d: %w", n+1, n+int64(x.Rows), err)
		}
		if err := out.write(res); err != nil {
			return n, err
		}
		n += int64(x.Rows)
	}
	return n, out.close(n)
}

type sink interface {
	write(Result) error
	close(rows int64) error
}

type csvSink struct {
	w *bufio.Writer
	b []byte
}

func (c *csvSink) write(r Result) error {
	for i := range r.Rows {
		for j := range r.Cols {
			if j > 0 {
				c.b = append(c.b, ',')
			}
			if r.Labels != nil {
				c.b = strconv.AppendInt(c.b, r.Labels[i*r.Cols+j], 10)
			} else {
				c.b = strconv.AppendFloat(c.b, r.Values[i*r.Cols+j], 'g', -1, 64)
			}
		}
		c.b = append(c.b, '\n')
		if len(c.b) >= 1<<15 {
			if _, err := c.w.Write(c.b); err != nil {
				return err
			}
			c.b = c.b[:0]
		}
	}
	return nil
}

func (c *csvSink) close(int64) error {
	if _, err := c.w.Write(c.b); err != nil {
		return err
	}
	return c.w.Flush()
}

// arraySink writes an .npy array (alone or as an .npz member); with the row count
// unknown, its data goes to a spool file first.
type arraySink struct {
	dst         io.Writer
	format      Format
	dtype       dtype.DType
	cols        int
	vector      bool
	total       int64
	name        string
	npz         *npy.NPZWriter
	data        io.Writer // where the little-endian values go
	arr         *npy.Writer
	spool       *bufio.Writer
	spoolFile   io.ReadSeeker
	removeSpool func()
	b           []byte
}

func (a *arraySink) shape(rows int64) []int64 {
	if a.vector {
		return []int64{rows}
	}
	return []int64{rows, int64(a.cols)}
}

// open writes the header (and the .npz entry) of rows rows.
func (a *arraySink) open(rows int64) error {
	var err error
	if a.format == NPZ {
		a.npz = npy.NewNPZWriter(a.dst, npy.Store)
		a.arr, err = a.npz.Create(a.name, a.dtype, a.shape(rows))
	} else {
		a.arr, err = npy.NewWriter(a.dst, a.dtype, a.shape(rows))
	}
	a.data = a.arr
	return err
}

func (a *arraySink) start(tempDir string) error {
	if a.total >= 0 {
		return a.open(a.total)
	}
	f, remove, err := cleanup.CreateTemp(tempDir, "apr-predict-*.bin")
	if err != nil {
		return fmt.Errorf("spool file for the predictions: %w", err)
	}
	a.spoolFile, a.removeSpool = f, remove
	a.spool = bufio.NewWriterSize(f, 1<<16)
	a.data = a.spool
	return nil
}

func (a *arraySink) cleanup() {
	if a.removeSpool != nil {
		a.removeSpool()
	}
}

func (a *arraySink) write(r Result) error {
	a.b = a.b[:0]
	le := binary.LittleEndian
	if r.Labels != nil {
		for _, v := range r.Labels {
			a.b = le.AppendUint64(a.b, uint64(v))
		}
	} else {
		for _, v := range r.Values {
			a.b = le.AppendUint64(a.b, math.Float64bits(v))
		}
	}
	_, err := a.data.Write(a.b)
	return err
}

func (a *arraySink) close(rows int64) error {
	if a.spool != nil {
		if err := a.spool.Flush(); err != nil {
			return fmt.Errorf("spool file: %w", err)
		}
		if _, err := a.spoolFile.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("spool file: %w", err)
		}
		if err := a.open(rows); err != nil {
			return err
		}
		if _, err := io.Copy(a.arr, a.spoolFile); err != nil {
			return err
		}
	}
	if err := a.arr.Close(); err != nil {
		return err
	}
	if a.npz != nil {
		return a.npz.Close()
	}
	return nil
}
