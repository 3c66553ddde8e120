package stconv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
)

func fitLinear(t *testing.T) (*model.LinearRegressionModel, model.Matrix) {
	t.Helper()
	x, err := model.NewMatrix(5, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	return m, x
}

func fitLogistic(t *testing.T) (*model.LogisticRegressionModel, model.Matrix) {
	t.Helper()
	x, err := model.NewMatrix(4, 2, []float64{0, 0, 0, 1, 1, 0, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLogisticRegression()
	m.LearningRate, m.MaxIter = 0.5, 200
	if err := m.Fit(x, []float64{0, 0, 1, 1}); err != nil {
		t.Fatal(err)
	}
	return m, x
}

// TestLinearRegressionSafeTensors: the case study's layout, round trip and predictions.
func TestLinearRegressionSafeTensors(t *testing.T) {
	m, x := fitLinear(t)
	path := filepath.Join(t.TempDir(), "linear.safetensors")
	if err := SaveModel(path, m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Header: u64 little-endian length, then JSON with the two F32 tensors.
	if n := binary.LittleEndian.Uint64(b); n == 0 || n >= 10000 || n%8 != 0 {
		t.Errorf("header length %d", n)
	}
	h, err := safetensors.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Tensors) != 2 || h.Tensors[0].Name != "coefficients" || h.Tensors[0].DType != dtype.F32 ||
		h.Tensors[0].Shape[0] != 3 || h.Tensors[1].Name != "intercept" || h.Tensors[1].DType != dtype.F32 ||
		len(h.Tensors[1].Shape) != 1 || h.Tensors[1].Shape[0] != 1 {
		t.Fatalf("tensors %+v", h.Tensors)
	}
	if v, _ := h.Metadata.Get(MetaModelType); v != "LinearRegression" {
		t.Errorf("__metadata__ %v", h.Metadata)
	}
	got, err := LoadModel[*model.LinearRegressionModel](path, modeltype.LinearRegression)
	if err != nil {
		t.Fatal(err)
	}
	if !equalF32(got.Coefficients, m.Coefficients) || got.Intercept != m.Intercept || got.FitIntercept != m.FitIntercept {
		t.Errorf("loaded %+v, saved %+v", got, m)
	}
	p1, _ := m.Predict(x)
	p2, _ := got.Predict(x)
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Errorf("prediction %d: %v != %v", i, p2[i], p1[i])
		}
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLogisticRegressionSafeTensors(t *testing.T) {
	m, x := fitLogistic(t)
	path := filepath.Join(t.TempDir(), "logistic.safetensors")
	if err := SaveModel(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModel[*model.LogisticRegressionModel](path, modeltype.LogisticRegression)
	if err != nil {
		t.Fatal(err)
	}
	if !equalF32(got.Coefficients, m.Coefficients) || got.Intercept != m.Intercept || got.LearningRate != m.LearningRate || got.MaxIter != m.MaxIter {
		t.Errorf("loaded %+v, saved %+v", got, m)
	}
	p1, _ := m.PredictProba(x)
	p2, _ := got.PredictProba(x)
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Errorf("probability %d: %v != %v", i, p2[i], p1[i])
		}
	}
}

// TestSaveModelDeterministic: the same model gives the same bytes, and the same bytes
// as an export of the model saved as APR (whatever its name and date).
func TestSaveModelDeterministic(t *testing.T) {
	for _, m := range []model.Model{first(fitLinear(t)), first(fitLogistic(t))} {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
		if err := SaveModel(a, m); err != nil {
			t.Fatal(err)
		}
		if err := SaveModel(b, m); err != nil {
			t.Fatal(err)
		}
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if !bytes.Equal(ab, bb) {
			t.Errorf("%v: two saves differ", m.Type())
		}
		aprPath := filepath.Join(dir, "m.apr")
		if err := apr.Save(aprPath, m, apr.SaveOptions{Name: "demo", Description: "x"}); err != nil {
			t.Fatal(err)
		}
		if got := exportFile(t, aprPath, ExportOptions{}); !bytes.Equal(got, ab) {
			t.Errorf("%v: export of the APR model\n%q\ndiffers from SaveModel's\n%q", m.Type(), got, ab)
		}
		// And the import of the SafeTensors file is an APR model of the right type.
		s, err := Open(a, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		imported := filepath.Join(dir, "imported.apr")
		os.WriteFile(imported, toAPR(t, s), 0o644)
		if _, err := apr.Load[model.Model](imported, m.Type()); err != nil {
			t.Errorf("%v: apr.Load of the import: %v", m.Type(), err)
		}
	}
}

func first[A, B any](a A, _ B) A { return a }

func TestLoadModelErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadModel[*model.LinearRegressionModel](filepath.Join(dir, "nonexistent.safetensors"), modeltype.LinearRegression); !errors.Is(err, os.ErrNotExist) || !strings.Contains(strings.ToLower(err.Error()), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "corrupted.safetensors")
	os.WriteFile(bad, []byte{1, 2, 3}, 0o644)
	if _, err := LoadModel[*model.LinearRegressionModel](bad, modeltype.LinearRegression); !errors.Is(err, safetensors.HeaderTooSmall) {
		t.Errorf("3-byte file: %v", err)
	}
	m, _ := fitLogistic(t)
	p := filepath.Join(dir, "logistic.safetensors")
	if err := SaveModel(p, m); err != nil {
		t.Fatal(err)
	}
	var mm *container.TypeMismatchError
	if _, err := LoadModel[*model.LinearRegressionModel](p, modeltype.LinearRegression); !errors.As(err, &mm) || mm.Found != modeltype.LogisticRegression {
		t.Errorf("wrong type: %v", err)
	}
	// A file without the type key (the case study's writer) loads; a missing tensor fails.
	var buf bytes.Buffer
	safetensors.Encode(&buf, nil, []safetensors.Tensor{{TensorSpec: safetensors.TensorSpec{Name: "coefficients", DType: dtype.F32, Shape: []int64{1}}, Data: make([]byte, 4)}})
	if _, err := DecodeModel[*model.LinearRegressionModel](buf.Bytes(), modeltype.LinearRegression); err == nil || !strings.Contains(err.Error(), "intercept") {
		t.Errorf("missing intercept: %v", err)
	}
	if err := SaveModel(filepath.Join(dir, "unfitted.safetensors"), model.NewLinearRegression()); !errors.Is(err, model.ErrNotFitted) {
		t.Errorf("unfitted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unfitted.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed save left a file")
	}
}
