package predict

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/npy"
)

const datasets = "../../testdata/datasets"

// diabetes fits ordinary least squares on all 442 diabetes rows (raw features).
func diabetes(t testing.TB) (*model.LinearRegressionModel, model.Matrix) {
	t.Helper()
	x, err := model.LoadCSV(filepath.Join(datasets, "diabetes_data_raw.csv.gz"), model.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := model.LoadCSV(filepath.Join(datasets, "diabetes_target.csv.gz"), model.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLinearRegression()
	if err := m.Fit(x, y.Col(0)); err != nil {
		t.Fatal(err)
	}
	return m, x
}

// breastCancer fits a binary LogisticRegression on the breast-cancer rows.
func breastCancer(t testing.TB) (*model.LogisticRegressionModel, model.Matrix) {
	t.Helper()
	d, err := model.LoadCSV(filepath.Join(datasets, "breast_cancer.csv"), model.CSVOptions{SkipLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := d.SplitTarget(-1)
	if err != nil {
		t.Fatal(err)
	}
	xs, _, _, err := model.Standardize(x)
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLogisticRegression()
	m.LearningRate, m.MaxIter = 0.1, 300
	if err := m.Fit(xs, y); err != nil {
		t.Fatal(err)
	}
	return m, xs
}

func csvOf(x model.Matrix, header bool) []byte {
	var b bytes.Buffer
	if header {
		for j := range x.Cols {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "f%d", j)
		}
		b.WriteByte('\n')
	}
	for i := range x.Rows {
		for j, v := range x.Row(i) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func npyOf(t testing.TB, x model.Matrix) []byte {
	t.Helper()
	data := make([]byte, 0, 8*len(x.Data))
	for _, v := range x.Data {
		data = binary.LittleEndian.AppendUint64(data, math.Float64bits(v))
	}
	var b bytes.Buffer
	if err := npy.Write(&b, dtype.F64, []int64{int64(x.Rows), int64(x.Cols)}, data); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func npzOf(t testing.TB, x model.Matrix, extra bool) []byte {
	t.Helper()
	var b bytes.Buffer
	z := npy.NewNPZWriter(&b, npy.Deflate)
	if extra {
		if err := z.WriteArray("y", dtype.F64, []int64{0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	h := npyOf(t, x)
	nr, err := npy.NewReader(bytes.NewReader(h), "")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(nr)
	if err := z.WriteArray("x", dtype.F64, nr.Header().Shape, data); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// run predicts the features in (any format) and returns the output bytes.
func run(t testing.TB, m model.Model, in []byte, o Options) []byte {
	t.Helper()
	p, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, release, err := Open(bytes.NewReader(in), "features", p.Features(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var out bytes.Buffer
	if _, err := Run(&out, rows, p, o); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// readArray decodes an .npy or .npz (member name) output.
func readArray(t testing.TB, b []byte, f Format, name string) (npy.Header, []byte) {
	t.Helper()
	if f == NPZ {
		z, err := npy.OpenNPZ(bytes.NewReader(b), int64(len(b)), "out")
		if err != nil {
			t.Fatal(err)
		}
		if len(z.Entries()) != 1 {
			t.Fatalf("%d arrays in the .npz, want 1", len(z.Entries()))
		}
		a, err := z.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		data, err := io.ReadAll(a)
		if err != nil {
			t.Fatal(err)
		}
		return a.Header(), data
	}
	h, data, err := npy.ReadAll(bytes.NewReader(b), "out", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return h, data
}

// TestDiabetesGolden: the predictions of OLS on the diabetes data, through CSV,
// are lib/model's to the bit, and score scikit-learn's reference R² (0.5177, see
// testdata/datasets/README.md).
func TestDiabetesGolden(t *testing.T) {
	m, x := diabetes(t)
	want, err := m.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(datasets, "diabetes_data_raw.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, m, raw, Options{Format: CSV})
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != x.Rows {
		t.Fatalf("%d predictions for %d rows", len(lines), x.Rows)
	}
	got := make([]float64, len(lines))
	for i, l := range lines {
		if got[i], err = strconv.ParseFloat(l, 64); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if got[i] != want[i] {
			t.Fatalf("row %d: %v, lib/model predicts %v", i, got[i], want[i])
		}
	}
	y, _ := model.LoadCSV(filepath.Join(datasets, "diabetes_target.csv.gz"), model.CSVOptions{})
	if r2 := model.R2(y.Col(0), got); math.Abs(r2-0.5177) > 5e-4 {
		t.Errorf("R² %.6f, scikit-learn's OLS gets 0.5177", r2)
	}
}

// TestFormatsAgree: the same features as CSV (with and without a header, gzip),
// .npy and .npz give the same predictions and probabilities, in every output
// format, whatever the batch size.
func TestFormatsAgree(t *testing.T) {
	m, x := breastCancer(t)
	labels, err := m.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	proba, err := m.Probabilities(x)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(csvOf(x, false))
	zw.Close()
	inputs := map[string][]byte{
		"csv": csvOf(x, false), "csv-header": csvOf(x, true), "csv.gz": gz.Bytes(),
		"npy": npyOf(t, x), "npz": npzOf(t, x, false), "npz-2-arrays": npzOf(t, x, true),
	}
	for name, in := range inputs {
		for _, batch := range []int{0, 1, 7} {
			for _, f := range []Format{CSV, NPY, NPZ} {
				for _, withProba := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/batch%d/%v/proba=%v", name, batch, f, withProba), func(t *testing.T) {
						out := run(t, m, in, Options{Format: f, Proba: withProba, BatchRows: batch})
						var got []float64
						if f == CSV {
							lines := strings.Split(strings.TrimSpace(string(out)), "\n")
							if withProba {
								if lines[0] != "p0,p1" {
									t.Fatalf("header %q, want p0,p1", lines[0])
								}
								lines = lines[1:]
							}
							for _, l := range lines {
								for _, s := range strings.Split(l, ",") {
									v, err := strconv.ParseFloat(s, 64)
									if err != nil {
										t.Fatal(err)
									}
									got = append(got, v)
								}
							}
						} else {
							member := MemberPredictions
							if withProba {
								member = MemberProbabilities
							}
							h, data := readArray(t, out, f, member)
							wantShape, wantType := fmt.Sprint([]int64{int64(x.Rows)}), dtype.I64
							if withProba {
								wantShape, wantType = fmt.Sprint([]int64{int64(x.Rows), 2}), dtype.F64
							}
							if fmt.Sprint(h.Shape) != wantShape || h.DType != wantType {
								t.Fatalf("array %v %v, want %v %s", h.DType, h.Shape, wantType, wantShape)
							}
							for i := 0; i < len(data); i += 8 {
								u := binary.LittleEndian.Uint64(data[i:])
								if wantType == dtype.I64 {
									got = append(got, float64(int64(u)))
								} else {
									got = append(got, math.Float64frombits(u))
								}
							}
						}
						want := proba.Data
						if !withProba {
							want = make([]float64, len(labels))
							for i, l := range labels {
								want[i] = float64(l)
							}
						}
						if len(got) != len(want) {
							t.Fatalf("%d values, want %d", len(got), len(want))
						}
						for i := range want {
							if got[i] != want[i] {
								t.Fatalf("value %d: %v, want %v", i, got[i], want[i])
							}
						}
					})
				}
			}
		}
	}
}

// TestMultinomialAndNeural: a multinomial LogisticRegression's and a
// NeuralSequential classifier's labels are the argmax of their probabilities, which
// sum to 1; a regression network writes its outputs.
func TestMultinomialAndNeural(t *testing.T) {
	x, _ := model.FromRows([][]float64{{0, 1, 2}, {3, -1, 0.5}, {-2, 4, 1}, {0.25, 0.5, -3}, {1, 1, 1}})
	lr := model.NewMultinomialLogisticRegression(4)
	lr.Coefficients = []float32{1, -1, 0.5, -0.5, 2, 0, 0.25, 0.25, -1, 1.5, -2, 1}
	lr.Intercepts = []float32{0.1, -0.2, 0.3, 0}
	nn, err := model.NewNeuralSequential([]int{3, 5, 3}, model.ActReLU, model.ActSoftmax, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []model.Model{lr, nn} {
		t.Run(m.Type().String(), func(t *testing.T) {
			k := 4
			if m == model.Model(nn) {
				k = 3
			}
			in := npyOf(t, x)
			_, pd := readArray(t, run(t, m, in, Options{Format: NPY, Proba: true}), NPY, "")
			_, ld := readArray(t, run(t, m, in, Options{Format: NPY}), NPY, "")
			for i := range x.Rows {
				sum, best := 0.0, 0
				row := make([]float64, k)
				for c := range k {
					row[c] = math.Float64frombits(binary.LittleEndian.Uint64(pd[8*(i*k+c):]))
					sum += row[c]
					if row[c] > row[best] {
						best = c
					}
				}
				if math.Abs(sum-1) > 1e-6 {
					t.Errorf("row %d: probabilities sum to %v", i, sum)
				}
				if l := int(binary.LittleEndian.Uint64(ld[8*i:])); l != best {
					t.Errorf("row %d: label %d, the most probable class is %d (%v)", i, l, best, row)
				}
			}
		})
	}
	reg, err := model.NewNeuralSequential([]int{3, 4, 2}, model.ActTanh, model.ActIdentity, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := reg.Output(x)
	if err != nil {
		t.Fatal(err)
	}
	h, data := readArray(t, run(t, reg, npyOf(t, x), Options{Format: NPY}), NPY, "")
	if fmt.Sprint(h.Shape) != "[5 2]" {
		t.Fatalf("regression network: shape %v, want [5 2]", h.Shape)
	}
	for i, w := range want.Data {
		if g := math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:])); g != w {
			t.Fatalf("output %d: %v, want %v", i, g, w)
		}
	}
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	p, _ := New(reg)
	if _, _, _, err := p.Shape(true); err == nil {
		t.Error("--proba on a regression network: no error")
	}
}

// TestErrors: unsupported types, wrong feature counts and bad rows fail with a
// message saying what is wrong, and nothing is predicted from a bad row.
func TestErrors(t *testing.T) {
	for _, typ := range []modeltype.Type{modeltype.KMeans, modeltype.Custom, modeltype.PCA} {
		err := Supported(typ)
		if err == nil || !strings.Contains(err.Error(), "no predict") || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("Supported(%v) = %v", typ, err)
		}
	}
	m, _ := diabetes(t)
	p, _ := New(m)
	for in, want := range map[string]string{
		"1,2,3\n":                     "rows of 3 features; the LinearRegression model takes 10",
		"1,2,3,4,5,6,7,8,9,10\n1,2\n": "line 2: 2 fields, expected 10",
		"1,2,3,4,5,6,7,8,9,x\n1,2,3,4,5,6,7,8,9,10\n1,2,3,4,5,6,7,8,9,y\n": `line 3 field 10: "y" is not a number`,
		// not finite: refused, and never taken for a header on the first line
		"1,2,3,4,5,6,7,8,9,NaN\n":                         `line 1 field 10: "NaN" is not a finite number`,
		"1e400,2,3,4,5,6,7,8,9,10\n":                      `line 1 field 1: "1e400" is not a finite number`,
		"1,2,3,4,5,6,7,8,9,10\n1,2,-Inf,4,5,6,7,8,9,10\n": `line 2 field 3: "-Inf" is not a finite number`,
		string(npyOf(t, model.Matrix{Rows: 2, Cols: 10, Data: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, math.NaN(), 6, 7, 8, 9, 10}})): "row 2, feature 5: NaN; features must be finite",
	} {
		rows, _, release, err := Open(strings.NewReader(in), "features", p.Features(), "", "")
		if err == nil {
			_, err = Run(io.Discard, rows, p, Options{Format: CSV})
			release()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
	if _, _, _, err := Open(strings.NewReader("1,2\n"), "features", 2, "x", ""); err == nil {
		t.Error("--array with CSV features: no error")
	}
}

// TestCSVCaps: a line may be CSVLineCap(features) bytes and hold the model's features;
// one byte or one field more is an error naming the line and the cap, found having
// read and allocated little whatever the line's length (a 64 MiB line of zeros, 64
// KiB gzipped, took 2.3 GB and 26 s when the line was read whole).
func TestCSVCaps(t *testing.T) {
	m, _ := diabetes(t)
	p, _ := New(m)
	row := "1,2,3,4,5,6,7,8,9,10"
	lineCap := CSVLineCap(10)
	if lineCap != 64<<10+640 {
		t.Fatalf("CSVLineCap(10) = %d", lineCap)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(row + "\n"))
	for range 32 {
		zw.Write(bytes.Repeat([]byte("0,"), 1<<20))
	}
	zw.Close()
	for _, c := range []struct {
		name, in, want string
	}{
		{"a line at the cap", row + "\n" + row + strings.Repeat(" ", lineCap-len(row)) + "\n", ""},
		{"a line over the cap", row + "\n" + row + strings.Repeat(" ", lineCap-len(row)+1) + "\n",
			fmt.Sprintf("csv: line 2 is longer than %d bytes, the cap for a row of 10 features (64 KiB and 64 bytes a feature, at most 64 MiB)", lineCap)},
		{"a first line over the cap", strings.Repeat("x", lineCap+1), "features: csv: line 1 is longer than"},
		{"eleven fields", row + "\n" + row + ",11\n", "csv: line 2: more than 10 fields; the model takes 10 features"},
		{"eleven fields apart", row + "\n" + strings.ReplaceAll(row, ",", " ") + " 11\n", "line 2: more than 10 fields"},
		{"a header of eleven", "a,b,c,d,e,f,g,h,i,j,k\n" + row + "\n", "features: csv: line 1: more than 10 fields"},
		{"a 64 MiB line, gzipped", zipped.String(), "line 2 is longer than"},
	} {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		rows, _, release, err := Open(strings.NewReader(c.in), "features", p.Features(), "", "")
		var n int64
		if err == nil {
			n, err = Run(io.Discard, rows, p, Options{Format: CSV})
			release()
		}
		runtime.ReadMemStats(&ms1)
		switch {
		case c.want == "" && (err != nil || n != 2):
			t.Errorf("%s: %d rows, error %v", c.name, n, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 2<<20 {
			t.Errorf("%s: allocated %d bytes", c.name, alloc)
		}
	}
}

// TestCSVByteOrderMark: a UTF-8 byte order mark (Excel's "CSV UTF-8") before a first
// row of numbers made that row a header, skipped with exit 0: one row fewer.
func TestCSVByteOrderMark(t *testing.T) {
	m, _ := diabetes(t)
	p, _ := New(m)
	row := "1,2,3,4,5,6,7,8,9,10\n"
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte("\xef\xbb\xbf" + row + row))
	zw.Close()
	for name, in := range map[string]string{
		"plain":         "\xef\xbb\xbf" + row + row,
		"gzip":          zipped.String(),
		"with a header": "\xef\xbb\xbfa,b,c,d,e,f,g,h,i,j\n" + row + row,
	} {
		rows, _, release, err := Open(strings.NewReader(in), "features", p.Features(), "", "")
		var n int64
		if err == nil {
			n, err = Run(io.Discard, rows, p, Options{Format: CSV})
			release()
		}
		if err != nil || n != 2 {
			t.Errorf("%s: %d rows, error %v; want 2", name, n, err)
		}
	}
}
