package model

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

var datasets = filepath.Join("..", "..", "testdata", "datasets")

func loadDiabetes(t *testing.T) (Matrix, []float64) {
	t.Helper()
	x, err := LoadCSV(filepath.Join(datasets, "diabetes_data_raw.csv.gz"), CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ym, err := LoadCSV(filepath.Join(datasets, "diabetes_target.csv.gz"), CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if x.Rows != 442 || x.Cols != 10 || ym.Rows != 442 || ym.Cols != 1 {
		t.Fatalf("diabetes: x %dx%d, y %dx%d; README says 442x10 and 442x1", x.Rows, x.Cols, ym.Rows, ym.Cols)
	}
	return x, ym.Data
}

func loadBreastCancer(t *testing.T) (Matrix, []float64) {
	t.Helper()
	m, err := LoadCSV(filepath.Join(datasets, "breast_cancer.csv"), CSVOptions{SkipLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := m.SplitTarget(-1)
	if err != nil {
		t.Fatal(err)
	}
	if x.Rows != 569 || x.Cols != 30 {
		t.Fatalf("breast_cancer: %dx%d, README says 569x30", x.Rows, x.Cols)
	}
	return x, y
}

func TestLinearRegressionDiabetes(t *testing.T) {
	x, y := loadDiabetes(t)
	m := NewLinearRegression()
	if err := m.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	r2, err := m.Score(x, y)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diabetes OLS: R^2 = %.6f, intercept %.4f, coefficients %v, rank %d", r2, m.Intercept, m.Coefficients, m.Rank)
	// scikit-learn 1.2.1 on the same file: R^2 = 0.5177 (testdata/datasets/README.md).
	if math.Abs(r2-0.5177) > 5e-5 {
		t.Fatalf("R^2 = %.6f, want 0.5177", r2)
	}
	if m.Rank != 10 {
		t.Fatalf("rank %d, want 10", m.Rank)
	}
	// The OLS residual is orthogonal to every column and to the constant.
	pred, _ := m.Predict(x)
	for j := -1; j < x.Cols; j++ {
		var s, scale float64
		for i := 0; i < x.Rows; i++ {
			v := 1.0
			if j >= 0 {
				v = x.Data[i*x.Cols+j]
			}
			s += v * (y[i] - pred[i])
			scale += math.Abs(v * y[i])
		}
		if math.Abs(s) > 1e-5*scale {
			t.Errorf("residual not orthogonal to column %d: %g (scale %g)", j, s, scale)
		}
	}
}

func TestLinearRegressionExact(t *testing.T) {
	// y = 2·x0 - 3·x1 + 0.5, and a duplicated column (rank deficient).
	rows := [][]float64{{1, 2, 1}, {2, 1, 2}, {3, 5, 3}, {4, 3, 4}, {0, -1, 0}, {7, 2, 7}}
	x, err := FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, len(rows))
	for i, r := range rows {
		y[i] = 2*r[0] - 3*r[1] + 0.5
	}
	m := NewLinearRegression()
	if err := m.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	if m.Rank != 2 {
		t.Errorf("rank %d, want 2 (column 2 duplicates column 0)", m.Rank)
	}
	if got := m.Coefficients[0] + m.Coefficients[2]; math.Abs(float64(got)-2) > 1e-5 {
		t.Errorf("coefficients %v: x0 and x2 must sum to 2", m.Coefficients)
	}
	if math.Abs(float64(m.Coefficients[1])+3) > 1e-5 || math.Abs(float64(m.Intercept)-0.5) > 1e-5 {
		t.Errorf("coefficients %v intercept %v, want x1=-3, intercept 0.5", m.Coefficients, m.Intercept)
	}
	r2, _ := m.Score(x, y)
	if r2 < 1-1e-9 {
		t.Errorf("R^2 %v on exact data", r2)
	}

	noInt := &LinearRegressionModel{}
	if err := noInt.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	if noInt.Intercept != 0 {
		t.Errorf("fit_intercept=false gave intercept %v", noInt.Intercept)
	}
}

func TestLogisticRegressionBreastCancer(t *testing.T) {
	x, y := loadBreastCancer(t)
	xs, _, _, err := Standardize(x)
	if err != nil {
		t.Fatal(err)
	}
	m := NewLogisticRegression()
	m.LearningRate = 0.1
	m.MaxIter = 2000
	if err := m.Fit(xs, y); err != nil {
		t.Fatal(err)
	}
	acc, err := m.Score(xs, y)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("breast_cancer logistic: training accuracy %.4f after %d iterations", acc, m.Iterations)
	if acc <= 0.95 {
		t.Fatalf("training accuracy %.4f, want > 0.95", acc)
	}
	proba, _ := m.PredictProba(xs)
	pred, _ := m.Predict(xs)
	for i, p := range proba {
		if p < 0 || p > 1 || (p >= 0.5) != (pred[i] == 1) {
			t.Fatalf("row %d: proba %v, label %d", i, p, pred[i])
		}
	}

	// aprender's defaults (lr 0.01, 1000 steps) also separate the classes well.
	d := NewLogisticRegression()
	if err := d.Fit(xs, y); err != nil {
		t.Fatal(err)
	}
	accD, _ := d.Score(xs, y)
	t.Logf("with aprender's defaults: accuracy %.4f after %d iterations", accD, d.Iterations)
	if accD <= 0.95 {
		t.Errorf("default hyperparameters: accuracy %.4f, want > 0.95", accD)
	}
}

func TestLogisticRegressionRejects(t *testing.T) {
	x, _ := FromRows([][]float64{{0}, {1}})
	m := NewLogisticRegression()
	if err := m.Fit(x, []float64{0, 2}); err == nil || !strings.Contains(err.Error(), "y[1]") {
		t.Errorf("label 2 accepted: %v", err)
	}
	if _, err := m.Predict(x); err != ErrNotFitted {
		t.Errorf("unfitted predict: %v", err)
	}
	if err := m.Fit(x, []float64{0, 1}); err != nil {
		t.Fatal(err)
	}
	bad, _ := FromRows([][]float64{{0, 1}})
	if _, err := m.Predict(bad); err == nil || !strings.Contains(err.Error(), "expects 1") {
		t.Errorf("wrong feature count accepted: %v", err)
	}
}

func TestRoundTripThroughDecode(t *testing.T) {
	x, y := loadDiabetes(t)
	lin := NewLinearRegression()
	if err := lin.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(modeltype.LinearRegression, lin.Config(), tensorMap(lin.Tensors()))
	if err != nil {
		t.Fatal(err)
	}
	lin2 := got.(*LinearRegressionModel)
	p1, _ := lin.Predict(x)
	p2, _ := lin2.Predict(x)
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("row %d: %v before, %v after decode", i, p1[i], p2[i])
		}
	}

	bx, by := loadBreastCancer(t)
	bs, _, _, _ := Standardize(bx)
	lg := NewLogisticRegression()
	lg.MaxIter = 50
	if err := lg.Fit(bs, by); err != nil {
		t.Fatal(err)
	}
	got, err = Decode(modeltype.LogisticRegression, lg.Config(), tensorMap(lg.Tensors()))
	if err != nil {
		t.Fatal(err)
	}
	lg2 := got.(*LogisticRegressionModel)
	if lg2.MaxIter != 50 || lg2.LearningRate != 0.01 || lg2.Tol != 1e-4 {
		t.Errorf("config lost: %+v", lg2)
	}
	q1, _ := lg.PredictProba(bs)
	q2, _ := lg2.PredictProba(bs)
	for i := range q1 {
		if q1[i] != q2[i] {
			t.Fatalf("row %d: %v before, %v after decode", i, q1[i], q2[i])
		}
	}
}

func tensorMap(ts []tensor.Tensor) map[string]tensor.Tensor {
	out := map[string]tensor.Tensor{}
	for _, t := range ts {
		out[t.Name] = t
	}
	return out
}

func TestDecodeRejects(t *testing.T) {
	good := map[string]tensor.Tensor{
		"coefficients": tensor.F32("coefficients", []float32{1, 2, 3}),
		"intercept":    tensor.F32("intercept", []float32{4}),
	}
	with := func(name string, tt tensor.Tensor) map[string]tensor.Tensor {
		m := map[string]tensor.Tensor{}
		for k, v := range good {
			m[k] = v
		}
		if tt.Name == "" {
			delete(m, name)
		} else {
			m[name] = tt
		}
		return m
	}
	cases := []struct {
		name    string
		cfg     map[string]any
		tensors map[string]tensor.Tensor
		want    string
	}{
		{"missing coefficients", nil, with("coefficients", tensor.Tensor{}), `missing tensor "coefficients"`},
		{"missing intercept", nil, with("intercept", tensor.Tensor{}), `missing tensor "intercept"`},
		{"f16 coefficients", nil, with("coefficients", tensor.Tensor{Name: "coefficients", DType: dtype.F16, Shape: []int64{3}, Data: make([]byte, 6)}), "expected F32"},
		{"2-d coefficients", nil, with("coefficients", tensor.Tensor{Name: "coefficients", DType: dtype.F32, Shape: []int64{1, 3}, Data: make([]byte, 12)}), "one dimension"},
		{"short data", nil, with("coefficients", tensor.Tensor{Name: "coefficients", DType: dtype.F32, Shape: []int64{3}, Data: make([]byte, 11)}), "needs 3"},
		{"huge shape", nil, with("coefficients", tensor.Tensor{Name: "coefficients", DType: dtype.F32, Shape: []int64{1 << 62}, Data: nil}), "coefficients"},
		{"negative shape", nil, with("coefficients", tensor.Tensor{Name: "coefficients", DType: dtype.F32, Shape: []int64{-1}, Data: nil}), "negative"},
		{"intercept [2]", nil, with("intercept", tensor.F32("intercept", []float32{1, 2})), "expected [1]"},
		{"extra tensor", nil, with("bias", tensor.F32("bias", []float32{1})), `unexpected tensor "bias"`},
		{"n_features disagrees", map[string]any{"n_features": int64(4)}, good, "expected [4]"},
		{"n_features string", map[string]any{"n_features": "3"}, good, "expected a whole number"},
		{"learning_rate NaN", map[string]any{"learning_rate": math.NaN()}, good, "learning_rate"},
		{"max_iter negative", map[string]any{"max_iter": int64(-1)}, good, "max_iter"},
		{"fit_intercept number", map[string]any{"fit_intercept": 1}, good, "expected a bool"},
	}
	for _, c := range cases {
		for _, typ := range []modeltype.Type{modeltype.LinearRegression, modeltype.LogisticRegression} {
			if c.name == "learning_rate NaN" || c.name == "max_iter negative" {
				if typ == modeltype.LinearRegression {
					continue
				}
			}
			if c.name == "fit_intercept number" && typ == modeltype.LogisticRegression {
				continue
			}
			_, err := Decode(typ, c.cfg, c.tensors)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v %s: error %v, want one containing %q", typ, c.name, err, c.want)
			}
		}
	}
	if _, err := Decode(modeltype.KMeans, nil, good); err == nil {
		t.Error("KMeans decoded without an implementation")
	}
}

func TestReadCSV(t *testing.T) {
	m, err := ReadCSV(strings.NewReader("h,e\n1, 2\n\n3,4.5\n"), CSVOptions{SkipLines: 1})
	if err != nil || m.Rows != 2 || m.Cols != 2 || m.Data[3] != 4.5 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if _, err := ReadCSV(strings.NewReader("1,2\n3\n"), CSVOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ragged rows: %v", err)
	}
	if _, err := ReadCSV(strings.NewReader("1,x\n"), CSVOptions{}); err == nil || !strings.Contains(err.Error(), "field 2") {
		t.Errorf("non-number: %v", err)
	}
	if _, err := ReadCSV(strings.NewReader("1\n2\n3\n"), CSVOptions{MaxRows: 2}); err == nil {
		t.Error("row cap not enforced")
	}
	if _, err := ReadCSV(strings.NewReader("\x1f\x8bnot gzip"), CSVOptions{}); err == nil {
		t.Error("broken gzip accepted")
	}
}

func FuzzReadCSV(f *testing.F) {
	for _, name := range []string{"breast_cancer.csv", "diabetes_data_raw.csv.gz", "diabetes_target.csv.gz"} {
		b, err := os.ReadFile(filepath.Join(datasets, name))
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			b = b[:4096]
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadCSV(bytes.NewReader(data), CSVOptions{MaxRows: 1000, MaxCols: 100})
		if err != nil {
			return
		}
		if m.Rows > 1000 || m.Cols > 100 || len(m.Data) != m.Rows*m.Cols {
			t.Fatalf("%dx%d with %d values", m.Rows, m.Cols, len(m.Data))
		}
	})
}
