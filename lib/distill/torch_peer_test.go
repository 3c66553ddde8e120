package distill

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/npy"
)

// TestPeerTorchRecipe runs the digits recipe (teacher 64-128-128-10 fitted
// 60 epochs, student 64-16-16-10 distilled 60 epochs at T=3, alpha=0.7, Adam lr
// 1e-3, batch 32) here and in PyTorch (Debian's python3-torch, the 1.13 the issue
// quotes; testdata/distill/torch_recipe.py) from the same initial parameters, in
// the same batch order, the PyTorch student learning from this teacher's soft
// targets. Both must take the same steps: the parameters after ten steps agree to
// float32 rounding, and after the whole recipe, where rounding differences have
// grown, the two teachers, and the two students, still predict the same classes on
// almost every test row.
func TestPeerTorchRecipe(t *testing.T) {
	py := peertest.Python(t, "torch", "python3-torch")
	const epochs, teacherSeed, studentSeed = 60, 1, 2
	dir := t.TempDir()
	train, test := digitsSplit(t)
	writeRecipe(t, dir, train, test, epochs)
	opt := recipeOptions()

	o := opt
	o.Method, o.Epochs, o.Seed = Fit, epochs, teacherSeed
	teacher := trainSteps(t, dir, "teacher", []int{64, 128, 128, 10}, nil, train, test, o)
	tt := teacherOf(t, teacher["final"])
	z, err := tt.Logits(rowsF32(t, train.X), train.X.Rows)
	if err != nil {
		t.Fatal(err)
	}
	soft := make([]float32, len(z))
	model.SoftmaxRows(soft, z, tt.Classes(), opt.Temperature)
	writeNPY(t, filepath.Join(dir, "soft_targets.npy"), dtype.F32, []int64{int64(train.X.Rows), int64(tt.Classes())}, f32Bytes(soft))
	o.Method, o.Seed = Standard, studentSeed
	student := trainSteps(t, dir, "student", []int{64, 16, 16, 10}, []*Teacher{tt}, train, test, o)

	cmd := exec.Command(py, torchRecipe, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch_recipe.py: %v\n%s", err, out)
	}
	var version struct{ Torch string }
	readJSON(t, filepath.Join(dir, "version.json"), &version)

	for _, who := range []struct {
		name string
		m    map[string]*model.NeuralSequentialModel
	}{{"teacher", teacher}, {"student", student}} {
		d := paramDiff(t, dir, who.name+"_s10", who.m["s10"])
		if d > 1e-6 {
			t.Errorf("%s after ten steps: parameters differ from PyTorch's by up to %.3g, want float32 rounding (<= 1e-6)", who.name, d)
		}
		t.Logf("%s: max |apr - torch| of the parameters: %.3g after ten steps, %.3g after the first epoch, %.3g at the end",
			who.name, d, paramDiff(t, dir, who.name+"_e1", who.m["e1"]), paramDiff(t, dir, who.name+"_final", who.m["final"]))
	}
	ours := map[string][]int{}
	theirs := map[string][]int{}
	for _, c := range []struct {
		name string
		m    *model.NeuralSequentialModel
	}{{"teacher", teacher["final"]}, {"student", student["final"]}} {
		name := c.name
		z, err := c.m.Logits(rowsF32(t, test.X), test.X.Rows)
		if err != nil {
			t.Fatal(err)
		}
		ours[name] = model.ArgmaxRows(z, 10)
		theirs[name] = model.ArgmaxRows(readF32(t, filepath.Join(dir, name+"_test_logits.npy"), len(z)), 10)
		same := matchRate(ours[name], theirs[name])
		t.Logf("%s: apr and PyTorch predict the same class on %.4f of the test rows", name, same)
		if same < 0.99 {
			t.Errorf("%s: apr and PyTorch predict the same class on %.4f of the test rows, want >= 0.99", name, same)
		}
	}
	for _, r := range []struct {
		who  string
		pred map[string][]int
	}{{"apr", ours}, {"torch " + version.Torch, theirs}} {
		t.Logf("%s: teacher %.4f, distilled %.4f, agreement %.4f", r.who, matchRate(r.pred["teacher"], test.Y),
			matchRate(r.pred["student"], test.Y), matchRate(r.pred["student"], r.pred["teacher"]))
	}
}

// trainSteps trains a fresh ReLU network of the widths, seeded with o.Seed, as Run
// does, and writes its initial parameters and batch order for the peer. It returns
// the models after ten steps ("s10"), after the first epoch ("e1") and after
// o.Epochs ("final"). Beyond a few dozen steps rounding differences can flip a ReLU
// or wake a dead unit, whose first tiny gradient Adam scales up to a full step; from
// then on the runs differ by more than rounding (PyTorch in float32 and in float64
// part the same way).
func trainSteps(t *testing.T, dir, prefix string, widths []int, teachers []*Teacher, train, test Data, o Options) map[string]*model.NeuralSequentialModel {
	t.Helper()
	init := reluNet(t, widths, o.Seed)
	writeParams(t, dir, prefix, init)
	first := writeOrder(t, dir, prefix, o.Seed, o.Epochs, train.X.Rows)
	out := map[string]*model.NeuralSequentialModel{"s10": init.Clone(), "e1": init.Clone(), "final": init.Clone()}
	j, err := prepare(out["s10"], teachers, train, Data{}, o)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := j.student.NewTrainer(o.Optimizer)
	if err != nil {
		t.Fatal(err)
	}
	b := j.newBatch(tr, o.BatchSize)
	for i := range 10 {
		if _, _, err := b.step(first[i*o.BatchSize : (i+1)*o.BatchSize]); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []struct {
		name   string
		epochs int
	}{{"e1", 1}, {"final", o.Epochs}} {
		oe := o
		oe.Epochs = e.epochs
		if _, err := Run(out[e.name], teachers, train, test, oe); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// torchRecipe is the PyTorch side of the peer tests.
var torchRecipe = filepath.Join("..", "..", "testdata", "distill", "torch_recipe.py")

// writeRecipe writes the split and recipeOptions where torch_recipe.py reads them.
func writeRecipe(t *testing.T, dir string, train, test Data, epochs int) {
	t.Helper()
	writeData(t, dir, "train", train)
	writeData(t, dir, "test", test)
	o := recipeOptions()
	b, err := json.Marshal(map[string]any{"lr": o.Optimizer.LR, "batch_size": o.BatchSize, "temperature": o.Temperature,
		"alpha": o.Alpha, "epochs": epochs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "recipe.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func reluNet(t *testing.T, widths []int, seed uint64) *model.NeuralSequentialModel {
	t.Helper()
	m, err := model.NewNeuralSequential(widths, model.ActReLU, model.ActSoftmax, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func writeNPY(t *testing.T, path string, d dtype.DType, shape []int64, data []byte) {
	t.Helper()
	if err := npy.WriteFile(path, d, shape, data); err != nil {
		t.Fatal(err)
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func i64Bytes(v []int) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func writeData(t *testing.T, dir, name string, d Data) {
	t.Helper()
	writeNPY(t, filepath.Join(dir, name+"_x.npy"), dtype.F32, []int64{int64(d.X.Rows), int64(d.X.Cols)}, f32Bytes(rowsF32(t, d.X)))
	writeNPY(t, filepath.Join(dir, name+"_y.npy"), dtype.I64, []int64{int64(len(d.Y))}, i64Bytes(d.Y))
}

func writeParams(t *testing.T, dir, prefix string, m *model.NeuralSequentialModel) {
	t.Helper()
	for _, tn := range m.Tensors() {
		writeNPY(t, filepath.Join(dir, prefix+"."+tn.Name[len("layers."):]+".npy"), dtype.F32, tn.Shape, tn.Data)
	}
}

// writeOrder writes the rows' order of every epoch as Run draws it for seed and
// returns the first epoch's. Should Run come to draw it differently, the
// ten-step comparison fails.
func writeOrder(t *testing.T, dir, prefix string, seed uint64, epochs, rows int) []int {
	t.Helper()
	r := model.NewRand(seed, streamBatchOrder)
	perm := identity(rows)
	var all []int
	for range epochs {
		r.Shuffle(perm)
		all = append(all, perm...)
	}
	writeNPY(t, filepath.Join(dir, prefix+"_order.npy"), dtype.I64, []int64{int64(epochs), int64(rows)}, i64Bytes(all))
	return all[:rows]
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// paramDiff returns the largest difference between m's parameters and the
// PyTorch parameters saved under prefix.
func paramDiff(t *testing.T, dir, prefix string, m *model.NeuralSequentialModel) float64 {
	t.Helper()
	var worst float64
	for i, l := range m.Layers {
		for _, p := range []struct {
			name string
			v    []float32
		}{{"weight", l.Weight}, {"bias", l.Bias}} {
			theirs := readF32(t, filepath.Join(dir, fmt.Sprintf("%s.%d.%s.npy", prefix, i, p.name)), len(p.v))
			for j, x := range p.v {
				worst = max(worst, math.Abs(float64(x)-float64(theirs[j])))
			}
		}
	}
	return worst
}

func rowsF32(t *testing.T, x model.Matrix) []float32 {
	t.Helper()
	v, err := model.Float32Rows(x, x.Cols)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readF32 reads a float32 .npy file of n values.
func readF32(t *testing.T, path string, n int) []float32 {
	t.Helper()
	h, b, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.DType != dtype.F32 || len(b) != 4*n {
		t.Fatalf("%s: %s with %d bytes, want %d float32 values", path, h.DType, len(b), n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
