package onnx

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	pb "github.com/apr-go/apr/lib/onnx/internal/onnxpb"
)

// fixtures are the models the tests export: every kind and output layout.
func fixtures(t testing.TB) map[string]model.Model {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	nn := func(widths []int, hidden, out model.Activation, seed uint64) *model.NeuralSequentialModel {
		m, err := model.NewNeuralSequential(widths, hidden, out, seed)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return map[string]model.Model{
		"linear":      &model.LinearRegressionModel{FitIntercept: true, Coefficients: vec(10), Intercept: 152.1},
		"logistic":    &model.LogisticRegressionModel{Coefficients: vec(6), Intercept: -0.3},
		"multinomial": &model.LogisticRegressionModel{Classes: 4, Coefficients: vec(4 * 7), Intercepts: vec(4)},
		"mlp-softmax": nn([]int{8, 16, 12, 5}, model.ActReLU, model.ActSoftmax, 3),
		"mlp-sigmoid": nn([]int{5, 7, 1}, model.ActTanh, model.ActSigmoid, 4),
		"mlp-regress": nn([]int{6, 9, 3}, model.ActSigmoid, model.ActIdentity, 5),
		"mlp-tanhout": nn([]int{3, 4, 2}, model.ActReLU, model.ActTanh, 6),
	}
}

var testMeta = container.Metadata{
	Name: "house-prices", Description: "a test model", License: "MIT",
	Metrics: map[string]any{"r2": 0.51}, Hyperparameters: map[string]any{"epochs": int64(20), "lr": 0.001},
	Custom: map[string]any{"team": "ml"},
}

func TestExportShape(t *testing.T) {
	for name, m := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			mp, err := Build(m, testMeta)
			if err != nil {
				t.Fatal(err)
			}
			if mp.GetIrVersion() != 8 || len(mp.OpsetImport) != 1 || mp.OpsetImport[0].GetVersion() != 13 || mp.OpsetImport[0].GetDomain() != "" {
				t.Fatalf("ir %d, opsets %v", mp.GetIrVersion(), mp.OpsetImport)
			}
			g := mp.Graph
			if len(g.Input) != 1 || g.Input[0].GetName() != "float_input" {
				t.Fatalf("inputs %v", g.Input)
			}
			dims := g.Input[0].GetType().GetTensorType().GetShape().GetDim()
			if len(dims) != 2 || dims[0].GetDimParam() != "N" || dims[1].GetDimValue() == 0 {
				t.Fatalf("input shape %v", dims)
			}
			var outs []string
			for _, o := range g.Output {
				outs = append(outs, o.GetName())
			}
			want := "label,probabilities"
			if name == "linear" || name == "mlp-regress" || name == "mlp-tanhout" {
				want = "variable"
			}
			if strings.Join(outs, ",") != want {
				t.Fatalf("outputs %v, want %s", outs, want)
			}
			produced := map[string]bool{"float_input": true}
			for _, i := range g.Initializer {
				produced[i.GetName()] = true
			}
			for _, n := range g.Node {
				for _, in := range n.Input {
					if !produced[in] {
						t.Fatalf("node %s reads %q before it is made (nodes must be in topological order)", n.GetName(), in)
					}
				}
				produced[n.Output[0]] = true
			}
			props := map[string]string{}
			for _, p := range mp.MetadataProps {
				props[p.GetKey()] = p.GetValue()
			}
			if props["model_type"] != m.Type().String() || props["name"] != "house-prices" || props["metrics"] != `{"r2":0.51}` || props["model_config"] == "" {
				t.Fatalf("metadata_props %v", props)
			}
		})
	}
}

// Exported networks come back from Import bit for bit; linear and logistic models
// come back as the one-layer network that computes the same.
func TestRoundTrip(t *testing.T) {
	for name, m := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			b, err := Marshal(m, testMeta)
			if err != nil {
				t.Fatal(err)
			}
			got, md, err := Import(b)
			if err != nil {
				t.Fatal(err)
			}
			if md.Name != "house-prices" || md.Description != "a test model" || md.License != "MIT" ||
				md.Metrics["r2"] != 0.51 || md.Hyperparameters["epochs"] != int64(20) || md.Custom["team"] != "ml" {
				t.Errorf("metadata %+v", md)
			}
			if md.Provenance["source_format"] != "onnx" || md.Provenance["source_opset"] != int64(13) || md.Provenance["source_producer"] == nil {
				t.Errorf("provenance %v", md.Provenance)
			}
			if nn, ok := m.(*model.NeuralSequentialModel); ok {
				if len(got.Layers) != len(nn.Layers) {
					t.Fatalf("%d layers, want %d", len(got.Layers), len(nn.Layers))
				}
				for i, l := range nn.Layers {
					g := got.Layers[i]
					if g.In != l.In || g.Out != l.Out || g.Activation != l.Activation || !same(g.Weight, l.Weight) || !same(g.Bias, l.Bias) {
						t.Fatalf("layer %d: %d->%d %s, want %d->%d %s (or other weights)", i, g.In, g.Out, g.Activation, l.In, l.Out, l.Activation)
					}
				}
				return
			}
			x := randomRows(got.Inputs(), 50)
			switch m := m.(type) {
			case *model.LinearRegressionModel:
				want, _ := m.Predict(x)
				out, err := got.Output(x)
				if err != nil {
					t.Fatal(err)
				}
				for i, w := range want {
					if math.Abs(out.Data[i]-w) > 1e-5*math.Max(1, math.Abs(w)) {
						t.Fatalf("row %d: %v, want %v", i, out.Data[i], w)
					}
				}
			case *model.LogisticRegressionModel:
				want, _ := m.Probabilities(x)
				p, err := got.PredictProba(x)
				if err != nil {
					t.Fatal(err)
				}
				if p.Cols != want.Cols {
					t.Fatalf("%d classes, want %d", p.Cols, want.Cols)
				}
				for i, w := range want.Data {
					if math.Abs(p.Data[i]-w) > 1e-6 {
						t.Fatalf("value %d: %v, want %v", i, p.Data[i], w)
					}
				}
			}
		})
	}
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func randomRows(cols, rows int) model.Matrix {
	r := rand.New(rand.NewPCG(7, uint64(cols)))
	x := model.Matrix{Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
	for i := range x.Data {
		x.Data[i] = r.NormFloat64()
	}
	return x
}

// The same model and metadata give the same bytes.
func TestDeterministic(t *testing.T) {
	m := fixtures(t)["mlp-softmax"]
	a, err := Marshal(m, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Marshal(m, testMeta)
	if !bytes.Equal(a, b) {
		t.Fatal("two exports differ")
	}
}

func TestExportErrors(t *testing.T) {
	nan := &model.LinearRegressionModel{Coefficients: []float32{1, float32(math.NaN())}}
	if _, err := Marshal(nan, container.Metadata{}); err == nil || !strings.Contains(err.Error(), `tensor "coefficients": value 1 is NaN`) {
		t.Errorf("NaN coefficient: %v", err)
	}
	if _, err := Marshal(&model.LinearRegressionModel{}, container.Metadata{}); err == nil || !strings.Contains(err.Error(), "not fitted") {
		t.Errorf("unfitted: %v", err)
	}
	if _, err := Marshal(&model.NeuralSequentialModel{}, container.Metadata{}); err == nil {
		t.Error("an empty network exported")
	}
}

// edit exports m, lets f change the ModelProto, and imports the result.
func edit(t *testing.T, m model.Model, f func(*pb.ModelProto)) error {
	t.Helper()
	mp, err := Build(m, container.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	f(mp)
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Import(b)
	return err
}

func node(g *pb.GraphProto, op string) *pb.NodeProto {
	for _, n := range g.Node {
		if n.GetOpType() == op {
			return n
		}
	}
	return nil
}

func TestImportErrors(t *testing.T) {
	mlp := fixtures(t)["mlp-softmax"]
	reg := fixtures(t)["mlp-regress"]
	cases := []struct {
		name  string
		m     model.Model
		f     func(*pb.ModelProto)
		wants string
	}{
		{"unsupported operator", mlp, func(mp *pb.ModelProto) { node(mp.Graph, "Relu").OpType = proto.String("LeakyRelu") },
			`node "layers.0.relu" (LeakyRelu): operator LeakyRelu is not supported`},
		{"foreign domain", mlp, func(mp *pb.ModelProto) { node(mp.Graph, "Relu").Domain = proto.String("com.microsoft") },
			`operator Relu of domain "com.microsoft" is not supported`},
		{"wrong weight shape", mlp, func(mp *pb.ModelProto) {
			w := mp.Graph.Initializer[2]
			w.Dims, w.RawData = []int64{12, 8}, w.RawData[:4*12*8]
		},
			`node "layers.1.linear" (Gemm): a layer of 8 inputs after a layer of 16 units`},
		{"wrong raw data size", mlp, func(mp *pb.ModelProto) { mp.Graph.Initializer[0].RawData = mp.Graph.Initializer[0].RawData[:9] },
			`initializer "layers.0.weight": 9 bytes of raw data for shape [16 8], expected 512`},
		{"input of 3 dimensions", mlp, func(mp *pb.ModelProto) {
			sh := mp.Graph.Input[0].Type.GetTensorType().Shape
			sh.Dim = append(sh.Dim, sh.Dim[1])
		}, `input "float_input" has 3 dimensions, expected 2: [batch, features]`},
		{"input of int64", mlp, func(mp *pb.ModelProto) { mp.Graph.Input[0].Type.GetTensorType().ElemType = proto.Int32(7) },
			`input "float_input" has element type int64, expected float`},
		{"feature count", mlp, func(mp *pb.ModelProto) {
			mp.Graph.Input[0].Type.GetTensorType().Shape.Dim[1].Value = &pb.TensorShapeProto_Dimension_DimValue{DimValue: 9}
		}, `a layer of 8 inputs on the input "float_input" of 9 features`},
		{"NaN weight", reg, func(mp *pb.ModelProto) {
			mp.Graph.Initializer[1].RawData = []byte{0, 0, 0xc0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		}, `initializer "layers.0.bias": value 0 is NaN, expected finite weights`},
		{"external data", reg, func(mp *pb.ModelProto) { mp.Graph.Initializer[0].DataLocation = pb.TensorProto_EXTERNAL.Enum() },
			`its data is in an external file`},
		{"missing initializer", reg, func(mp *pb.ModelProto) { mp.Graph.Initializer = mp.Graph.Initializer[1:] },
			`node "layers.0.linear" (Gemm): input "layers.0.weight" is not an initializer; expected constant weights`},
		{"two inputs", reg, func(mp *pb.ModelProto) {
			mp.Graph.Input = append(mp.Graph.Input, &pb.ValueInfoProto{Name: proto.String("mask")})
		}, `the graph has 2 inputs ["float_input" "mask"] besides its initializers, expected one`},
		{"missing node", reg, func(mp *pb.ModelProto) { mp.Graph.Node = mp.Graph.Node[1:] },
			`tensor "layers.0.linear" is neither the input "float_input" nor a node's output`},
		{"no opset", reg, func(mp *pb.ModelProto) { mp.OpsetImport = nil },
			`imports no default operator set`},
		{"transA", reg, func(mp *pb.ModelProto) {
			node(mp.Graph, "Gemm").Attribute = append(node(mp.Graph, "Gemm").Attribute, attrInt("transA", 1))
		},
			`transA=1`},
		{"two activations", reg, func(mp *pb.ModelProto) {
			g := mp.Graph
			s := node(g, "Sigmoid")
			g.Node = append(g.Node, nil)
			copy(g.Node[2:], g.Node[1:])
			g.Node[1] = &pb.NodeProto{Name: proto.String("extra"), OpType: proto.String("Tanh"), Input: s.Input, Output: []string{"t"}}
			s.Input = []string{"t"}
		}, `node "layers.0.sigmoid" (Sigmoid): a second activation after node "extra" (Tanh)`},
		// Found by the adversarial pass of issue 30: each was imported with exit 0.
		{"alpha of type INT", reg, func(mp *pb.ModelProto) {
			node(mp.Graph, "Gemm").Attribute = append(node(mp.Graph, "Gemm").Attribute, attrInt("alpha", 2))
		}, `attribute "alpha" is not FLOAT`},
		{"transB of type FLOAT", reg, func(mp *pb.ModelProto) {
			g := node(mp.Graph, "Gemm")
			for _, a := range g.Attribute {
				if a.GetName() == "transB" {
					a.Type, a.I, a.F = pb.AttributeProto_FLOAT.Enum(), nil, proto.Float32(1)
				}
			}
		}, `attribute "transB" is not INT`},
		{"attribute twice", reg, func(mp *pb.ModelProto) {
			node(mp.Graph, "Gemm").Attribute = append(node(mp.Graph, "Gemm").Attribute, attrInt("transB", 0))
		}, `attribute "transB" is given twice`},
		{"alpha NaN", reg, func(mp *pb.ModelProto) {
			node(mp.Graph, "Gemm").Attribute = append(node(mp.Graph, "Gemm").Attribute,
				&pb.AttributeProto{Name: proto.String("alpha"), Type: pb.AttributeProto_FLOAT.Enum(), F: proto.Float32(float32(math.NaN()))})
		}, `alpha NaN times value 0 of initializer "layers.0.weight" is NaN`},
		{"alpha overflows", reg, func(mp *pb.ModelProto) {
			node(mp.Graph, "Gemm").Attribute = append(node(mp.Graph, "Gemm").Attribute,
				&pb.AttributeProto{Name: proto.String("alpha"), Type: pb.AttributeProto_FLOAT.Enum(), F: proto.Float32(math.MaxFloat32)})
			w := mp.Graph.Initializer[0]
			for i := 0; i < len(w.RawData); i += 4 {
				binary.LittleEndian.PutUint32(w.RawData[i:], math.Float32bits(2))
			}
		}, `times value 0 of initializer "layers.0.weight" is +Inf, expected finite weights`},
		{"two nodes write one tensor", reg, func(mp *pb.ModelProto) {
			g := node(mp.Graph, "Gemm")
			mp.Graph.Node = append(mp.Graph.Node, &pb.NodeProto{Name: proto.String("again"), OpType: g.OpType, Input: g.Input, Output: g.Output, Attribute: g.Attribute})
		}, `and node "again" (Gemm) both write tensor`},
		{"cycle", reg, func(mp *pb.ModelProto) {
			mp.Graph.Node = append(mp.Graph.Node, &pb.NodeProto{OpType: proto.String("Identity"), Input: []string{"x"}, Output: []string{"x"}})
			mp.Graph.Output[0].Name = proto.String("x")
		}, `form a cycle`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := edit(t, c.m, c.f)
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("error %v, want one containing %q", err, c.wants)
			}
		})
	}
}

// Every truncation of an export is an error, except cuts that lose only trailing
// metadata_props (protobuf has no length of the whole), which give the same network.
func TestImportTruncated(t *testing.T) {
	m := fixtures(t)["mlp-sigmoid"]
	b, err := Marshal(m, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	mp, _ := Build(m, testMeta)
	mp.MetadataProps = nil
	bare, _ := proto.MarshalOptions{Deterministic: true}.Marshal(mp)
	if !bytes.HasPrefix(b, bare) {
		t.Fatal("metadata_props are not the last field")
	}
	for n := 0; n < len(b); n++ {
		got, _, err := Import(b[:n])
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			continue
		}
		if n < len(bare) {
			t.Fatalf("a cut at %d of %d bytes imported", n, len(b))
		}
		if !same(got.Layers[0].Weight, m.(*model.NeuralSequentialModel).Layers[0].Weight) {
			t.Fatalf("a cut at %d imported other weights", n)
		}
	}
	if _, _, err := Import([]byte("not a protobuf at all")); err == nil || !strings.Contains(err.Error(), "not an ONNX model") {
		t.Fatalf("text: %v", err)
	}
}

// FuzzImport feeds the reader exports of every kind and the torch-written files of
// testdata/onnx, mutated: no panics, a stream reads as the same bytes in memory do,
// and whatever imports predicts.
func FuzzImport(f *testing.F) {
	for _, m := range fixtures(f) {
		b, err := Marshal(m, testMeta)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	files, err := filepath.Glob("../../testdata/onnx/*.onnx")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in testdata/onnx: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := Import(b)
		_, _, serr := Read(io.MultiReader(bytes.NewReader(b)), -1)
		if (err == nil) != (serr == nil) {
			t.Fatalf("in memory: %v; as a stream: %v", err, serr)
		}
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Import gave an invalid model: %v", err)
		}
		x := randomRows(m.Inputs(), 2)
		if _, err := m.Output(x); err != nil {
			t.Fatal(err)
		}
	})
}

// testdata/onnx/mlp-64-32-10.onnx, written by torch.onnx.export (testdata/onnx/README.md),
// imports as the network torch ran: its outputs on five rows are torch's to 1e-5.
func TestImportTorchFile(t *testing.T) {
	b, err := os.ReadFile("../../testdata/onnx/mlp-64-32-10.onnx")
	if err != nil {
		t.Fatal(err)
	}
	m, md, err := Import(b)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); md.Provenance["source_sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("source_sha256 %v, the file's is %x", md.Provenance["source_sha256"], sum)
	}
	if w := fmt.Sprint(m.Widths()); w != "[64 32 10]" || m.Layers[0].Activation != model.ActReLU || m.Layers[1].Activation != model.ActSoftmax {
		t.Fatalf("widths %s, activations %s %s", w, m.Layers[0].Activation, m.Layers[1].Activation)
	}
	if md.Provenance["source_producer"] != "pytorch 1.13.0" || md.Provenance["source_opset"] != int64(13) {
		t.Errorf("provenance %v", md.Provenance)
	}
	raw, err := os.ReadFile("../../testdata/onnx/mlp-64-32-10.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct{ X, Y [][]float64 }
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	x := model.Matrix{Rows: len(ref.X), Cols: 64}
	for _, r := range ref.X {
		x.Data = append(x.Data, r...)
	}
	out, err := m.Output(x)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ref.Y {
		for j, want := range r {
			if got := out.Data[i*10+j]; math.Abs(got-want) > 1e-5 {
				t.Fatalf("row %d, class %d: %v, torch %v", i, j, got, want)
			}
		}
	}
}
