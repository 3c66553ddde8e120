package quant

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
)

// The classical models on the real data sets of testdata/datasets (scikit-learn's,
// see its README): quantized, they still load (lib/apr dequantizes on load) and
// predict nearly as well.
//
// Their tensors are 1-D ("coefficients", "intercept"), which llama.cpp's rules and
// --pure keep as they are; a user converts them by name with Include. GGML block
// types need rows of whole 32-value blocks, so the models quantized to Q8_0 and Q4_0
// are fitted on 32 features (the raw features plus products of them); the 10-feature
// diabetes model goes to F16, and asking Q8_0 for its 10 coefficients is an error.

var datasets = filepath.Join("..", "..", "testdata", "datasets")

func loadCSV(t *testing.T, name string, opt model.CSVOptions) model.Matrix {
	t.Helper()
	m, err := model.LoadCSV(filepath.Join(datasets, name), opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// widen standardizes x and appends products of its columns until it has cols columns.
func widen(t *testing.T, x model.Matrix, cols int) model.Matrix {
	t.Helper()
	xs, _, _, err := model.Standardize(x)
	if err != nil {
		t.Fatal(err)
	}
	if cols <= xs.Cols {
		return xs
	}
	var pairs [][2]int
	for a := 0; a < xs.Cols && len(pairs) < cols-xs.Cols; a++ {
		for b := a; b < xs.Cols && len(pairs) < cols-xs.Cols; b++ {
			pairs = append(pairs, [2]int{a, b})
		}
	}
	data := make([]float64, 0, xs.Rows*cols)
	for i := range xs.Rows {
		r := xs.Row(i)
		data = append(data, r...)
		for _, p := range pairs {
			data = append(data, r[p[0]]*r[p[1]])
		}
	}
	w, err := model.NewMatrix(xs.Rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// quantizeModel saves m, converts it with o, and returns the output file bytes.
func quantizeModel(t *testing.T, m model.Model, o Options) ([]byte, *Report, error) {
	t.Helper()
	var in bytes.Buffer
	if err := apr.Encode(&in, m, apr.SaveOptions{Name: "dataset model"}); err != nil {
		t.Fatal(err)
	}
	src, err := stream.Open(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o.Stats = true
	rep, err := Quantize(&out, src, o)
	return out.Bytes(), rep, err
}

func TestLinearRegressionDiabetesQuantized(t *testing.T) {
	x := loadCSV(t, "diabetes_data_raw.csv.gz", model.CSVOptions{})
	ym := loadCSV(t, "diabetes_target.csv.gz", model.CSVOptions{})
	y := ym.Data
	if x.Rows != 442 || x.Cols != 10 || len(y) != 442 {
		t.Fatalf("diabetes: %dx%d, %d targets; README says 442x10", x.Rows, x.Cols, len(y))
	}
	var sy, syy float64
	for _, v := range y {
		sy += v
		syy += v * v
	}
	stdY := math.Sqrt(syy/float64(len(y)) - (sy/float64(len(y)))*(sy/float64(len(y))))

	cases := []struct {
		name     string
		cols     int
		o        Options
		want     dtype.DType
		maxRMS   float64 // RMS of the prediction change, relative to the spread of y
		maxDelta float64 // largest change of R²
	}{
		// The default rules keep the 1-D tensors: the model comes back bit for bit.
		{"q8_0 rules", 10, Options{Type: dtype.Q8_0}, dtype.F32, 0, 0},
		{"f16 include", 10, Options{Type: dtype.F16, Include: []string{"*"}}, dtype.F16, 1e-3, 1e-4},
		{"bf16 include", 10, Options{Type: dtype.BF16, Include: []string{"*"}}, dtype.BF16, 1e-2, 1e-3},
		{"q8_0 include", 32, Options{Type: dtype.Q8_0, Include: []string{"coefficients"}}, dtype.Q8_0, 0.03, 0.002},
		// 4 bits are coarse for 32 least-squares coefficients that partly cancel each
		// other (products of features are correlated): R² drops by about 0.03.
		{"q4_0 include", 32, Options{Type: dtype.Q4_0, Include: []string{"coefficients"}}, dtype.Q4_0, 0.3, 0.05},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xw := widen(t, x, c.cols)
			m := model.NewLinearRegression()
			if err := m.Fit(xw, y); err != nil {
				t.Fatal(err)
			}
			b, rep, err := quantizeModel(t, m, c.o)
			if err != nil {
				t.Fatal(err)
			}
			q, err := apr.LoadFromBytes[*model.LinearRegressionModel](b, modeltype.LinearRegression)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Tensors[0]; got.Name != "coefficients" || got.To != c.want.String() {
				t.Fatalf("coefficients stored as %s, want %v", got.To, c.want)
			}
			p0, _ := m.Predict(xw)
			p1, err := q.Predict(xw)
			if err != nil {
				t.Fatal(err)
			}
			var ss float64
			for i := range p0 {
				ss += (p1[i] - p0[i]) * (p1[i] - p0[i])
			}
			rms := math.Sqrt(ss/float64(len(p0))) / stdY
			r0, r1 := model.R2(y, p0), model.R2(y, p1)
			t.Logf("%s: %d features, R² %.5f -> %.5f, prediction RMS change %.2e of std(y), coefficient rel RMS error %s",
				c.name, c.cols, r0, r1, rms, pct(rep.Tensors[0].RelRMSError))
			if rms > c.maxRMS || math.Abs(r1-r0) > c.maxDelta {
				t.Fatalf("prediction RMS change %.3g (max %g), R² %.5f -> %.5f (max change %g)", rms, c.maxRMS, r0, r1, c.maxDelta)
			}
			if c.maxRMS == 0 && !bytes.Equal(f32Bytes(q.Coefficients), f32Bytes(m.Coefficients)) {
				t.Fatal("kept coefficients changed")
			}
		})
	}

	// Q8_0 cannot hold rows of 10 values: a clear error, naming the tensor.
	m := model.NewLinearRegression()
	if err := m.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	_, _, err := quantizeModel(t, m, Options{Type: dtype.Q8_0, Include: []string{"coefficients"}})
	if err == nil || !strings.Contains(err.Error(), `tensor "coefficients": rows of 10 values`) {
		t.Fatalf("q8_0 of 10 coefficients: %v", err)
	}
}

func TestLogisticRegressionBreastCancerQuantized(t *testing.T) {
	all := loadCSV(t, "breast_cancer.csv", model.CSVOptions{SkipLines: 1})
	x, y, err := all.SplitTarget(-1)
	if err != nil {
		t.Fatal(err)
	}
	if x.Rows != 569 || x.Cols != 30 {
		t.Fatalf("breast_cancer: %dx%d, README says 569x30", x.Rows, x.Cols)
	}
	xw := widen(t, x, 32)
	m := model.NewLogisticRegression()
	m.LearningRate, m.MaxIter = 0.1, 2000
	if err := m.Fit(xw, y); err != nil {
		t.Fatal(err)
	}
	acc0, _ := m.Score(xw, y)
	pr0, _ := m.PredictProba(xw)
	for _, c := range []struct {
		o        Options
		maxProb  float64 // largest change of a predicted probability
		maxDelta float64 // largest change of accuracy
	}{
		{Options{Type: dtype.F16, Include: []string{"*"}}, 0.005, 0.002},
		{Options{Type: dtype.Q8_0, Include: []string{"coefficients"}}, 0.05, 0.01},
		{Options{Type: dtype.Q4_0, Include: []string{"coefficients"}}, 0.3, 0.03},
		{Options{Type: dtype.Q4_1, Include: []string{"coefficients"}}, 0.3, 0.03},
	} {
		b, rep, err := quantizeModel(t, m, c.o)
		if err != nil {
			t.Fatal(err)
		}
		q, err := apr.LoadFromBytes[*model.LogisticRegressionModel](b, modeltype.LogisticRegression)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Tensors[0].To != c.o.Type.String() {
			t.Fatalf("%v: coefficients stored as %s", c.o.Type, rep.Tensors[0].To)
		}
		acc1, _ := q.Score(xw, y)
		pr1, _ := q.PredictProba(xw)
		var worst float64
		for i := range pr0 {
			worst = max(worst, math.Abs(pr1[i]-pr0[i]))
		}
		t.Logf("%v: accuracy %.4f -> %.4f, largest probability change %.4f, coefficient rel RMS error %s",
			c.o.Type, acc0, acc1, worst, pct(rep.Tensors[0].RelRMSError))
		if worst > c.maxProb || math.Abs(acc1-acc0) > c.maxDelta || acc1 < 0.95 {
			t.Fatalf("%v: accuracy %.4f -> %.4f, probability change up to %.4f", c.o.Type, acc0, acc1, worst)
		}
	}
}
