package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// LogisticRegressionModel is a classifier, binary by default, P(y=1|x) =
// σ(x·coefficients + intercept), fitted like aprender's LogisticRegression: full-batch
// gradient descent on the mean binary cross-entropy (plus L2Penalty·w, which aprender
// applies as weight decay to the coefficients only), starting from zero, for at most
// MaxIter steps of size LearningRate, stopping early once every component of the
// gradient is below Tol in absolute value. The arithmetic is float64; the parameters
// are stored as float32, the precision of the saved tensors.
//
// With Classes >= 3 it is multinomial (softmax regression): P(y=k|x) =
// softmax(W·x + b)[k], fitted the same way on the mean cross-entropy (see
// logistic_multi.go).
//
// Tensors: binary "coefficients" F32 [n_features], "intercept" F32 [1]; multinomial
// "coefficients" F32 [n_classes, n_features] (class k's weights in row k, as
// scikit-learn's coef_), "intercept" F32 [n_classes].
// Config: {"learning_rate", "max_iter", "tol", "l2_penalty", "n_features"}, plus
// "n_classes" for a multinomial model only (a binary model's config is unchanged).
type LogisticRegressionModel struct {
	LearningRate float64
	MaxIter      int
	Tol          float64
	L2Penalty    float64

	// Classes is the number of classes: 0 (or 2) for the binary model, K >= 3
	// for the multinomial one. Set it before Fit.
	Classes int

	// Coefficients holds the binary model's n_features weights, or the
	// multinomial model's K×n_features weights, row-major (row k for class k).
	Coefficients []float32
	// Intercept is the binary model's bias (0 for a multinomial model).
	Intercept float32
	// Intercepts holds the multinomial model's K biases (nil for a binary model).
	Intercepts []float32
	// Iterations is the number of gradient steps the last Fit took (0 when loaded).
	Iterations int
}

// NewLogisticRegression returns an unfitted model with aprender's defaults
// (learning rate 0.01, 1000 iterations, tolerance 1e-4, no L2 penalty).
func NewLogisticRegression() *LogisticRegressionModel {
	return &LogisticRegressionModel{LearningRate: 0.01, MaxIter: 1000, Tol: 1e-4}
}

// Sigmoid is the logistic function, computed without overflow for any z.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Fit estimates the parameters from x (n_samples × n_features) and labels y, each
// exactly 0 or 1 (binary), or a class index 0..Classes-1 (multinomial).
func (m *LogisticRegressionModel) Fit(x Matrix, y []float64) error {
	if m.multinomial() {
		return m.fitMultinomial(x, y)
	}
	if m.Classes != 0 && m.Classes != 2 {
		return fmt.Errorf("logistic regression: %d classes, expected 2 (binary) or >= 3 (multinomial)", m.Classes)
	}
	err := m.checkFit(x, y, func(i int, v float64) error {
		if v != 0 && v != 1 {
			return fmt.Errorf("logistic regression: label y[%d] = %v, expected 0 or 1 (set Classes for a multinomial model)", i, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	n, p := x.Rows, x.Cols
	w := make([]float64, p)
	var b float64
	grad := make([]float64, p)
	m.Iterations = 0
	for it := 0; it < m.MaxIter; it++ {
		clear(grad)
		var gb float64
		for i := 0; i < n; i++ {
			row := x.Row(i)
			z := b
			for j, v := range row {
				z += w[j] * v
			}
			e := Sigmoid(z) - y[i]
			gb += e
			for j, v := range row {
				grad[j] += e * v
			}
		}
		gb /= float64(n)
		converged := math.Abs(gb) < m.Tol
		b -= m.LearningRate * gb
		for j := range w {
			grad[j] /= float64(n)
			if math.Abs(grad[j]) >= m.Tol {
				converged = false
			}
			w[j] -= m.LearningRate * (grad[j] + m.L2Penalty*w[j])
		}
		m.Iterations = it + 1
		if converged {
			break
		}
	}
	m.Coefficients = make([]float32, p)
	for j, v := range w {
		m.Coefficients[j] = float32(v)
	}
	m.Intercept = float32(b)
	return nil
}

// checkFit refuses what no fit can use: a malformed or empty x, a label count that is
// not x's row count, a label that label rejects, a value that is not finite, and
// hyperparameters out of range.
func (m *LogisticRegressionModel) checkFit(x Matrix, y []float64, label func(i int, v float64) error) error {
	if err := x.check(); err != nil {
		return err
	}
	if x.Rows == 0 {
		return errors.New("logistic regression: no samples")
	}
	if len(y) != x.Rows {
		return fmt.Errorf("logistic regression: %d samples in x but %d labels", x.Rows, len(y))
	}
	for i, v := range y {
		if err := label(i, v); err != nil {
			return err
		}
	}
	for i, v := range x.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("logistic regression: x[%d][%d] = %v is not finite", i/x.Cols, i%x.Cols, v)
		}
	}
	if !(m.LearningRate > 0) || math.IsInf(m.LearningRate, 0) || m.MaxIter < 0 || !(m.Tol >= 0) || !(m.L2Penalty >= 0) {
		return fmt.Errorf("logistic regression: invalid hyperparameters learning_rate=%v max_iter=%d tol=%v l2_penalty=%v",
			m.LearningRate, m.MaxIter, m.Tol, m.L2Penalty)
	}
	return nil
}

// PredictProba returns P(y=1) for every row of x, for a binary model; a
// multinomial model's class probabilities come from Probabilities.
func (m *LogisticRegressionModel) PredictProba(x Matrix) ([]float64, error) {
	if m.Coefficients == nil {
		return nil, ErrNotFitted
	}
	if m.multinomial() {
		return nil, fmt.Errorf("logistic regression: PredictProba gives P(y=1) of a binary model; this one has %d classes (use Probabilities)", m.Classes)
	}
	if err := checkFeatures(x, len(m.Coefficients)); err != nil {
		return nil, fmt.Errorf("logistic regression: %w", err)
	}
	out := make([]float64, x.Rows)
	for i := range out {
		out[i] = Sigmoid(dot32(m.Coefficients, x.Row(i)) + float64(m.Intercept))
	}
	return out, nil
}

// Predict returns the label of every row of x: 1 when P(y=1) >= 0.5, else 0 for
// a binary model; the class of the largest logit (the first on ties) for a
// multinomial one.
func (m *LogisticRegressionModel) Predict(x Matrix) ([]int, error) {
	if m.multinomial() {
		return m.predictMultinomial(x)
	}
	p, err := m.PredictProba(x)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(p))
	for i, v := range p {
		if v >= 0.5 {
			out[i] = 1
		}
	}
	return out, nil
}

// Score is the accuracy of the predictions for x against labels y.
func (m *LogisticRegressionModel) Score(x Matrix, y []float64) (float64, error) {
	return score(m.Predict, x, y, Accuracy, "logistic regression: %d rows but %d labels")
}

// Type implements Model.
func (m *LogisticRegressionModel) Type() modeltype.Type { return modeltype.LogisticRegression }

// Config implements Model.
func (m *LogisticRegressionModel) Config() map[string]any {
	cfg := map[string]any{
		"learning_rate": m.LearningRate,
		"max_iter":      int64(m.MaxIter),
		"tol":           m.Tol,
		"l2_penalty":    m.L2Penalty,
		"n_features":    int64(len(m.Coefficients)),
	}
	if m.multinomial() {
		cfg["n_features"] = int64(m.NumFeatures())
		cfg["n_classes"] = int64(m.Classes)
	}
	return cfg
}

// Tensors implements Model: binary "coefficients" F32 [n_features] and "intercept"
// F32 [1]; multinomial "coefficients" F32 [n_classes, n_features] and "intercept"
// F32 [n_classes].
func (m *LogisticRegressionModel) Tensors() []tensor.Tensor {
	if m.multinomial() {
		w := tensor.F32("coefficients", m.Coefficients)
		w.Shape = []int64{int64(m.Classes), int64(m.NumFeatures())}
		return []tensor.Tensor{w, tensor.F32("intercept", m.Intercepts)}
	}
	return []tensor.Tensor{tensor.F32("coefficients", m.Coefficients), tensor.F32("intercept", []float32{m.Intercept})}
}

func decodeLogistic(cfg map[string]any, tensors map[string]tensor.Tensor) (*LogisticRegressionModel, error) {
	d := NewLogisticRegression()
	var err error
	if d.LearningRate, err = configFloat(cfg, "learning_rate", d.LearningRate); err != nil {
		return nil, err
	}
	if !(d.LearningRate > 0) {
		return nil, fmt.Errorf("config \"learning_rate\": %v, expected > 0", d.LearningRate)
	}
	mi, err := configInt(cfg, "max_iter", int64(d.MaxIter), math.MaxInt32)
	if err != nil {
		return nil, err
	}
	d.MaxIter = int(mi)
	if d.Tol, err = configFloat(cfg, "tol", d.Tol); err != nil {
		return nil, err
	}
	if d.Tol < 0 {
		return nil, fmt.Errorf("config \"tol\": %v, expected >= 0", d.Tol)
	}
	if d.L2Penalty, err = configFloat(cfg, "l2_penalty", 0); err != nil {
		return nil, err
	}
	if d.L2Penalty < 0 {
		return nil, fmt.Errorf("config \"l2_penalty\": %v, expected >= 0", d.L2Penalty)
	}
	nf, err := configInt(cfg, "n_features", -1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if err := checkOnlyTensors(tensors, "coefficients", "intercept"); err != nil {
		return nil, err
	}
	nc, err := configInt(cfg, "n_classes", 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	// Without "n_classes" (a file from another writer), coefficients [K >= 3, n]
	// say multinomial; anything else is read as the binary model, unchanged.
	if c, ok := tensors["coefficients"]; nc > 2 || (nc == 0 && ok && len(c.Shape) == 2 && c.Shape[0] >= 3) {
		return decodeMultinomial(d, int(nc), nf, tensors)
	}
	if nc == 1 {
		return nil, errors.New("config \"n_classes\": 1, expected 2 (binary) or >= 3 (multinomial)")
	}
	if d.Coefficients, err = vectorTensor(tensors, "coefficients", nf); err != nil {
		return nil, err
	}
	icpt, err := vectorTensor(tensors, "intercept", 1)
	if err != nil {
		return nil, err
	}
	d.Intercept = icpt[0]
	return d, nil
}

func init() {
	register(modeltype.LogisticRegression, decodeLogistic)
}
