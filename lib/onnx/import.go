package onnx

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/jsonobj"
	"github.com/apr-go/apr/lib/model"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
)

// SourceFormat is the "source_format" provenance of an imported model.
const SourceFormat = "onnx"

// ErrNotONNX is wrapped by the error for bytes that are not an ONNX model.
var ErrNotONNX = errors.New("not an ONNX model")

// Import reads an ONNX model held in memory; see Read.
func Import(b []byte) (*model.NeuralSequentialModel, container.Metadata, error) {
	return Read(bytes.NewReader(b), int64(len(b)))
}

// Read reads an ONNX multilayer perceptron into a NeuralSequential model, with the
// metadata its metadata_props carry (those apr's Export writes; a torch file has
// none) and the provenance of the import. The graph must take one float input
// [N, features] and be a chain of layers from it to its output: Gemm (transA 0), or
// MatMul with an optional Add of a bias, each layer followed by at most one
// activation (Relu, Tanh, Sigmoid, or Softmax over the last axis on the last layer);
// Identity and Flatten (axis 1) pass their input on. A graph with several outputs is
// read up to "probabilities" (or "variable"), as Export writes them. Anything else is
// an error naming the node, its operator and what was expected.
//
// src is read as a stream (see wire.go) and never held whole; size is its length when
// known (a regular file), else -1. Inputs over MaxSize are refused.
func Read(src io.Reader, size int64) (*model.NeuralSequentialModel, container.Metadata, error) {
	var md container.Metadata
	if size > MaxSize {
		return nil, md, fmt.Errorf("%d bytes, more than the cap of %d for an ONNX file", size, MaxSize)
	}
	h := sha256.New()
	d := &decoder{r: bufio.NewReaderSize(io.TeeReader(src, h), 64<<10), limit: MaxSize}
	if size >= 0 {
		d.limit, d.sized = size, true
	}
	mp, err := d.readModel()
	if err != nil {
		return nil, md, err
	}
	if !mp.hasIR || mp.graph == nil {
		return nil, md, fmt.Errorf("%w: no ir_version or no graph (an empty, truncated or foreign file)", ErrNotONNX)
	}
	opset := int64(-1)
	for _, o := range mp.opsets {
		if o.domain == "" || o.domain == "ai.onnx" {
			opset = o.version
		}
	}
	if opset < 7 {
		return nil, md, fmt.Errorf("the model imports no default operator set (ai.onnx) of version 7 or later (found %d)", opset)
	}
	r := &reader{g: mp.graph, opset: opset, inits: map[string]*tensorMsg{}, producer: map[string]*nodeMsg{}, uses: map[string]int{}}
	m, err := r.read()
	if err != nil {
		return nil, md, err
	}
	md = metadataFrom(mp.props)
	if md.Provenance == nil {
		md.Provenance = map[string]any{}
	}
	md.Provenance["source_format"] = SourceFormat
	md.Provenance["source_sha256"] = hex.EncodeToString(h.Sum(nil))
	md.Provenance["source_opset"] = opset
	md.Provenance["source_ir_version"] = mp.irVer
	if p := strings.TrimSpace(mp.producer[0] + " " + mp.producer[1]); p != "" {
		md.Provenance["source_producer"] = p
	}
	return m, md, nil
}

// reader walks a graph backwards from its output to its input.
type reader struct {
	g        *graphMsg
	opset    int64
	inits    map[string]*tensorMsg
	producer map[string]*nodeMsg
	uses     map[string]int // node inputs reading each tensor
}

// step is one layer's part found on the way: a dense transform or an activation.
type step struct {
	node  *nodeMsg
	dense *model.DenseLayer // nil for an activation
	act   model.Activation
}

func nodeName(n *nodeMsg) string {
	if n.name != "" {
		return fmt.Sprintf("node %q (%s)", n.name, n.opType)
	}
	out := ""
	if len(n.outputs) > 0 {
		out = n.outputs[0]
	}
	return fmt.Sprintf("the %s node of output %q", n.opType, out)
}

func (r *reader) read() (*model.NeuralSequentialModel, error) {
	for _, t := range r.g.inits {
		r.inits[t.name] = t
	}
	for _, n := range r.g.nodes {
		if d := n.domain; d != "" && d != "ai.onnx" {
			return nil, fmt.Errorf("%s: operator %s of domain %q is not supported (only the default ai.onnx operators of an MLP)", nodeName(n), n.opType, d)
		}
		for _, o := range n.outputs {
			if p := r.producer[o]; p != nil && o != "" {
				// ONNX graphs are single static assignment; the last node won here
				return nil, fmt.Errorf("%s and %s both write tensor %q (a graph names each tensor once)", nodeName(p), nodeName(n), o)
			}
			if o != "" {
				r.producer[o] = n
			}
		}
		for _, in := range n.inputs {
			r.uses[in]++
		}
	}
	in, features, err := r.input()
	if err != nil {
		return nil, err
	}
	out, err := r.output()
	if err != nil {
		return nil, err
	}
	var steps []step // from the output back to the input
	cur, head := out, false
	for visited := 0; cur != in; visited++ {
		n := r.producer[cur]
		if n == nil {
			return nil, fmt.Errorf("tensor %q is neither the input %q nor a node's output (a truncated graph?)", cur, in)
		}
		if visited > len(r.g.nodes) {
			return nil, fmt.Errorf("the nodes before output %q form a cycle", out)
		}
		var s step
		top := cur == out
		if s, cur, err = r.step(n, top); err != nil {
			return nil, err
		}
		head = head || top && n.opType == "Concat"
		if s.node != nil {
			steps = append(steps, s)
		}
	}
	m := &model.NeuralSequentialModel{}
	var prev *nodeMsg
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.dense != nil {
			if n := len(m.Layers); n > 0 && m.Layers[n-1].Out != s.dense.In {
				return nil, fmt.Errorf("%s: a layer of %d inputs after a layer of %d units", nodeName(s.node), s.dense.In, m.Layers[n-1].Out)
			}
			if len(m.Layers) == 0 && features > 0 && s.dense.In != features {
				return nil, fmt.Errorf("%s: a layer of %d inputs on the input %q of %d features", nodeName(s.node), s.dense.In, in, features)
			}
			if len(m.Layers) >= model.MaxNeuralLayers {
				return nil, fmt.Errorf("more than %d layers", model.MaxNeuralLayers)
			}
			m.Layers = append(m.Layers, *s.dense)
			prev = s.node
			continue
		}
		n := len(m.Layers)
		switch {
		case n == 0:
			return nil, fmt.Errorf("%s: an activation before the first Gemm or MatMul (NeuralSequential layers are a linear map, then an activation)", nodeName(s.node))
		case m.Layers[n-1].Activation != model.ActIdentity:
			return nil, fmt.Errorf("%s: a second activation after %s (a NeuralSequential layer has one)", nodeName(s.node), nodeName(prev))
		case s.act == model.ActSoftmax && i != 0:
			return nil, fmt.Errorf("%s: Softmax must be the last operation (it is allowed on the output layer only)", nodeName(s.node))
		}
		m.Layers[n-1].Activation = s.act
		prev = s.node
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("the output %q is the input: no layers", out)
	}
	if last := m.Layers[len(m.Layers)-1]; head && last.Out != 1 {
		return nil, fmt.Errorf("output %q: [1 - p, p] of a Sigmoid of %d units, expected one unit (a binary classifier)", out, last.Out)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// input is the graph's one input that is not an initializer: float, [N, features].
// features is 0 when the dimension is symbolic.
func (r *reader) input() (string, int, error) {
	var ins []*valueMsg
	var names []string
	for _, v := range r.g.inputs {
		if _, ok := r.inits[v.name]; !ok {
			ins = append(ins, v)
			names = append(names, v.name)
		}
	}
	if len(ins) != 1 {
		return "", 0, fmt.Errorf("the graph has %d inputs %q besides its initializers, expected one: the features", len(ins), firstNames(names))
	}
	v := ins[0]
	if !v.tensor {
		return "", 0, fmt.Errorf("input %q is not a tensor", v.name)
	}
	if v.elemType != int32(pb.TensorProto_FLOAT) {
		return "", 0, fmt.Errorf("input %q has element type %s, expected float (float32)", v.name, elemName(v.elemType))
	}
	features := 0
	if v.hasShape {
		if len(v.dims) != 2 {
			return "", 0, fmt.Errorf("input %q has %d dimensions, expected 2: [batch, features]", v.name, len(v.dims))
		}
		if d := v.dims[1]; d.hasValue {
			if d.value < 1 || d.value > model.MaxNeuralWidth {
				return "", 0, fmt.Errorf("input %q has %d features, expected [1,%d]", v.name, d.value, model.MaxNeuralWidth)
			}
			features = int(d.value)
		}
	}
	return v.name, features, nil
}

// output is the graph's one output, or "probabilities" (else "variable") of several.
func (r *reader) output() (string, error) {
	var names []string
	for _, v := range r.g.outputs {
		names = append(names, v.name)
	}
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0:
		return "", errors.New("the graph has no output (a truncated file?)")
	}
	for _, want := range []string{OutputProbabilities, OutputVariable} {
		if slices.Contains(names, want) {
			return want, nil
		}
	}
	return "", fmt.Errorf("the graph has %d outputs %q, expected one (or %q among them)", len(names), firstNames(names), OutputProbabilities)
}

// firstNames is the start of a list of names for an error: a file may hold
// thousands.
func firstNames(names []string) []string {
	if len(names) > 8 {
		return append(names[:8:8], "...")
	}
	return names
}

var activations = map[string]model.Activation{
	"Relu": model.ActReLU, "Tanh": model.ActTanh, "Sigmoid": model.ActSigmoid, "Softmax": model.ActSoftmax,
}

// step reads node n, the producer of the tensor being walked back; it returns what
// the node does and the tensor before it. top is whether n makes the graph's output.
func (r *reader) step(n *nodeMsg, top bool) (step, string, error) {
	op := n.opType
	if len(n.inputs) == 0 || n.inputs[0] == "" {
		return step{}, "", fmt.Errorf("%s has no input", nodeName(n))
	}
	if act, ok := activations[op]; ok {
		if err := r.onlyAttrs(n, "axis"); err != nil {
			return step{}, "", err
		}
		if act == model.ActSoftmax {
			axis := int64(-1)
			if r.opset < 13 {
				axis = 1 // before opset 13, Softmax flattens from axis (default 1) on
			}
			axis = attrI(n, "axis", axis)
			if axis != 1 && axis != -1 {
				return step{}, "", fmt.Errorf("%s: axis %d, expected the class axis of [batch, classes] (1 or -1)", nodeName(n), axis)
			}
		}
		return step{node: n, act: act}, n.inputs[0], nil
	}
	switch op {
	case "Identity":
		return step{}, n.inputs[0], nil
	case "Flatten":
		if axis := attrI(n, "axis", 1); axis != 1 {
			return step{}, "", fmt.Errorf("%s: axis %d, expected 1 (a no-op on [batch, features])", nodeName(n), axis)
		}
		return step{}, n.inputs[0], nil
	case "Gemm":
		return r.gemm(n)
	case "MatMul":
		return r.matmul(n, nil, nil)
	case "Add":
		return r.add(n)
	case "Concat":
		if top {
			return r.binaryHead(n)
		}
	}
	return step{}, "", fmt.Errorf("%s: operator %s is not supported (an MLP of Gemm or MatMul+Add layers with Relu, Tanh, Sigmoid or a final Softmax)", nodeName(n), op)
}

func attrI(n *nodeMsg, name string, def int64) int64 {
	for _, a := range n.attrs {
		if a.name == name {
			return a.i
		}
	}
	return def
}

func attrF(n *nodeMsg, name string, def float32) float32 {
	for _, a := range n.attrs {
		if a.name == name {
			return a.f
		}
	}
	return def
}

// attrKinds are the attributes the importer reads: FLOAT (1) or INT (2), as the
// operators define them.
var attrKinds = map[string]int64{"alpha": 1, "beta": 1, "axis": 2, "transA": 2, "transB": 2}

// onlyAttrs refuses an attribute the importer does not know the meaning of, one given
// twice, and one of another type than its operator defines (an INT alpha was read as
// 0, a FLOAT transB as 0: the weights zeroed or left untransposed, where onnxruntime
// refuses the model).
func (r *reader) onlyAttrs(n *nodeMsg, known ...string) error {
	seen := map[string]bool{}
	for _, a := range n.attrs {
		if !slices.Contains(known, a.name) {
			return fmt.Errorf("%s: attribute %q is not supported", nodeName(n), a.name)
		}
		if seen[a.name] {
			return fmt.Errorf("%s: attribute %q is given twice", nodeName(n), a.name)
		}
		seen[a.name] = true
		want := attrKinds[a.name]
		has := a.hasF && want == 1 || a.hasI && want == 2
		if !has || a.typ != 0 && a.typ != want {
			kind := map[int64]string{1: "FLOAT", 2: "INT"}
			return fmt.Errorf("%s: attribute %q is not %s (type %d, f set %v, i set %v)", nodeName(n), a.name, kind[want], a.typ, a.hasF, a.hasI)
		}
	}
	return nil
}

// gemm reads Y = alpha·A·op(B) + beta·C with B (and C) initializers.
func (r *reader) gemm(n *nodeMsg) (step, string, error) {
	if err := r.onlyAttrs(n, "alpha", "beta", "transA", "transB"); err != nil {
		return step{}, "", err
	}
	if len(n.inputs) < 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected A, B and an optional C", nodeName(n), len(n.inputs))
	}
	if attrI(n, "transA", 0) != 0 {
		return step{}, "", fmt.Errorf("%s: transA=1, expected the features as A untransposed", nodeName(n))
	}
	transB := attrI(n, "transB", 0) != 0
	alpha, beta := attrF(n, "alpha", 1), attrF(n, "beta", 1)
	l, err := r.weight(n, n.inputs[1], transB)
	if err != nil {
		return step{}, "", err
	}
	if len(n.inputs) > 2 && n.inputs[2] != "" {
		if l.Bias, err = r.bias(n, n.inputs[2], l.Out); err != nil {
			return step{}, "", err
		}
	}
	// A value checked finite may not stay so scaled (alpha 3e38 gave infinite weights,
	// a NaN alpha NaN ones).
	scale := func(v []float32, by float32, what, name string) error {
		if by == 1 {
			return nil
		}
		for i := range v {
			if v[i] *= by; math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
				return fmt.Errorf("%s: %s %v times value %d of initializer %q is %v, expected finite weights", nodeName(n), what, by, i, name, v[i])
			}
		}
		return nil
	}
	if err := scale(l.Weight, alpha, "alpha", n.inputs[1]); err != nil {
		return step{}, "", err
	}
	if len(n.inputs) > 2 && n.inputs[2] != "" {
		if err := scale(l.Bias, beta, "beta", n.inputs[2]); err != nil {
			return step{}, "", err
		}
	}
	return step{node: n, dense: l}, n.inputs[0], nil
}

// matmul reads Y = A·B (+ bias, when add, its Add node, gave one).
func (r *reader) matmul(n *nodeMsg, add *nodeMsg, bias *string) (step, string, error) {
	if len(n.inputs) != 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected 2", nodeName(n), len(n.inputs))
	}
	l, err := r.weight(n, n.inputs[1], false)
	if err != nil {
		return step{}, "", err
	}
	if bias != nil {
		if l.Bias, err = r.bias(add, *bias, l.Out); err != nil {
			return step{}, "", err
		}
	}
	return step{node: n, dense: l}, n.inputs[0], nil
}

// add reads the bias Add after a MatMul: one input an initializer, the other the
// MatMul's output.
func (r *reader) add(n *nodeMsg) (step, string, error) {
	if len(n.inputs) != 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected 2", nodeName(n), len(n.inputs))
	}
	x, b := n.inputs[0], n.inputs[1]
	if _, ok := r.inits[x]; ok {
		x, b = b, x
	}
	if _, ok := r.inits[b]; !ok {
		return step{}, "", fmt.Errorf("%s: neither input is an initializer; expected the bias of a MatMul layer (residual and other Adds are not supported)", nodeName(n))
	}
	mm := r.producer[x]
	if mm == nil || mm.opType != "MatMul" {
		return step{}, "", fmt.Errorf("%s: adds initializer %q to %q, expected to a MatMul's output", nodeName(n), b, x)
	}
	return r.matmul(mm, n, &b)
}

// binaryHead reads probabilities = Concat(1 - p, p) over a one-unit Sigmoid p, the
// two-column output Export writes for a binary classifier; the walk goes on from p.
func (r *reader) binaryHead(n *nodeMsg) (step, string, error) {
	if len(n.inputs) == 2 {
		if axis := attrI(n, "axis", 0); axis == 1 || axis == -1 {
			sub, p := r.producer[n.inputs[0]], n.inputs[1]
			if sub != nil && sub.opType == "Sub" && len(sub.inputs) == 2 && sub.inputs[1] == p {
				if one, err := r.floats(sub, sub.inputs[0]); err == nil && len(one.v) == 1 && one.v[0] == 1 {
					if sg := r.producer[p]; sg != nil && sg.opType == "Sigmoid" {
						return step{}, p, nil
					}
				}
			}
		}
	}
	return step{}, "", fmt.Errorf("%s: operator Concat is supported only as [1 - p, p] of a Sigmoid output", nodeName(n))
}

// weight reads initializer name as a dense layer's weight: [out, in] when trans,
// else [in, out] (MatMul's layout), into a layer with zero bias.
func (r *reader) weight(n *nodeMsg, name string, trans bool) (*model.DenseLayer, error) {
	t, err := r.floats(n, name)
	if err != nil {
		return nil, err
	}
	// a zero dimension holds no data whatever the other: refused before a bias is made
	if len(t.dims) != 2 || min(t.dims[0], t.dims[1]) < 1 || max(t.dims[0], t.dims[1]) > model.MaxNeuralWidth {
		return nil, fmt.Errorf("%s: weight initializer %q has shape %v, expected 2 dimensions in [1,%d]", nodeName(n), name, t.dims, model.MaxNeuralWidth)
	}
	rows, cols := int(t.dims[0]), int(t.dims[1])
	l := &model.DenseLayer{Activation: model.ActIdentity}
	if trans {
		l.Out, l.In, l.Weight = rows, cols, t.v
	} else {
		l.In, l.Out, l.Weight = rows, cols, transpose(t.v, rows, cols)
	}
	l.Bias = make([]float32, l.Out)
	return l, nil
}

// transpose turns the rows x cols matrix a (row-major) into its transpose in place,
// following each cycle of the permutation, so that a layer of a file near MaxSize is
// not held twice.
func transpose(a []float32, rows, cols int) []float32 {
	n := len(a)
	done := make([]uint64, (n+63)/64)
	for start := range n {
		if done[start/64]&(1<<(start%64)) != 0 {
			continue
		}
		// the value at i = r*cols + c goes to c*rows + r
		i, v := start, a[start]
		for {
			j := i%cols*rows + i/cols
			done[j/64] |= 1 << (j % 64)
			a[j], v = v, a[j]
			if i = j; i == start {
				break
			}
		}
	}
	return a
}

// bias reads initializer name as the bias of a layer of out units: [out], [1, out],
// or one value for all.
func (r *reader) bias(n *nodeMsg, name string, out int) ([]float32, error) {
	t, err := r.floats(n, name)
	if err != nil {
		return nil, err
	}
	switch {
	case len(t.v) == out && (len(t.dims) == 1 || len(t.dims) == 2 && t.dims[0] == 1):
		return t.v, nil
	case len(t.v) == 1 && len(t.dims) <= 2:
		return slices.Repeat(t.v, out), nil
	}
	return nil, fmt.Errorf("%s: bias initializer %q has shape %v, expected [%d]", nodeName(n), name, t.dims, out)
}

type floatTensor struct {
	dims []int64
	v    []float32
}

// floats returns initializer name's values (float or double, decoded and their count
// checked as the file was read), checking that every value is finite. They are the
// caller's to change (transpose, scale): a copy when several nodes read them.
func (r *reader) floats(n *nodeMsg, name string) (floatTensor, error) {
	t, ok := r.inits[name]
	if !ok {
		return floatTensor{}, fmt.Errorf("%s: input %q is not an initializer; expected constant weights", nodeName(n), name)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: initializer %q: %s", nodeName(n), name, fmt.Sprintf(format, args...))
	}
	if t.external {
		return floatTensor{}, bad("its data is in an external file, which is not supported (save the model with its weights inside)")
	}
	if dt := t.dataType; dt != int32(pb.TensorProto_FLOAT) && dt != int32(pb.TensorProto_DOUBLE) {
		return floatTensor{}, bad("element type %s, expected float or double", elemName(dt))
	}
	for i, f := range t.v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return floatTensor{}, bad("value %d is %v, expected finite weights", i, f)
		}
	}
	v := t.v
	if r.uses[name] > 1 {
		v = slices.Clone(v)
	}
	return floatTensor{dims: t.dims, v: v}, nil
}

func elemName(t int32) string {
	if s, ok := pb.TensorProto_DataType_name[t]; ok {
		return strings.ToLower(s)
	}
	return fmt.Sprintf("%d", t)
}

// metadataFrom reads back the metadata Export writes into metadata_props: strings
// as they are, the maps from JSON; other keys go to Custom. The model type and
// configuration are the imported model's own, so they are dropped.
func metadataFrom(props [][2]string) container.Metadata {
	var md container.Metadata
	other := map[string]any{}
	for _, p := range props {
		k, v := p[0], p[1]
		mp, err := jsonobj.Decode(v)
		isMap := err == nil
		switch k {
		case PropModelType, "model_config", "created_at", "producer":
		case "name":
			md.Name = v
		case "description":
			md.Description = v
		case "license":
			md.License = v
		case "hyperparameters", "metrics", "custom", "provenance":
			if !isMap {
				mp = map[string]any{"value": v}
			}
			switch k {
			case "hyperparameters":
				md.Hyperparameters = mp
			case "metrics":
				md.Metrics = mp
			case "custom":
				md.Custom = mp
			case "provenance":
				md.Provenance = mp
			}
		default:
			other[k] = v
		}
	}
	if len(other) > 0 {
		if md.Custom == nil {
			md.Custom = map[string]any{}
		}
		for k, v := range other {
			if _, ok := md.Custom[k]; !ok {
				md.Custom[k] = v
			}
		}
	}
	return md
}
