package distill

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/npy"
)

// LoadOptions says where the labels of a data file are.
type LoadOptions struct {
	// LabelColumn selects the label column of a CSV file: a column index from 0
	// (negative counts from the end: -1, the default when empty, is the last
	// column), a header name, or "none" for unlabelled data.
	LabelColumn string
	// Labels is a file of labels, one per row: .npy for a .npy feature file, or a
	// one-column CSV or text file (optionally gzip) for a CSV feature file, whose
	// columns are then all features.
	Labels string
	// Targets reads the labels as real-valued regression targets (Data.T, any finite
	// value) instead of class indices (Data.Y).
	Targets bool
}

// maxDataBytes caps a NumPy data array.
const maxDataBytes = 1 << 32

// LoadData reads a data set: a CSV file (optionally gzip-compressed, with an
// optional header line, detected as a first line that is not all numbers), a .npy
// feature matrix (2-D, numeric; labels from LoadOptions.Labels), or a .npz archive
// holding "X" (or "x") and optionally "y" (or "Y"). Labels must be whole numbers
// >= 0. Errors name the file, row and column.
func LoadData(path string, opt LoadOptions) (Data, error) {
	d, err := loadData(path, opt)
	if err == nil && d.SHA256 == "" { // a .npy or .npz file: regular, read again
		d.SHA256, err = fileSHA256(path)
	}
	if err != nil {
		return Data{}, fmt.Errorf("%s: %w", path, err)
	}
	d.Name = filepath.Base(path)
	if d.X.Rows == 0 {
		return Data{}, fmt.Errorf("%s: no data rows", path)
	}
	return d, nil
}

func loadData(path string, opt LoadOptions) (Data, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		h, b, err := npy.ReadFile(path)
		if err != nil {
			return Data{}, err
		}
		x, err := npyMatrix(h, b)
		if err != nil {
			return Data{}, err
		}
		d := Data{X: x}
		if opt.Labels != "" {
			h, b, err := npy.ReadFile(opt.Labels)
			if err != nil {
				return Data{}, err
			}
			v, err := npyColumn(h, b, x.Rows)
			if err == nil {
				err = d.setLabels(v, opt.Targets, 0)
			}
			if err != nil {
				return Data{}, fmt.Errorf("labels %s: %w", opt.Labels, err)
			}
		}
		return d, nil
	case ".npz":
		if opt.Labels != "" {
			return Data{}, errors.New("an .npz archive holds its own labels (entry y); --labels is for .npy files")
		}
		return loadNPZ(path, opt.Targets)
	}
	if opt.Labels != "" {
		if c := strings.TrimSpace(opt.LabelColumn); c != "" && c != "-1" && c != "none" {
			return Data{}, fmt.Errorf("label column %s and a labels file %s: give one", c, opt.Labels)
		}
		d, err := loadCSV(path, "none", false)
		if err != nil {
			return Data{}, err
		}
		l, err := model.LoadCSV(opt.Labels, model.CSVOptions{})
		if err == nil && l.Cols != 1 {
			err = fmt.Errorf("%d columns, expected one label per line", l.Cols)
		}
		if err == nil && l.Rows != d.X.Rows {
			err = fmt.Errorf("%d labels for the %d rows of %s", l.Rows, d.X.Rows, filepath.Base(path))
		}
		if err == nil {
			err = d.setLabels(l.Data, opt.Targets, 0)
		}
		if err != nil {
			return Data{}, fmt.Errorf("labels %s: %w", opt.Labels, err)
		}
		return d, nil
	}
	return loadCSV(path, opt.LabelColumn, opt.Targets)
}

// setLabels stores v (one value per row) as class indices, or as regression targets;
// errors name the row (and the column col from 1, if not 0).
func (d *Data) setLabels(v []float64, targets bool, col int) error {
	at := func(i int) string {
		if col > 0 {
			return fmt.Sprintf("row %d, column %d", i+1, col)
		}
		return fmt.Sprintf("row %d", i+1)
	}
	if targets {
		for i, f := range v {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("%s: target %v, expected a finite number", at(i), f)
			}
		}
		d.T = v
		return nil
	}
	d.Y = make([]int, len(v))
	for i, f := range v {
		var err error
		if d.Y[i], err = labelOf(f); err != nil {
			return fmt.Errorf("%s: %w", at(i), err)
		}
	}
	return nil
}

func loadNPZ(path string, targets bool) (Data, error) {
	z, err := npy.OpenNPZFile(path)
	if err != nil {
		return Data{}, err
	}
	defer z.Close()
	read := func(names ...string) (npy.Header, []byte, string, error) {
		for _, n := range names {
			e, ok := z.Lookup(n)
			if !ok {
				continue
			}
			if e.Header.DataSize > maxDataBytes {
				return npy.Header{}, nil, n, fmt.Errorf("array %s: %d bytes, more than the cap %d", n, e.Header.DataSize, int64(maxDataBytes))
			}
			a, err := z.Open(n)
			if err != nil {
				return npy.Header{}, nil, n, err
			}
			defer a.Close()
			b, err := io.ReadAll(a)
			if err == nil && int64(len(b)) != e.Header.DataSize {
				err = fmt.Errorf("array %s: %d data bytes, its header announces %d", n, len(b), e.Header.DataSize)
			}
			return e.Header, b, n, err
		}
		return npy.Header{}, nil, "", nil
	}
	h, b, name, err := read("X", "x")
	if err != nil {
		return Data{}, err
	}
	if name == "" {
		return Data{}, errors.New("no array X (or x) in the archive")
	}
	x, err := npyMatrix(h, b)
	if err != nil {
		return Data{}, fmt.Errorf("array %s: %w", name, err)
	}
	d := Data{X: x}
	h, b, name, err = read("y", "Y")
	if err != nil {
		return Data{}, err
	}
	if name != "" {
		v, err := npyColumn(h, b, x.Rows)
		if err == nil {
			err = d.setLabels(v, targets, 0)
		}
		if err != nil {
			return Data{}, fmt.Errorf("array %s: %w", name, err)
		}
	}
	return d, nil
}

// npyValues converts little-endian numeric data to float64; float16 data is refused.
func npyValues(h npy.Header, b []byte) ([]float64, error) {
	info, ok := dtype.Lookup(h.DType)
	if !ok || info.BlockElems != 1 {
		return nil, fmt.Errorf("dtype %v, expected a plain numeric type", h.DType)
	}
	n := h.Elems()
	if int64(len(b)) != n*int64(info.BlockBytes) {
		return nil, fmt.Errorf("%d data bytes for %d %v values", len(b), n, h.DType)
	}
	out := make([]float64, n)
	if n > 0 && (h.DType == dtype.F16 || npy.Float64s(out, b, h.DType) != nil) {
		return nil, fmt.Errorf("dtype %v is not supported for data (expected float or integer)", h.DType)
	}
	return out, nil
}

func npyMatrix(h npy.Header, b []byte) (model.Matrix, error) {
	if len(h.Shape) != 2 {
		return model.Matrix{}, fmt.Errorf("shape %v, expected two dimensions (rows, features)", h.Shape)
	}
	v, err := npyValues(h, b)
	if err != nil {
		return model.Matrix{}, err
	}
	return model.NewMatrix(int(h.Shape[0]), int(h.Shape[1]), v)
}

// npyColumn reads one value per row.
func npyColumn(h npy.Header, b []byte, rows int) ([]float64, error) {
	if len(h.Shape) != 1 && !(len(h.Shape) == 2 && h.Shape[1] == 1) {
		return nil, fmt.Errorf("shape %v, expected one label per row", h.Shape)
	}
	if h.Shape[0] != int64(rows) {
		return nil, fmt.Errorf("%d labels for %d rows", h.Shape[0], rows)
	}
	return npyValues(h, b)
}

func labelOf(f float64) (int, error) {
	if f != math.Trunc(f) || f < 0 || f > 1<<30 {
		return 0, fmt.Errorf("label %v, expected a whole class index >= 0", f)
	}
	return int(f), nil
}

// loadCSV reads a CSV file, detecting a header line and splitting off the label
// column.
//
// The file's SHA-256 is taken from the bytes as they are read: a path that is a
// stream (--data <(...)) cannot be read a second time (it gave the digest of no
// bytes).
func loadCSV(path, labelColumn string, targets bool) (Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return Data{}, err
	}
	defer f.Close()
	h := sha256.New()
	raw := io.TeeReader(f, h)
	br := bufio.NewReader(raw)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Data{}, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	// The first non-blank line decides whether there is a header.
	var head strings.Builder
	var names []string
	skip := 0
	for {
		line, err := br.ReadString('\n')
		if len(line) > 1<<20 {
			return Data{}, errors.New("line 1 is longer than 1 MiB")
		}
		head.WriteString(line)
		skip++
		if t := strings.TrimSpace(line); t != "" {
			fields := model.CSVFields(t)
			for _, fld := range fields {
				if _, perr := strconv.ParseFloat(strings.TrimSpace(fld), 64); perr != nil {
					names = fields
					break
				}
			}
			break
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return Data{}, err
		}
	}
	opt := model.CSVOptions{}
	if names != nil {
		opt.SkipLines = skip
	}
	m, err := model.ReadCSV(io.MultiReader(strings.NewReader(head.String()), br), opt)
	if err != nil {
		return Data{}, err
	}
	if _, err := io.Copy(io.Discard, raw); err != nil { // what the parse left (after a gzip stream)
		return Data{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if m.Rows == 0 {
		return Data{SHA256: sum}, nil
	}
	if names != nil && len(names) != m.Cols {
		// Not column names (scikit-learn's "569,30,malignant,benign" line): skipped,
		// but only indices select the label column.
		names = nil
	}
	col, err := labelIndex(labelColumn, names, m.Cols)
	if err != nil {
		return Data{}, err
	}
	if col < 0 {
		return Data{X: m, SHA256: sum}, nil
	}
	x, yf, err := m.SplitTarget(col)
	if err != nil {
		return Data{}, err
	}
	d := Data{X: x, SHA256: sum}
	if err := d.setLabels(yf, targets, col+1); err != nil {
		return Data{}, err
	}
	return d, nil
}

// labelIndex resolves a label column option to an index from 0, or -1 for none.
func labelIndex(s string, names []string, cols int) (int, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		s = "-1"
	case "none":
		return -1, nil
	}
	if i, err := strconv.Atoi(s); err == nil {
		if i < 0 {
			i += cols
		}
		if i < 0 || i >= cols {
			return 0, fmt.Errorf("label column %s: the file has %d columns", s, cols)
		}
		return i, nil
	}
	for i, n := range names {
		if strings.TrimSpace(n) == s {
			return i, nil
		}
	}
	if names == nil {
		return 0, fmt.Errorf("label column %q: the file has no header line; give a column index", s)
	}
	return 0, fmt.Errorf("label column %q: not in the header (%s)", s, strings.Join(names, ","))
}

// Split divides d into a training and a validation set the way scikit-learn's
// train_test_split(test_size=frac, stratify=y) sizes them: ceil(frac·rows) rows go
// to validation (450 of digits' 1797 at 0.25). With labels the split is stratified:
// each class gives floor(frac·its rows) validation rows, and the rows still missing
// go one each to the classes with the largest fractional remainders (ties to the
// lower class). Which rows of a class are drawn is fixed by seed. frac 0 gives an
// empty validation set.
func Split(d Data, frac float64, seed uint64) (train, val Data, err error) {
	if !(frac >= 0 && frac < 1) {
		return Data{}, Data{}, fmt.Errorf("validation split %v, expected a fraction in [0,1)", frac)
	}
	n := d.X.Rows
	// The small allowance keeps 0.1·30 (3.0000000000000004 in float64) at 3.
	nVal := min(n, int(math.Ceil(frac*float64(n)-1e-9)))
	r := model.NewRand(seed, model.StreamSplit)
	isVal := make([]bool, n)
	if d.Y != nil {
		byClass := map[int][]int{}
		maxC := -1
		for i, c := range d.Y {
			byClass[c] = append(byClass[c], i)
			maxC = max(maxC, c)
		}
		take := make([]int, maxC+1)
		rem := make([]float64, maxC+1)
		left := nVal
		for c := 0; c <= maxC; c++ {
			exact := float64(nVal) * float64(len(byClass[c])) / float64(max(n, 1))
			take[c] = int(math.Floor(exact))
			rem[c] = exact - float64(take[c])
			left -= take[c]
		}
		for ; left > 0; left-- {
			best := -1
			for c := 0; c <= maxC; c++ {
				if take[c] < len(byClass[c]) && (best < 0 || rem[c] > rem[best]) {
					best = c
				}
			}
			if best < 0 {
				break
			}
			take[best]++
			rem[best] = -1
		}
		for c := 0; c <= maxC; c++ {
			idx := byClass[c]
			r.Shuffle(idx)
			for _, i := range idx[:take[c]] {
				isVal[i] = true
			}
		}
	} else {
		idx := identity(n)
		r.Shuffle(idx)
		for _, i := range idx[:nVal] {
			isVal[i] = true
		}
	}
	train = Data{X: model.Matrix{Cols: d.X.Cols}, Name: d.Name}
	val = Data{X: model.Matrix{Cols: d.X.Cols}, Name: d.Name + " (validation)"}
	for i := range n {
		dst := &train
		if isVal[i] {
			dst = &val
		}
		dst.X.Data = append(dst.X.Data, d.X.Row(i)...)
		dst.X.Rows++
		if d.Y != nil {
			dst.Y = append(dst.Y, d.Y[i])
		}
		if d.T != nil {
			dst.T = append(dst.T, d.T[i])
		}
	}
	if d.Y != nil && train.Y == nil {
		train.Y = []int{}
	}
	return train, val, nil
}

// fileSHA256 is the hex SHA-256 of the regular file at path.
func fileSHA256(path string) (string, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
