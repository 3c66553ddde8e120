package distill

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stconv"
)

var digitsPath = filepath.Join("..", "..", "testdata", "digits", "digits.csv.gz")

// randomData returns rows×cols values in [-1,1) and labels in [0,k).
func randomData(rows, cols, k int, seed uint64) Data {
	r := model.NewRand(seed, 1)
	d := Data{X: model.Matrix{Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}, Y: make([]int, rows)}
	for i := range d.X.Data {
		d.X.Data[i] = 2*r.Float64() - 1
	}
	for i := range d.Y {
		d.Y[i] = r.IntN(k)
	}
	return d
}

func newNet(t testing.TB, widths []int, seed uint64) *model.NeuralSequentialModel {
	t.Helper()
	m, err := model.NewNeuralSequential(widths, model.ActTanh, model.ActSoftmax, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func teacherOf(t testing.TB, m model.Model) *Teacher {
	t.Helper()
	tt, err := NewTeacher(m)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// referenceLoss is the distillation loss of one row written from its definition:
// alpha·T²·Σ p log(p/q_T) + (1-alpha)·(-log q_1[y]), with q from a plain softmax.
func referenceLoss(z []float64, p []float64, y int, alpha, temp float64, labelled bool) float64 {
	softmax := func(t float64) []float64 {
		mx := math.Inf(-1)
		for _, v := range z {
			mx = math.Max(mx, v/t)
		}
		out := make([]float64, len(z))
		var s float64
		for i, v := range z {
			out[i] = math.Exp(v/t - mx)
			s += out[i]
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	var kl float64
	if p != nil {
		q := softmax(temp)
		for i := range p {
			if p[i] > 0 {
				kl += p[i] * math.Log(p[i]/q[i])
			}
		}
	}
	if !labelled {
		return temp * temp * kl
	}
	return alpha*temp*temp*kl - (1-alpha)*math.Log(softmax(1)[y])
}

// TestLossGradient checks, for every kind of run, that the loss equals its
// definition and that the gradient with respect to the student logits matches
// central finite differences of that loss.
func TestLossGradient(t *testing.T) {
	const rows, cols, k = 5, 4, 3
	data := randomData(rows, cols, k, 1)
	unlabelled := Data{X: data.X}
	t1, t2 := teacherOf(t, newNet(t, []int{cols, 6, k}, 11)), teacherOf(t, newNet(t, []int{cols, 5, k}, 12))
	// Sharper teachers than their random initialisation, so soft targets are uneven.
	for _, tt := range []*Teacher{t1, t2} {
		for i := range tt.nn.Layers[1].Weight {
			tt.nn.Layers[1].Weight[i] *= 4
		}
	}
	cases := []struct {
		name     string
		teachers []*Teacher
		data     Data
		opt      func(*Options)
	}{
		{"standard labelled", []*Teacher{t1}, data, func(o *Options) {}},
		{"standard T=1 alpha=0.3", []*Teacher{t1}, data, func(o *Options) { o.Temperature, o.Alpha = 1, 0.3 }},
		{"standard unlabelled", []*Teacher{t1}, unlabelled, func(o *Options) {}},
		{"ensemble weighted", []*Teacher{t1, t2}, data, func(o *Options) { o.Method, o.Weights, o.Temperature = Ensemble, []float64{3, 1}, 5 }},
		{"fit", nil, data, func(o *Options) { o.Method = Fit }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opt := DefaultOptions()
			c.opt(&opt)
			student := newNet(t, []int{cols, 4, k}, 3)
			j, err := prepare(student, c.teachers, c.data, Data{}, opt)
			if err != nil {
				t.Fatal(err)
			}
			r := model.NewRand(5, 5)
			z := make([]float32, rows*k)
			for i := range z {
				z[i] = float32(6*r.Float64() - 3)
			}
			idx := []int{4, 0, 2, 1, 3}
			grad, q := make([]float32, rows*k), make([]float32, rows*k)
			loss := j.lossGrad(grad, q, z, idx) / rows
			var want float64
			for i, row := range idx {
				zi := make([]float64, k)
				for c := range k {
					zi[c] = float64(z[i*k+c])
				}
				var p []float64
				if len(c.teachers) > 0 {
					p = make([]float64, k)
					for cc := range k {
						p[cc] = float64(j.train.soft[row*k+cc])
					}
				}
				y := 0
				if c.data.Y != nil {
					y = c.data.Y[row]
				}
				alpha := opt.Alpha
				if len(c.teachers) == 0 {
					alpha = 0
				}
				want += referenceLoss(zi, p, y, alpha, opt.Temperature, c.data.Y != nil)
			}
			want /= rows
			if math.Abs(loss-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss %.8g, definition gives %.8g", loss, want)
			}
			const eps = 1e-2
			scratch := make([]float32, rows*k)
			for i := range z {
				old := z[i]
				z[i] = old + eps
				up := j.lossGrad(scratch, q, z, idx) / rows
				z[i] = old - eps
				down := j.lossGrad(scratch, q, z, idx) / rows
				z[i] = old
				fd := (up - down) / (2 * eps)
				if math.Abs(fd-float64(grad[i])) > 1e-4+1e-3*math.Abs(fd) {
					t.Errorf("d loss / d z[%d]: analytic %.6g, finite difference %.6g", i, grad[i], fd)
				}
			}
		})
	}
}

// TestStudentGradient checks the whole chain: the gradient the training loop feeds
// the Trainer, back-propagated to the student's parameters, against finite
// differences of the distillation loss in the parameters.
func TestStudentGradient(t *testing.T) {
	const rows, cols, k = 6, 4, 3
	data := randomData(rows, cols, k, 2)
	teacher := teacherOf(t, newNet(t, []int{cols, 6, k}, 21))
	student := newNet(t, []int{cols, 5, k}, 22)
	opt := DefaultOptions()
	j, err := prepare(student, []*Teacher{teacher}, data, Data{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	idx := identity(rows)
	loss := func() float64 {
		z, err := student.Logits(j.train.x, rows)
		if err != nil {
			t.Fatal(err)
		}
		return j.lossGrad(make([]float32, rows*k), make([]float32, rows*k), z, idx) / rows
	}
	tr, err := student.NewTrainer(opt.Optimizer)
	if err != nil {
		t.Fatal(err)
	}
	z, err := tr.Forward(j.train.x, rows)
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, rows*k)
	j.lossGrad(grad, make([]float32, rows*k), z, idx)
	if err := tr.Backward(grad, nil); err != nil {
		t.Fatal(err)
	}
	gW, gB := tr.Gradients()
	const eps = 1e-3
	check := func(what string, p []float32, g []float32) {
		for i := range p {
			old := p[i]
			p[i] = old + eps
			up := loss()
			p[i] = old - eps
			down := loss()
			p[i] = old
			fd := (up - down) / (2 * eps)
			if math.Abs(fd-float64(g[i])) > 1e-3+2e-2*math.Abs(fd) {
				t.Errorf("%s[%d]: analytic %.6g, finite difference %.6g", what, i, g[i], fd)
			}
		}
	}
	for l := range student.Layers {
		check("weight", student.Layers[l].Weight, gW[l])
		check("bias", student.Layers[l].Bias, gB[l])
	}
}

func TestRejects(t *testing.T) {
	data := randomData(20, 4, 3, 3)
	good := teacherOf(t, newNet(t, []int{4, 5, 3}, 1))
	student := func() *model.NeuralSequentialModel { return newNet(t, []int{4, 3, 3}, 2) }
	nan := randomData(20, 4, 3, 3)
	nan.X.Data[2*4+1] = math.NaN()
	badLabel := randomData(20, 4, 3, 3)
	badLabel.Y[7] = 3
	opt := func(f func(*Options)) Options {
		o := DefaultOptions()
		o.Epochs = 1
		if f != nil {
			f(&o)
		}
		return o
	}
	cases := []struct {
		name     string
		student  *model.NeuralSequentialModel
		teachers []*Teacher
		data     Data
		opt      Options
		want     string
	}{
		{"width mismatch", student(), []*Teacher{teacherOf(t, newNet(t, []int{5, 5, 3}, 1))}, data, opt(nil), "takes 5 features, the student 4"},
		{"classes mismatch", student(), []*Teacher{teacherOf(t, newNet(t, []int{4, 5, 4}, 1))}, data, opt(nil), "predicts 4 classes, the student 3"},
		{"data width", newNet(t, []int{5, 3, 3}, 2), nil, data, opt(func(o *Options) { o.Method = Fit }), "4 features per row, the student takes 5"},
		{"NaN", student(), []*Teacher{good}, nan, opt(nil), "row 3, column 2: value NaN"},
		{"label out of range", student(), []*Teacher{good}, badLabel, opt(nil), "row 8: label 3 out of range"},
		{"empty", student(), []*Teacher{good}, Data{X: model.Matrix{Cols: 4}}, opt(nil), "no training rows"},
		{"fit without labels", student(), nil, Data{X: data.X}, opt(func(o *Options) { o.Method = Fit }), "needs labels"},
		{"fit with teacher", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Method = Fit }), "takes no teacher"},
		{"two teachers standard", student(), []*Teacher{good, good}, data, opt(nil), "--method ensemble"},
		{"weights count", student(), []*Teacher{good, good}, data, opt(func(o *Options) { o.Method, o.Weights = Ensemble, []float64{1} }), "1 teacher weights for 2"},
		{"negative weight", student(), []*Teacher{good, good}, data, opt(func(o *Options) { o.Method, o.Weights = Ensemble, []float64{1, -1} }), "weight 2 is -1"},
		{"alpha", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Alpha = 1.5 }), "alpha 1.5"},
		{"temperature", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Temperature = 0 }), "temperature 0"},
		{"progressive without map", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Method = Progressive }), "needs a layer map"},
		{"progressive student layer", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Method, o.LayerMap = Progressive, []LayerPair{{1, 0}} }), "the student has 1 hidden layers"},
		{"progressive teacher layer", student(), []*Teacher{good}, data, opt(func(o *Options) { o.Method, o.LayerMap = Progressive, []LayerPair{{0, 1}} }), "the teacher has 1 hidden layers"},
		{"relu-output student", newNet(t, []int{4, 3}, 2), []*Teacher{good}, data, opt(nil), ""},
	}
	cases[len(cases)-1].student.Layers[0].Activation = model.ActReLU
	cases[len(cases)-1].want = "expected a softmax"
	for _, c := range cases {
		_, err := Run(c.student, c.teachers, c.data, Data{}, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	regression := newNet(t, []int{4, 3, 1}, 1)
	regression.Layers[1].Activation = model.ActIdentity
	if _, err := NewTeacher(regression); err == nil || !strings.Contains(err.Error(), "not a classifier") {
		t.Errorf("identity-output teacher: %v", err)
	}
	if _, err := NewTeacher(model.NewLinearRegression()); err == nil || !strings.Contains(err.Error(), "not a classifier") {
		t.Errorf("LinearRegression teacher: %v", err)
	}
	for _, s := range []string{"0", "0:x", "a:1", "0:0,0:1", "-1:0"} {
		if _, err := ParseLayerMap(s); err == nil {
			t.Errorf("ParseLayerMap(%q) accepted", s)
		}
	}
	if m, err := ParseLayerMap(" 0:0, 1:2 "); err != nil || FormatLayerMap(m) != "0:0,1:2" {
		t.Errorf("ParseLayerMap: %v %v", m, err)
	}
}

// TestLogisticTeacher distils a binary LogisticRegression (standardised
// breast_cancer) into a small network through its probabilities [1-p, p].
func TestLogisticTeacher(t *testing.T) {
	d, err := LoadData(filepath.Join("..", "..", "testdata", "datasets", "breast_cancer.csv"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	xs, _, _, err := model.Standardize(d.X)
	if err != nil {
		t.Fatal(err)
	}
	d.X = xs
	y := make([]float64, len(d.Y))
	for i, c := range d.Y {
		y[i] = float64(c)
	}
	lr := model.NewLogisticRegression()
	if err := lr.Fit(d.X, y); err != nil {
		t.Fatal(err)
	}
	teacher := teacherOf(t, lr)
	if teacher.Classes() != 2 || teacher.Inputs() != 30 || teacher.Params() != 31 {
		t.Fatalf("teacher: %d classes, %d inputs, %d params", teacher.Classes(), teacher.Inputs(), teacher.Params())
	}
	train, val, err := Split(Data{X: d.X}, 0.25, 0) // unlabelled: soft targets only
	if err != nil {
		t.Fatal(err)
	}
	opt := DefaultOptions()
	opt.Epochs = 30
	res, err := Run(newNet(t, []int{30, 8, 2}, 1), []*Teacher{teacher}, train, val, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Measured: validation agreement 0.993 after 30 epochs.
	t.Logf("student agreement with LogisticRegression: train %.4f, validation %.4f", res.TrainAgreement, res.ValAgreement)
	if res.ValAgreement < 0.97 || !math.IsNaN(res.ValAccuracy) {
		t.Errorf("validation agreement %.4f, accuracy %v (no labels: NaN)", res.ValAgreement, res.ValAccuracy)
	}
}

// TestMultinomialLogisticTeacher fits a softmax regression on the digits training
// split, saves it as APR and as SafeTensors, loads both back, and distils a small
// student from the APR file through its probabilities, validated on the held-out
// rows.
func TestMultinomialLogisticTeacher(t *testing.T) {
	train, test := digitsSplit(t)
	y := make([]float64, len(train.Y))
	for i, c := range train.Y {
		y[i] = float64(c)
	}
	lr := model.NewMultinomialLogisticRegression(10)
	lr.LearningRate, lr.MaxIter = 1, 500
	epochs := 60 // the recipe for the student
	if testing.Short() {
		lr.MaxIter, epochs = 100, 10
	}
	if err := lr.Fit(train.X, y); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	aprPath, stPath := filepath.Join(dir, "softmax.apr"), filepath.Join(dir, "softmax.safetensors")
	if err := apr.Save(aprPath, lr, apr.SaveOptions{Name: "digits-softmax"}); err != nil {
		t.Fatal(err)
	}
	if err := stconv.SaveModel(stPath, lr); err != nil {
		t.Fatal(err)
	}
	fromST, err := stconv.LoadModel[*model.LogisticRegressionModel](stPath, modeltype.LogisticRegression)
	if err != nil {
		t.Fatal(err)
	}
	teacher, err := LoadTeacher(aprPath)
	if err != nil {
		t.Fatal(err)
	}
	fromAPR := teacher.Model.(*model.LogisticRegressionModel)
	for _, m := range []*model.LogisticRegressionModel{fromAPR, fromST} {
		if m.Classes != 10 || !slices.Equal(m.Coefficients, lr.Coefficients) || !slices.Equal(m.Intercepts, lr.Intercepts) {
			t.Fatalf("reloaded model differs: %d classes", m.Classes)
		}
	}
	if teacher.Classes() != 10 || teacher.Inputs() != 64 || teacher.Params() != 650 {
		t.Fatalf("teacher: %d classes, %d inputs, %d params", teacher.Classes(), teacher.Inputs(), teacher.Params())
	}
	ty := make([]float64, len(test.Y))
	for i, c := range test.Y {
		ty[i] = float64(c)
	}
	teacherAcc, err := lr.Score(test.X, ty)
	if err != nil {
		t.Fatal(err)
	}

	opt := DefaultOptions()
	opt.Epochs, opt.Seed = epochs, 2
	student, err := model.NewNeuralSequential([]int{64, 16, 16, 10}, model.ActReLU, model.ActSoftmax, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(student, []*Teacher{teacher}, train, test, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Measured (500 steps, 60 epochs): teacher 0.9622, student 0.9444 with
	// agreement 0.9667.
	t.Logf("softmax regression teacher (%d steps): test accuracy %.4f; student 64-16-16-10 %d epochs T=3 alpha=0.7: test accuracy %.4f, agreement %.4f",
		lr.Iterations, teacherAcc, epochs, res.ValAccuracy, res.ValAgreement)
	if res.TeacherValAccuracy != teacherAcc {
		t.Errorf("teacher accuracy through its logits %.4f, through Predict %.4f", res.TeacherValAccuracy, teacherAcc)
	}
	minT, minS, minA := 0.95, 0.93, 0.95
	if testing.Short() {
		minT, minS, minA = 0.90, 0.75, 0.75
	}
	if teacherAcc < minT || res.ValAccuracy < minS || res.ValAgreement < minA {
		t.Errorf("teacher %.4f (want >= %.2f), student %.4f (want >= %.2f), agreement %.4f (want >= %.2f)",
			teacherAcc, minT, res.ValAccuracy, minS, res.ValAgreement, minA)
	}
}

// TestSoftTargets checks the targets the loss uses against their definition,
// computed here in float64 from the teacher's own outputs: p_T = softmax(logits/T)
// of the teacher (the weighted mean over an ensemble), and the teacher's class the
// argmax of the mean probabilities at T = 1. TestLossGradient takes p_T as given.
func TestSoftTargets(t *testing.T) {
	const rows, cols, k = 7, 4, 3
	data := randomData(rows, cols, k, 3)
	t1, t2 := teacherOf(t, newNet(t, []int{cols, 6, k}, 31)), teacherOf(t, newNet(t, []int{cols, 5, k}, 32))
	for _, tt := range []*Teacher{t1, t2} {
		for i := range tt.nn.Layers[1].Weight {
			tt.nn.Layers[1].Weight[i] *= 5
		}
	}
	opt := DefaultOptions()
	opt.Method, opt.Weights, opt.Temperature = Ensemble, []float64{1, 3}, 2.5
	j, err := prepare(newNet(t, []int{cols, 4, k}, 3), []*Teacher{t1, t2}, data, Data{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	softmax := func(z []float32, temp float64) []float64 {
		out := make([]float64, len(z))
		var s float64
		for i, v := range z {
			out[i] = math.Exp(float64(v) / temp)
			s += out[i]
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	var z [2][]float32
	for i, tt := range []*Teacher{t1, t2} {
		x := make([]float32, len(data.X.Data))
		for n, v := range data.X.Data {
			x[n] = float32(v)
		}
		if z[i], err = tt.nn.Logits(x, rows); err != nil {
			t.Fatal(err)
		}
	}
	for r := range rows {
		a, b := softmax(z[0][r*k:(r+1)*k], 2.5), softmax(z[1][r*k:(r+1)*k], 2.5)
		a1, b1 := softmax(z[0][r*k:(r+1)*k], 1), softmax(z[1][r*k:(r+1)*k], 1)
		best := 0
		mean1 := make([]float64, k)
		for c := range k {
			want := 0.25*a[c] + 0.75*b[c]
			if got := float64(j.train.soft[r*k+c]); math.Abs(got-want) > 1e-6 {
				t.Errorf("row %d class %d: soft target %.7f, definition %.7f", r, c, got, want)
			}
			mean1[c] = 0.25*a1[c] + 0.75*b1[c]
			if mean1[c] > mean1[best] {
				best = c
			}
		}
		if j.train.tpred[r] != best {
			t.Errorf("row %d: teacher class %d, definition %d", r, j.train.tpred[r], best)
		}
	}
}
