package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// piecewise is y = 2a + b - 1 where a < 0, else -3a + 0.5b + 2: two linear regimes a
// gate on a can tell apart.
func piecewise(rows int, seed uint64) (Matrix, []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := Matrix{Rows: rows, Cols: 2, Data: make([]float64, 2*rows)}
	y := make([]float64, rows)
	for i := range rows {
		a, b := rng.Float64()*4-2, rng.Float64()*2-1
		x.Data[2*i], x.Data[2*i+1] = a, b
		if a < 0 {
			y[i] = 2*a + b - 1
		} else {
			y[i] = -3*a + 0.5*b + 2
		}
	}
	return x, y
}

func mse(t *testing.T, m *MixtureOfExpertsModel, x Matrix, y []float64) float64 {
	t.Helper()
	p, err := m.Output(x)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for i, v := range p.Data {
		s += (v - y[i]) * (v - y[i])
	}
	return s / float64(len(y))
}

func TestMoEFitTogether(t *testing.T) {
	x, y := piecewise(400, 1)
	single := NewLinearRegression()
	if err := single.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	pred, _ := single.Predict(x)
	base := 0.0
	for i := range y {
		base += (pred[i] - y[i]) * (pred[i] - y[i])
	}
	base /= float64(len(y))
	m, err := FitLinearMixture(x, y, 2, 1, MoEFitOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	tx, ty := piecewise(200, 2)
	got := mse(t, m, tx, ty)
	t.Logf("held-out MSE: one linear model %.4f on its training rows, mixture of 2 (top-1) %.4f", base, got)
	if got > base/10 {
		t.Fatalf("the mixture (MSE %.4f) does not beat one linear model (%.4f) tenfold", got, base)
	}
}

func TestMoEGatesTopK(t *testing.T) {
	experts := []Model{}
	for e := range 4 {
		l := NewLinearRegression()
		l.Coefficients, l.Intercept = []float32{float32(e), 1}, float32(e)
		experts = append(experts, l)
	}
	m, err := NewMixtureOfExperts(experts, 2)
	if err != nil {
		t.Fatal(err)
	}
	copy(m.GateWeight, []float32{1, 0, 2, 0, -1, 0, 0, 0})
	copy(m.GateBias, []float32{0, 0, 0, 0.5})
	x := Matrix{Rows: 2, Cols: 2, Data: []float64{1, 7, -1, 7}}
	g, err := m.Gates(x)
	if err != nil {
		t.Fatal(err)
	}
	// row 0: logits 1, 2, -1, 0.5: experts 1 and 0; row 1: -1, -2, 1, 0.5: experts 2 and 3
	want := [][]float64{{1 / (1 + math.E), math.E / (1 + math.E), 0, 0}, {0, 0, math.Exp(0.5) / (1 + math.Exp(0.5)), 1 / (1 + math.Exp(0.5))}}
	for i := range 2 {
		for e := range 4 {
			if math.Abs(g.Row(i)[e]-want[i][e]) > 1e-12 {
				t.Fatalf("row %d gates %v, want %v", i, g.Row(i), want[i])
			}
		}
	}
	// Ties: the lower index wins.
	clear(m.GateWeight)
	clear(m.GateBias)
	g, _ = m.Gates(x)
	if g.Row(0)[0] != 0.5 || g.Row(0)[1] != 0.5 || g.Row(0)[2] != 0 {
		t.Fatalf("ties select %v, want experts 0 and 1", g.Row(0))
	}
}

func TestMoEDecode(t *testing.T) {
	x, y := piecewise(200, 4)
	m, err := FitLinearMixture(x, y, 3, 2, MoEFitOptions{Seed: 5, Rounds: 2, Epochs: 50})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tensor.Tensor{}
	for _, tt := range m.Tensors() {
		byName[tt.Name] = tt
	}
	if _, ok := byName["expert.2.coefficients"]; !ok {
		t.Fatalf("tensors %v", byName)
	}
	back, err := Decode(modeltype.MixtureOfExperts, roundTripConfig(m.Config()), byName)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Output(x)
	b, _ := back.(*MixtureOfExpertsModel).Output(x)
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			t.Fatalf("decoded mixture predicts %v, the original %v", b.Data[i], a.Data[i])
		}
	}
	bad := map[string]func(cfg map[string]any, ts map[string]tensor.Tensor){
		"top_k 0":       func(c map[string]any, _ map[string]tensor.Tensor) { c["top_k"] = int64(0) },
		"top_k above n": func(c map[string]any, _ map[string]tensor.Tensor) { c["top_k"] = int64(4) },
		"no experts":    func(c map[string]any, _ map[string]tensor.Tensor) { c["experts"] = []any{} },
		"kmeans expert": func(c map[string]any, _ map[string]tensor.Tensor) {
			c["experts"].([]any)[1].(map[string]any)["type"] = int64(6)
		},
		"nested mixture": func(c map[string]any, _ map[string]tensor.Tensor) {
			c["experts"].([]any)[1].(map[string]any)["type"] = int64(0x40)
		},
		"missing gate":   func(_ map[string]any, ts map[string]tensor.Tensor) { delete(ts, "gate.weight") },
		"missing expert": func(_ map[string]any, ts map[string]tensor.Tensor) { delete(ts, "expert.1.coefficients") },
		"stray tensor":   func(_ map[string]any, ts map[string]tensor.Tensor) { ts["expert.9.x"] = ts["gate.bias"] },
		"expert 01": func(_ map[string]any, ts map[string]tensor.Tensor) {
			ts["expert.01.intercept"] = ts["expert.1.intercept"]
		},
		"n_experts wrong": func(c map[string]any, _ map[string]tensor.Tensor) { c["n_experts"] = int64(2) },
		"features mismatch": func(c map[string]any, ts map[string]tensor.Tensor) {
			c["experts"].([]any)[0].(map[string]any)["config"].(map[string]any)["n_features"] = int64(3)
			ts["expert.0.coefficients"] = tensor.F32("coefficients", []float32{1, 2, 3})
		},
	}
	for name, edit := range bad {
		cfg := roundTripConfig(m.Config())
		ts := map[string]tensor.Tensor{}
		for k, v := range byName {
			ts[k] = v
		}
		edit(cfg, ts)
		if _, err := Decode(modeltype.MixtureOfExperts, cfg, ts); err == nil || !strings.Contains(err.Error(), "MixtureOfExperts") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// roundTripConfig copies a config as MessagePack gives it back: maps and lists of
// plain values, fresh at every level.
func roundTripConfig(c map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return roundTripConfig(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

func TestMoEBadInput(t *testing.T) {
	x, y := piecewise(50, 6)
	m, err := FitLinearMixture(x, y, 2, 1, MoEFitOptions{Rounds: 1, Epochs: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Output(Matrix{Rows: 1, Cols: 3, Data: []float64{1, 2, 3}}); err == nil {
		t.Fatal("three features for two predicted")
	}
	y[3] = math.NaN()
	if err := m.FitGate(x, y, MoEFitOptions{}); err == nil {
		t.Fatal("a NaN target trained")
	}
	if _, err := m.Predict(x); err == nil {
		t.Fatal("regression experts gave labels")
	}
	lr := NewLogisticRegression()
	lr.Coefficients = []float32{1, 1}
	if _, err := NewMixtureOfExperts([]Model{m.Experts[0], lr}, 1); err == nil {
		t.Fatal("a classifier mixed with a regression")
	}
}
