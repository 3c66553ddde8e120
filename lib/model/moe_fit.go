package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// MoEFitOptions are the settings of FitGate and FitLinearMixture.
type MoEFitOptions struct {
	Epochs       int     // full-batch Adam steps of the gate (default 300)
	LearningRate float64 // Adam's step (default 0.05)
	Rounds       int     // FitLinearMixture's alternations of experts and gate (default 5)
	Seed         uint64  // the gate's random start
}

func (o *MoEFitOptions) defaults() {
	if o.Epochs <= 0 {
		o.Epochs = 300
	}
	if o.LearningRate <= 0 {
		o.LearningRate = 0.05
	}
	if o.Rounds <= 0 {
		o.Rounds = 5
	}
}

// checkTargets refuses targets the experts cannot be trained towards: a class label
// that is not an integer in range for classifiers, any non-finite value.
func (m *MixtureOfExpertsModel) checkTargets(x Matrix, y []float64) error {
	if err := checkFeatures(x, m.Features); err != nil {
		return err
	}
	cols := m.Outputs()
	if m.IsClassifier() {
		cols = 1
	}
	if len(y) != x.Rows*cols || x.Rows == 0 {
		return fmt.Errorf("mixture of experts: %d targets for %d rows of %d outputs", len(y), x.Rows, cols)
	}
	for i, v := range x.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("mixture of experts: feature %d of row %d is %v", i%x.Cols, i/x.Cols, v)
		}
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("mixture of experts: target %d is %v", i, v)
		}
		if c := m.Classes(); c > 0 && (v != math.Trunc(v) || v < 0 || int(v) >= c) {
			return fmt.Errorf("mixture of experts: label %v of row %d is not a class 0..%d", v, i, c-1)
		}
	}
	return nil
}

// FitGate trains the gate with the experts as they are (given, already fitted): full
// batch Adam on the mixture's loss, mean squared error for regression experts and
// the negative log-likelihood of the mixed probabilities for classifiers. The loss is
// that of the softmax over all experts (through a top-k selection the gradient
// vanishes: with k = 1 the one selected weight is always 1); prediction keeps the k
// largest of the same logits. The gate starts from small random weights (o.Seed).
func (m *MixtureOfExpertsModel) FitGate(x Matrix, y []float64, o MoEFitOptions) error {
	o.defaults()
	if err := m.Validate(); err != nil {
		return err
	}
	if err := m.checkTargets(x, y); err != nil {
		return err
	}
	n, f := len(m.Experts), m.Features
	outs := make([]Matrix, n)
	for e, ex := range m.Experts {
		var err error
		if outs[e], err = Output(ex, x); err != nil {
			return fmt.Errorf("mixture of experts: expert %d: %w", e, err)
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6d6f65))
	for i := range m.GateWeight {
		m.GateWeight[i] = float32(rng.NormFloat64() * 0.01)
	}
	clear(m.GateBias)
	np := n*f + n
	grad := make([]float64, np)
	mom, vel := make([]float64, np), make([]float64, np)
	params := make([]float64, np)
	for i, v := range m.GateWeight {
		params[i] = float64(v)
	}
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a := make([]float64, n)
	for step := 1; step <= o.Epochs; step++ {
		g, err := m.gates(x, n)
		if err != nil {
			return err
		}
		clear(grad)
		for i := range x.Rows {
			w, r := g.Row(i), x.Row(i)
			m.lossGrad(a, w, outs, y, i)
			s := 0.0
			for e := range n {
				s += w[e] * a[e]
			}
			for e := range n {
				if w[e] == 0 {
					continue
				}
				dz := w[e] * (a[e] - s) / float64(x.Rows)
				for j, v := range r {
					grad[e*f+j] += dz * v
				}
				grad[n*f+e] += dz
			}
		}
		c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		for i := range params {
			mom[i] = b1*mom[i] + (1-b1)*grad[i]
			vel[i] = b2*vel[i] + (1-b2)*grad[i]*grad[i]
			params[i] -= o.LearningRate * (mom[i] / c1) / (math.Sqrt(vel[i]/c2) + eps)
		}
		for i := range m.GateWeight {
			m.GateWeight[i] = float32(params[i])
		}
		for e := range n {
			m.GateBias[e] = float32(params[n*f+e])
		}
	}
	return nil
}

// lossGrad sets a[e] to dLoss/dweight_e of row i, for the experts the row selects.
func (m *MixtureOfExpertsModel) lossGrad(a, w []float64, outs []Matrix, y []float64, i int) {
	if c := m.Classes(); c > 0 {
		label := int(y[i])
		p := 0.0
		for e := range w {
			p += w[e] * outs[e].Data[i*c+label]
		}
		p = math.Max(p, 1e-12)
		for e := range w {
			a[e] = -outs[e].Data[i*c+label] / p
		}
		return
	}
	k := m.Outputs()
	for e := range w {
		a[e] = 0
	}
	for j := range k {
		yhat := 0.0
		for e := range w {
			yhat += w[e] * outs[e].Data[i*k+j]
		}
		d := yhat - y[i*k+j]
		for e := range w {
			a[e] += d * outs[e].Data[i*k+j]
		}
	}
}

// FitLinearMixture trains a gate and n LinearRegression experts together on (x, y)
// by alternation (hard EM): every row goes to the expert its gate weights most
// (at the start, a random gate), each expert is refitted by least squares on its
// rows (an expert with fewer rows than features plus one keeps its previous fit, at
// first the fit on all rows), then the gate is trained with FitGate; o.Rounds times.
func FitLinearMixture(x Matrix, y []float64, n, topK int, o MoEFitOptions) (*MixtureOfExpertsModel, error) {
	o.defaults()
	if n < 1 || n > MaxExperts {
		return nil, fmt.Errorf("mixture of experts: %d experts, want 1 to %d", n, MaxExperts)
	}
	if x.Rows == 0 || x.Cols == 0 || len(y) != x.Rows {
		return nil, errors.New("mixture of experts: no rows, no features, or not one target per row")
	}
	all := NewLinearRegression()
	if err := all.Fit(x, y); err != nil {
		return nil, err
	}
	experts := make([]Model, n)
	for e := range experts {
		c := *all
		c.Coefficients = append([]float32(nil), all.Coefficients...)
		experts[e] = &c
	}
	m, err := NewMixtureOfExperts(experts, topK)
	if err != nil {
		return nil, err
	}
	if err := m.checkTargets(x, y); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x68656d))
	for i := range m.GateWeight {
		m.GateWeight[i] = float32(rng.NormFloat64())
	}
	for e := range m.GateBias {
		m.GateBias[e] = float32(rng.NormFloat64())
	}
	for round := range o.Rounds {
		g, err := m.Gates(x)
		if err != nil {
			return nil, err
		}
		rows := make([][]int, n)
		for i := range x.Rows {
			best, w := 0, g.Row(i)
			for e := range w {
				if w[e] > w[best] {
					best = e
				}
			}
			rows[best] = append(rows[best], i)
		}
		for e, idx := range rows {
			if len(idx) < x.Cols+1 {
				continue
			}
			sx := Matrix{Rows: len(idx), Cols: x.Cols, Data: make([]float64, 0, len(idx)*x.Cols)}
			sy := make([]float64, 0, len(idx))
			for _, i := range idx {
				sx.Data = append(sx.Data, x.Row(i)...)
				sy = append(sy, y[i])
			}
			fit := NewLinearRegression()
			if err := fit.Fit(sx, sy); err != nil {
				continue // a singular subset: the expert keeps its fit
			}
			m.Experts[e] = fit
		}
		gate := o
		gate.Seed = o.Seed + uint64(round) + 1
		if err := m.FitGate(x, y, gate); err != nil {
			return nil, err
		}
	}
	return m, nil
}
