package model

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Matrix is a dense float64 matrix stored row-major: element (i, j) is
// Data[i*Cols+j]. It is the input type of every Fit and Predict in this package.
type Matrix struct {
	Rows, Cols int
	Data       []float64
}

// NewMatrix wraps data (row-major, len rows*cols) as a Matrix without copying.
func NewMatrix(rows, cols int, data []float64) (Matrix, error) {
	if rows < 0 || cols < 0 {
		return Matrix{}, fmt.Errorf("matrix: negative shape %dx%d", rows, cols)
	}
	if cols != 0 && rows > math.MaxInt/cols {
		return Matrix{}, fmt.Errorf("matrix: shape %dx%d overflows", rows, cols)
	}
	if len(data) != rows*cols {
		return Matrix{}, fmt.Errorf("matrix: %dx%d needs %d values, got %d", rows, cols, rows*cols, len(data))
	}
	return Matrix{Rows: rows, Cols: cols, Data: data}, nil
}

// FromRows copies equal-length rows into a Matrix.
func FromRows(rows [][]float64) (Matrix, error) {
	if len(rows) == 0 {
		return Matrix{}, nil
	}
	cols := len(rows[0])
	data := make([]float64, 0, len(rows)*cols)
	for i, r := range rows {
		if len(r) != cols {
			return Matrix{}, fmt.Errorf("matrix: row %d has %d values, row 0 has %d", i, len(r), cols)
		}
		data = append(data, r...)
	}
	return Matrix{Rows: len(rows), Cols: cols, Data: data}, nil
}

// Row returns row i (aliasing m.Data).
func (m Matrix) Row(i int) []float64 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// Col returns a copy of column j.
func (m Matrix) Col(j int) []float64 {
	out := make([]float64, m.Rows)
	for i := range out {
		out[i] = m.Data[i*m.Cols+j]
	}
	return out
}

func (m Matrix) check() error {
	if m.Rows < 0 || m.Cols < 0 || (m.Cols != 0 && m.Rows > math.MaxInt/m.Cols) || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("matrix: shape %dx%d does not match %d values", m.Rows, m.Cols, len(m.Data))
	}
	return nil
}

// SplitTarget splits off column col (negative counts from the end: -1 is the last
// column) as a target vector and returns the remaining columns as features.
func (m Matrix) SplitTarget(col int) (Matrix, []float64, error) {
	if err := m.check(); err != nil {
		return Matrix{}, nil, err
	}
	if col < 0 {
		col += m.Cols
	}
	if col < 0 || col >= m.Cols {
		return Matrix{}, nil, fmt.Errorf("matrix: target column %d out of range [0,%d)", col, m.Cols)
	}
	x := Matrix{Rows: m.Rows, Cols: m.Cols - 1, Data: make([]float64, 0, m.Rows*(m.Cols-1))}
	y := make([]float64, m.Rows)
	for i := 0; i < m.Rows; i++ {
		r := m.Row(i)
		x.Data = append(x.Data, r[:col]...)
		x.Data = append(x.Data, r[col+1:]...)
		y[i] = r[col]
	}
	return x, y, nil
}

// Standardize returns a copy of m with every column shifted to mean 0 and scaled to
// (population) standard deviation 1, plus the means and scales used. A constant
// column gets scale 1 (it becomes all zeros). Apply the same transform to new data
// with ApplyStandardize.
func Standardize(m Matrix) (Matrix, []float64, []float64, error) {
	if err := m.check(); err != nil {
		return Matrix{}, nil, nil, err
	}
	mean := make([]float64, m.Cols)
	scale := make([]float64, m.Cols)
	if m.Rows == 0 {
		for j := range scale {
			scale[j] = 1
		}
		return Matrix{Rows: 0, Cols: m.Cols, Data: []float64{}}, mean, scale, nil
	}
	n := float64(m.Rows)
	for j := 0; j < m.Cols; j++ {
		var s float64
		for i := 0; i < m.Rows; i++ {
			s += m.Data[i*m.Cols+j]
		}
		mu := s / n
		var ss float64
		for i := 0; i < m.Rows; i++ {
			d := m.Data[i*m.Cols+j] - mu
			ss += d * d
		}
		sd := math.Sqrt(ss / n)
		if sd == 0 || math.IsNaN(sd) || math.IsInf(sd, 0) {
			sd = 1
		}
		mean[j], scale[j] = mu, sd
	}
	out, err := ApplyStandardize(m, mean, scale)
	return out, mean, scale, err
}

// ApplyStandardize returns (m - mean) / scale column by column.
func ApplyStandardize(m Matrix, mean, scale []float64) (Matrix, error) {
	if err := m.check(); err != nil {
		return Matrix{}, err
	}
	if len(mean) != m.Cols || len(scale) != m.Cols {
		return Matrix{}, fmt.Errorf("standardize: %d columns but %d means and %d scales", m.Cols, len(mean), len(scale))
	}
	out := Matrix{Rows: m.Rows, Cols: m.Cols, Data: make([]float64, len(m.Data))}
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Cols; j++ {
			out.Data[i*m.Cols+j] = (m.Data[i*m.Cols+j] - mean[j]) / scale[j]
		}
	}
	return out, nil
}

// CSVOptions controls ReadCSV.
type CSVOptions struct {
	// SkipLines is the number of leading lines to ignore (1 for scikit-learn's
	// "569,30,malignant,benign" header line).
	SkipLines int
	// MaxRows and MaxCols cap the table (defaults 10,000,000 and 100,000); a larger
	// input is an error, not a huge allocation.
	MaxRows, MaxCols int
}

// ErrCSV is wrapped by every ReadCSV parse error.
var ErrCSV = errors.New("csv")

// ReadCSV reads a table of floats: one row per line, fields separated by commas or
// by runs of spaces and tabs (both scikit-learn's comma files and its
// space-separated diabetes file load). A gzip stream (magic 1f 8b) is decompressed
// transparently. Blank lines are skipped; every row must have the same number of
// fields. Errors name the line and field.
func ReadCSV(r io.Reader, opt CSVOptions) (Matrix, error) {
	if opt.MaxRows <= 0 {
		opt.MaxRows = 10_000_000
	}
	if opt.MaxCols <= 0 {
		opt.MaxCols = 100_000
	}
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Matrix{}, fmt.Errorf("%w: gzip: %v", ErrCSV, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	var m Matrix
	line := 0
	for sc.Scan() {
		line++
		if line <= opt.SkipLines {
			continue
		}
		text := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if text == "" {
			continue
		}
		fields := CSVFields(text)
		if m.Rows == 0 {
			if len(fields) > opt.MaxCols {
				return Matrix{}, fmt.Errorf("%w: line %d: %d fields, more than the cap %d", ErrCSV, line, len(fields), opt.MaxCols)
			}
			m.Cols = len(fields)
		} else if len(fields) != m.Cols {
			return Matrix{}, fmt.Errorf("%w: line %d: %d fields, expected %d like the first row", ErrCSV, line, len(fields), m.Cols)
		}
		if m.Rows >= opt.MaxRows {
			return Matrix{}, fmt.Errorf("%w: line %d: more than the cap of %d rows", ErrCSV, line, opt.MaxRows)
		}
		for j, f := range fields {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return Matrix{}, fmt.Errorf("%w: line %d field %d: %q is not a number", ErrCSV, line, j+1, f)
			}
			m.Data = append(m.Data, v)
		}
		m.Rows++
	}
	if err := sc.Err(); err != nil {
		return Matrix{}, fmt.Errorf("%w: after line %d: %v", ErrCSV, line, err)
	}
	return m, nil
}

// CSVFields splits a line as ReadCSV does: at every comma when it has one, else at
// runs of white space.
func CSVFields(line string) []string {
	if strings.Contains(line, ",") {
		return strings.Split(line, ",")
	}
	return strings.Fields(line)
}

// LoadCSV reads the file at path with ReadCSV.
func LoadCSV(path string, opt CSVOptions) (Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Matrix{}, err
	}
	m, err := ReadCSV(bytes.NewReader(b), opt)
	if err != nil {
		return Matrix{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// score measures the predictions of predict for x against y; mismatch is the error
// for a y that is not one value per row (its arguments: rows, then values).
func score[P any](predict func(Matrix) ([]P, error), x Matrix, y []float64, measure func([]float64, []P) float64, mismatch string) (float64, error) {
	p, err := predict(x)
	if err != nil {
		return 0, err
	}
	if len(y) != len(p) {
		return 0, fmt.Errorf(mismatch, len(p), len(y))
	}
	return measure(y, p), nil
}

// R2 is the coefficient of determination 1 - SS_res/SS_tot of predictions against
// the truth (NaN when the lengths differ or the truth is empty; 0 when the truth is
// constant and the prediction not exact, 1 when exact).
func R2(truth, pred []float64) float64 {
	if len(truth) != len(pred) || len(truth) == 0 {
		return math.NaN()
	}
	var mean float64
	for _, v := range truth {
		mean += v
	}
	mean /= float64(len(truth))
	var res, tot float64
	for i, v := range truth {
		res += (v - pred[i]) * (v - pred[i])
		tot += (v - mean) * (v - mean)
	}
	if tot == 0 {
		if res == 0 {
			return 1
		}
		return 0
	}
	return 1 - res/tot
}

// Accuracy is the fraction of labels equal to their predictions (NaN when the
// lengths differ or are zero).
func Accuracy(truth []float64, pred []int) float64 {
	if len(truth) != len(pred) || len(truth) == 0 {
		return math.NaN()
	}
	ok := 0
	for i, v := range truth {
		if v == float64(pred[i]) {
			ok++
		}
	}
	return float64(ok) / float64(len(truth))
}
