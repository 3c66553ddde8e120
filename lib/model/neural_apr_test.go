package model_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
	"github.com/apr-go/apr/lib/version"
)

func digits(t testing.TB) (model.Matrix, []float64) {
	t.Helper()
	m, err := model.LoadCSV(filepath.Join("..", "..", "testdata", "digits", "digits.csv.gz"), model.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := m.SplitTarget(-1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Data {
		x.Data[i] /= 16
	}
	return x, y
}

func trainDigits(t *testing.T, seed uint64) *model.NeuralSequentialModel {
	t.Helper()
	x, y := digits(t)
	m, err := model.NewNeuralSequential([]int{64, 32, 10}, model.ActReLU, model.ActSoftmax, seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fit(x, y, model.TrainOptions{Epochs: 5, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m model.Model) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := apr.Encode(&b, m, apr.SaveOptions{Name: "digits"}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestNeuralDeterministic trains twice with the same seed and compares the saved
// files byte for byte; another seed must give other bytes.
func TestNeuralDeterministic(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	a, b := encode(t, trainDigits(t, 7)), encode(t, trainDigits(t, 7))
	if !bytes.Equal(a, b) {
		t.Fatal("two trainings with seed 7 saved different bytes")
	}
	if bytes.Equal(a, encode(t, trainDigits(t, 8))) {
		t.Fatal("seeds 7 and 8 saved the same bytes")
	}
	m, err := apr.LoadFromBytes[*model.NeuralSequentialModel](a, modeltype.NeuralSequential)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(t, m), a) {
		t.Error("load then save changed the bytes")
	}
}

// TestNeuralQuantized writes a trained network with its weights quantized to Q8_0
// (biases stay F32), loads it through lib/apr (which dequantizes) and compares
// its predictions with the float model's.
func TestNeuralQuantized(t *testing.T) {
	m := trainDigits(t, 3)
	x, y := digits(t)
	created, err := container.CreatedAt()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h := container.Header{Type: modeltype.NeuralSequential, Flags: container.FlagQuantized,
		Metadata: container.Metadata{CreatedAt: created, Producer: version.Producer, ModelConfig: m.Config()}}
	w, err := container.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := dtype.Lookup(dtype.Q8_0)
	for i, l := range m.Layers {
		q := make([]byte, l.Out*l.In/info.BlockElems*info.BlockBytes)
		if err := kernels.Quantize(dtype.Q8_0, q, l.Weight); err != nil {
			t.Fatal(err)
		}
		wt := container.TensorInfo{Name: fmt.Sprintf("layers.%d.weight", i), DType: dtype.Q8_0, Shape: []int64{int64(l.Out), int64(l.In)}}
		if err := w.WriteTensorBytes(wt, q); err != nil {
			t.Fatal(err)
		}
		b := tensor.F32(fmt.Sprintf("layers.%d.bias", i), l.Bias)
		if err := w.WriteTensorBytes(container.TensorInfo{Name: b.Name, DType: b.DType, Shape: b.Shape}, b.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q8.apr")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ins, err := stream.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Tensors[0].DType != dtype.Q8_0 || ins.Flags&container.FlagQuantized == 0 {
		t.Fatalf("layers.0.weight stored as %v, flags %v", ins.Tensors[0].DType, ins.Flags)
	}
	q, err := apr.Load[*model.NeuralSequentialModel](path, modeltype.NeuralSequential)
	if err != nil {
		t.Fatal(err)
	}
	var maxDiff float64
	for l := range m.Layers {
		for i, v := range m.Layers[l].Weight {
			maxDiff = math.Max(maxDiff, math.Abs(float64(v-q.Layers[l].Weight[i])))
		}
	}
	if maxDiff == 0 || maxDiff > 0.02 {
		t.Errorf("Q8_0 weights differ from the float ones by up to %v, expected a small non-zero rounding", maxDiff)
	}
	accF, err := m.Score(x, y)
	if err != nil {
		t.Fatal(err)
	}
	accQ, err := q.Score(x, y)
	if err != nil {
		t.Fatal(err)
	}
	pf, _ := m.Predict(x)
	pq, _ := q.Predict(x)
	same := 0
	for i := range pf {
		if pf[i] == pq[i] {
			same++
		}
	}
	agree := float64(same) / float64(len(pf))
	t.Logf("accuracy float %.4f, Q8_0 %.4f, agreement %.4f", accF, accQ, agree)
	if math.Abs(accF-accQ) > 0.01 || agree < 0.99 {
		t.Errorf("Q8_0 model: accuracy %.4f vs %.4f float, agreement %.4f", accQ, accF, agree)
	}
}
