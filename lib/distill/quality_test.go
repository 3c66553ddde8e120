package distill

import (
	"os"
	"testing"
	"time"

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
	name                      string
	teacherArch               []int
	teacherEpochs, epochs     int
	minTeacher, minStudent    float64
	minAgreement, minScratch  float64
	seedTeacher, seedStudent  uint64
	temperature, alpha, lrate float64
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
	r.seedTeacher, r.seedStudent, r.temperature, r.alpha, r.lrate = 1, 2, 3, 0.7, 1e-3
	train, test := digitsSplit(t)
	if train.X.Rows != 1347 || test.X.Rows != 450 {
		t.Fatalf("split %d/%d rows", train.X.Rows, test.X.Rows)
	}
	opt := DefaultOptions()
	opt.Optimizer = model.Optimizer{Name: "adam", LR: r.lrate}
	opt.BatchSize, opt.Temperature, opt.Alpha = 32, r.temperature, r.alpha

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
	tTeacher := time.Since(start)

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
	tStudent := time.Since(start)
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
	_, scratchAgree := j.evaluate(j.train)

	t.Logf("%s recipe: teacher %v %d epochs: test accuracy %.4f (%v)", r.name, r.teacherArch, r.teacherEpochs, rt.ValAccuracy, tTeacher.Round(time.Millisecond))
	t.Logf("%s recipe: distilled 64-16-16-10 %d epochs T=%g alpha=%g: test accuracy %.4f, agreement %.4f (%v)",
		r.name, r.epochs, r.temperature, r.alpha, rd.ValAccuracy, rd.ValAgreement, tStudent.Round(time.Millisecond))
	t.Logf("%s recipe: scratch 64-16-16-10 %d epochs: test accuracy %.4f, agreement %.4f", r.name, r.epochs, rs.ValAccuracy, scratchAgree)
	if rt.ValAccuracy < r.minTeacher {
		t.Errorf("teacher test accuracy %.4f, want >= %.2f", rt.ValAccuracy, r.minTeacher)
	}
	if rd.ValAccuracy < r.minStudent || rd.ValAgreement < r.minAgreement {
		t.Errorf("distilled student: test accuracy %.4f (want >= %.3f), agreement %.4f (want >= %.3f)",
			rd.ValAccuracy, r.minStudent, rd.ValAgreement, r.minAgreement)
	}
	if rs.ValAccuracy < r.minScratch {
		t.Errorf("scratch student test accuracy %.4f, want >= %.3f", rs.ValAccuracy, r.minScratch)
	}
	if rd.TeacherValAccuracy != rt.ValAccuracy {
		t.Errorf("teacher accuracy seen by the distillation %.4f, by its own training %.4f", rd.TeacherValAccuracy, rt.ValAccuracy)
	}
}
