package onnx

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/jsonobj"
	"github.com/apr-go/apr/lib/model"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
)

// SourceFormat is the "source_format" provenance of an imported model.
const SourceFormat = "onnx"

// MaxSize is the largest ONNX file Import reads: protobuf's own limit on a message.
const MaxSize = 2<<30 - 1

// ErrNotONNX is wrapped by the error for bytes that are not an ONNX model.
var ErrNotONNX = errors.New("not an ONNX model")

// Import reads an ONNX multilayer perceptron into a NeuralSequential model, with the
// metadata its metadata_props carry (those apr's Export writes; a torch file has
// none) and the provenance of the import. The graph must take one float input
// [N, features] and be a chain of layers from it to its output: Gemm (transA 0), or
// MatMul with an optional Add of a bias, each layer followed by at most one
// activation (Relu, Tanh, Sigmoid, or Softmax over the last axis on the last layer);
// Identity and Flatten (axis 1) pass their input on. A graph with several outputs is
// read up to "probabilities" (or "variable"), as Export writes them. Anything else is
// an error naming the node, its operator and what was expected.
func Import(b []byte) (*model.NeuralSequentialModel, container.Metadata, error) {
	var md container.Metadata
	if len(b) > MaxSize {
		return nil, md, fmt.Errorf("%w: %d bytes, over protobuf's limit of %d", ErrNotONNX, len(b), MaxSize)
	}
	var mp pb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &mp); err != nil {
		return nil, md, fmt.Errorf("%w (truncated or damaged protobuf): %v", ErrNotONNX, err)
	}
	if mp.IrVersion == nil || mp.Graph == nil {
		return nil, md, fmt.Errorf("%w: no ir_version or no graph (an empty, truncated or foreign file)", ErrNotONNX)
	}
	opset := int64(-1)
	for _, o := range mp.OpsetImport {
		if d := o.GetDomain(); d == "" || d == "ai.onnx" {
			opset = o.GetVersion()
		}
	}
	if opset < 7 {
		return nil, md, fmt.Errorf("the model imports no default operator set (ai.onnx) of version 7 or later (found %d)", opset)
	}
	r := &reader{g: mp.Graph, opset: opset, inits: map[string]*pb.TensorProto{}, producer: map[string]*pb.NodeProto{}}
	m, err := r.read()
	if err != nil {
		return nil, md, err
	}
	md = metadataFrom(mp.MetadataProps)
	if md.Provenance == nil {
		md.Provenance = map[string]any{}
	}
	sum := sha256.Sum256(b)
	md.Provenance["source_format"] = SourceFormat
	md.Provenance["source_sha256"] = hex.EncodeToString(sum[:])
	md.Provenance["source_opset"] = opset
	md.Provenance["source_ir_version"] = mp.GetIrVersion()
	if p := strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion()); p != "" {
		md.Provenance["source_producer"] = p
	}
	return m, md, nil
}

// reader walks a graph backwards from its output to its input.
type reader struct {
	g        *pb.GraphProto
	opset    int64
	inits    map[string]*pb.TensorProto
	producer map[string]*pb.NodeProto
}

// step is one layer's part found on the way: a dense transform or an activation.
type step struct {
	node  *pb.NodeProto
	dense *model.DenseLayer // nil for an activation
	act   model.Activation
}

func nodeName(n *pb.NodeProto) string {
	if n.GetName() != "" {
		return fmt.Sprintf("node %q (%s)", n.GetName(), n.GetOpType())
	}
	out := ""
	if len(n.Output) > 0 {
		out = n.Output[0]
	}
	return fmt.Sprintf("the %s node of output %q", n.GetOpType(), out)
}

func (r *reader) read() (*model.NeuralSequentialModel, error) {
	for _, t := range r.g.Initializer {
		r.inits[t.GetName()] = t
	}
	for _, n := range r.g.Node {
		if d := n.GetDomain(); d != "" && d != "ai.onnx" {
			return nil, fmt.Errorf("%s: operator %s of domain %q is not supported (only the default ai.onnx operators of an MLP)", nodeName(n), n.GetOpType(), d)
		}
		for _, o := range n.Output {
			if o != "" {
				r.producer[o] = n
			}
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
		if visited > len(r.g.Node) {
			return nil, fmt.Errorf("the nodes before output %q form a cycle", out)
		}
		var s step
		top := cur == out
		if s, cur, err = r.step(n, top); err != nil {
			return nil, err
		}
		head = head || top && n.GetOpType() == "Concat"
		if s.node != nil {
			steps = append(steps, s)
		}
	}
	m := &model.NeuralSequentialModel{}
	var prev *pb.NodeProto
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
	var ins []*pb.ValueInfoProto
	var names []string
	for _, v := range r.g.Input {
		if _, ok := r.inits[v.GetName()]; !ok {
			ins = append(ins, v)
			names = append(names, v.GetName())
		}
	}
	if len(ins) != 1 {
		return "", 0, fmt.Errorf("the graph has %d inputs %q besides its initializers, expected one: the features", len(ins), names)
	}
	v := ins[0]
	tt := v.GetType().GetTensorType()
	if tt == nil {
		return "", 0, fmt.Errorf("input %q is not a tensor", v.GetName())
	}
	if et := tt.GetElemType(); et != int32(pb.TensorProto_FLOAT) {
		return "", 0, fmt.Errorf("input %q has element type %s, expected float (float32)", v.GetName(), elemName(et))
	}
	features := 0
	if sh := tt.GetShape(); sh != nil {
		if len(sh.Dim) != 2 {
			return "", 0, fmt.Errorf("input %q has %d dimensions, expected 2: [batch, features]", v.GetName(), len(sh.Dim))
		}
		if d, ok := sh.Dim[1].Value.(*pb.TensorShapeProto_Dimension_DimValue); ok {
			if d.DimValue < 1 || d.DimValue > model.MaxNeuralWidth {
				return "", 0, fmt.Errorf("input %q has %d features, expected [1,%d]", v.GetName(), d.DimValue, model.MaxNeuralWidth)
			}
			features = int(d.DimValue)
		}
	}
	return v.GetName(), features, nil
}

// output is the graph's one output, or "probabilities" (else "variable") of several.
func (r *reader) output() (string, error) {
	var names []string
	for _, v := range r.g.Output {
		names = append(names, v.GetName())
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
	return "", fmt.Errorf("the graph has %d outputs %q, expected one (or %q among them)", len(names), names, OutputProbabilities)
}

var activations = map[string]model.Activation{
	"Relu": model.ActReLU, "Tanh": model.ActTanh, "Sigmoid": model.ActSigmoid, "Softmax": model.ActSoftmax,
}

// step reads node n, the producer of the tensor being walked back; it returns what
// the node does and the tensor before it. top is whether n makes the graph's output.
func (r *reader) step(n *pb.NodeProto, top bool) (step, string, error) {
	op := n.GetOpType()
	if len(n.Input) == 0 || n.Input[0] == "" {
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
		return step{node: n, act: act}, n.Input[0], nil
	}
	switch op {
	case "Identity":
		return step{}, n.Input[0], nil
	case "Flatten":
		if axis := attrI(n, "axis", 1); axis != 1 {
			return step{}, "", fmt.Errorf("%s: axis %d, expected 1 (a no-op on [batch, features])", nodeName(n), axis)
		}
		return step{}, n.Input[0], nil
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

func attrI(n *pb.NodeProto, name string, def int64) int64 {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a.GetI()
		}
	}
	return def
}

func attrF(n *pb.NodeProto, name string, def float32) float32 {
	for _, a := range n.Attribute {
		if a.GetName() == name {
			return a.GetF()
		}
	}
	return def
}

// onlyAttrs refuses an attribute the importer does not know the meaning of.
func (r *reader) onlyAttrs(n *pb.NodeProto, known ...string) error {
	for _, a := range n.Attribute {
		if !slices.Contains(known, a.GetName()) {
			return fmt.Errorf("%s: attribute %q is not supported", nodeName(n), a.GetName())
		}
	}
	return nil
}

// gemm reads Y = alpha·A·op(B) + beta·C with B (and C) initializers.
func (r *reader) gemm(n *pb.NodeProto) (step, string, error) {
	if err := r.onlyAttrs(n, "alpha", "beta", "transA", "transB"); err != nil {
		return step{}, "", err
	}
	if len(n.Input) < 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected A, B and an optional C", nodeName(n), len(n.Input))
	}
	if attrI(n, "transA", 0) != 0 {
		return step{}, "", fmt.Errorf("%s: transA=1, expected the features as A untransposed", nodeName(n))
	}
	transB := attrI(n, "transB", 0) != 0
	alpha, beta := attrF(n, "alpha", 1), attrF(n, "beta", 1)
	l, err := r.weight(n, n.Input[1], transB)
	if err != nil {
		return step{}, "", err
	}
	if len(n.Input) > 2 && n.Input[2] != "" {
		if l.Bias, err = r.bias(n, n.Input[2], l.Out); err != nil {
			return step{}, "", err
		}
	}
	if alpha != 1 {
		for i := range l.Weight {
			l.Weight[i] *= alpha
		}
	}
	if beta != 1 {
		for i := range l.Bias {
			l.Bias[i] *= beta
		}
	}
	return step{node: n, dense: l}, n.Input[0], nil
}

// matmul reads Y = A·B (+ bias, when add, its Add node, gave one).
func (r *reader) matmul(n *pb.NodeProto, add *pb.NodeProto, bias *string) (step, string, error) {
	if len(n.Input) != 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected 2", nodeName(n), len(n.Input))
	}
	l, err := r.weight(n, n.Input[1], false)
	if err != nil {
		return step{}, "", err
	}
	if bias != nil {
		if l.Bias, err = r.bias(add, *bias, l.Out); err != nil {
			return step{}, "", err
		}
	}
	return step{node: n, dense: l}, n.Input[0], nil
}

// add reads the bias Add after a MatMul: one input an initializer, the other the
// MatMul's output.
func (r *reader) add(n *pb.NodeProto) (step, string, error) {
	if len(n.Input) != 2 {
		return step{}, "", fmt.Errorf("%s: %d inputs, expected 2", nodeName(n), len(n.Input))
	}
	x, b := n.Input[0], n.Input[1]
	if _, ok := r.inits[x]; ok {
		x, b = b, x
	}
	if _, ok := r.inits[b]; !ok {
		return step{}, "", fmt.Errorf("%s: neither input is an initializer; expected the bias of a MatMul layer (residual and other Adds are not supported)", nodeName(n))
	}
	mm := r.producer[x]
	if mm == nil || mm.GetOpType() != "MatMul" {
		return step{}, "", fmt.Errorf("%s: adds initializer %q to %q, expected to a MatMul's output", nodeName(n), b, x)
	}
	return r.matmul(mm, n, &b)
}

// binaryHead reads probabilities = Concat(1 - p, p) over a one-unit Sigmoid p, the
// two-column output Export writes for a binary classifier; the walk goes on from p.
func (r *reader) binaryHead(n *pb.NodeProto) (step, string, error) {
	if len(n.Input) == 2 {
		if axis := attrI(n, "axis", 0); axis == 1 || axis == -1 {
			sub, p := r.producer[n.Input[0]], n.Input[1]
			if sub != nil && sub.GetOpType() == "Sub" && len(sub.Input) == 2 && sub.Input[1] == p {
				if one, err := r.floats(sub, sub.Input[0]); err == nil && len(one.v) == 1 && one.v[0] == 1 {
					if sg := r.producer[p]; sg != nil && sg.GetOpType() == "Sigmoid" {
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
func (r *reader) weight(n *pb.NodeProto, name string, trans bool) (*model.DenseLayer, error) {
	t, err := r.floats(n, name)
	if err != nil {
		return nil, err
	}
	if len(t.dims) != 2 {
		return nil, fmt.Errorf("%s: weight initializer %q has shape %v, expected 2 dimensions", nodeName(n), name, t.dims)
	}
	rows, cols := int(t.dims[0]), int(t.dims[1])
	l := &model.DenseLayer{Activation: model.ActIdentity}
	if trans {
		l.Out, l.In, l.Weight = rows, cols, t.v
	} else {
		l.In, l.Out = rows, cols
		l.Weight = make([]float32, len(t.v))
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				l.Weight[j*rows+i] = t.v[i*cols+j]
			}
		}
	}
	l.Bias = make([]float32, l.Out)
	return l, nil
}

// bias reads initializer name as the bias of a layer of out units: [out], [1, out],
// or one value for all.
func (r *reader) bias(n *pb.NodeProto, name string, out int) ([]float32, error) {
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

// floats decodes initializer name (float or double, raw_data or the typed field),
// checking its size and that every value is finite.
func (r *reader) floats(n *pb.NodeProto, name string) (floatTensor, error) {
	t, ok := r.inits[name]
	if !ok {
		return floatTensor{}, fmt.Errorf("%s: input %q is not an initializer; expected constant weights", nodeName(n), name)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: initializer %q: %s", nodeName(n), name, fmt.Sprintf(format, args...))
	}
	if t.GetDataLocation() == pb.TensorProto_EXTERNAL {
		return floatTensor{}, bad("its data is in an external file, which is not supported (save the model with its weights inside)")
	}
	count := int64(1)
	for _, d := range t.Dims {
		if d < 0 || d > model.MaxNeuralParams || count*d > model.MaxNeuralParams {
			return floatTensor{}, bad("shape %v, expected at most %d values", t.Dims, model.MaxNeuralParams)
		}
		count *= d
	}
	var v []float32
	switch dt := t.GetDataType(); dt {
	case int32(pb.TensorProto_FLOAT):
		switch {
		case t.RawData != nil:
			if int64(len(t.RawData)) != 4*count {
				return floatTensor{}, bad("%d bytes of raw data for shape %v, expected %d", len(t.RawData), t.Dims, 4*count)
			}
			v = make([]float32, count)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.RawData[4*i:]))
			}
		case int64(len(t.FloatData)) == count:
			v = append([]float32(nil), t.FloatData...)
		default:
			return floatTensor{}, bad("%d values for shape %v", len(t.FloatData), t.Dims)
		}
	case int32(pb.TensorProto_DOUBLE):
		var d []float64
		switch {
		case t.RawData != nil:
			if int64(len(t.RawData)) != 8*count {
				return floatTensor{}, bad("%d bytes of raw data for shape %v, expected %d", len(t.RawData), t.Dims, 8*count)
			}
			d = make([]float64, count)
			for i := range d {
				d[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.RawData[8*i:]))
			}
		case int64(len(t.DoubleData)) == count:
			d = t.DoubleData
		default:
			return floatTensor{}, bad("%d values for shape %v", len(t.DoubleData), t.Dims)
		}
		v = make([]float32, count)
		for i, f := range d {
			v[i] = float32(f)
		}
	default:
		return floatTensor{}, bad("element type %s, expected float or double", elemName(dt))
	}
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return floatTensor{}, bad("value %d is %v, expected finite weights", i, f)
		}
	}
	return floatTensor{dims: t.Dims, v: v}, nil
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
func metadataFrom(props []*pb.StringStringEntryProto) container.Metadata {
	var md container.Metadata
	other := map[string]any{}
	for _, p := range props {
		k, v := p.GetKey(), p.GetValue()
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
