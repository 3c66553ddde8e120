package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// MixtureOfExpertsModel is a gating network and N experts in one model: for a row x,
// the gate's logits are z = W·x + b (one per expert); the k largest (the lower index
// first on ties) are softmaxed and the others get weight 0; the prediction is the
// weighted sum of the experts' outputs: values for regression experts, class
// probabilities for classifiers (the label is their argmax). Experts are any model
// with a predict here (LinearRegression, LogisticRegression, NeuralSequential), all of
// one kind: all regressions with the same number of outputs, or all classifiers with
// the same classes, and all taking the same features.
//
// In a file (docs/FORMAT.md): tensors "gate.weight" F32 [n_experts, n_features],
// "gate.bias" F32 [n_experts], then each expert's tensors under "expert.<i>." (so
// inspect, extract and signatures see every expert); model_config holds n_features,
// top_k and "experts", a list of {type, config} in expert order.
type MixtureOfExpertsModel struct {
	Features   int
	TopK       int
	GateWeight []float32 // n_experts × Features, row e is expert e's gate weights
	GateBias   []float32 // n_experts
	Experts    []Model
}

// MaxExperts caps the experts of a mixture read from a file.
const MaxExperts = 1024

// Kind says what m predicts: the features of a row, and the classes of a
// classifier (0 for regression) or the values per row of a regression (0 for a
// classifier). It fails for a model that is not fitted or has no predict here.
func Kind(m Model) (features, classes, outputs int, err error) {
	switch e := m.(type) {
	case *LinearRegressionModel:
		if e.Coefficients == nil {
			return 0, 0, 0, ErrNotFitted
		}
		return len(e.Coefficients), 0, 1, nil
	case *LogisticRegressionModel:
		if err := e.checkParams(); err != nil {
			return 0, 0, 0, err
		}
		return e.NumFeatures(), e.NumClasses(), 0, nil
	case *NeuralSequentialModel:
		if err := e.Validate(); err != nil {
			return 0, 0, 0, err
		}
		if e.IsClassifier() {
			return e.Inputs(), e.Classes(), 0, nil
		}
		return e.Inputs(), 0, e.Outputs(), nil
	case *MixtureOfExpertsModel:
		if err := e.Validate(); err != nil {
			return 0, 0, 0, err
		}
		return e.Features, e.Classes(), e.Outputs(), nil
	}
	return 0, 0, 0, fmt.Errorf("a %v model has no predict (LinearRegression, LogisticRegression, NeuralSequential or MixtureOfExperts)", m.Type())
}

// expertKind is Kind for an expert of a mixture, which may not be a mixture itself.
func expertKind(m Model) (features, classes, outputs int, err error) {
	switch m.(type) {
	case *LinearRegressionModel, *LogisticRegressionModel, *NeuralSequentialModel:
		return Kind(m)
	}
	return 0, 0, 0, fmt.Errorf("a %v model cannot be an expert (LinearRegression, LogisticRegression or NeuralSequential)", m.Type())
}

// NewMixtureOfExperts checks the experts and returns a mixture with a zero gate
// (every selected expert weighted alike) for FitGate to train.
func NewMixtureOfExperts(experts []Model, topK int) (*MixtureOfExpertsModel, error) {
	if len(experts) == 0 {
		return nil, errors.New("mixture of experts: no experts")
	}
	m := &MixtureOfExpertsModel{TopK: topK, Experts: experts}
	f, _, _, err := expertKind(experts[0])
	if err != nil {
		return nil, fmt.Errorf("mixture of experts: expert 0: %w", err)
	}
	m.Features = f
	m.GateWeight = make([]float32, len(experts)*f)
	m.GateBias = make([]float32, len(experts))
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks the gate's shapes, top_k and that the experts agree.
func (m *MixtureOfExpertsModel) Validate() error {
	n := len(m.Experts)
	switch {
	case n == 0 || n > MaxExperts:
		return fmt.Errorf("mixture of experts: %d experts, want 1 to %d", n, MaxExperts)
	case m.TopK < 1 || m.TopK > n:
		return fmt.Errorf("mixture of experts: top_k %d, want 1 to the %d experts", m.TopK, n)
	case m.Features < 1:
		return fmt.Errorf("mixture of experts: %d features", m.Features)
	case len(m.GateWeight) != n*m.Features || len(m.GateBias) != n:
		return fmt.Errorf("mixture of experts: a gate of %d weights and %d biases for %d experts of %d features", len(m.GateWeight), len(m.GateBias), n, m.Features)
	}
	_, c0, o0, _ := expertKind(m.Experts[0])
	for i, e := range m.Experts {
		f, c, o, err := expertKind(e)
		if err != nil {
			return fmt.Errorf("mixture of experts: expert %d: %w", i, err)
		}
		if f != m.Features {
			return fmt.Errorf("mixture of experts: expert %d takes %d features, the gate %d", i, f, m.Features)
		}
		if c != c0 || o != o0 {
			return fmt.Errorf("mixture of experts: expert %d predicts %s, expert 0 %s", i, kindString(c, o), kindString(c0, o0))
		}
	}
	return nil
}

func kindString(classes, outputs int) string {
	if classes > 0 {
		return strconv.Itoa(classes) + " classes"
	}
	return strconv.Itoa(outputs) + " regression outputs"
}

// IsClassifier reports whether the experts are classifiers.
func (m *MixtureOfExpertsModel) IsClassifier() bool { return m.Classes() > 0 }

// Classes is the experts' number of classes, 0 for regression experts.
func (m *MixtureOfExpertsModel) Classes() int { _, c, _, _ := expertKind(m.Experts[0]); return c }

// Outputs is the values per row of regression experts (0 for classifiers).
func (m *MixtureOfExpertsModel) Outputs() int { _, _, o, _ := expertKind(m.Experts[0]); return o }

// Gates returns each row's expert weights (x.Rows × n_experts): the softmax of the
// top_k gate logits, 0 for the other experts.
func (m *MixtureOfExpertsModel) Gates(x Matrix) (Matrix, error) {
	return m.gates(x, m.TopK)
}

// gates is Gates with k experts selected.
func (m *MixtureOfExpertsModel) gates(x Matrix, k int) (Matrix, error) {
	if err := m.Validate(); err != nil {
		return Matrix{}, err
	}
	if err := checkFeatures(x, m.Features); err != nil {
		return Matrix{}, fmt.Errorf("mixture of experts: %w", err)
	}
	n := len(m.Experts)
	g := Matrix{Rows: x.Rows, Cols: n, Data: make([]float64, x.Rows*n)}
	z := make([]float64, n)
	idx := make([]int, n)
	for i := range x.Rows {
		r := x.Row(i)
		for e := range n {
			z[e] = float64(m.GateBias[e]) + dot32(m.GateWeight[e*m.Features:(e+1)*m.Features], r)
			idx[e] = e
		}
		byLogit(idx, z)
		mx := z[idx[0]]
		sum := 0.0
		w := g.Row(i)
		for _, e := range idx[:k] {
			w[e] = math.Exp(z[e] - mx)
			sum += w[e]
		}
		for _, e := range idx[:k] {
			w[e] /= sum
		}
	}
	return g, nil
}

// byLogit orders the experts idx (0..n-1 on entry) by logit, largest first, the lower
// index first on ties; the first top_k are the selected ones.
func byLogit(idx []int, z []float64) {
	sort.SliceStable(idx, func(a, b int) bool { return z[idx[a]] > z[idx[b]] })
}

// Output is m's output for x: the class probabilities of a classifier, the values of
// a regression (x.Rows × the classes or outputs of Kind).
func Output(m Model, x Matrix) (Matrix, error) {
	switch e := m.(type) {
	case *LinearRegressionModel:
		v, err := e.Predict(x)
		return Matrix{Rows: x.Rows, Cols: 1, Data: v}, err
	case *LogisticRegressionModel:
		return e.Probabilities(x)
	case *NeuralSequentialModel:
		if e.IsClassifier() {
			return e.PredictProba(x)
		}
		return e.Output(x)
	case *MixtureOfExpertsModel:
		return e.Output(x)
	}
	return Matrix{}, fmt.Errorf("a %v model has no predict", m.Type())
}

// Output returns the mixture: class probabilities (x.Rows × Classes()) of classifier
// experts, values (x.Rows × Outputs()) of regression experts. Each expert runs on
// the whole batch (an expert no row selects is skipped).
func (m *MixtureOfExpertsModel) Output(x Matrix) (Matrix, error) {
	g, err := m.Gates(x)
	if err != nil {
		return Matrix{}, err
	}
	cols := m.Classes()
	if cols == 0 {
		cols = m.Outputs()
	}
	out := Matrix{Rows: x.Rows, Cols: cols, Data: make([]float64, x.Rows*cols)}
	for e, ex := range m.Experts {
		used := false
		for i := range x.Rows {
			used = used || g.Data[i*g.Cols+e] != 0
		}
		if !used {
			continue
		}
		y, err := Output(ex, x)
		if err != nil {
			return Matrix{}, fmt.Errorf("mixture of experts: expert %d: %w", e, err)
		}
		for i := range x.Rows {
			w := g.Data[i*g.Cols+e]
			if w == 0 {
				continue
			}
			for j := range cols {
				out.Data[i*cols+j] += w * y.Data[i*cols+j]
			}
		}
	}
	return out, nil
}

// Predict returns the most probable class of each row (classifier experts).
func (m *MixtureOfExpertsModel) Predict(x Matrix) ([]int, error) {
	if !m.IsClassifier() {
		return nil, errors.New("mixture of experts: regression experts have no classes; use Output")
	}
	p, err := m.Output(x)
	if err != nil {
		return nil, err
	}
	labels := make([]int, p.Rows)
	for i := range p.Rows {
		r := p.Row(i)
		for j := range r {
			if r[j] > r[labels[i]] {
				labels[i] = j
			}
		}
	}
	return labels, nil
}

// Expert returns expert i, a model of its own (to save, sign or run alone).
func (m *MixtureOfExpertsModel) Expert(i int) (Model, error) {
	if i < 0 || i >= len(m.Experts) {
		return nil, fmt.Errorf("mixture of experts: no expert %d (it has %d)", i, len(m.Experts))
	}
	return m.Experts[i], nil
}

// Type implements Model.
func (m *MixtureOfExpertsModel) Type() modeltype.Type { return modeltype.MixtureOfExperts }

// Config implements Model.
func (m *MixtureOfExpertsModel) Config() map[string]any {
	experts := make([]any, len(m.Experts))
	for i, e := range m.Experts {
		experts[i] = map[string]any{"type": int64(e.Type()), "config": e.Config()}
	}
	return map[string]any{"n_features": int64(m.Features), "top_k": int64(m.TopK), "n_experts": int64(len(m.Experts)), "experts": experts}
}

// Tensors implements Model: the gate, then each expert's tensors under "expert.<i>.".
func (m *MixtureOfExpertsModel) Tensors() []tensor.Tensor {
	w := tensor.F32("gate.weight", m.GateWeight)
	w.Shape = []int64{int64(len(m.Experts)), int64(m.Features)}
	out := []tensor.Tensor{w, tensor.F32("gate.bias", m.GateBias)}
	for i, e := range m.Experts {
		for _, t := range e.Tensors() {
			t.Name = "expert." + strconv.Itoa(i) + "." + t.Name
			out = append(out, t)
		}
	}
	return out
}

func decodeMoE(cfg map[string]any, tensors map[string]tensor.Tensor) (*MixtureOfExpertsModel, error) {
	nf, err := configInt(cfg, "n_features", -1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	k, err := configInt(cfg, "top_k", -1, MaxExperts)
	if err != nil {
		return nil, err
	}
	list, ok := cfg["experts"].([]any)
	if !ok || len(list) == 0 || len(list) > MaxExperts {
		return nil, fmt.Errorf("model_config experts: a list of 1 to %d experts, got %T", MaxExperts, cfg["experts"])
	}
	n := len(list)
	if ne, err := configInt(cfg, "n_experts", int64(n), MaxExperts); err != nil || ne != int64(n) {
		return nil, fmt.Errorf("model_config n_experts does not match the %d experts listed", n)
	}
	if nf < 1 || k < 1 || k > int64(n) {
		return nil, fmt.Errorf("model_config: n_features %d and top_k %d for %d experts", nf, k, n)
	}
	m := &MixtureOfExpertsModel{Features: int(nf), TopK: int(k)}
	gw, ok := tensors["gate.weight"]
	if !ok || len(gw.Shape) != 2 || gw.Shape[0] != int64(n) || gw.Shape[1] != nf {
		return nil, fmt.Errorf("tensor \"gate.weight\": want F32 [%d, %d]", n, nf)
	}
	if m.GateWeight, err = gw.Float32s(); err != nil {
		return nil, err
	}
	if m.GateBias, err = vectorTensor(tensors, "gate.bias", int64(n)); err != nil {
		return nil, err
	}
	sub := make([]map[string]tensor.Tensor, n)
	for i := range sub {
		sub[i] = map[string]tensor.Tensor{}
	}
	for name, t := range tensors {
		if name == "gate.weight" || name == "gate.bias" {
			continue
		}
		rest, ok := strings.CutPrefix(name, "expert.")
		i, tname, ok2 := strings.Cut(rest, ".")
		e, err := strconv.Atoi(i)
		if !ok || !ok2 || err != nil || e < 0 || e >= n || strconv.Itoa(e) != i {
			return nil, fmt.Errorf("unexpected tensor %q", name)
		}
		sub[e][tname] = t
	}
	for i, item := range list {
		ec, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("model_config experts[%d]: a map of type and config", i)
		}
		code, err := configInt(ec, "type", -1, math.MaxUint16)
		if err != nil {
			return nil, fmt.Errorf("experts[%d]: %w", i, err)
		}
		t := modeltype.Type(code)
		if t != modeltype.LinearRegression && t != modeltype.LogisticRegression && t != modeltype.NeuralSequential {
			return nil, fmt.Errorf("expert %d: a %v model cannot be an expert (LinearRegression, LogisticRegression or NeuralSequential)", i, t)
		}
		econf, _ := ec["config"].(map[string]any)
		if ec["config"] != nil && econf == nil {
			return nil, fmt.Errorf("model_config experts[%d].config is a %T, not a map", i, ec["config"])
		}
		em, err := Decode(t, econf, sub[i])
		if err != nil {
			return nil, fmt.Errorf("expert %d: %w", i, err)
		}
		m.Experts = append(m.Experts, em)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func init() {
	register(modeltype.MixtureOfExperts, decodeMoE)
}
