package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/onnx"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

func runIt(t *testing.T, stdin []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return out.Bytes(), errb.String(), code
}

func encoded(t *testing.T, m model.Model, opts apr.SaveOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := apr.Encode(&b, m, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func network(t *testing.T) *model.NeuralSequentialModel {
	t.Helper()
	m, err := model.NewNeuralSequential([]int{4, 6, 3}, model.ActTanh, model.ActSoftmax, 1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// export | import is the same network, with the name and metrics of the first file.
func TestExportImport(t *testing.T) {
	m := network(t)
	in := encoded(t, m, apr.SaveOptions{Name: "iris-net", Metrics: map[string]any{"accuracy": 0.96}})
	onnxBytes, stderr, code := runIt(t, in, "export")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	want, err := onnx.Marshal(m, container.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if len(onnxBytes) <= len(want) || !bytes.Contains(onnxBytes, []byte("iris-net")) {
		t.Fatalf("export wrote %d bytes without the metadata (%d without it)", len(onnxBytes), len(want))
	}
	back, stderr, code := runIt(t, onnxBytes, "import")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "stdin: NeuralSequential [4 6 3] (tanh, softmax), 51 parameters") {
		t.Errorf("report %q", stderr)
	}
	got, err := apr.LoadFromBytes[*model.NeuralSequentialModel](back, modeltype.NeuralSequential)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range m.Layers {
		g := got.Layers[i]
		if g.Activation != l.Activation || !bytes.Equal(f32bytes(g.Weight), f32bytes(l.Weight)) || !bytes.Equal(f32bytes(g.Bias), f32bytes(l.Bias)) {
			t.Fatalf("layer %d differs", i)
		}
	}
	info, err := apr.InspectReader(bytes.NewReader(back))
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata.Name != "iris-net" || info.Metadata.Metrics["accuracy"] != 0.96 || info.Metadata.Provenance["source_format"] != "onnx" {
		t.Fatalf("metadata %+v", info.Metadata)
	}
	// -o and --name
	dir := t.TempDir()
	src := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(src, onnxBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "m.apr")
	if _, stderr, code := runIt(t, nil, "-q", "import", src, "--name", "renamed", "-o", dst); code != 0 || stderr != "" {
		t.Fatalf("import -o: exit %d, stderr %q", code, stderr)
	}
	if info, err := apr.Inspect(dst); err != nil || info.Metadata.Name != "renamed" {
		t.Fatalf("%v %v", info, err)
	}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// Bad input: the error names the file and what is wrong, exit 1, no output file.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kmeans := write("kmeans.apr", kmeansFile(t))
	mlp := encoded(t, network(t), apr.SaveOptions{})
	exported, _, _ := runIt(t, mlp, "export")
	truncated := write("cut.onnx", exported[:len(exported)/2])
	cutAPR := write("cut.apr", mlp[:len(mlp)-10])
	notONNX := write("text.onnx", []byte("hello, world\n"))
	big := write("big.onnx", nil) // sparse: one byte over the cap, refused by its size
	if err := os.Truncate(big, onnx.MaxSize+1); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"export", kmeans, "-o", out}, "apr-onnx: " + kmeans + ": a KMeans model has no ONNX export in apr (supported: LinearRegression, LogisticRegression, NeuralSequential)"},
		{[]string{"export", cutAPR, "-o", out}, "apr-onnx: " + cutAPR + ": "},
		{[]string{"import", truncated, "-o", out}, "apr-onnx: " + truncated + ": "},
		{[]string{"import", notONNX, "-o", out}, "apr-onnx: " + notONNX + ": not an ONNX model"},
		{[]string{"import", big, "-o", out}, fmt.Sprintf("apr-onnx: %s: %d bytes, more than the cap of %d for an ONNX file", big, onnx.MaxSize+1, onnx.MaxSize)},
	}
	for _, c := range cases {
		_, stderr, code := runIt(t, nil, c.args...)
		if code != 1 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q...", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v left %s behind", c.args, out)
		}
	}
	if _, stderr, code := runIt(t, nil, "export", "--bogus"); code != 2 || !strings.Contains(stderr, "--bogus") {
		t.Errorf("unknown flag: exit %d, %q", code, stderr)
	}
}

func kmeansFile(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	s := stream.FromTensors(modeltype.KMeans, container.Metadata{}, []tensor.Tensor{tensor.F32("centroids", []float32{1, 2})})
	if err := stream.Reencode(&b, s, nil, false); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
