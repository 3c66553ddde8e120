package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/apr-go/apr/kernels"
)

// Rand is apr's deterministic random source: PCG-DXSM (math/rand/v2's PCG, whose
// output is specified) with apr's own float and integer derivations, so the same
// seed gives the same numbers on every platform and Go release.
type Rand struct{ p *rand.PCG }

// Streams of Rand used by this package: independent sequences from one seed.
const (
	streamInit    = 0x6170722d696e6974 // "apr-init": parameter initialisation
	streamShuffle = 0x6170722d73687566 // "apr-shuf": mini-batch order
	// StreamSplit is the stream callers use for data splits.
	StreamSplit = 0x6170722d73706c74 // "apr-splt"
)

// NewRand returns the source for seed and stream.
func NewRand(seed, stream uint64) *Rand { return &Rand{rand.NewPCG(seed, stream)} }

// Float64 returns a uniform value in [0, 1) with 53 random bits.
func (r *Rand) Float64() float64 { return float64(r.p.Uint64()>>11) * 0x1p-53 }

// IntN returns a uniform value in [0, n) (0 when n <= 0), without modulo bias.
func (r *Rand) IntN(n int) int {
	if n <= 1 {
		return 0
	}
	u := uint64(n)
	limit := math.MaxUint64 - (math.MaxUint64%u+1)%u // largest accepted value
	for {
		if x := r.p.Uint64(); x <= limit {
			return int(x % u)
		}
	}
}

// Shuffle permutes p uniformly (Fisher-Yates).
func (r *Rand) Shuffle(p []int) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}

// Optimizer configures the parameter updates of a Trainer.
type Optimizer struct {
	// Name is "adam" (the default when empty) or "sgd".
	Name string
	// LR is the learning rate (default 1e-3 for Adam, 1e-2 for SGD).
	LR float64
	// Beta1, Beta2 and Eps are Adam's (defaults 0.9, 0.999, 1e-8, as PyTorch).
	Beta1, Beta2, Eps float64
	// Momentum is SGD's momentum (0: plain SGD), applied as PyTorch does:
	// v = momentum·v + g; p -= lr·v.
	Momentum float64
	// WeightDecay adds WeightDecay·w to the gradient of every weight (not biases).
	WeightDecay float64
}

// WithDefaults returns o with its zero fields set to their defaults, as a Trainer
// uses it, or an error for settings out of range.
func (o Optimizer) WithDefaults() (Optimizer, error) {
	switch o.Name {
	case "", "adam":
		o.Name = "adam"
		if o.LR == 0 {
			o.LR = 1e-3
		}
		if o.Beta1 == 0 {
			o.Beta1 = 0.9
		}
		if o.Beta2 == 0 {
			o.Beta2 = 0.999
		}
		if o.Eps == 0 {
			o.Eps = 1e-8
		}
	case "sgd":
		if o.LR == 0 {
			o.LR = 1e-2
		}
	default:
		return o, fmt.Errorf("optimizer %q: expected adam or sgd", o.Name)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !(o.LR > 0) || !finite(o.LR) {
		return o, fmt.Errorf("optimizer: learning rate %v, expected a finite value > 0", o.LR)
	}
	if !(o.Beta1 >= 0 && o.Beta1 < 1) || !(o.Beta2 >= 0 && o.Beta2 < 1) || !(o.Eps >= 0) || !finite(o.Eps) {
		return o, fmt.Errorf("optimizer: beta1 %v, beta2 %v, eps %v: expected betas in [0,1) and eps >= 0", o.Beta1, o.Beta2, o.Eps)
	}
	if !(o.Momentum >= 0 && o.Momentum < 1) || !(o.WeightDecay >= 0) || !finite(o.WeightDecay) {
		return o, fmt.Errorf("optimizer: momentum %v, weight decay %v: expected momentum in [0,1) and weight decay >= 0", o.Momentum, o.WeightDecay)
	}
	return o, nil
}

// Trainer trains a NeuralSequentialModel in place by mini-batches: Forward a batch,
// Backward the gradient of the loss with respect to the logits (and optionally to
// hidden activations), then Step. The caller owns the loss, so the same Trainer
// serves plain training, distillation and hidden-layer matching.
//
// Forward, Backward and Step use every core (GOMAXPROCS): a batch is cut into
// shards of a fixed number of rows, each shard's products are kernels.MatMul, and
// the shards' gradients are added in shard order, so the same batches give the
// same parameters bit for bit whatever the number of cores.
type Trainer struct {
	Model *NeuralSequentialModel
	// InputGrad, when set before Backward, makes Backward also compute the gradient
	// with respect to the input (see InputGradient).
	InputGrad bool

	opt    Optimizer
	rows   int
	input  []float32
	z, a   [][]float32  // per layer: pre- and post-activation, rows×Out
	wT     [][]float32  // per layer: Weightᵀ (In×Out) as of the last Forward
	gW, gB [][]float32  // gradients of the last Backward (shard 0 works in them)
	shards []shardGrads // partial gradients of shards 1, 2, ...
	shard0 shardGrads   // shard 0's transposition buffer (its gradients are gW, gB)
	m1W    [][]float32  // Adam first moments, or SGD momentum buffers
	m2W    [][]float32
	m1B    [][]float32
	m2B    [][]float32
	da     [][]float32 // per hidden layer: gradient w.r.t. its activated output
	dIn    []float32
	tasks  []paramTask
	steps  int
}

// NewTrainer returns a Trainer of m with the optimizer opt (zero fields take their
// defaults).
func (m *NeuralSequentialModel) NewTrainer(opt Optimizer) (*Trainer, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	o, err := opt.WithDefaults()
	if err != nil {
		return nil, err
	}
	t := &Trainer{Model: m, opt: o}
	n := len(m.Layers)
	t.z, t.a = make([][]float32, n), make([][]float32, n)
	t.gW, t.gB = make([][]float32, n), make([][]float32, n)
	t.wT, t.da = make([][]float32, n), make([][]float32, n)
	t.tasks = paramTasks(m)
	t.m1W, t.m2W, t.m1B, t.m2B = make([][]float32, n), make([][]float32, n), make([][]float32, n), make([][]float32, n)
	for i, l := range m.Layers {
		t.gW[i], t.gB[i] = make([]float32, len(l.Weight)), make([]float32, len(l.Bias))
		t.m1W[i], t.m1B[i] = make([]float32, len(l.Weight)), make([]float32, len(l.Bias))
		if o.Name == "adam" {
			t.m2W[i], t.m2B[i] = make([]float32, len(l.Weight)), make([]float32, len(l.Bias))
		}
	}
	return t, nil
}

// Optimizer returns the optimizer settings in use (defaults filled in).
func (t *Trainer) Optimizer() Optimizer { return t.opt }

// Steps is the number of Step calls so far.
func (t *Trainer) Steps() int { return t.steps }

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// Forward runs a batch of rows×Inputs() values and returns the last layer's
// pre-activation output (rows×Outputs(): the logits of a softmax classifier). The
// returned slice and the activations stay valid until the next Forward. x is kept
// by reference until Backward.
func (t *Trainer) Forward(x []float32, rows int) ([]float32, error) {
	m := t.Model
	if rows <= 0 || len(x) != rows*m.Inputs() {
		return nil, fmt.Errorf("trainer: %d input values for %d rows of %d features", len(x), rows, m.Inputs())
	}
	t.rows, t.input = rows, x
	parallelFor(len(m.Layers), func(i int) { t.wT[i] = m.Layers[i].transposeInto(t.wT[i]) })
	for i, l := range m.Layers {
		t.z[i] = grow(t.z[i], rows*l.Out)
		t.a[i] = grow(t.a[i], rows*l.Out)
	}
	nsh := (rows + shardRows - 1) / shardRows
	errs := make([]error, nsh)
	parallelFor(nsh, func(s int) {
		r0, r1 := s*shardRows, min(rows, (s+1)*shardRows)
		a := x[r0*m.Inputs() : r1*m.Inputs()]
		for i := range m.Layers {
			l := &m.Layers[i]
			z, act := t.z[i][r0*l.Out:r1*l.Out], t.a[i][r0*l.Out:r1*l.Out]
			if err := l.affine(z, a, t.wT[i], r1-r0); err != nil {
				errs[s] = err
				return
			}
			copy(act, z)
			activate(l.Activation, act, l.Out)
			a = act
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return t.z[len(m.Layers)-1], nil
}

// Activation returns layer l's output after its activation for the last Forward
// (rows×Layers[l].Out).
func (t *Trainer) Activation(l int) []float32 { return t.a[l] }

// Backward computes the gradients of the loss for the last Forward batch. dLogits
// is the gradient with respect to the last layer's pre-activation output
// (rows×Outputs()); dHidden, when not nil, holds for some layers l the gradient
// with respect to layer l's activated output (rows×Layers[l].Out, nil for none),
// added to what flows back from above. The loss is whatever the caller
// differentiated: scale dLogits by 1/rows for a batch mean.
func (t *Trainer) Backward(dLogits []float32, dHidden [][]float32) error {
	m := t.Model
	n := len(m.Layers)
	if t.rows == 0 {
		return errors.New("trainer: Backward before Forward")
	}
	rows := t.rows
	if len(dLogits) != rows*m.Outputs() {
		return fmt.Errorf("trainer: %d logit gradients for %d rows of %d outputs", len(dLogits), rows, m.Outputs())
	}
	if len(dHidden) > n {
		return fmt.Errorf("trainer: hidden gradients for %d layers, the model has %d", len(dHidden), n)
	}
	for l, d := range dHidden {
		if d != nil && (l == n-1 || len(d) != rows*m.Layers[l].Out) {
			return fmt.Errorf("trainer: hidden gradient of layer %d: %d values, expected %d (and not the last layer)", l, len(d), rows*m.Layers[l].Out)
		}
	}
	nsh := (rows + shardRows - 1) / shardRows
	for len(t.shards) < nsh-1 {
		sg := shardGrads{gW: make([][]float32, n), gB: make([][]float32, n)}
		for i, l := range m.Layers {
			sg.gW[i], sg.gB[i] = make([]float32, len(l.Weight)), make([]float32, len(l.Bias))
		}
		t.shards = append(t.shards, sg)
	}
	for l := range n - 1 {
		t.da[l] = grow(t.da[l], rows*m.Layers[l].Out)
	}
	if t.InputGrad {
		t.dIn = grow(t.dIn, rows*m.Inputs())
	}
	errs := make([]error, nsh)
	parallelFor(nsh, func(s int) {
		gW, gB, buf := t.gW, t.gB, &t.shard0
		if s > 0 {
			buf = &t.shards[s-1]
			gW, gB = buf.gW, buf.gB
		}
		errs[s] = t.backwardShard(s*shardRows, min(rows, (s+1)*shardRows), dLogits, dHidden, gW, gB, &buf.dzT)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if nsh > 1 {
		parallelFor(len(t.tasks), func(i int) {
			tk := t.tasks[i]
			dst := t.gW[tk.layer]
			if tk.bias {
				dst = t.gB[tk.layer]
			}
			dst = dst[tk.lo:tk.hi]
			for _, sg := range t.shards[:nsh-1] {
				src := sg.gW[tk.layer]
				if tk.bias {
					src = sg.gB[tk.layer]
				}
				src = src[tk.lo:tk.hi]
				for k, v := range src[:len(dst)] {
					dst[k] += v
				}
			}
		})
	}
	return nil
}

// backwardShard back-propagates rows r0..r1-1 of the last batch, writing the
// shard's weight and bias gradients into gW and gB and its rows of the hidden
// (and input) gradients.
func (t *Trainer) backwardShard(r0, r1 int, dLogits []float32, dHidden [][]float32, gW, gB [][]float32, dzT *[]float32) error {
	m := t.Model
	n := len(m.Layers)
	rs := r1 - r0
	for l := n - 1; l >= 0; l-- {
		ly := &m.Layers[l]
		var dz []float32
		if l == n-1 {
			dz = dLogits[r0*ly.Out : r1*ly.Out]
		} else {
			// dz = da ⊙ act'(z): da holds dL/d(a_l) from the layer above.
			dz = t.da[l][r0*ly.Out : r1*ly.Out]
			if l < len(dHidden) && dHidden[l] != nil {
				for i, v := range dHidden[l][r0*ly.Out : r1*ly.Out] {
					dz[i] += v
				}
			}
			derivative(ly.Activation, dz, t.z[l][r0*ly.Out:r1*ly.Out], t.a[l][r0*ly.Out:r1*ly.Out])
		}
		prev := t.input
		if l > 0 {
			prev = t.a[l-1]
		}
		prev = prev[r0*ly.In : r1*ly.In]
		// gW = dzᵀ·prev (Out×In), gB = column sums of dz.
		*dzT = grow(*dzT, rs*ly.Out)
		tr := *dzT
		for i := range rs {
			for j := range ly.Out {
				tr[j*rs+i] = dz[i*ly.Out+j]
			}
		}
		if err := kernels.MatMul(gW[l], tr, prev, ly.Out, rs, ly.In); err != nil {
			return err
		}
		gb := gB[l]
		clear(gb)
		for i := range rs {
			row := dz[i*ly.Out : (i+1)*ly.Out]
			for j, v := range row {
				gb[j] += v
			}
		}
		// d(prev) = dz·W (rows×In).
		if l > 0 || t.InputGrad {
			dst := t.dIn
			if l > 0 {
				dst = t.da[l-1]
			}
			if err := kernels.MatMul(dst[r0*ly.In:r1*ly.In], dz, ly.Weight, rs, ly.Out, ly.In); err != nil {
				return err
			}
		}
	}
	return nil
}

// derivative multiplies d by act'(z) in place, using the activated output a.
func derivative(act Activation, d, z, a []float32) {
	switch act {
	case ActReLU:
		for i := range d {
			if !(z[i] > 0) {
				d[i] = 0
			}
		}
	case ActTanh:
		for i := range d {
			d[i] *= 1 - a[i]*a[i]
		}
	case ActSigmoid:
		for i := range d {
			d[i] *= a[i] * (1 - a[i])
		}
	}
}

// InputGradient returns the gradient with respect to the input of the last
// Backward, when InputGrad was set.
func (t *Trainer) InputGradient() []float32 { return t.dIn }

// Gradients returns the weight and bias gradients of every layer from the last
// Backward (aliasing the Trainer's buffers).
func (t *Trainer) Gradients() (weights, biases [][]float32) { return t.gW, t.gB }

// Step updates every parameter from the last Backward's gradients.
func (t *Trainer) Step() {
	t.steps++
	o := t.opt
	lr := float32(o.LR)
	wd := float32(o.WeightDecay)
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	var c1, c2 float32
	if o.Name == "adam" {
		c1 = float32(1 - math.Pow(o.Beta1, float64(t.steps)))
		c2 = float32(math.Sqrt(1 - math.Pow(o.Beta2, float64(t.steps))))
	}
	eps, mom := float32(o.Eps), float32(o.Momentum)
	parallelFor(len(t.tasks), func(i int) {
		tk := t.tasks[i]
		l := &t.Model.Layers[tk.layer]
		p, g, m1, m2, decay := l.Weight, t.gW[tk.layer], t.m1W[tk.layer], t.m2W[tk.layer], wd
		if tk.bias {
			p, g, m1, m2, decay = l.Bias, t.gB[tk.layer], t.m1B[tk.layer], t.m2B[tk.layer], 0
		}
		p, g, m1 = p[tk.lo:tk.hi], g[tk.lo:tk.hi], m1[tk.lo:tk.hi]
		if o.Name == "adam" {
			adam(p, g, m1, m2[tk.lo:tk.hi], b1, b2, lr/c1, c2, eps, decay)
		} else {
			sgd(p, g, m1, lr, mom, decay)
		}
	})
}

// adam applies one Adam update: p -= (lr/c1)·m / (sqrt(v)/c2 + eps), where c1 and
// c2 are the bias corrections 1-β1^t and sqrt(1-β2^t).
func adam(p, g, m, v []float32, b1, b2, step, c2, eps, wd float32) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := g[i]
		if wd != 0 {
			gi += wd * p[i]
		}
		m[i] = b1*m[i] + (1-b1)*gi
		v[i] = b2*v[i] + (1-b2)*gi*gi
		p[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/c2 + eps)
	}
}

func sgd(p, g, buf []float32, lr, mom, wd float32) {
	g, buf = g[:len(p)], buf[:len(p)]
	for i := range p {
		gi := g[i]
		if wd != 0 {
			gi += wd * p[i]
		}
		if mom != 0 {
			buf[i] = mom*buf[i] + gi
			gi = buf[i]
		}
		p[i] -= lr * gi
	}
}

// TrainOptions configures NeuralSequentialModel.Fit.
type TrainOptions struct {
	Epochs    int // passes over the data (default 10)
	BatchSize int // rows per step (default 32)
	Optimizer Optimizer
	// Seed fixes the order of the mini-batches; with the same data, model and
	// seed, Fit gives the same parameters bit for bit.
	Seed uint64
	// OnEpoch, when not nil, is called after every epoch with its number (from
	// 1) and mean training loss.
	OnEpoch func(epoch int, loss float64)
}

// Fit trains the model in place on x and labels y with mini-batch Adam or SGD,
// shuffling the rows every epoch. The loss follows the output layer: mean
// cross-entropy for a softmax output (labels are class indices 0..Outputs()-1),
// binary cross-entropy for a single sigmoid unit (labels 0 or 1), mean squared
// error for a single identity unit (labels are targets). It returns the mean loss
// of the last epoch.
func (m *NeuralSequentialModel) Fit(x Matrix, y []float64, opt TrainOptions) (float64, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	last := m.Layers[len(m.Layers)-1]
	kind := ""
	switch {
	case last.Activation == ActSoftmax:
		kind = "ce"
	case last.Activation == ActSigmoid && last.Out == 1:
		kind = "bce"
	case last.Activation == ActIdentity && last.Out == 1:
		kind = "mse"
	default:
		return 0, fmt.Errorf("neural sequential: Fit needs a softmax output, one sigmoid unit or one identity unit, the last layer is %d %s units", last.Out, last.Activation)
	}
	xs, err := Float32Rows(x, m.Inputs())
	if err != nil {
		return 0, fmt.Errorf("neural sequential: %w", err)
	}
	if x.Rows == 0 {
		return 0, fmt.Errorf("neural sequential: %w", errNoRows)
	}
	if len(y) != x.Rows {
		return 0, fmt.Errorf("neural sequential: %d rows but %d labels", x.Rows, len(y))
	}
	for i, v := range y {
		switch kind {
		case "ce":
			if v != math.Trunc(v) || v < 0 || v >= float64(last.Out) {
				return 0, fmt.Errorf("neural sequential: label of row %d is %v, expected a class index in [0,%d]", i, v, last.Out-1)
			}
		case "bce":
			if v != 0 && v != 1 {
				return 0, fmt.Errorf("neural sequential: label of row %d is %v, expected 0 or 1", i, v)
			}
		default:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("neural sequential: target of row %d is %v, expected a finite number", i, v)
			}
		}
	}
	if opt.Epochs == 0 {
		opt.Epochs = 10
	}
	if opt.BatchSize == 0 {
		opt.BatchSize = 32
	}
	if opt.Epochs < 0 || opt.BatchSize < 0 {
		return 0, fmt.Errorf("neural sequential: epochs %d and batch size %d, expected > 0", opt.Epochs, opt.BatchSize)
	}
	tr, err := m.NewTrainer(opt.Optimizer)
	if err != nil {
		return 0, err
	}
	n, in, out := x.Rows, m.Inputs(), last.Out
	bs := min(opt.BatchSize, n)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	r := NewRand(opt.Seed, streamShuffle)
	xb := make([]float32, bs*in)
	dz := make([]float32, bs*out)
	p := make([]float32, bs*out)
	var loss float64
	for ep := 1; ep <= opt.Epochs; ep++ {
		r.Shuffle(perm)
		var sum float64
		for b0 := 0; b0 < n; b0 += bs {
			idx := perm[b0:min(n, b0+bs)]
			rows := len(idx)
			for i, k := range idx {
				copy(xb[i*in:(i+1)*in], xs[k*in:(k+1)*in])
			}
			z, err := tr.Forward(xb[:rows*in], rows)
			if err != nil {
				return 0, err
			}
			inv := float32(1) / float32(rows)
			d := dz[:rows*out]
			switch kind {
			case "ce":
				SoftmaxRows(p[:rows*out], z, out, 1)
				for i, k := range idx {
					c := int(y[k])
					sum += -math.Log(math.Max(float64(p[i*out+c]), 1e-30))
					for j := range out {
						d[i*out+j] = p[i*out+j] * inv
					}
					d[i*out+c] -= inv
				}
			case "bce":
				for i, k := range idx {
					s := Sigmoid(float64(z[i]))
					if y[k] == 1 {
						sum += -math.Log(math.Max(s, 1e-30))
					} else {
						sum += -math.Log(math.Max(1-s, 1e-30))
					}
					d[i] = float32(s-y[k]) * inv
				}
			default:
				for i, k := range idx {
					e := float64(z[i]) - y[k]
					sum += e * e
					d[i] = float32(2*e) * inv
				}
			}
			if err := tr.Backward(d, nil); err != nil {
				return 0, err
			}
			tr.Step()
		}
		loss = sum / float64(n)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return 0, fmt.Errorf("neural sequential: training diverged at epoch %d (loss %v); lower the learning rate", ep, loss)
		}
		if opt.OnEpoch != nil {
			opt.OnEpoch(ep, loss)
		}
	}
	return loss, nil
}
