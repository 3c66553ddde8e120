// Package predict runs lib/model's models over feature rows, batch by batch: rows
// read from CSV (header optional, gzip too), .npy or an .npz member, predictions
// written as CSV, .npy or .npz, in memory bounded by the batch and not by the input.
// It is apr-predict's engine.
//
// Layer: on the models (lib/model) and NumPy's formats (lib/npy); loading and
// verifying the model file is lib/apr's business.
package predict

import (
	"fmt"
	"slices"

	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
)

// Types are the model types with a predict in lib/model, the ones Supported accepts.
var Types = []modeltype.Type{modeltype.LinearRegression, modeltype.LogisticRegression, modeltype.NeuralSequential, modeltype.MixtureOfExperts}

// Supported returns nil for a model type with a predict, else an error naming the
// types that have one.
func Supported(t modeltype.Type) error {
	if slices.Contains(Types, t) {
		return nil
	}
	return fmt.Errorf("a %v model has no predict in apr (supported: LinearRegression, LogisticRegression, NeuralSequential, MixtureOfExperts)", t)
}

// Predictor runs one model.
type Predictor struct {
	m        model.Model
	features int
	classes  int // 0 for a regression model
	outputs  int // values per row of a regression model
}

// New returns the predictor of m, or an error for a model without a predict.
func New(m model.Model) (*Predictor, error) {
	if err := Supported(m.Type()); err != nil {
		return nil, err
	}
	features, classes, outputs, err := model.Kind(m)
	if err != nil {
		return nil, err
	}
	return &Predictor{m: m, features: features, classes: classes, outputs: outputs}, nil
}

// Features is the number of features a row must have.
func (p *Predictor) Features() int { return p.features }

// Classes is the number of classes of a classifier, 0 for a regression model.
func (p *Predictor) Classes() int { return p.classes }

// Shape describes the predictions: values per row (cols), whether they are class
// labels (int64) rather than float64, and whether a row is one value (a vector
// output) rather than a row of cols. proba asks for class probabilities, which
// only a classifier has.
func (p *Predictor) Shape(proba bool) (cols int, labels, vector bool, err error) {
	switch {
	case proba && p.classes == 0:
		return 0, false, false, fmt.Errorf("--proba: a %v regression model has no class probabilities", p.m.Type())
	case proba:
		return p.classes, false, false, nil
	case p.classes > 0:
		return 1, true, true, nil
	default:
		return p.outputs, false, p.outputs == 1, nil
	}
}

// Result is the predictions of a batch: Rows × Cols values, class labels in Labels
// or float64 values in Values.
type Result struct {
	Rows, Cols int
	Labels     []int64
	Values     []float64
}

// Predict runs the model over x (x.Cols must be Features()): labels for a
// classifier, values for a regression model, class probabilities with proba.
func (p *Predictor) Predict(x model.Matrix, proba bool) (Result, error) {
	if x.Cols != p.features {
		return Result{}, fmt.Errorf("rows of %d features; the %v model takes %d", x.Cols, p.m.Type(), p.features)
	}
	cols, classLabels, _, err := p.Shape(proba)
	if err != nil {
		return Result{}, err
	}
	res := Result{Rows: x.Rows, Cols: cols}
	if classLabels {
		l, err := p.m.(classifier).Predict(x)
		res.Labels = labels(l)
		return res, err
	}
	out, err := model.Output(p.m, x)
	res.Values = out.Data
	return res, err
}

// classifier is the label prediction of every classifier of lib/model.
type classifier interface {
	Predict(model.Matrix) ([]int, error)
}

func labels(l []int) []int64 {
	out := make([]int64, len(l))
	for i, v := range l {
		out[i] = int64(v)
	}
	return out
}
