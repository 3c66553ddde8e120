package apr

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

func fitted(t *testing.T) *model.LinearRegressionModel {
	x, _ := model.FromRows([][]float64{{0, 1}, {1, 0}, {2, 2}, {3, 5}})
	m := model.NewLinearRegression()
	if err := m.Fit(x, []float64{1, 2, 6, 13}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelTypeMismatchNamesBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lr.apr")
	if err := Save(path, fitted(t), SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Load[*model.LogisticRegressionModel](path, modeltype.KMeans)
	var mm *ModelTypeMismatch
	if !errors.As(err, &mm) || mm.Found != modeltype.LinearRegression || mm.Expected != modeltype.KMeans {
		t.Fatalf("got %v", err)
	}
	if want := "file contains LinearRegression, expected KMeans"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("message %q lacks %q", err, want)
	}
}

func TestSaveDeterministicAndLoadFromBytes(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	var a, b bytes.Buffer
	for _, w := range []*bytes.Buffer{&a, &b} {
		if err := Encode(w, fitted(t), SaveOptions{Name: "x", Compression: container.CompressZstd, Shuffle: true}); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same model and options gave different bytes")
	}
	m, err := LoadFromBytes[*model.LinearRegressionModel](a.Bytes(), modeltype.LinearRegression)
	if err != nil {
		t.Fatal(err)
	}
	if m.Coefficients[0] != fitted(t).Coefficients[0] {
		t.Error("coefficients changed")
	}
	corrupt := append([]byte(nil), a.Bytes()...)
	corrupt[len(corrupt)/2] ^= 1
	if _, err := LoadFromBytes[*model.LinearRegressionModel](corrupt, modeltype.LinearRegression); err == nil {
		t.Error("corrupt file loaded")
	}
}

func TestFailedSaveLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.apr")
	bad := badModel{}
	if err := Save(path, bad, SaveOptions{}); err == nil {
		t.Fatal("saving an invalid model succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}

type badModel struct{}

func (badModel) Type() modeltype.Type   { return modeltype.Custom }
func (badModel) Config() map[string]any { return nil }
func (badModel) Tensors() []tensor.Tensor {
	return []tensor.Tensor{{Name: "w", DType: dtype.F32, Shape: []int64{4}, Data: make([]byte, 3)}}
}

func TestLoadAprenderV1(t *testing.T) {
	path := "../../testdata/aprender/mnist_784x2.apr"
	m, err := Load[*model.LogisticRegressionModel](path, modeltype.LogisticRegression)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Coefficients) != 784 || m.Coefficients[0] != 0.0025542672 {
		t.Fatalf("coefficients %d, first %v", len(m.Coefficients), m.Coefficients[0])
	}
	b, _ := os.ReadFile(path)
	b[100] ^= 4
	_, err = LoadFromBytes[*model.LogisticRegressionModel](b, modeltype.LogisticRegression)
	var cm *ChecksumMismatch
	if !errors.As(err, &cm) || cm.Expected == cm.Actual {
		t.Fatalf("got %v, want ChecksumMismatch", err)
	}
	info, err := Inspect(path)
	if err != nil || info.Type != modeltype.LogisticRegression || len(info.Tensors) != 2 {
		t.Fatalf("inspect: %+v %v", info, err)
	}
}

func TestQuantizedModelStillLoads(t *testing.T) {
	m := fitted(t)
	// An F16 copy of the coefficients must decode to close values.
	var buf bytes.Buffer
	md := container.Metadata{ModelConfig: m.Config()}
	w, _ := container.NewWriter(&buf, container.Header{Type: modeltype.LinearRegression, Metadata: md})
	for _, tt := range m.Tensors() {
		f32, _ := tt.Float32s()
		h := make([]byte, 2*len(f32))
		for i, v := range f32 {
			bits := kernels.F32ToF16Bits(v)
			h[2*i], h[2*i+1] = byte(bits), byte(bits>>8)
		}
		if err := w.WriteTensorBytes(container.TensorInfo{Name: tt.Name, DType: dtype.F16, Shape: tt.Shape}, h); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got, err := LoadFromBytes[*model.LinearRegressionModel](buf.Bytes(), modeltype.LinearRegression)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range m.Coefficients {
		if d := got.Coefficients[i] - c; d > 0.01 || d < -0.01 {
			t.Errorf("coefficient %d: %v vs %v", i, got.Coefficients[i], c)
		}
	}
}
