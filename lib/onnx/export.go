// Package onnx converts lib/model's models to and from ONNX (docs/ONNX.md).
//
// Export writes a LinearRegression, a LogisticRegression (binary or multinomial) or
// a NeuralSequential as an ONNX model of IR version 8 and opset 13 in standard
// operators only (Gemm, Relu, Tanh, Sigmoid, Softmax, ArgMax, ...), with inputs and
// outputs named as skl2onnx names them: "float_input" (float32 [N, features], N
// dynamic); "variable" for a regression; "label" (int64 [N]) and "probabilities"
// (float32 [N, classes]) for a classifier. The APR metadata travels in
// metadata_props.
//
// Import reads the multilayer perceptrons torch.onnx.export writes (Gemm, or MatMul
// and Add, each layer followed by at most one of Relu, Tanh, Sigmoid and, last,
// Softmax) into a NeuralSequential; any other operator is an error naming it.
//
// Export builds google.golang.org/protobuf's messages, generated from a subset of
// ONNX's IR (internal/onnxpb); Import reads the protobuf wire format itself, as a
// stream with every length checked before it is used (wire.go).
//
// Layer: models to and from a file format, like lib/modelfile: on lib/model and the
// metadata of lib/container.
package onnx

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
	"github.com/apr-go/apr/lib/version"
)

// What Export writes.
const (
	// IRVersion is the ONNX IR version of exported models (ONNX 1.10 to 1.12).
	IRVersion = 8
	// Opset is the version of the default operator set (ai.onnx) they import.
	Opset = 13
	// InputName is the name of the features input, float32 [N, features].
	InputName = "float_input"
	// The outputs: a regression's values, float32 [N, outputs]; a classifier's class
	// labels, int64 [N], and class probabilities, float32 [N, classes].
	OutputVariable      = "variable"
	OutputLabel         = "label"
	OutputProbabilities = "probabilities"
	// BatchDim is the symbolic name of the dynamic first dimension.
	BatchDim = "N"
	// ProducerName is written in ModelProto.producer_name.
	ProducerName = "apr"
)

// Metadata keys of metadata_props besides the APR metadata's own ("name",
// "description", "metrics", ...).
const (
	// PropModelType is the APR model type of the exported model.
	PropModelType = "model_type"
)

// Types are the model types Export writes.
var Types = []modeltype.Type{modeltype.LinearRegression, modeltype.LogisticRegression, modeltype.NeuralSequential}

// Supported returns nil for a model type Export writes, else an error naming the
// ones it does.
func Supported(t modeltype.Type) error {
	if slices.Contains(Types, t) {
		return nil
	}
	return fmt.Errorf("a %v model has no ONNX export in apr (supported: LinearRegression, LogisticRegression, NeuralSequential)", t)
}

// Export writes m as an ONNX model to w, with md in metadata_props. Nothing is
// written unless the whole model was built.
func Export(w io.Writer, m model.Model, md container.Metadata) error {
	b, err := Marshal(m, md)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Marshal returns the bytes of m as an ONNX model (see Export).
func Marshal(m model.Model, md container.Metadata) ([]byte, error) {
	mp, err := Build(m, md)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(mp)
}

// Build returns m as an ONNX ModelProto.
func Build(m model.Model, md container.Metadata) (*pb.ModelProto, error) {
	if err := Supported(m.Type()); err != nil {
		return nil, err
	}
	if err := checkFinite(m); err != nil {
		return nil, err
	}
	b := &builder{g: &pb.GraphProto{}}
	var err error
	switch m := m.(type) {
	case *model.LinearRegressionModel:
		err = b.linear(m)
	case *model.LogisticRegressionModel:
		err = b.logistic(m)
	case *model.NeuralSequentialModel:
		err = b.neural(m)
	default:
		err = fmt.Errorf("%v model decodes to %T, which the ONNX export does not know", m.Type(), m)
	}
	if err != nil {
		return nil, err
	}
	name := md.Name
	if name == "" {
		name = m.Type().String()
	}
	b.g.Name = proto.String(name)
	if md.ModelConfig == nil {
		md.ModelConfig = m.Config()
	}
	mp := &pb.ModelProto{
		IrVersion:       proto.Int64(IRVersion),
		OpsetImport:     []*pb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(Opset)}},
		ProducerName:    proto.String(ProducerName),
		ProducerVersion: proto.String(version.Number),
		Graph:           b.g,
		MetadataProps:   metadataProps(m.Type(), md),
	}
	if md.Description != "" {
		mp.DocString = proto.String(md.Description)
	}
	return mp, nil
}

// checkFinite refuses a model with a NaN or infinite parameter, naming the tensor.
func checkFinite(m model.Model) error {
	for _, t := range m.Tensors() {
		v, err := t.Float32s()
		if err != nil {
			return fmt.Errorf("%v: tensor %q: %w", m.Type(), t.Name, err)
		}
		for i, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("%v: tensor %q: value %d is %v; ONNX export needs finite parameters", m.Type(), t.Name, i, f)
			}
		}
	}
	return nil
}

// builder adds nodes, initializers and graph outputs to a graph.
type builder struct {
	g *pb.GraphProto
}

func (b *builder) node(op, out string, in []string, attrs ...*pb.AttributeProto) string {
	b.g.Node = append(b.g.Node, &pb.NodeProto{
		Name: proto.String(out), OpType: proto.String(op), Input: in, Output: []string{out}, Attribute: attrs,
	})
	return out
}

func (b *builder) floats(name string, dims []int64, v []float32) string {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	b.g.Initializer = append(b.g.Initializer, &pb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(pb.TensorProto_FLOAT)), Dims: dims, RawData: raw,
	})
	return name
}

func (b *builder) int64s(name string, v ...int64) string {
	b.g.Initializer = append(b.g.Initializer, &pb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(pb.TensorProto_INT64)), Dims: []int64{int64(len(v))}, Int64Data: v,
	})
	return name
}

func attrInt(name string, v int64) *pb.AttributeProto {
	return &pb.AttributeProto{Name: proto.String(name), Type: pb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// valueInfo is a tensor of elem type t whose first dimension is the batch and whose
// other dimensions are dims.
func valueInfo(name string, t pb.TensorProto_DataType, dims ...int64) *pb.ValueInfoProto {
	shape := &pb.TensorShapeProto{Dim: []*pb.TensorShapeProto_Dimension{{Value: &pb.TensorShapeProto_Dimension_DimParam{DimParam: BatchDim}}}}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &pb.ValueInfoProto{Name: proto.String(name), Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{
		TensorType: &pb.TypeProto_Tensor{ElemType: proto.Int32(int32(t)), Shape: shape},
	}}}
}

func (b *builder) input(features int) {
	b.g.Input = append(b.g.Input, valueInfo(InputName, pb.TensorProto_FLOAT, int64(features)))
}

// classifierOutputs declares label [N] and probabilities [N, classes], in
// skl2onnx's order.
func (b *builder) classifierOutputs(classes int) {
	b.g.Output = append(b.g.Output, valueInfo(OutputLabel, pb.TensorProto_INT64),
		valueInfo(OutputProbabilities, pb.TensorProto_FLOAT, int64(classes)))
}

// binaryHead makes label and probabilities from p1 = P(class 1), [N, 1]:
// probabilities = [1 - p1, p1]; label = 1 where test(against, threshold) holds.
func (b *builder) binaryHead(p1, test, against string, threshold float32) {
	one := b.floats("one", []int64{1}, []float32{1})
	p0 := b.node("Sub", "p0", []string{one, p1})
	b.node("Concat", OutputProbabilities, []string{p0, p1}, attrInt("axis", 1))
	thr := b.floats("threshold", []int64{1}, []float32{threshold})
	is1 := b.node(test, "is_class_1", []string{against, thr})
	l := b.node("Cast", "label_column", []string{is1}, attrInt("to", int64(pb.TensorProto_INT64)))
	b.node("Reshape", OutputLabel, []string{l, b.int64s("label_shape", -1)})
	b.classifierOutputs(2)
}

func (b *builder) linear(m *model.LinearRegressionModel) error {
	n := len(m.Coefficients)
	if n == 0 {
		return fmt.Errorf("LinearRegression: %w", model.ErrNotFitted)
	}
	b.input(n)
	b.node("Gemm", OutputVariable, []string{InputName,
		b.floats("coefficients", []int64{int64(n), 1}, m.Coefficients),
		b.floats("intercept", []int64{1}, []float32{m.Intercept})})
	b.g.Output = append(b.g.Output, valueInfo(OutputVariable, pb.TensorProto_FLOAT, 1))
	return nil
}

func (b *builder) logistic(m *model.LogisticRegressionModel) error {
	k, p := m.NumClasses(), m.NumFeatures()
	if m.Coefficients == nil || p == 0 {
		return fmt.Errorf("LogisticRegression: %w", model.ErrNotFitted)
	}
	b.input(p)
	if k == 2 {
		if len(m.Coefficients) != p {
			return fmt.Errorf("LogisticRegression: %d coefficients for %d features", len(m.Coefficients), p)
		}
		z := b.node("Gemm", "logit", []string{InputName,
			b.floats("coefficients", []int64{int64(p), 1}, m.Coefficients),
			b.floats("intercept", []int64{1}, []float32{m.Intercept})})
		p1 := b.node("Sigmoid", "p1", []string{z})
		// apr predicts class 1 when P(y=1) >= 0.5.
		b.binaryHead(p1, "GreaterOrEqual", p1, 0.5)
		return nil
	}
	if len(m.Coefficients) != k*p || len(m.Intercepts) != k {
		return fmt.Errorf("LogisticRegression: %d classes with %d coefficients and %d intercepts, expected K×n_features and K",
			k, len(m.Coefficients), len(m.Intercepts))
	}
	z := b.node("Gemm", "logits", []string{InputName,
		b.floats("coefficients", []int64{int64(k), int64(p)}, m.Coefficients),
		b.floats("intercept", []int64{int64(k)}, m.Intercepts)}, attrInt("transB", 1))
	b.node("Softmax", OutputProbabilities, []string{z}, attrInt("axis", 1))
	b.node("ArgMax", OutputLabel, []string{z}, attrInt("axis", 1), attrInt("keepdims", 0))
	b.classifierOutputs(k)
	return nil
}

var activationOps = map[model.Activation]string{
	model.ActReLU: "Relu", model.ActTanh: "Tanh", model.ActSigmoid: "Sigmoid", model.ActSoftmax: "Softmax",
}

func (b *builder) neural(m *model.NeuralSequentialModel) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("NeuralSequential: %w", err)
	}
	b.input(m.Inputs())
	h := InputName
	last := len(m.Layers) - 1
	classifier := m.IsClassifier()
	for i, l := range m.Layers {
		pre := fmt.Sprintf("layers.%d", i)
		z := pre + ".linear"
		if i == last && !classifier && l.Activation == model.ActIdentity {
			z = OutputVariable
		}
		h = b.node("Gemm", z, []string{h,
			b.floats(pre+".weight", []int64{int64(l.Out), int64(l.In)}, l.Weight),
			b.floats(pre+".bias", []int64{int64(l.Out)}, l.Bias)}, attrInt("transB", 1))
		if l.Activation == model.ActIdentity {
			continue
		}
		op := activationOps[l.Activation]
		out := pre + "." + string(l.Activation)
		switch {
		case i == last && classifier && l.Out == 1:
			out = "p1"
		case i == last && classifier:
			out = OutputProbabilities
		case i == last:
			out = OutputVariable
		}
		var attrs []*pb.AttributeProto
		if l.Activation == model.ActSoftmax {
			attrs = append(attrs, attrInt("axis", 1))
		}
		h = b.node(op, out, []string{z}, attrs...)
		if i == last && classifier {
			if l.Out == 1 {
				// apr predicts class 1 when the logit is above 0 (argmax of [0, z]).
				b.binaryHead(h, "Greater", z, 0)
			} else {
				b.node("ArgMax", OutputLabel, []string{z}, attrInt("axis", 1), attrInt("keepdims", 0))
				b.classifierOutputs(l.Out)
			}
		}
	}
	if !classifier {
		b.g.Output = append(b.g.Output, valueInfo(OutputVariable, pb.TensorProto_FLOAT, int64(m.Outputs())))
	}
	return nil
}

// metadataProps carries the APR metadata as ONNX metadata_props: strings as they
// are, maps (metrics, hyperparameters, ...) as JSON, sorted by key.
func metadataProps(t modeltype.Type, md container.Metadata) []*pb.StringStringEntryProto {
	props := map[string]string{}
	str := func(k, v string) {
		if v != "" {
			props[k] = v
		}
	}
	js := func(k string, v any) {
		if s, ok := v.(string); ok {
			props[k] = s
			return
		}
		if b, err := json.Marshal(v); err == nil {
			props[k] = string(b)
		} else {
			props[k] = fmt.Sprint(v)
		}
	}
	for k, v := range md.Extra {
		js(k, v)
	}
	str("name", md.Name)
	str("description", md.Description)
	str("created_at", md.CreatedAt)
	str("producer", md.Producer)
	str("license", md.License)
	for k, v := range map[string]map[string]any{"hyperparameters": md.Hyperparameters, "metrics": md.Metrics,
		"custom": md.Custom, "model_config": md.ModelConfig, "provenance": md.Provenance} {
		if len(v) > 0 {
			js(k, v)
		}
	}
	props[PropModelType] = t.String()
	var out []*pb.StringStringEntryProto
	for _, k := range slices.Sorted(maps.Keys(props)) {
		out = append(out, &pb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(props[k])})
	}
	return out
}
