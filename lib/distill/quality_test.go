package distill

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/model"
)

// digitsSplit loads the real digits set scaled to [0,1] and splits it 75/25,
// stratified, with a fixed seed: 1347 training and 450 test rows, the sizes of
// scikit-learn's train_test_split(test_size=0.25, stratify=y).
func digitsSplit(t testing.TB) (train, test Data) {
	t.Helper()
	d, err := LoadData(digitsPath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.X.Rows != 1797 || d.X.Cols != 64 {
		t.Fatalf("digits: %dx%d, README says 1797x64", d.X.Rows, d.X.Cols)
	}
	for i := range d.X.Data {
		d.X.Data[i] /= 16
	}
	train, test, err = Split(d, 0.25, 0)
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

// recipe is one version of the quality recipe with the thresholds it must
// meet (measured, with some margin below the figures in the comments).
type recipe struct {
	name                     string
	teacherArch              []int
	teacherEpochs, epochs    int
	minTeacher, minStudent   float64
	minAgreement, minScratch float64
	seedTeacher, seedStudent uint64
}

// TestDigitsQuality trains a teacher on the real digits set, distils a
// 64-16-16-10 student from it (T=3, alpha=0.7, Adam lr 1e-3, batch 32) and trains
// the same student from scratch, all on a fixed stratified 75/25 split, and checks
// test accuracies and the student's agreement with the teacher.
//
// By default it runs a shorter recipe; the full recipe (60 + 60 epochs,
// teacher 64-128-128-10) runs with APR_DISTILL_FULL=1 and without -short. The
// test never asserts that distillation beats plain training.
func TestDigitsQuality(t *testing.T) {
	r := recipe{name: "default", teacherArch: []int{64, 128, 128, 10}, teacherEpochs: 20, epochs: 30,
		// measured: teacher 0.9600, distilled 0.8956 (agreement 0.9133), scratch 0.9289
		minTeacher: 0.95, minStudent: 0.885, minAgreement: 0.90, minScratch: 0.92}
	switch {
	case os.Getenv("APR_DISTILL_FULL") != "" && !testing.Short():
		// The recipe. Measured with these seeds (teacher 1, students 2):
		// teacher 0.9711, distilled 0.9422 with agreement 0.9467, scratch 0.9467.
		// Over teacher seeds 1..6 (students seed+1): teacher 0.9667..0.9756,
		// distilled 0.9422..0.9578, agreement 0.9467..0.9711, scratch
		// 0.9467..0.9622 (docs/DISTILL.md). The thresholds sit a little below those
		// minima: the 0.95 agreement is met on 4 of the 6 seeds only.
		r = recipe{name: "full", teacherArch: []int{64, 128, 128, 10}, teacherEpochs: 60, epochs: 60,
			minTeacher: 0.96, minStudent: 0.935, minAgreement: 0.94, minScratch: 0.94}
	case testing.Short():
		// measured: teacher 0.9180, distilled 0.8470 (agreement 0.8869), scratch 0.8780
		r = recipe{name: "short", teacherArch: []int{64, 32, 10}, teacherEpochs: 10, epochs: 15,
			minTeacher: 0.90, minStudent: 0.82, minAgreement: 0.86, minScratch: 0.85}
	}
	r.seedTeacher, r.seedStudent = 1, 2
	train, test := digitsSplit(t)
	if train.X.Rows != 1347 || test.X.Rows != 450 {
		t.Fatalf("split %d/%d rows", train.X.Rows, test.X.Rows)
	}
	got := runRecipe(t, r, train, test)
	t.Logf("%s recipe: teacher %v %d epochs: test accuracy %.4f (%v)", r.name, r.teacherArch, r.teacherEpochs, got.teacher, got.teacherTime.Round(time.Millisecond))
	t.Logf("%s recipe: distilled 64-16-16-10 %d epochs T=3 alpha=0.7: test accuracy %.4f, agreement %.4f (%v)",
		r.name, r.epochs, got.distilled, got.agreement, got.studentTime.Round(time.Millisecond))
	t.Logf("%s recipe: scratch 64-16-16-10 %d epochs: test accuracy %.4f, agreement %.4f", r.name, r.epochs, got.scratch, got.scratchAgreement)
	if got.teacher < r.minTeacher {
		t.Errorf("teacher test accuracy %.4f, want >= %.2f", got.teacher, r.minTeacher)
	}
	if got.distilled < r.minStudent || got.agreement < r.minAgreement {
		t.Errorf("distilled student: test accuracy %.4f (want >= %.3f), agreement %.4f (want >= %.3f)",
			got.distilled, r.minStudent, got.agreement, r.minAgreement)
	}
	if got.scratch < r.minScratch {
		t.Errorf("scratch student test accuracy %.4f, want >= %.3f", got.scratch, r.minScratch)
	}
	if got.teacherSeen != got.teacher {
		t.Errorf("teacher accuracy seen by the distillation %.4f, by its own training %.4f", got.teacherSeen, got.teacher)
	}
}

// recipeOptions are the training settings: Adam lr 1e-3, batch 32, T=3,
// alpha=0.7.
func recipeOptions() Options {
	o := DefaultOptions()
	o.Optimizer = model.Optimizer{Name: "adam", LR: 1e-3}
	o.BatchSize, o.Temperature, o.Alpha = 32, 3, 0.7
	return o
}

// recipeResult holds the test figures of one run of a recipe.
type recipeResult struct {
	teacher, distilled, agreement, scratch, scratchAgreement float64
	teacherSeen                                              float64 // the teacher's accuracy as the distillation saw it
	teacherTime, studentTime                                 time.Duration
}

// runRecipe trains r's teacher, distils the 64-16-16-10 student from it at T=3,
// alpha=0.7 and trains the same student from scratch (Adam lr 1e-3, batch 32).
func runRecipe(t testing.TB, r recipe, train, test Data) recipeResult {
	t.Helper()
	opt := recipeOptions()
	teacher, err := model.NewNeuralSequential(r.teacherArch, model.ActReLU, model.ActSoftmax, r.seedTeacher)
	if err != nil {
		t.Fatal(err)
	}
	o := opt
	o.Method, o.Epochs, o.Seed = Fit, r.teacherEpochs, r.seedTeacher
	start := time.Now()
	rt, err := Run(teacher, nil, train, test, o)
	if err != nil {
		t.Fatal(err)
	}
	var got recipeResult
	got.teacherTime = time.Since(start)

	student := func() *model.NeuralSequentialModel {
		m, err := model.NewNeuralSequential([]int{64, 16, 16, 10}, model.ActReLU, model.ActSoftmax, r.seedStudent)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tt := teacherOf(t, teacher)
	o = opt
	o.Method, o.Epochs, o.Seed = Standard, r.epochs, r.seedStudent
	start = time.Now()
	rd, err := Run(student(), []*Teacher{tt}, train, test, o)
	if err != nil {
		t.Fatal(err)
	}
	got.studentTime = time.Since(start)
	o.Method = Fit
	scratch := student()
	rs, err := Run(scratch, nil, train, test, o)
	if err != nil {
		t.Fatal(err)
	}
	// Agreement of the scratch student with the teacher, for the report.
	j, err := prepare(scratch, []*Teacher{tt}, test, Data{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	_, got.scratchAgreement = j.evaluate(j.train)
	got.teacher, got.distilled, got.agreement, got.scratch = rt.ValAccuracy, rd.ValAccuracy, rd.ValAgreement, rs.ValAccuracy
	got.teacherSeen = rd.TeacherValAccuracy
	return got
}

// TestDigitsSeeds measures the spread of the full recipe over seeds, here
// and in PyTorch on the same split, for docs/DISTILL.md: APR_DISTILL_SEEDS=1-30
// runs teacher seeds 1..30 (students seed+1); PyTorch (testdata/distill/
// torch_recipe.py --seeds) draws its own initialisation and batch order from the
// same seed numbers. It reports and asserts nothing else: single seeds are the
// business of TestDigitsQuality and TestPeerTorchRecipe.
func TestDigitsSeeds(t *testing.T) {
	spec := os.Getenv("APR_DISTILL_SEEDS")
	if spec == "" {
		t.Skip("set APR_DISTILL_SEEDS=FIRST-LAST to measure the recipe over seeds")
	}
	var first, last uint64
	if _, err := fmt.Sscanf(spec, "%d-%d", &first, &last); err != nil || first > last {
		t.Fatalf("APR_DISTILL_SEEDS=%q: want FIRST-LAST", spec)
	}
	train, test := digitsSplit(t)
	r := recipe{teacherArch: []int{64, 128, 128, 10}, teacherEpochs: 60, epochs: 60}
	var apr []recipeResult
	for s := first; s <= last; s++ {
		r.seedTeacher, r.seedStudent = s, s+1
		got := runRecipe(t, r, train, test)
		t.Logf("apr seed %d: teacher %.4f, distilled %.4f, agreement %.4f, scratch %.4f, scratch agreement %.4f",
			s, got.teacher, got.distilled, got.agreement, got.scratch, got.scratchAgreement)
		apr = append(apr, got)
	}
	logSpread(t, "apr", apr)

	py := peertest.Python(t, "torch", "python3-torch")
	dir := t.TempDir()
	writeRecipe(t, dir, train, test, 60)
	out, err := exec.Command(py, torchRecipe, "--seeds", fmt.Sprint(first), fmt.Sprint(last), dir).Output()
	if err != nil {
		t.Fatalf("torch_recipe.py --seeds: %v", err)
	}
	var torch []recipeResult
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v struct {
			Seed                                   int
			Teacher, Distilled, Agreement, Scratch float64
			ScratchAgreement                       float64 `json:"scratch_agreement"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("torch_recipe.py: %q: %v", line, err)
		}
		t.Logf("torch seed %d: teacher %.4f, distilled %.4f, agreement %.4f, scratch %.4f, scratch agreement %.4f",
			v.Seed, v.Teacher, v.Distilled, v.Agreement, v.Scratch, v.ScratchAgreement)
		torch = append(torch, recipeResult{teacher: v.Teacher, distilled: v.Distilled, agreement: v.Agreement,
			scratch: v.Scratch, scratchAgreement: v.ScratchAgreement})
	}
	logSpread(t, "torch", torch)
}

// logSpread logs mean, min and max of every figure and how many runs miss the
// issue's targets.
func logSpread(t *testing.T, who string, runs []recipeResult) {
	t.Helper()
	figures := []struct {
		name   string
		get    func(recipeResult) float64
		target float64
	}{
		{"teacher", func(r recipeResult) float64 { return r.teacher }, 0.96},
		{"distilled", func(r recipeResult) float64 { return r.distilled }, 0.94},
		{"agreement", func(r recipeResult) float64 { return r.agreement }, 0.95},
		{"scratch", func(r recipeResult) float64 { return r.scratch }, 0},
		{"scratch agreement", func(r recipeResult) float64 { return r.scratchAgreement }, 0},
	}
	for _, f := range figures {
		sum, lo, hi, below := 0.0, 1.0, 0.0, 0
		for _, r := range runs {
			v := f.get(r)
			sum += v
			lo, hi = min(lo, v), max(hi, v)
			if v < f.target {
				below++
			}
		}
		line := fmt.Sprintf("%s, %d seeds: %s mean %.4f, min %.4f, max %.4f", who, len(runs), f.name, sum/float64(len(runs)), lo, hi)
		if f.target > 0 {
			line += fmt.Sprintf(", below the issue's %.2f: %d", f.target, below)
		}
		t.Log(line)
	}
}
