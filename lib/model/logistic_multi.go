package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/tensor"
)

// The multinomial (softmax) LogisticRegression: K >= 3 classes, one row of
// coefficients and one intercept per class. It is fitted exactly like the binary
// model, with the mean cross-entropy of softmax(W·x + b) in place of the binary
// cross-entropy: full-batch gradient descent from zero, L2Penalty as weight decay on
// the coefficients, early stop once every gradient component is below Tol. There is
// no randomness: the same data and settings give the same parameters bit for bit.

// NewMultinomialLogisticRegression returns an unfitted softmax regression over
// classes classes (>= 3) with the binary model's defaults (learning rate 0.01, 1000
// iterations, tolerance 1e-4, no L2 penalty).
func NewMultinomialLogisticRegression(classes int) *LogisticRegressionModel {
	m := NewLogisticRegression()
	m.Classes = classes
	return m
}

func (m *LogisticRegressionModel) multinomial() bool { return m.Classes > 2 }

// NumClasses is the number of classes the model predicts (2 for a binary model).
func (m *LogisticRegressionModel) NumClasses() int {
	if m.multinomial() {
		return m.Classes
	}
	return 2
}

// NumFeatures is the number of features the fitted model takes (0 when unfitted).
func (m *LogisticRegressionModel) NumFeatures() int {
	if m.multinomial() {
		return len(m.Coefficients) / m.Classes
	}
	return len(m.Coefficients)
}

// checkParams verifies that a multinomial model's slices agree with Classes (the
// fields are public, so a hand-built model may not).
func (m *LogisticRegressionModel) checkParams() error {
	if m.Coefficients == nil {
		return ErrNotFitted
	}
	if m.multinomial() && (len(m.Intercepts) != m.Classes || len(m.Coefficients)%m.Classes != 0) {
		return fmt.Errorf("logistic regression: %d classes with %d coefficients and %d intercepts, expected K×n_features and K",
			m.Classes, len(m.Coefficients), len(m.Intercepts))
	}
	return nil
}

func (m *LogisticRegressionModel) fitMultinomial(x Matrix, y []float64) error {
	k := m.Classes
	labels := make([]int, len(y))
	err := m.checkFit(x, y, func(i int, v float64) error {
		if v != math.Trunc(v) || v < 0 || v >= float64(k) {
			return fmt.Errorf("logistic regression: label y[%d] = %v, expected a class index in [0,%d]", i, v, k-1)
		}
		labels[i] = int(v)
		return nil
	})
	if err != nil {
		return err
	}
	n, p := x.Rows, x.Cols
	w := make([]float64, k*p) // row c: class c's weights
	b := make([]float64, k)
	gw := make([]float64, k*p)
	gb := make([]float64, k)
	z := make([]float64, k)
	inv := 1 / float64(n)
	m.Iterations = 0
	for it := 0; it < m.MaxIter; it++ {
		clear(gw)
		clear(gb)
		for i := range n {
			row := x.Row(i)
			for c := range k {
				s := b[c]
				for j, v := range w[c*p : (c+1)*p] {
					s += v * row[j]
				}
				z[c] = s
			}
			softmax64(z)
			// d(cross-entropy)/d(logit c) = softmax(z)_c - [c == y].
			z[labels[i]]--
			for c, e := range z {
				gb[c] += e
				g := gw[c*p : (c+1)*p]
				for j, v := range row {
					g[j] += e * v
				}
			}
		}
		converged := true
		for c := range b {
			gb[c] *= inv
			if math.Abs(gb[c]) >= m.Tol {
				converged = false
			}
			b[c] -= m.LearningRate * gb[c]
		}
		for j := range w {
			gw[j] *= inv
			if math.Abs(gw[j]) >= m.Tol {
				converged = false
			}
			w[j] -= m.LearningRate * (gw[j] + m.L2Penalty*w[j])
		}
		m.Iterations = it + 1
		if converged {
			break
		}
	}
	m.Coefficients = make([]float32, k*p)
	for j, v := range w {
		m.Coefficients[j] = float32(v)
	}
	m.Intercepts = make([]float32, k)
	for c, v := range b {
		m.Intercepts[c] = float32(v)
	}
	m.Intercept = 0
	return nil
}

// softmax64 replaces z by softmax(z), subtracting the maximum first.
func softmax64(z []float64) {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, v)
	}
	var s float64
	for i, v := range z {
		z[i] = math.Exp(v - mx)
		s += z[i]
	}
	for i := range z {
		z[i] /= s
	}
}

// logitsRow writes the multinomial logits of one row into z: intercept first, then
// the products in feature order, in float64.
func (m *LogisticRegressionModel) logitsRow(z []float64, row func(j int) float64) {
	p := m.NumFeatures()
	for c := range m.Classes {
		s := float64(m.Intercepts[c])
		for j, w := range m.Coefficients[c*p : (c+1)*p] {
			s += float64(w) * row(j)
		}
		z[c] = s
	}
}

func (m *LogisticRegressionModel) predictMultinomial(x Matrix) ([]int, error) {
	if err := m.checkParams(); err != nil {
		return nil, err
	}
	if err := checkFeatures(x, m.NumFeatures()); err != nil {
		return nil, fmt.Errorf("logistic regression: %w", err)
	}
	out := make([]int, x.Rows)
	z := make([]float64, m.Classes)
	for i := range out {
		r := x.Row(i)
		m.logitsRow(z, func(j int) float64 { return r[j] })
		best := 0
		for c, v := range z {
			if v > z[best] {
				best = c
			}
		}
		out[i] = best
	}
	return out, nil
}

// Probabilities returns every row's class probabilities (x.Rows × NumClasses()):
// [1-P(y=1), P(y=1)] for a binary model, softmax(W·x + b) for a multinomial one.
func (m *LogisticRegressionModel) Probabilities(x Matrix) (Matrix, error) {
	if err := m.checkParams(); err != nil {
		return Matrix{}, err
	}
	k := m.NumClasses()
	out := Matrix{Rows: x.Rows, Cols: k, Data: make([]float64, x.Rows*k)}
	if !m.multinomial() {
		p, err := m.PredictProba(x)
		if err != nil {
			return Matrix{}, err
		}
		for i, v := range p {
			out.Data[2*i], out.Data[2*i+1] = 1-v, v
		}
		return out, nil
	}
	if err := checkFeatures(x, m.NumFeatures()); err != nil {
		return Matrix{}, fmt.Errorf("logistic regression: %w", err)
	}
	for i := range x.Rows {
		r, z := x.Row(i), out.Row(i)
		m.logitsRow(z, func(j int) float64 { return r[j] })
		softmax64(z)
	}
	return out, nil
}

// Logits returns the class logits for rows×NumFeatures() float32 values x
// (rows×NumClasses(), rounded to float32), whose softmax is the class
// distribution: [0, x·coefficients + intercept] for a binary model (softmax([0, z])
// = [1-σ(z), σ(z)]), W·x + b for a multinomial one. This is how the model serves as
// a distillation teacher.
func (m *LogisticRegressionModel) Logits(x []float32, rows int) ([]float32, error) {
	if err := m.checkParams(); err != nil {
		return nil, err
	}
	p, k := m.NumFeatures(), m.NumClasses()
	if rows < 0 || len(x) != rows*p {
		return nil, fmt.Errorf("logistic regression: %d input values for %d rows of %d features", len(x), rows, p)
	}
	out := make([]float32, rows*k)
	z := make([]float64, k)
	for i := range rows {
		r := x[i*p : (i+1)*p]
		if !m.multinomial() {
			s := float64(m.Intercept)
			for j, w := range m.Coefficients {
				s += float64(w) * float64(r[j])
			}
			out[2*i+1] = float32(s)
			continue
		}
		m.logitsRow(z, func(j int) float64 { return float64(r[j]) })
		for c, v := range z {
			out[i*k+c] = float32(v)
		}
	}
	return out, nil
}

// decodeMultinomial reads a multinomial model's tensors into d: "coefficients" F32
// [K, n_features] and "intercept" F32 [K]. classes (from the config; 0 when absent)
// and features (-1 when absent) must agree with the shapes.
func decodeMultinomial(d *LogisticRegressionModel, classes int, features int64, tensors map[string]tensor.Tensor) (*LogisticRegressionModel, error) {
	t, ok := tensors["coefficients"]
	if !ok {
		return nil, errors.New("missing tensor \"coefficients\"")
	}
	if len(t.Shape) != 2 || t.Shape[0] < 3 {
		return nil, fmt.Errorf("tensor \"coefficients\": shape %v, expected [n_classes >= 3, n_features] for a multinomial model", t.Shape)
	}
	if classes != 0 && t.Shape[0] != int64(classes) {
		return nil, fmt.Errorf("tensor \"coefficients\": shape %v, config \"n_classes\" is %d", t.Shape, classes)
	}
	if features >= 0 && t.Shape[1] != features {
		return nil, fmt.Errorf("tensor \"coefficients\": shape %v, config \"n_features\" is %d", t.Shape, features)
	}
	w, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	b, err := vectorTensor(tensors, "intercept", t.Shape[0])
	if err != nil {
		return nil, err
	}
	d.Classes, d.Coefficients, d.Intercepts = int(t.Shape[0]), w, b
	return d, nil
}
