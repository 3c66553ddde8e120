// Package distill trains NeuralSequential student models from teacher classifiers
// (knowledge distillation), or from labels alone.
//
// # Methods
//
//   - standard: soft targets at temperature T. With labels, the loss of a row is
//     alpha·T²·KL(p_T || q_T) + (1-alpha)·CE(y, q_1), where p_T = softmax(teacher
//     logits / T) and q_T = softmax(student logits / T) (Hinton et al., 2015); the T²
//     keeps the soft term's gradient, alpha·T·(q_T - p_T), on the scale of the hard
//     term's as T changes. Without labels the loss is T²·KL(p_T || q_T) (alpha is not
//     used). The loss reported is the mean over rows.
//   - progressive: first a hint stage of HintEpochs epochs matching student hidden
//     layers to teacher hidden layers (LayerMap pairs "student:teacher", layer i being
//     the activated output of dense layer i) by mean squared error, through a learned
//     linear projection (weights and bias) where the widths differ; then the standard
//     stage for Epochs epochs with fresh optimizer state. The teacher must be a
//     NeuralSequential.
//   - ensemble: the standard loss with p_T the weighted mean of every teacher's
//     softmax(logits / T) (Weights, normalised to sum 1; equal by default).
//   - fit: the same loop with no teacher (alpha = 0): plain cross-entropy on labels.
//
// # Teachers
//
// A teacher is any classifier that gives class probabilities: a NeuralSequential
// with a softmax output (or one sigmoid unit, binary), or a LogisticRegression
// through its probabilities: binary [1-p, p] (logits [0, z]) or multinomial
// softmax(W·x + b) (logits W·x + b). Anything else is refused.
//
// # Determinism
//
// The student's initialisation, the data split and the batch order come from the
// seed (model.Rand); the arithmetic is float32 in a fixed order (lib/model's Trainer
// on kernels.MatMul, batches cut into fixed shards whose gradients are added in
// order). The same inputs and options give the same student bit for bit, whatever
// the number of cores.
package distill

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
)

// Method is a distillation method.
type Method string

// The methods of Run.
const (
	Standard    Method = "standard"
	Progressive Method = "progressive"
	Ensemble    Method = "ensemble"
	Fit         Method = "fit"
)

// ParseMethod accepts a method name.
func ParseMethod(s string) (Method, error) {
	switch m := Method(strings.ToLower(s)); m {
	case Standard, Progressive, Ensemble, Fit:
		return m, nil
	}
	return "", fmt.Errorf("unknown method %q (expected standard, progressive, ensemble or fit)", s)
}

// Teacher is a fixed classifier that gives class logits.
type Teacher struct {
	// Model is the teacher as loaded.
	Model model.Model
	// Name (a file name) and SHA256 (hex digest of the file) identify the teacher
	// in reports and provenance; both may be empty.
	Name, SHA256 string

	inputs, classes int
	nn              *model.NeuralSequentialModel
	lr              *model.LogisticRegressionModel
}

// NewTeacher wraps a classifier. It fails for a model that does not give class
// probabilities.
func NewTeacher(m model.Model) (*Teacher, error) {
	switch x := m.(type) {
	case *model.NeuralSequentialModel:
		if err := x.Validate(); err != nil {
			return nil, err
		}
		if !x.IsClassifier() {
			last := x.Layers[len(x.Layers)-1]
			return nil, fmt.Errorf("teacher is not a classifier: its last layer is %d %s units (expected softmax over >= 2 units, or one sigmoid unit)", last.Out, last.Activation)
		}
		return &Teacher{Model: m, inputs: x.Inputs(), classes: x.Classes(), nn: x}, nil
	case *model.LogisticRegressionModel:
		if len(x.Coefficients) == 0 {
			return nil, fmt.Errorf("teacher LogisticRegression: %w", model.ErrNotFitted)
		}
		return &Teacher{Model: m, inputs: x.NumFeatures(), classes: x.NumClasses(), lr: x}, nil
	case nil:
		return nil, errors.New("teacher: no model")
	}
	return nil, fmt.Errorf("teacher is not a classifier: model type %v gives no class probabilities (expected NeuralSequential with a softmax or sigmoid output, or LogisticRegression)", m.Type())
}

// Inputs is the number of features the teacher takes.
func (t *Teacher) Inputs() int { return t.inputs }

// Classes is the number of classes the teacher predicts.
func (t *Teacher) Classes() int { return t.classes }

// Params is the teacher's number of parameters.
func (t *Teacher) Params() int {
	n := 0
	for _, tt := range t.Model.Tensors() {
		e, _ := dtype.Elems(tt.Shape) // a model's shapes are valid
		n += int(e)
	}
	return n
}

func (t *Teacher) label() string {
	if t.Name != "" {
		return t.Name
	}
	return "teacher " + t.Model.Type().String()
}

// Logits returns the teacher's class logits for rows×Inputs() values x
// (rows×Classes()).
func (t *Teacher) Logits(x []float32, rows int) ([]float32, error) {
	if t.nn != nil {
		return t.nn.Logits(x, rows)
	}
	z, err := t.lr.Logits(x, rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.label(), err)
	}
	return z, nil
}

// LayerPair matches student hidden layer Student to teacher hidden layer Teacher.
type LayerPair struct{ Student, Teacher int }

// ParseLayerMap reads a layer map such as "0:0,1:2": comma-separated
// student:teacher pairs of hidden-layer indices (from 0).
func ParseLayerMap(s string) ([]LayerPair, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []LayerPair
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(part), ":")
		si, err1 := strconv.Atoi(strings.TrimSpace(a))
		ti, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || si < 0 || ti < 0 || si > model.MaxNeuralLayers || ti > model.MaxNeuralLayers {
			return nil, fmt.Errorf("layer map %q: pair %q, expected STUDENT:TEACHER hidden-layer indices such as 0:0", s, part)
		}
		if seen[si] {
			return nil, fmt.Errorf("layer map %q: student layer %d is mapped twice", s, si)
		}
		seen[si] = true
		out = append(out, LayerPair{si, ti})
	}
	return out, nil
}

// FormatLayerMap is the inverse of ParseLayerMap.
func FormatLayerMap(m []LayerPair) string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = fmt.Sprintf("%d:%d", p.Student, p.Teacher)
	}
	return strings.Join(parts, ",")
}

// Options configures Run. Start from DefaultOptions.
type Options struct {
	Method      Method
	Epochs      int // epochs of the (final) standard stage
	HintEpochs  int // epochs of the progressive hint stage (0: Epochs/2, at least 1)
	BatchSize   int
	Optimizer   model.Optimizer
	Seed        uint64 // batch order (and, in the CLI, the student's initialisation and the split)
	Alpha       float64
	Temperature float64
	LayerMap    []LayerPair // progressive only
	Weights     []float64   // ensemble only; nil for equal weights
	// Progress, when not nil, is called after every epoch.
	Progress func(EpochStats)
}

// DefaultOptions are the defaults of apr-distill: standard method, 20 epochs,
// batch 32, Adam at 1e-3, T = 3, alpha = 0.7.
func DefaultOptions() Options {
	return Options{Method: Standard, Epochs: 20, BatchSize: 32, Optimizer: model.Optimizer{Name: "adam", LR: 1e-3},
		Alpha: 0.7, Temperature: 3}
}

// Data is a training or validation set: features and optional class labels.
type Data struct {
	X model.Matrix
	// Y holds a class index per row, or is nil for unlabelled data.
	Y []int
	// T holds a regression target per row (LoadOptions.Targets), else nil.
	T []float64
	// Name (a file name) is used in errors.
	Name string
	// SHA256 is the hex SHA-256 of the data file's bytes as LoadData read them (of
	// the features file when the labels are in another), for the provenance.
	SHA256 string
}

// EpochStats reports one epoch.
type EpochStats struct {
	Stage string // "hint" (progressive first stage) or "train"
	Epoch int    // from 1 within its stage
	Loss  float64
	// TrainAccuracy and Agreement are measured on the training batches as they
	// were seen during the epoch (NaN without labels / without a teacher).
	TrainAccuracy, Agreement float64
	// ValAccuracy and ValAgreement are measured on the validation set after the
	// epoch (NaN when there is none).
	ValAccuracy, ValAgreement float64
}

// Result is the outcome of Run; accuracies and agreements are NaN where they do not
// apply (no labels, no teacher, no validation rows).
type Result struct {
	Loss                          float64 // mean loss of the last epoch
	HintLoss                      float64 // mean loss of the last hint epoch (progressive)
	TrainAccuracy, TrainAgreement float64 // of the final student on the whole training set
	ValAccuracy, ValAgreement     float64
	TeacherTrainAccuracy          float64 // of the (ensemble) teacher
	TeacherValAccuracy            float64
	TrainRows, ValRows            int
}

// Run trains student in place on train (checking it on val, which may be empty)
// with the given teachers and options.
func Run(student *model.NeuralSequentialModel, teachers []*Teacher, train, val Data, opt Options) (*Result, error) {
	j, err := prepare(student, teachers, train, val, opt)
	if err != nil {
		return nil, err
	}
	return j.run()
}

// job is a validated run with the teachers' targets precomputed.
type job struct {
	student  *model.NeuralSequentialModel
	teachers []*Teacher
	opt      Options
	k, in    int
	train    set
	val      set
	weights  []float64
	alpha    float64 // weight of the soft term (1 without labels, 0 without teachers)
}

// set is one data set in float32 with the teachers' soft targets.
type set struct {
	x      []float32
	y      []int
	rows   int
	soft   []float32   // rows×k, ensemble softmax(t/T), nil without teachers
	tpred  []int       // teachers' predicted classes (weighted mean of softmax at T=1)
	hidden [][]float32 // progressive: teacher activations per layer-map pair
}

func prepare(student *model.NeuralSequentialModel, teachers []*Teacher, train, val Data, opt Options) (*job, error) {
	if err := student.Validate(); err != nil {
		return nil, fmt.Errorf("student: %w", err)
	}
	last := student.Layers[len(student.Layers)-1]
	if last.Activation != model.ActSoftmax || last.Out < 2 {
		return nil, fmt.Errorf("student: last layer is %d %s units, expected a softmax over >= 2 classes", last.Out, last.Activation)
	}
	k := last.Out
	switch opt.Method {
	case Fit:
		if len(teachers) != 0 {
			return nil, fmt.Errorf("method fit takes no teacher, got %d", len(teachers))
		}
		if train.Y == nil {
			return nil, fmt.Errorf("%s: method fit needs labels", dataName(train))
		}
	case Standard, Progressive:
		if len(teachers) != 1 {
			return nil, fmt.Errorf("method %s takes one teacher, got %d (use --method ensemble for several)", opt.Method, len(teachers))
		}
	case Ensemble:
		if len(teachers) == 0 {
			return nil, errors.New("method ensemble needs at least one teacher")
		}
	default:
		return nil, fmt.Errorf("unknown method %q", opt.Method)
	}
	if opt.Epochs < 1 || opt.BatchSize < 1 || opt.HintEpochs < 0 {
		return nil, fmt.Errorf("epochs %d, hint epochs %d, batch size %d: expected epochs and batch size >= 1", opt.Epochs, opt.HintEpochs, opt.BatchSize)
	}
	if !(opt.Temperature > 0) || math.IsInf(opt.Temperature, 0) {
		return nil, fmt.Errorf("temperature %v, expected a finite value > 0", opt.Temperature)
	}
	if !(opt.Alpha >= 0 && opt.Alpha <= 1) {
		return nil, fmt.Errorf("alpha %v, expected a value in [0,1]", opt.Alpha)
	}
	j := &job{student: student, teachers: teachers, opt: opt, k: k, in: student.Inputs()}
	for i, t := range teachers {
		if t == nil {
			return nil, fmt.Errorf("teacher %d: missing", i+1)
		}
		if t.Classes() != k {
			return nil, fmt.Errorf("%s predicts %d classes, the student %d", t.label(), t.Classes(), k)
		}
		if t.Inputs() != j.in {
			return nil, fmt.Errorf("%s takes %d features, the student %d", t.label(), t.Inputs(), j.in)
		}
	}
	if len(opt.Weights) > 0 {
		if opt.Method != Ensemble {
			return nil, fmt.Errorf("teacher weights are for method ensemble, not %s", opt.Method)
		}
		if len(opt.Weights) != len(teachers) {
			return nil, fmt.Errorf("%d teacher weights for %d teachers", len(opt.Weights), len(teachers))
		}
		var sum float64
		for i, w := range opt.Weights {
			if !(w >= 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("teacher weight %d is %v, expected a finite value >= 0", i+1, w)
			}
			sum += w
		}
		if !(sum > 0) {
			return nil, errors.New("teacher weights sum to 0")
		}
	}
	j.weights = teacherWeights(opt.Weights, len(teachers))
	if len(opt.LayerMap) > 0 && opt.Method != Progressive {
		return nil, fmt.Errorf("a layer map is for method progressive, not %s", opt.Method)
	}
	if opt.Method == Progressive {
		if len(opt.LayerMap) == 0 {
			return nil, errors.New("method progressive needs a layer map such as 0:0,1:2")
		}
		tn := teachers[0].nn
		if tn == nil {
			return nil, fmt.Errorf("method progressive needs a NeuralSequential teacher, %s is %v", teachers[0].label(), teachers[0].Model.Type())
		}
		for _, p := range opt.LayerMap {
			if p.Student >= len(student.Layers)-1 {
				return nil, fmt.Errorf("layer map %d:%d: the student has %d hidden layers (0..%d)", p.Student, p.Teacher, len(student.Layers)-1, len(student.Layers)-2)
			}
			if p.Teacher >= len(tn.Layers)-1 {
				return nil, fmt.Errorf("layer map %d:%d: the teacher has %d hidden layers (0..%d)", p.Student, p.Teacher, len(tn.Layers)-1, len(tn.Layers)-2)
			}
		}
	}
	switch {
	case len(teachers) == 0:
		j.alpha = 0
	case train.Y == nil:
		j.alpha = 1
	default:
		j.alpha = opt.Alpha
	}
	var err error
	if j.train, err = j.makeSet(train); err != nil {
		return nil, err
	}
	if j.train.rows == 0 {
		return nil, fmt.Errorf("%s: no training rows", dataName(train))
	}
	if val.X.Rows > 0 {
		if j.val, err = j.makeSet(val); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// teacherWeights returns the weights of n teachers: w normalised to sum 1 when it
// has one per teacher, else equal ones.
func teacherWeights(w []float64, n int) []float64 {
	var sum float64
	for _, v := range w {
		sum += v
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = 1 / float64(n)
		if len(w) == n {
			out[i] = w[i] / sum
		}
	}
	return out
}

func dataName(d Data) string {
	if d.Name != "" {
		return d.Name
	}
	return "data"
}

// makeSet checks a data set (width, finite values, labels) and computes the
// teachers' targets for it.
func (j *job) makeSet(d Data) (set, error) {
	name := dataName(d)
	if d.X.Rows < 0 || d.X.Cols < 0 || len(d.X.Data) != d.X.Rows*d.X.Cols {
		return set{}, fmt.Errorf("%s: matrix shape %dx%d does not match %d values", name, d.X.Rows, d.X.Cols, len(d.X.Data))
	}
	if d.X.Cols != j.in {
		return set{}, fmt.Errorf("%s: %d features per row, the student takes %d", name, d.X.Cols, j.in)
	}
	s := set{rows: d.X.Rows, x: make([]float32, len(d.X.Data))}
	for i, v := range d.X.Data {
		f := float32(v)
		if math.IsNaN(v) || math.IsInf(float64(f), 0) {
			return set{}, fmt.Errorf("%s: row %d, column %d: value %v, expected a finite number", name, i/d.X.Cols+1, i%d.X.Cols+1, v)
		}
		s.x[i] = f
	}
	if d.Y != nil {
		if len(d.Y) != d.X.Rows {
			return set{}, fmt.Errorf("%s: %d rows but %d labels", name, d.X.Rows, len(d.Y))
		}
		for i, c := range d.Y {
			if c < 0 || c >= j.k {
				return set{}, fmt.Errorf("%s: row %d: label %d out of range, expected a class index in [0,%d]", name, i+1, c, j.k-1)
			}
		}
		s.y = d.Y
	}
	if len(j.teachers) == 0 || s.rows == 0 {
		return s, nil
	}
	s.soft = make([]float32, s.rows*j.k)
	mean1 := make([]float32, s.rows*j.k)
	p := make([]float32, s.rows*j.k)
	for ti, t := range j.teachers {
		z, err := t.Logits(s.x, s.rows)
		if err != nil {
			return set{}, err
		}
		w := float32(j.weights[ti])
		model.SoftmaxRows(p, z, j.k, j.opt.Temperature)
		for i, v := range p {
			s.soft[i] += w * v
		}
		model.SoftmaxRows(p, z, j.k, 1)
		for i, v := range p {
			mean1[i] += w * v
		}
	}
	s.tpred = model.ArgmaxRows(mean1, j.k)
	if j.opt.Method == Progressive {
		outs, err := j.teachers[0].nn.ForwardAll(s.x, s.rows)
		if err != nil {
			return set{}, err
		}
		for _, pr := range j.opt.LayerMap {
			s.hidden = append(s.hidden, outs[pr.Teacher])
		}
	}
	return s, nil
}

// streamBatchOrder is the random stream ("distill") of the rows' order, drawn
// once per epoch by shuffling the previous epoch's order.
const streamBatchOrder = 0x64697374696c6c

func (j *job) run() (*Result, error) {
	res := &Result{TrainRows: j.train.rows, ValRows: j.val.rows, HintLoss: math.NaN()}
	r := model.NewRand(j.opt.Seed, streamBatchOrder)
	if j.opt.Method == Progressive {
		loss, err := j.hintStage(r, hintEpochs(j.opt))
		if err != nil {
			return nil, err
		}
		res.HintLoss = loss
	}
	tr, err := j.student.NewTrainer(j.opt.Optimizer)
	if err != nil {
		return nil, err
	}
	n, bs := j.train.rows, min(j.opt.BatchSize, j.train.rows)
	perm := identity(n)
	b := j.newBatch(tr, bs)
	for ep := 1; ep <= j.opt.Epochs; ep++ {
		r.Shuffle(perm)
		var sum float64
		correct, agree := 0, 0
		for b0 := 0; b0 < n; b0 += bs {
			idx := perm[b0:min(n, b0+bs)]
			loss, classes, err := b.step(idx)
			if err != nil {
				return nil, err
			}
			sum += loss
			for i, c := range classes {
				if j.train.y != nil && c == j.train.y[idx[i]] {
					correct++
				}
				if j.train.tpred != nil && c == j.train.tpred[idx[i]] {
					agree++
				}
			}
		}
		res.Loss = sum / float64(n)
		if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
			return nil, fmt.Errorf("training diverged at epoch %d (loss %v); lower the learning rate", ep, res.Loss)
		}
		if j.opt.Progress != nil {
			st := EpochStats{Stage: "train", Epoch: ep, Loss: res.Loss, TrainAccuracy: ratio(correct, n, j.train.y != nil),
				Agreement: ratio(agree, n, j.train.tpred != nil)}
			st.ValAccuracy, st.ValAgreement = j.evaluate(j.val)
			j.opt.Progress(st)
		}
	}
	res.TrainAccuracy, res.TrainAgreement = j.evaluate(j.train)
	res.ValAccuracy, res.ValAgreement = j.evaluate(j.val)
	res.TeacherTrainAccuracy = teacherAccuracy(j.train)
	res.TeacherValAccuracy = teacherAccuracy(j.val)
	return res, nil
}

// batch is one optimizer step's working memory.
type batch struct {
	j          *job
	tr         *model.Trainer
	x, grad, q []float32
}

func (j *job) newBatch(tr *model.Trainer, rows int) *batch {
	return &batch{j: j, tr: tr, x: make([]float32, rows*j.in), grad: make([]float32, rows*j.k), q: make([]float32, rows*j.k)}
}

// step trains on the training rows idx: forward, loss gradient, backward and one
// optimizer step. It returns the summed loss of the rows and the student's classes
// for them before the step.
func (b *batch) step(idx []int) (float64, []int, error) {
	j, rows := b.j, len(idx)
	gather(b.x, j.train.x, idx, j.in)
	z, err := b.tr.Forward(b.x[:rows*j.in], rows)
	if err != nil {
		return 0, nil, err
	}
	loss := j.lossGrad(b.grad[:rows*j.k], b.q[:rows*j.k], z, idx)
	classes := model.ArgmaxRows(z, j.k)
	if err := b.tr.Backward(b.grad[:rows*j.k], nil); err != nil {
		return 0, nil, err
	}
	b.tr.Step()
	return loss, classes, nil
}

// lossGrad writes the gradient of the mean batch loss with respect to the student
// logits z into grad and returns the summed (not averaged) loss of the batch.
func (j *job) lossGrad(grad, q, z []float32, idx []int) float64 {
	k, rows := j.k, len(idx)
	t := j.opt.Temperature
	inv := 1 / float64(rows)
	var sum float64
	clear(grad)
	if j.alpha > 0 {
		model.SoftmaxRows(q, z, k, t)
		a := j.alpha
		for i, row := range idx {
			p := j.train.soft[row*k : (row+1)*k]
			qi := q[i*k : (i+1)*k]
			zi := z[i*k : (i+1)*k]
			// log q_T computed from the logits for accuracy: z/T - logsumexp(z/T).
			lse := logSumExp(zi, t)
			var kl float64
			for c := range k {
				if pc := float64(p[c]); pc > 0 {
					kl += pc * (math.Log(pc) - (float64(zi[c])/t - lse))
				}
				grad[i*k+c] += float32(a * t * (float64(qi[c]) - float64(p[c])) * inv)
			}
			sum += a * t * t * kl
		}
	}
	if j.alpha < 1 && j.train.y != nil {
		model.SoftmaxRows(q, z, k, 1)
		b := 1 - j.alpha
		for i, row := range idx {
			c := j.train.y[row]
			zi := z[i*k : (i+1)*k]
			sum += b * (logSumExp(zi, 1) - float64(zi[c]))
			for cc := range k {
				g := float64(q[i*k+cc])
				if cc == c {
					g--
				}
				grad[i*k+cc] += float32(b * g * inv)
			}
		}
	}
	return sum
}

func logSumExp(z []float32, t float64) float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v)/t)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v)/t - mx)
	}
	return mx + math.Log(s)
}

// hintStage matches student hidden layers to the teacher's by mean squared error
// (through learned projections where widths differ) and returns the last epoch's
// mean loss.
func (j *job) hintStage(r *model.Rand, epochs int) (float64, error) {
	st, err := j.student.NewTrainer(j.opt.Optimizer)
	if err != nil {
		return 0, err
	}
	type proj struct {
		tr     *model.Trainer
		sw, tw int
	}
	projs := make([]proj, len(j.opt.LayerMap))
	tn := j.teachers[0].nn
	for i, p := range j.opt.LayerMap {
		sw, tw := j.student.Layers[p.Student].Out, tn.Layers[p.Teacher].Out
		projs[i] = proj{sw: sw, tw: tw}
		if sw != tw {
			pm, err := model.NewNeuralSequential([]int{sw, tw}, model.ActIdentity, model.ActIdentity, j.opt.Seed^uint64(0x70726f6a+i))
			if err != nil {
				return 0, err
			}
			if projs[i].tr, err = pm.NewTrainer(j.opt.Optimizer); err != nil {
				return 0, err
			}
			projs[i].tr.InputGrad = true
		}
	}
	n, in, k, bs := j.train.rows, j.in, j.k, min(j.opt.BatchSize, j.train.rows)
	perm := identity(n)
	xb := make([]float32, bs*in)
	zeros := make([]float32, bs*k)
	dHidden := make([][]float32, len(j.student.Layers))
	var loss float64
	for ep := 1; ep <= epochs; ep++ {
		r.Shuffle(perm)
		var sum float64
		for b0 := 0; b0 < n; b0 += bs {
			idx := perm[b0:min(n, b0+bs)]
			rows := len(idx)
			gather(xb, j.train.x, idx, in)
			if _, err := st.Forward(xb[:rows*in], rows); err != nil {
				return 0, err
			}
			clear(dHidden)
			for pi, p := range j.opt.LayerMap {
				pr := projs[pi]
				h := st.Activation(p.Student)
				out := h
				if pr.tr != nil {
					if out, err = pr.tr.Forward(h, rows); err != nil {
						return 0, err
					}
				}
				target := j.train.hidden[pi]
				d := make([]float32, rows*pr.tw)
				scale := 2 / float64(rows*pr.tw)
				for i, row := range idx {
					for c := range pr.tw {
						e := float64(out[i*pr.tw+c]) - float64(target[row*pr.tw+c])
						sum += e * e / float64(pr.tw)
						d[i*pr.tw+c] = float32(scale * e)
					}
				}
				if pr.tr != nil {
					if err := pr.tr.Backward(d, nil); err != nil {
						return 0, err
					}
					d = append([]float32(nil), pr.tr.InputGradient()...)
					pr.tr.Step()
				}
				if dHidden[p.Student] == nil {
					dHidden[p.Student] = d
				} else {
					for i, v := range d {
						dHidden[p.Student][i] += v
					}
				}
			}
			if err := st.Backward(zeros[:rows*k], dHidden); err != nil {
				return 0, err
			}
			st.Step()
		}
		loss = sum / float64(n)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return 0, fmt.Errorf("hint stage diverged at epoch %d (loss %v); lower the learning rate", ep, loss)
		}
		if j.opt.Progress != nil {
			j.opt.Progress(EpochStats{Stage: "hint", Epoch: ep, Loss: loss, TrainAccuracy: math.NaN(), Agreement: math.NaN(),
				ValAccuracy: math.NaN(), ValAgreement: math.NaN()})
		}
	}
	return loss, nil
}

// evaluate returns the student's accuracy and agreement with the teachers on s.
func (j *job) evaluate(s set) (acc, agree float64) {
	if s.rows == 0 {
		return math.NaN(), math.NaN()
	}
	z, err := j.student.Logits(s.x, s.rows)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	pred := model.ArgmaxRows(z, j.k)
	return matchRate(pred, s.y), matchRate(pred, s.tpred)
}

func teacherAccuracy(s set) float64 {
	if s.tpred == nil {
		return math.NaN()
	}
	return matchRate(s.tpred, s.y)
}

func matchRate(pred, truth []int) float64 {
	if truth == nil || len(pred) == 0 || len(pred) != len(truth) {
		return math.NaN()
	}
	n := 0
	for i, p := range pred {
		if p == truth[i] {
			n++
		}
	}
	return float64(n) / float64(len(pred))
}

func ratio(a, n int, ok bool) float64 {
	if !ok || n == 0 {
		return math.NaN()
	}
	return float64(a) / float64(n)
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func gather(dst, x []float32, idx []int, w int) {
	for i, k := range idx {
		copy(dst[i*w:(i+1)*w], x[k*w:(k+1)*w])
	}
}
