package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Activation names the function a dense layer applies to its output.
type Activation string

// The activations of NeuralSequential layers. Softmax is allowed only on the last
// layer, where it makes the model a classifier.
const (
	ActIdentity Activation = "identity"
	ActReLU     Activation = "relu"
	ActTanh     Activation = "tanh"
	ActSigmoid  Activation = "sigmoid"
	ActSoftmax  Activation = "softmax"
)

// ParseActivation accepts an activation name (case-insensitive; "linear" and "none"
// mean identity).
func ParseActivation(s string) (Activation, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "identity", "linear", "none":
		return ActIdentity, nil
	case "relu":
		return ActReLU, nil
	case "tanh":
		return ActTanh, nil
	case "sigmoid", "logistic":
		return ActSigmoid, nil
	case "softmax":
		return ActSoftmax, nil
	}
	return "", fmt.Errorf("unknown activation %q (expected identity, relu, tanh, sigmoid or softmax)", s)
}

// Limits on NeuralSequential shapes. A model (built or decoded) beyond them is an
// error, never a huge allocation.
const (
	// MaxNeuralLayers caps the number of dense layers.
	MaxNeuralLayers = 1024
	// MaxNeuralWidth caps the width of any layer (inputs included).
	MaxNeuralWidth = 1 << 24
	// MaxNeuralParams caps the total number of parameters (weights and biases).
	MaxNeuralParams = 1 << 30
)

// DenseLayer is one fully connected layer: Out = act(Weight·In + Bias).
type DenseLayer struct {
	In, Out    int
	Activation Activation
	// Weight is Out×In, row-major: the weights into output unit j are
	// Weight[j*In : (j+1)*In] (PyTorch's nn.Linear layout).
	Weight []float32
	Bias   []float32 // [Out]
}

// NeuralSequentialModel is a feed-forward network: dense layers with bias, each
// followed by an activation (relu, tanh, sigmoid or identity on hidden layers;
// softmax, sigmoid or identity on the last one). A softmax output with at least two
// units, or a single sigmoid unit (binary: P(class 1)), makes it a classifier.
//
// Arithmetic is float32: every layer's products are kernels.MatMul over whole
// blocks of rows (forward, backward and weight gradients), whose summation order
// is fixed, so results are reproducible bit for bit, and a row's outputs do not
// depend on the other rows of its batch or on the number of cores (see
// neural_gemm.go).
//
// Tensors: "layers.{i}.weight" F32 [out, in] and "layers.{i}.bias" F32 [out] for
// each layer i from 0. Config: {"widths": [in, h1, ..., out], "activations":
// [act of layer 0, ..., act of the last layer]}.
type NeuralSequentialModel struct {
	Layers []DenseLayer
}

// ParseWidths reads an architecture such as "64-16-16-10": the input width, the
// hidden widths and the output width, separated by '-'.
func ParseWidths(s string) ([]int, error) {
	f := strings.Split(strings.TrimSpace(s), "-")
	if len(f) < 2 {
		return nil, fmt.Errorf("architecture %q: expected at least two layer widths such as 64-16-10", s)
	}
	w := make([]int, len(f))
	for i, p := range f {
		n, err := strconv.Atoi(p)
		if err != nil || p != strconv.Itoa(n) || n < 1 || n > MaxNeuralWidth {
			return nil, fmt.Errorf("architecture %q: width %d is %q, expected a whole number in [1,%d]", s, i+1, p, MaxNeuralWidth)
		}
		w[i] = n
	}
	return w, nil
}

// NewNeuralSequential returns a network with the given widths (input first, output
// last), the hidden activation on every layer but the last and the output
// activation on the last, initialised from seed like PyTorch's nn.Linear: weights
// and biases uniform in ±1/sqrt(fan_in). The same widths and seed give the same
// parameters on every platform.
func NewNeuralSequential(widths []int, hidden, output Activation, seed uint64) (*NeuralSequentialModel, error) {
	acts := make([]Activation, 0, len(widths))
	for i := 1; i < len(widths); i++ {
		if i == len(widths)-1 {
			acts = append(acts, output)
		} else {
			acts = append(acts, hidden)
		}
	}
	if err := checkArch(widths, acts); err != nil {
		return nil, err
	}
	r := NewRand(seed, streamInit)
	m := &NeuralSequentialModel{Layers: make([]DenseLayer, len(acts))}
	for i := range m.Layers {
		in, out := widths[i], widths[i+1]
		l := DenseLayer{In: in, Out: out, Activation: acts[i], Weight: make([]float32, in*out), Bias: make([]float32, out)}
		bound := 1 / math.Sqrt(float64(in))
		for j := range l.Weight {
			l.Weight[j] = float32((2*r.Float64() - 1) * bound)
		}
		for j := range l.Bias {
			l.Bias[j] = float32((2*r.Float64() - 1) * bound)
		}
		m.Layers[i] = l
	}
	return m, nil
}

// checkArch validates widths and activations before anything is allocated.
func checkArch(widths []int, acts []Activation) error {
	if len(widths) < 2 {
		return fmt.Errorf("neural sequential: %d widths, expected at least 2 (input and output)", len(widths))
	}
	if len(acts) != len(widths)-1 {
		return fmt.Errorf("neural sequential: %d activations for %d layers", len(acts), len(widths)-1)
	}
	if len(acts) > MaxNeuralLayers {
		return fmt.Errorf("neural sequential: %d layers, at most %d supported", len(acts), MaxNeuralLayers)
	}
	var params int64
	for i, w := range widths {
		if w < 1 || w > MaxNeuralWidth {
			return fmt.Errorf("neural sequential: width %d is %d, expected [1,%d]", i, w, MaxNeuralWidth)
		}
		if i > 0 {
			params += int64(widths[i-1])*int64(w) + int64(w)
			if params > MaxNeuralParams {
				return fmt.Errorf("neural sequential: more than %d parameters", MaxNeuralParams)
			}
		}
	}
	for i, a := range acts {
		switch a {
		case ActIdentity, ActReLU, ActTanh, ActSigmoid:
		case ActSoftmax:
			if i != len(acts)-1 {
				return fmt.Errorf("neural sequential: layer %d: softmax is only allowed on the last layer", i)
			}
		default:
			return fmt.Errorf("neural sequential: layer %d: unknown activation %q", i, a)
		}
	}
	return nil
}

// Validate checks that the layers chain (each input width is the previous output
// width) and that every slice has the length its shape needs.
func (m *NeuralSequentialModel) Validate() error {
	if m == nil || len(m.Layers) == 0 {
		return ErrNotFitted
	}
	widths := make([]int, 0, len(m.Layers)+1)
	acts := make([]Activation, len(m.Layers))
	widths = append(widths, m.Layers[0].In)
	for i, l := range m.Layers {
		if i > 0 && l.In != m.Layers[i-1].Out {
			return fmt.Errorf("neural sequential: layer %d takes %d inputs, layer %d gives %d", i, l.In, i-1, m.Layers[i-1].Out)
		}
		widths = append(widths, l.Out)
		acts[i] = l.Activation
	}
	if err := checkArch(widths, acts); err != nil {
		return err
	}
	for i, l := range m.Layers {
		if len(l.Weight) != l.In*l.Out || len(l.Bias) != l.Out {
			return fmt.Errorf("neural sequential: layer %d: weight has %d values and bias %d, shape [%d,%d] needs %d and %d",
				i, len(l.Weight), len(l.Bias), l.Out, l.In, l.In*l.Out, l.Out)
		}
	}
	return nil
}

// Widths returns the input width followed by every layer's output width.
func (m *NeuralSequentialModel) Widths() []int {
	if len(m.Layers) == 0 {
		return nil
	}
	w := []int{m.Layers[0].In}
	for _, l := range m.Layers {
		w = append(w, l.Out)
	}
	return w
}

// Inputs is the number of input features (0 for an empty model).
func (m *NeuralSequentialModel) Inputs() int {
	if len(m.Layers) == 0 {
		return 0
	}
	return m.Layers[0].In
}

// Outputs is the width of the last layer (0 for an empty model).
func (m *NeuralSequentialModel) Outputs() int {
	if len(m.Layers) == 0 {
		return 0
	}
	return m.Layers[len(m.Layers)-1].Out
}

// ParamCount is the number of weights and biases.
func (m *NeuralSequentialModel) ParamCount() int {
	n := 0
	for _, l := range m.Layers {
		n += len(l.Weight) + len(l.Bias)
	}
	return n
}

// IsClassifier reports whether the output is a class distribution: softmax over
// at least two units, or one sigmoid unit (binary).
func (m *NeuralSequentialModel) IsClassifier() bool {
	if len(m.Layers) == 0 {
		return false
	}
	last := m.Layers[len(m.Layers)-1]
	return last.Activation == ActSoftmax && last.Out >= 2 || last.Activation == ActSigmoid && last.Out == 1
}

// Classes is the number of classes of a classifier (2 for a single sigmoid unit),
// 0 when the model is not a classifier.
func (m *NeuralSequentialModel) Classes() int {
	if !m.IsClassifier() {
		return 0
	}
	if out := m.Outputs(); out > 1 {
		return out
	}
	return 2
}

// Float32Rows converts x to float32, checking that it has want columns (when want
// > 0) and that every value is finite; errors name the row and column.
func Float32Rows(x Matrix, want int) ([]float32, error) {
	if err := x.check(); err != nil {
		return nil, err
	}
	if want > 0 && x.Cols != want {
		return nil, fmt.Errorf("input has %d features, the model expects %d", x.Cols, want)
	}
	out := make([]float32, len(x.Data))
	for i, v := range x.Data {
		f := float32(v)
		if f-f != 0 { // NaN, or infinite (in float64 or only once rounded to float32)
			return nil, fmt.Errorf("row %d, column %d: value %v is not a finite float32", i/x.Cols, i%x.Cols, v)
		}
		out[i] = f
	}
	return out, nil
}

// activate applies act to z in place (rows of width cols).
func activate(act Activation, z []float32, cols int) {
	switch act {
	case ActReLU:
		for i, v := range z {
			if !(v > 0) {
				z[i] = 0
			}
		}
	case ActTanh:
		for i, v := range z {
			z[i] = float32(math.Tanh(float64(v)))
		}
	case ActSigmoid:
		for i, v := range z {
			z[i] = float32(Sigmoid(float64(v)))
		}
	case ActSoftmax:
		SoftmaxRows(z, z, cols, 1)
	}
}

// SoftmaxRows writes softmax(z/t) of every row of width cols into dst (which may
// be z itself). It subtracts each row's maximum first, so it never overflows.
func SoftmaxRows(dst, z []float32, cols int, t float64) {
	if cols <= 0 {
		return
	}
	inv := 1 / t
	for r := 0; r+cols <= len(z); r += cols {
		row, out := z[r:r+cols], dst[r:r+cols]
		mx := row[0]
		for _, v := range row[1:] {
			if v > mx {
				mx = v
			}
		}
		var sum float64
		for j, v := range row {
			e := math.Exp((float64(v) - float64(mx)) * inv)
			out[j] = float32(e)
			sum += e
		}
		s := float32(1 / sum)
		for j := range out {
			out[j] *= s
		}
	}
}

// ForwardAll runs rows×Inputs() values x through the network and returns every
// layer's output after its activation (rows×width each); the last is the model's
// output. x must be finite; use Float32Rows to convert and check a Matrix.
func (m *NeuralSequentialModel) ForwardAll(x []float32, rows int) ([][]float32, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if rows < 0 || len(x) != rows*m.Inputs() {
		return nil, fmt.Errorf("neural sequential: %d input values for %d rows of %d features", len(x), rows, m.Inputs())
	}
	return m.infer(x, rows, true)
}

// Logits returns the class logits of a classifier for rows×Inputs() values x:
// rows×Classes() values whose softmax is the class distribution. For a softmax
// output they are the last layer's pre-activation; for a single sigmoid unit z they
// are [0, z] (softmax([0, z]) = [1-σ(z), σ(z)]).
func (m *NeuralSequentialModel) Logits(x []float32, rows int) ([]float32, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if !m.IsClassifier() {
		return nil, m.notClassifier()
	}
	if rows < 0 || len(x) != rows*m.Inputs() {
		return nil, fmt.Errorf("neural sequential: %d input values for %d rows of %d features", len(x), rows, m.Inputs())
	}
	outs, err := m.infer(x, rows, false)
	if err != nil {
		return nil, err
	}
	z := outs[len(outs)-1]
	if m.Outputs() == 1 {
		two := make([]float32, 2*rows)
		for i, v := range z {
			two[2*i+1] = v
		}
		z = two
	}
	return z, nil
}

func (m *NeuralSequentialModel) notClassifier() error {
	last := m.Layers[len(m.Layers)-1]
	return fmt.Errorf("neural sequential: not a classifier (last layer: %d %s units; expected softmax over >= 2 units or one sigmoid unit)",
		last.Out, last.Activation)
}

// classifierLogits returns the class logits of every row of x, for a classifier.
func (m *NeuralSequentialModel) classifierLogits(x Matrix) ([]float32, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if !m.IsClassifier() {
		return nil, m.notClassifier()
	}
	xs, err := Float32Rows(x, m.Inputs())
	if err != nil {
		return nil, fmt.Errorf("neural sequential: %w", err)
	}
	return m.Logits(xs, x.Rows)
}

// PredictProba returns the class probabilities of every row of x (rows×Classes()).
func (m *NeuralSequentialModel) PredictProba(x Matrix) (Matrix, error) {
	z, err := m.classifierLogits(x)
	if err != nil {
		return Matrix{}, err
	}
	SoftmaxRows(z, z, m.Classes(), 1)
	return float64Matrix(x.Rows, m.Classes(), z), nil
}

// Predict returns the most probable class of every row of x (the first one on
// ties).
func (m *NeuralSequentialModel) Predict(x Matrix) ([]int, error) {
	z, err := m.classifierLogits(x)
	if err != nil {
		return nil, err
	}
	return ArgmaxRows(z, m.Classes()), nil
}

// float64Matrix widens rows×cols float32 values into a Matrix.
func float64Matrix(rows, cols int, v []float32) Matrix {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return Matrix{Rows: rows, Cols: cols, Data: out}
}

// Output returns the raw output of the network (after the last activation) for
// every row of x: the prediction of a regression network.
func (m *NeuralSequentialModel) Output(x Matrix) (Matrix, error) {
	if err := m.Validate(); err != nil {
		return Matrix{}, err
	}
	xs, err := Float32Rows(x, m.Inputs())
	if err != nil {
		return Matrix{}, fmt.Errorf("neural sequential: %w", err)
	}
	outs, err := m.ForwardAll(xs, x.Rows)
	if err != nil {
		return Matrix{}, err
	}
	return float64Matrix(x.Rows, m.Outputs(), outs[len(outs)-1]), nil
}

// Score is the accuracy of the predictions for x against labels y.
func (m *NeuralSequentialModel) Score(x Matrix, y []float64) (float64, error) {
	return score(m.Predict, x, y, Accuracy, "neural sequential: %d rows but %d labels")
}

// ArgmaxRows returns the index of the largest value of every row of width cols
// (the first one on ties).
func ArgmaxRows(z []float32, cols int) []int {
	if cols <= 0 {
		return nil
	}
	out := make([]int, len(z)/cols)
	for i := range out {
		row := z[i*cols : (i+1)*cols]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		out[i] = best
	}
	return out
}

// Clone returns a deep copy of m.
func (m *NeuralSequentialModel) Clone() *NeuralSequentialModel {
	c := &NeuralSequentialModel{Layers: make([]DenseLayer, len(m.Layers))}
	for i, l := range m.Layers {
		l.Weight = append([]float32(nil), l.Weight...)
		l.Bias = append([]float32(nil), l.Bias...)
		c.Layers[i] = l
	}
	return c
}

// Type implements Model.
func (m *NeuralSequentialModel) Type() modeltype.Type { return modeltype.NeuralSequential }

// Config implements Model: {"widths": [...], "activations": [...]}.
func (m *NeuralSequentialModel) Config() map[string]any {
	widths := []any{}
	for _, w := range m.Widths() {
		widths = append(widths, int64(w))
	}
	acts := []any{}
	for _, l := range m.Layers {
		acts = append(acts, string(l.Activation))
	}
	return map[string]any{"widths": widths, "activations": acts}
}

// Tensors implements Model: "layers.{i}.weight" F32 [out, in], "layers.{i}.bias"
// F32 [out], in layer order.
func (m *NeuralSequentialModel) Tensors() []tensor.Tensor {
	out := make([]tensor.Tensor, 0, 2*len(m.Layers))
	for i, l := range m.Layers {
		w := tensor.F32(fmt.Sprintf("layers.%d.weight", i), l.Weight)
		w.Shape = []int64{int64(l.Out), int64(l.In)}
		out = append(out, w, tensor.F32(fmt.Sprintf("layers.%d.bias", i), l.Bias))
	}
	return out
}

func decodeNeural(cfg map[string]any, tensors map[string]tensor.Tensor) (*NeuralSequentialModel, error) {
	rawW, ok := cfg["widths"].([]any)
	if !ok {
		return nil, fmt.Errorf("config \"widths\": %T, expected a list of layer widths", cfg["widths"])
	}
	rawA, ok := cfg["activations"].([]any)
	if !ok {
		return nil, fmt.Errorf("config \"activations\": %T, expected a list of activation names", cfg["activations"])
	}
	if len(rawW) > MaxNeuralLayers+1 {
		return nil, fmt.Errorf("config \"widths\": %d entries, at most %d supported", len(rawW), MaxNeuralLayers+1)
	}
	widths := make([]int, len(rawW))
	for i, v := range rawW {
		n, err := configInt(map[string]any{"w": v}, "w", -1, MaxNeuralWidth)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("config \"widths\"[%d]: %v, expected a whole number in [1,%d]", i, v, MaxNeuralWidth)
		}
		widths[i] = int(n)
	}
	acts := make([]Activation, len(rawA))
	for i, v := range rawA {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("config \"activations\"[%d]: %T, expected a string", i, v)
		}
		acts[i] = Activation(s)
	}
	if err := checkArch(widths, acts); err != nil {
		return nil, err
	}
	names := make([]string, 0, 2*len(acts))
	m := &NeuralSequentialModel{Layers: make([]DenseLayer, len(acts))}
	for i := range m.Layers {
		in, out := widths[i], widths[i+1]
		wn, bn := fmt.Sprintf("layers.%d.weight", i), fmt.Sprintf("layers.%d.bias", i)
		names = append(names, wn, bn)
		t, ok := tensors[wn]
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", wn)
		}
		if len(t.Shape) != 2 || t.Shape[0] != int64(out) || t.Shape[1] != int64(in) {
			return nil, fmt.Errorf("tensor %q: shape %v, expected [%d %d] (widths %v)", wn, t.Shape, out, in, widths)
		}
		w, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		b, err := vectorTensor(tensors, bn, int64(out))
		if err != nil {
			return nil, err
		}
		m.Layers[i] = DenseLayer{In: in, Out: out, Activation: acts[i], Weight: w, Bias: b}
	}
	if len(tensors) != len(names) {
		want := make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
		for k := range tensors {
			if !want[k] {
				return nil, fmt.Errorf("unexpected tensor %q (expected only layers.0..%d weight and bias)", k, len(acts)-1)
			}
		}
	}
	return m, nil
}

// errNoRows is returned when training data has no rows.
var errNoRows = errors.New("no samples")

func init() {
	register(modeltype.NeuralSequential, decodeNeural)
}
