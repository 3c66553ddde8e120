package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// LinearRegressionModel is ordinary least squares, y = X·coefficients + intercept.
//
// Fit solves the problem in float64 with a column-pivoted Householder QR
// factorisation of the (centred, when FitIntercept) design matrix, which never forms
// XᵀX and so keeps the accuracy of the data. When columns are linearly dependent
// (rank r < n_features), the coefficients of the dependent columns are set to zero and
// the rest solve the least-squares problem exactly (a basic solution, not the
// minimum-norm one). Parameters are stored as float32, the precision of the saved
// tensors, so a loaded model predicts exactly like the fitted one.
//
// Tensors: "coefficients" F32 [n_features], "intercept" F32 [1].
// Config: {"fit_intercept": bool, "n_features": int}.
type LinearRegressionModel struct {
	FitIntercept bool
	Coefficients []float32
	Intercept    float32
	// Rank is the numerical rank found by the last Fit (0 for a loaded model).
	Rank int
}

// NewLinearRegression returns an unfitted model that fits an intercept.
func NewLinearRegression() *LinearRegressionModel {
	return &LinearRegressionModel{FitIntercept: true}
}

// ErrNotFitted is returned by Predict on a model without coefficients.
var ErrNotFitted = errors.New("model is not fitted")

// Fit estimates the coefficients from x (n_samples × n_features) and y.
func (m *LinearRegressionModel) Fit(x Matrix, y []float64) error {
	if err := x.check(); err != nil {
		return err
	}
	if x.Rows == 0 {
		return errors.New("linear regression: no samples")
	}
	if len(y) != x.Rows {
		return fmt.Errorf("linear regression: %d samples in x but %d targets", x.Rows, len(y))
	}
	for i, v := range x.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("linear regression: x[%d][%d] = %v is not finite", i/x.Cols, i%x.Cols, v)
		}
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("linear regression: y[%d] = %v is not finite", i, v)
		}
	}
	n, p := x.Rows, x.Cols
	a := make([]float64, len(x.Data))
	copy(a, x.Data)
	b := make([]float64, n)
	copy(b, y)
	xmean := make([]float64, p)
	var ymean float64
	if m.FitIntercept {
		for i := 0; i < n; i++ {
			for j := 0; j < p; j++ {
				xmean[j] += a[i*p+j]
			}
			ymean += b[i]
		}
		for j := range xmean {
			xmean[j] /= float64(n)
		}
		ymean /= float64(n)
		for i := 0; i < n; i++ {
			for j := 0; j < p; j++ {
				a[i*p+j] -= xmean[j]
			}
			b[i] -= ymean
		}
	}
	beta, rank := lstsqQR(a, n, p, b)
	m.Rank = rank
	m.Coefficients = make([]float32, p)
	icpt := ymean
	for j, v := range beta {
		m.Coefficients[j] = float32(v)
		icpt -= xmean[j] * v
	}
	if m.FitIntercept {
		m.Intercept = float32(icpt)
	} else {
		m.Intercept = 0
	}
	return nil
}

// lstsqQR solves min ||A·beta - b|| for A (n×p, row-major, overwritten) by
// Householder QR with column pivoting. It returns beta and the numerical rank.
func lstsqQR(a []float64, n, p int, b []float64) ([]float64, int) {
	perm := make([]int, p)
	for j := range perm {
		perm[j] = j
	}
	k := min(n, p)
	rank := 0
	var tol float64
	col := func(j int) float64 { // squared norm of column j below the diagonal
		var s float64
		for i := rank; i < n; i++ {
			s += a[i*p+j] * a[i*p+j]
		}
		return s
	}
	for step := 0; step < k; step++ {
		// Pivot: the remaining column of largest norm.
		best, bestNorm := step, -1.0
		for j := step; j < p; j++ {
			if s := col(j); s > bestNorm {
				best, bestNorm = j, s
			}
		}
		if best != step {
			for i := 0; i < n; i++ {
				a[i*p+step], a[i*p+best] = a[i*p+best], a[i*p+step]
			}
			perm[step], perm[best] = perm[best], perm[step]
		}
		norm := math.Sqrt(bestNorm)
		if step == 0 {
			tol = norm * float64(max(n, p)) * 0x1p-52
		}
		if norm <= tol || norm == 0 {
			break
		}
		// Householder vector v = x + sign(x0)·||x||·e0, stored in place.
		alpha := -norm
		if a[step*p+step] < 0 {
			alpha = norm
		}
		a[step*p+step] -= alpha
		var vnorm2 float64
		for i := step; i < n; i++ {
			vnorm2 += a[i*p+step] * a[i*p+step]
		}
		if vnorm2 > 0 {
			for j := step + 1; j < p; j++ {
				var s float64
				for i := step; i < n; i++ {
					s += a[i*p+step] * a[i*p+j]
				}
				s = 2 * s / vnorm2
				for i := step; i < n; i++ {
					a[i*p+j] -= s * a[i*p+step]
				}
			}
			var s float64
			for i := step; i < n; i++ {
				s += a[i*p+step] * b[i]
			}
			s = 2 * s / vnorm2
			for i := step; i < n; i++ {
				b[i] -= s * a[i*p+step]
			}
		}
		a[step*p+step] = alpha // R's diagonal
		rank++
	}
	// Back substitution on the leading rank×rank block of R.
	z := make([]float64, rank)
	for i := rank - 1; i >= 0; i-- {
		s := b[i]
		for j := i + 1; j < rank; j++ {
			s -= a[i*p+j] * z[j]
		}
		z[i] = s / a[i*p+i]
	}
	beta := make([]float64, p)
	for i := 0; i < rank; i++ {
		beta[perm[i]] = z[i]
	}
	return beta, rank
}

// Predict returns X·coefficients + intercept for every row of x.
func (m *LinearRegressionModel) Predict(x Matrix) ([]float64, error) {
	if m.Coefficients == nil {
		return nil, ErrNotFitted
	}
	if err := checkFeatures(x, len(m.Coefficients)); err != nil {
		return nil, fmt.Errorf("linear regression: %w", err)
	}
	out := make([]float64, x.Rows)
	for i := range out {
		out[i] = dot32(m.Coefficients, x.Row(i)) + float64(m.Intercept)
	}
	return out, nil
}

// Score is the R² of the predictions for x against y.
func (m *LinearRegressionModel) Score(x Matrix, y []float64) (float64, error) {
	return score(m.Predict, x, y, R2, "linear regression: %d rows but %d targets")
}

// Type implements Model.
func (m *LinearRegressionModel) Type() modeltype.Type { return modeltype.LinearRegression }

// Config implements Model.
func (m *LinearRegressionModel) Config() map[string]any {
	return map[string]any{"fit_intercept": m.FitIntercept, "n_features": int64(len(m.Coefficients))}
}

// Tensors implements Model: "coefficients" F32 [n_features], "intercept" F32 [1].
func (m *LinearRegressionModel) Tensors() []tensor.Tensor {
	return []tensor.Tensor{tensor.F32("coefficients", m.Coefficients), tensor.F32("intercept", []float32{m.Intercept})}
}

func decodeLinear(cfg map[string]any, tensors map[string]tensor.Tensor) (*LinearRegressionModel, error) {
	fi, err := configBool(cfg, "fit_intercept", true)
	if err != nil {
		return nil, err
	}
	nf, err := configInt(cfg, "n_features", -1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if err := checkOnlyTensors(tensors, "coefficients", "intercept"); err != nil {
		return nil, err
	}
	coef, err := vectorTensor(tensors, "coefficients", nf)
	if err != nil {
		return nil, err
	}
	icpt, err := vectorTensor(tensors, "intercept", 1)
	if err != nil {
		return nil, err
	}
	return &LinearRegressionModel{FitIntercept: fi, Coefficients: coef, Intercept: icpt[0]}, nil
}

func init() {
	register(modeltype.LinearRegression, decodeLinear)
}
