package predict

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/npy"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

func moeFixtures(t testing.TB) (classifier, regression *model.MixtureOfExpertsModel, x model.Matrix) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	const rows, feats = 60, 4
	x = model.Matrix{Rows: rows, Cols: feats, Data: make([]float64, rows*feats)}
	for i := range x.Data {
		x.Data[i] = rng.NormFloat64()
	}
	randomize := func(v []float32) {
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
	}
	lr := func() *model.LogisticRegressionModel {
		m := model.NewMultinomialLogisticRegression(3)
		m.Coefficients, m.Intercepts = make([]float32, 3*feats), make([]float32, 3)
		randomize(m.Coefficients)
		randomize(m.Intercepts)
		return m
	}
	net, err := model.NewNeuralSequential([]int{feats, 6, 3}, model.ActReLU, model.ActSoftmax, 3)
	if err != nil {
		t.Fatal(err)
	}
	classifier, err = model.NewMixtureOfExperts([]model.Model{lr(), net, lr()}, 2)
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]float64, rows)
	for i := range labels {
		if x.Data[i*feats] > 0 {
			labels[i] = 2
		}
	}
	if err := classifier.FitGate(x, labels, model.MoEFitOptions{Epochs: 50, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	y := make([]float64, rows)
	for i := range y {
		r := x.Row(i)
		y[i] = math.Abs(r[0]) + 0.5*r[1]
	}
	regression, err = model.FitLinearMixture(x, y, 3, 2, model.MoEFitOptions{Seed: 2, Rounds: 3, Epochs: 100})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := model.NewNeuralSequential([]int{feats, 5, 1}, model.ActTanh, model.ActIdentity, 4)
	if err != nil {
		t.Fatal(err)
	}
	regression.Experts = append(regression.Experts, reg)
	regression.GateWeight = append(regression.GateWeight, 0.3, -0.2, 0.1, 0.4)
	regression.GateBias = append(regression.GateBias, 0.1)
	if err := regression.Validate(); err != nil {
		t.Fatal(err)
	}
	return classifier, regression, x
}

// TestMoENumPy: a saved mixture's predictions (through the file, lib/predict and its
// batches) equal a NumPy forward pass of the tensors the file holds.
func TestMoENumPy(t *testing.T) {
	py := peertest.Python(t, "numpy", "python3-numpy")
	classifier, regression, x := moeFixtures(t)
	for name, m := range map[string]*model.MixtureOfExpertsModel{"classifier": classifier, "regression": regression} {
		dir := t.TempDir()
		var file bytes.Buffer
		if err := modelfile.Encode(&file, m, modelfile.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := stream.Open(bytes.NewReader(file.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.Header().Metadata.ModelConfig
		tensors, err := stream.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tensors {
			if err := npy.WriteFile(filepath.Join(dir, tt.Name+".npy"), tt.DType, tt.Shape, tt.Data); err != nil {
				t.Fatal(err)
			}
		}
		if m.IsClassifier() {
			cfg["classes"] = int64(m.Classes())
		}
		js, _ := json.Marshal(cfg)
		os.WriteFile(filepath.Join(dir, "config.json"), js, 0o600)
		saveF64(t, filepath.Join(dir, "x.npy"), []int64{int64(x.Rows), int64(x.Cols)}, x.Data)
		if out, err := exec.Command(py, filepath.Join("..", "..", "testdata", "peer", "moe_forward.py"), dir).CombinedOutput(); err != nil {
			t.Fatalf("numpy: %v\n%s", err, out)
		}
		want := loadF64(t, filepath.Join(dir, "out.npy"))

		back, err := modelfile.Read(bytes.NewReader(file.Bytes()), modeltype.MixtureOfExperts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(back)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Predict(x, m.IsClassifier())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Values) != len(want) {
			t.Fatalf("%s: %d values, numpy %d", name, len(got.Values), len(want))
		}
		worst := 0.0
		for i := range want {
			worst = math.Max(worst, math.Abs(got.Values[i]-want[i]))
		}
		t.Logf("%s mixture: largest difference from NumPy %.3g over %d values", name, worst, len(want))
		if worst > 1e-5 {
			t.Fatalf("%s: apr and NumPy differ by %g", name, worst)
		}
	}
}

// FuzzMoEConfig: a hostile MixtureOfExperts model_config (JSON here, MessagePack in
// a file: the same plain values) over a mixture's tensors gives an error, never a
// panic; one that loads predicts a row without one. (The file's bytes around it are
// CRC-checked before any decoder sees them.)
func FuzzMoEConfig(f *testing.F) {
	classifier, regression, _ := moeFixtures(f)
	var sets []map[string]tensor.Tensor
	for _, m := range []*model.MixtureOfExpertsModel{classifier, regression} {
		js, err := json.Marshal(m.Config())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js, uint8(len(sets)))
		ts := map[string]tensor.Tensor{}
		for _, t := range m.Tensors() {
			ts[t.Name] = t
		}
		sets = append(sets, ts)
	}
	f.Fuzz(func(t *testing.T, js []byte, set uint8) {
		var cfg map[string]any
		if json.Unmarshal(js, &cfg) != nil {
			return
		}
		m, err := model.Decode(modeltype.MixtureOfExperts, cfg, sets[int(set)%len(sets)])
		if err != nil {
			return
		}
		p, err := New(m)
		if err != nil {
			return
		}
		x := model.Matrix{Rows: 1, Cols: p.Features(), Data: make([]float64, p.Features())}
		p.Predict(x, false)
	})
}
