package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/npy"
	"github.com/apr-go/apr/lib/stream"
)

var datasets = filepath.Join("..", "..", "testdata", "datasets")

// regimes writes a CSV of 3 features and a target with two regimes: y = 3·x0 + x1
// where x0 > 0, y = -2·x0 - x2 + 1 elsewhere, plus noise of sd 0.05. One linear
// model cannot follow the kink.
func regimes(t *testing.T, dir string, rows int) (string, model.Matrix) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	x := model.Matrix{Rows: rows, Cols: 3}
	for range rows {
		r := []float64{rng.Float64()*4 - 2, rng.NormFloat64(), rng.NormFloat64()}
		y := -2*r[0] - r[2] + 1
		if r[0] > 0 {
			y = 3*r[0] + r[1]
		}
		y += 0.05 * rng.NormFloat64()
		x.Data = append(x.Data, r...)
		fmt.Fprintf(&b, "%g,%g,%g,%g\n", r[0], r[1], r[2], y)
	}
	path := filepath.Join(dir, "regimes.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, x
}

// TestFitMoERegimes: experts trained with the gate follow both regimes, one linear
// model does not; the report on stderr and --json carry both figures.
func TestFitMoERegimes(t *testing.T) {
	dir := t.TempDir()
	data, _ := regimes(t, dir, 600)
	out := filepath.Join(dir, "moe.apr")
	code, stdout, stderr := runCLI(t, "fit-moe", "--data", data, "--experts", "2", "--top-k", "1", "--seed", "3", "--json", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "fit-moe, 2 experts") || !strings.Contains(stderr, "one linear model: mse") {
		t.Errorf("report: %s", stderr)
	}
	var r struct {
		Validation struct {
			MSE    float64 `json:"mse"`
			LinMSE float64 `json:"linear_mse"`
			R2     float64 `json:"r2"`
			LinR2  float64 `json:"linear_r2"`
		}
		Model struct{ Experts, Features int }
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	v := r.Validation
	t.Logf("validation (120 rows): mixture mse %.4f r2 %.4f; one linear model mse %.4f r2 %.4f", v.MSE, v.R2, v.LinMSE, v.LinR2)
	if r.Model.Experts != 2 || r.Model.Features != 3 || !(v.MSE < v.LinMSE/10) || !(v.R2 > 0.95) {
		t.Fatalf("mixture %+v, want an mse under a tenth of one linear model's and r2 > 0.95", r)
	}
	m, err := apr.Load[*model.MixtureOfExpertsModel](out, modeltype.MixtureOfExperts)
	if err != nil || len(m.Experts) != 2 || m.TopK != 1 {
		t.Fatalf("saved mixture: %v", err)
	}
}

// TestFitMoENumPy: the saved file's predictions (the tensors and config it holds)
// equal an independent NumPy forward pass, for trained experts (regression) and a
// gate over given classifier experts (breast_cancer, bundled).
func TestFitMoENumPy(t *testing.T) {
	const py = "/usr/bin/python3"
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no subprocesses on " + runtime.GOOS)
	}
	if out, err := exec.Command(py, "-c", "import numpy").CombinedOutput(); err != nil {
		msg := "peer test skipped: " + py + " cannot import numpy (install python3-numpy; CI does): " + string(out)
		if os.Getenv("APR_REQUIRE_PEERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	data, x := regimes(t, dir, 200)
	reg := filepath.Join(dir, "reg.apr")
	if code, _, stderr := runCLI(t, "fit-moe", "--data", data, "--experts", "3", "--top-k", "2", "-o", reg); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cancer := filepath.Join(datasets, "breast_cancer.csv")
	a, b, cls := filepath.Join(dir, "a.apr"), filepath.Join(dir, "b.apr"), filepath.Join(dir, "cls.apr")
	for _, args := range [][]string{
		{"fit-logistic", "--data", cancer, "--scale", "0.001", "-o", a},
		{"fit-logistic", "--data", cancer, "--scale", "0.001", "--l2", "0.1", "--lr", "0.5", "-o", b},
		{"fit-moe", "--data", cancer, "--scale", "0.001", "--expert", a, "--expert", b, "-o", cls},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	cm, err := model.LoadCSV(cancer, model.CSVOptions{SkipLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	cx, _, _ := cm.SplitTarget(cm.Cols - 1)
	for i := range cx.Data {
		cx.Data[i] *= 0.001
	}
	for _, c := range []struct {
		file string
		x    model.Matrix
	}{{reg, x}, {cls, cx}} {
		m, err := apr.Load[*model.MixtureOfExpertsModel](c.file, modeltype.MixtureOfExperts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Output(c.x)
		if err != nil {
			t.Fatal(err)
		}
		want := numpyMoE(t, py, c.file, c.x, m.Classes())
		worst := 0.0
		for i := range want {
			worst = math.Max(worst, math.Abs(got.Data[i]-want[i]))
		}
		t.Logf("%s: %d values, largest difference from NumPy %.3g", filepath.Base(c.file), len(want), worst)
		if len(want) != len(got.Data) || worst > 1e-5 {
			t.Fatalf("%s: %d values, NumPy %d, largest difference %g", c.file, len(got.Data), len(want), worst)
		}
	}
}

// numpyMoE runs testdata/peer/moe_forward.py (lib/predict's peer test runs it too) on the tensors and config of the file at path.
func numpyMoE(t *testing.T, py, path string, x model.Matrix, classes int) []float64 {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := stream.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Header().Metadata.ModelConfig
	tensors, err := stream.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		if err := npy.WriteFile(filepath.Join(dir, tt.Name+".npy"), tt.DType, tt.Shape, tt.Data); err != nil {
			t.Fatal(err)
		}
	}
	if classes > 0 {
		cfg["classes"] = int64(classes)
	}
	js, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(dir, "config.json"), js, 0o600)
	b := make([]byte, 0, 8*len(x.Data))
	for _, v := range x.Data {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	if err := npy.WriteFile(filepath.Join(dir, "x.npy"), dtype.F64, []int64{int64(x.Rows), int64(x.Cols)}, b); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, filepath.Join("..", "..", "testdata", "peer", "moe_forward.py"), dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	h, data, err := npy.ReadFile(filepath.Join(dir, "out.npy"))
	if err != nil || h.DType != dtype.F64 {
		t.Fatalf("out.npy: %v %v", err, h.DType)
	}
	out := make([]float64, len(data)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return out
}

// TestFitMoEBadInput: mixed expert kinds, a feature count the experts do not take,
// k > N, regression targets that are no numbers for class experts: refused with an
// error naming the flag or file, and no output file.
func TestFitMoEBadInput(t *testing.T) {
	dir := t.TempDir()
	data, x := regimes(t, dir, 50)
	save := func(name string, m model.Model) string {
		p := filepath.Join(dir, name)
		if err := apr.Save(p, m, apr.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lin := model.NewLinearRegression()
	y := make([]float64, x.Rows)
	for i := range y {
		y[i] = x.Data[3*i]
	}
	if err := lin.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	logit := model.NewLogisticRegression()
	logit.Coefficients, logit.Intercepts = []float32{1, 2, 3}, []float32{0}
	wide := model.NewLinearRegression()
	wide.Coefficients, wide.Intercept = []float32{1, 2, 3, 4}, 0
	linP, logitP, wideP := save("lin.apr", lin), save("logit.apr", logit), save("wide.apr", wide)
	out := filepath.Join(dir, "out.apr")
	cancer := filepath.Join(datasets, "breast_cancer.csv")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--expert", linP, "--expert", logitP}, 1, "--expert " + logitP + " (expert 1): mixture of experts: expert 1 predicts 2 classes, expert 0 1 regression outputs"},
		{[]string{"--expert", linP, "--expert", wideP}, 1, "expert 1 takes 4 features, the gate 3"},
		{[]string{"--expert", wideP, "--top-k", "1"}, 1, "regimes.csv: 3 features per row, the experts take 4"},
		{[]string{"--expert", linP, "--top-k", "2"}, 2, "--top-k 2: expected 1 to the 1 experts"},
		{[]string{"--experts", "3", "--top-k", "4"}, 2, "--top-k 4: expected 1 to the 3 experts"},
		{[]string{"--experts", "0"}, 2, "--experts 0: expected 1 to"},
		{[]string{"--expert", filepath.Join(dir, "none.apr"), "--top-k", "1"}, 1, "--expert " + filepath.Join(dir, "none.apr")},
	} {
		args := append([]string{"fit-moe", "--data", data, "-o", out}, c.args...)
		code, _, stderr := runCLI(t, args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d with %q: %s", c.args, code, c.code, c.want, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: %s written", c.args, out)
		}
	}
	// Class experts need class labels: breast_cancer's features, regimes' targets.
	b := filepath.Join(dir, "b.apr")
	if code, _, stderr := runCLI(t, "fit-logistic", "--data", cancer, "--scale", "0.001", "-o", b); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := runCLI(t, "fit-moe", "--data", data, "--expert", b, "--top-k", "1", "-o", out)
	if code != 1 || !strings.Contains(stderr, "regimes.csv: row 1, column 4: label") {
		t.Errorf("real targets for class experts: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("written")
	}
}

// TestFitMoEDiabetes: the bundled diabetes set (features and targets in two files)
// through fit-moe: the figures of the mixture and of one linear model are reported.
func TestFitMoEDiabetes(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "moe.apr")
	code, _, stderr := runCLI(t, "fit-moe", "--data", filepath.Join(datasets, "diabetes_data_raw.csv.gz"),
		"--labels", filepath.Join(datasets, "diabetes_target.csv.gz"), "--scale", "0.01", "-o", out)
	if code != 0 || !strings.Contains(stderr, "353 rows: mse") || !strings.Contains(stderr, "89 rows: mse") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("%s", stderr)
	m, err := apr.Load[*model.MixtureOfExpertsModel](out, modeltype.MixtureOfExperts)
	if err != nil || len(m.Experts) != 4 || m.TopK != 2 || m.Features != 10 {
		t.Fatalf("%v %+v", err, m)
	}
}
