package onnx

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/predict"
)

// writeExports writes every fixture's export to dir as NAME.onnx.
func writeExports(t *testing.T, dir string) map[string]model.Model {
	t.Helper()
	fx := fixtures(t)
	for name, m := range fx {
		b, err := Marshal(m, testMeta)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".onnx"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// Debian's python3-onnx checks every export with check_model(full_check=True), which
// also runs its shape inference in strict mode, and reads back what apr declared.
func TestPeerONNXChecker(t *testing.T) {
	py := peertest.Python(t, "onnx", "python3-onnx")
	dir := t.TempDir()
	fx := writeExports(t, dir)
	script := `
import glob, os, sys, onnx
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.onnx"))):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    props = {p.key: p.value for p in m.metadata_props}
    ops = sorted({n.op_type for n in m.graph.node})
    print(os.path.basename(path), m.ir_version, [(o.domain, o.version) for o in m.opset_import],
          [i.name for i in m.graph.input], [o.name for o in m.graph.output], props["model_type"], props["name"], " ".join(ops))
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx.checker: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(fx) {
		t.Fatalf("%d models checked, want %d:\n%s", len(lines), len(fx), out)
	}
	for _, l := range lines {
		t.Log(l)
		if !strings.Contains(l, ".onnx 8 [('', 13)] ['float_input']") || !strings.Contains(l, "house-prices") {
			t.Errorf("unexpected: %s", l)
		}
	}
}

// ortRun runs jobs through testdata/onnx/peer/run.mjs (npm's onnxruntime-node).
type ortJob struct {
	Model string    `json:"model"`
	Rows  int       `json:"rows"`
	Cols  int       `json:"cols"`
	X     []float64 `json:"x"`
}

type ortOutput struct {
	Dims []int     `json:"dims"`
	Type string    `json:"type"`
	Data []float64 `json:"data"`
}

type ortResult struct {
	Inputs  []string             `json:"inputs"`
	Outputs map[string]ortOutput `json:"outputs"`
	Error   string               `json:"error"`
}

func ortRun(t *testing.T, jobs []ortJob) []ortResult {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("onnxruntime peer test: no subprocesses here")
	}
	if testing.Short() {
		t.Skip("onnxruntime peer test skipped in -short mode")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		peertest.Missing(t, "onnxruntime peer test skipped: node not installed")
	}
	peerDir, _ := filepath.Abs("../../testdata/onnx/peer")
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", "onnxruntime-node")); err != nil {
		peertest.Missing(t, "onnxruntime peer test skipped: %s/node_modules missing (run `npm ci --ignore-scripts` there)", peerDir)
	}
	in, _ := json.Marshal(jobs)
	cmd := exec.Command(node, filepath.Join(peerDir, "run.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("onnxruntime-node: %v\n%s", err, stderr.Bytes())
	}
	var res []ortResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(jobs) {
		t.Fatalf("onnxruntime-node printed %d results for %d jobs (%v)", len(res), len(jobs), err)
	}
	return res
}

// close reports whether onnxruntime's float32 value is apr's to 1e-5 (relative for
// values above 1).
func close(got, want float64) bool {
	return math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want))
}

// onnxruntime (npm's onnxruntime-node) runs every export, and its outputs are
// lib/predict's (apr-predict's): values and probabilities to 1e-5, the same labels.
func TestPeerONNXRuntime(t *testing.T) {
	dir := t.TempDir()
	fx := writeExports(t, dir)
	// and a fitted model on real rows: OLS on the 442 diabetes rows (raw features)
	dm, dx := diabetes(t)
	fx["diabetes"] = dm
	b, err := Marshal(dm, container.Metadata{Name: "diabetes"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "diabetes.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(fx))
	for n := range fx {
		names = append(names, n)
	}
	sort.Strings(names)
	var jobs []ortJob
	xs := map[string]model.Matrix{}
	for _, n := range names {
		p, err := predict.New(fx[n])
		if err != nil {
			t.Fatal(err)
		}
		x := randomRows(p.Features(), 37)
		if n == "diabetes" {
			x = dx
		}
		for i := range x.Data { // as float32, which is what ONNX takes
			x.Data[i] = float64(float32(x.Data[i]))
		}
		xs[n] = x
		jobs = append(jobs, ortJob{Model: filepath.Join(dir, n+".onnx"), Rows: x.Rows, Cols: x.Cols, X: x.Data})
	}
	res := ortRun(t, jobs)
	for i, n := range names {
		t.Run(n, func(t *testing.T) {
			r := res[i]
			if r.Error != "" {
				t.Fatalf("onnxruntime: %s", r.Error)
			}
			if len(r.Inputs) != 1 || r.Inputs[0] != InputName {
				t.Fatalf("inputs %v", r.Inputs)
			}
			p, _ := predict.New(fx[n])
			x := xs[n]
			if p.Classes() == 0 {
				want, err := p.Predict(x, false)
				if err != nil {
					t.Fatal(err)
				}
				got := r.Outputs[OutputVariable]
				if got.Type != "float32" || len(got.Dims) != 2 || got.Dims[0] != x.Rows || len(got.Data) != len(want.Values) {
					t.Fatalf("variable: %s %v, want float32 [%d %d]", got.Type, got.Dims, x.Rows, want.Cols)
				}
				worst := 0.0
				for j, w := range want.Values {
					if !close(got.Data[j], w) {
						t.Fatalf("value %d: onnxruntime %v, apr %v", j, got.Data[j], w)
					}
					worst = math.Max(worst, math.Abs(got.Data[j]-w)/math.Max(1, math.Abs(w)))
				}
				t.Logf("%d rows: largest difference from apr %.3g (relative above 1)", x.Rows, worst)
				return
			}
			proba, err := p.Predict(x, true)
			if err != nil {
				t.Fatal(err)
			}
			labels, err := p.Predict(x, false)
			if err != nil {
				t.Fatal(err)
			}
			gp, gl := r.Outputs[OutputProbabilities], r.Outputs[OutputLabel]
			if gp.Type != "float32" || len(gp.Dims) != 2 || gp.Dims[0] != x.Rows || gp.Dims[1] != p.Classes() {
				t.Fatalf("probabilities: %s %v", gp.Type, gp.Dims)
			}
			if gl.Type != "int64" || len(gl.Dims) != 1 || gl.Dims[0] != x.Rows {
				t.Fatalf("label: %s %v", gl.Type, gl.Dims)
			}
			worst := 0.0
			for j, w := range proba.Values {
				if !close(gp.Data[j], w) {
					t.Fatalf("probability %d: onnxruntime %v, apr %v", j, gp.Data[j], w)
				}
				worst = math.Max(worst, math.Abs(gp.Data[j]-w))
			}
			t.Logf("%d rows: largest probability difference from apr %.3g", x.Rows, worst)
			k := p.Classes()
			for row, w := range labels.Labels {
				g := int64(gl.Data[row])
				// A label may differ only on a tie to float32 precision.
				if g != w && math.Abs(proba.Values[row*k+int(g)]-proba.Values[row*k+int(w)]) > 1e-6 {
					t.Fatalf("row %d: onnxruntime label %d, apr %d", row, g, w)
				}
			}
		})
	}
}

type torchCase struct {
	X       [][]float64 `json:"x"`
	Y       [][]float64 `json:"y"`
	Refused *string     `json:"refused"`
}

// diabetes fits ordinary least squares on all 442 diabetes rows (raw features).
func diabetes(t testing.TB) (*model.LinearRegressionModel, model.Matrix) {
	t.Helper()
	const datasets = "../../testdata/datasets"
	x, err := model.LoadCSV(filepath.Join(datasets, "diabetes_data_raw.csv.gz"), model.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := model.LoadCSV(filepath.Join(datasets, "diabetes_target.csv.gz"), model.CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewLinearRegression()
	if err := m.Fit(x, y.Col(0)); err != nil {
		t.Fatal(err)
	}
	return m, x
}

// Debian's python3-torch writes MLPs with torch.onnx.export (testdata/onnx/torch_mlp.py:
// Gemm and MatMul+Add layers, every activation, opsets 11, 13 and 17, initializers
// listed as inputs); Import reads them, and the imported model computes what torch
// does to 1e-5 (and, as a classifier, predicts torch's argmax). Networks with other
// operators are refused with an error naming the operator.
func TestPeerTorchImport(t *testing.T) {
	py := peertest.Python(t, "torch", "python3-torch")
	dir := t.TempDir()
	script, _ := filepath.Abs("../../testdata/onnx/torch_mlp.py")
	if out, err := exec.Command(py, script, dir).CombinedOutput(); err != nil {
		t.Fatalf("torch_mlp.py: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]torchCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 9 {
		t.Fatalf("%d cases", len(cases))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			m, md, err := Import(b)
			if c.Refused != nil {
				if err == nil || !strings.Contains(err.Error(), "operator "+*c.Refused+" is not supported") {
					t.Fatalf("error %v, want one naming %s", err, *c.Refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := md.Provenance["source_producer"]; p == nil || !strings.HasPrefix(p.(string), "pytorch") {
				t.Errorf("provenance %v", md.Provenance)
			}
			x := model.Matrix{Rows: len(c.X), Cols: len(c.X[0])}
			for _, r := range c.X {
				x.Data = append(x.Data, r...)
			}
			out, err := m.Output(x)
			if err != nil {
				t.Fatal(err)
			}
			if out.Cols != len(c.Y[0]) {
				t.Fatalf("%d outputs, torch has %d", out.Cols, len(c.Y[0]))
			}
			worst := 0.0
			for i, row := range c.Y {
				for j, w := range row {
					g := out.Data[i*out.Cols+j]
					if !close(g, w) {
						t.Fatalf("row %d output %d: apr %v, torch %v", i, j, g, w)
					}
					worst = math.Max(worst, math.Abs(g-w))
				}
			}
			t.Logf("%v %s: largest difference from torch %.3g", m.Widths(), actNames(m), worst)
			if !m.IsClassifier() || m.Outputs() == 1 {
				return
			}
			p, err := predict.New(m)
			if err != nil {
				t.Fatal(err)
			}
			labels, err := p.Predict(x, false)
			if err != nil {
				t.Fatal(err)
			}
			for i, row := range c.Y {
				best := 0
				for j, v := range row {
					if v > row[best] {
						best = j
					}
				}
				if labels.Labels[i] != int64(best) && math.Abs(row[best]-row[labels.Labels[i]]) > 1e-6 {
					t.Fatalf("row %d: apr predicts %d, torch's argmax is %d", i, labels.Labels[i], best)
				}
			}
		})
	}
}

func actNames(m *model.NeuralSequentialModel) string {
	var a []string
	for _, l := range m.Layers {
		a = append(a, string(l.Activation))
	}
	return strings.Join(a, ",")
}
