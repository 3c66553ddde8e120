package model

import (
	"math"
	"runtime"
	"testing"
)

func randFloats(n int, seed uint64) []float32 {
	r := NewRand(seed, 9)
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(2*r.Float64() - 1)
	}
	return out
}

func sameFloats(a, b []float32) bool {
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

// TestLogitsIndependentOfBatch: a row's logits are the same bits whether it is
// predicted alone (the few-rows path), in a small batch or in a batch of several
// parallel blocks.
func TestLogitsIndependentOfBatch(t *testing.T) {
	m, err := NewNeuralSequential([]int{13, 37, 19, 5}, ActReLU, ActSoftmax, 3)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 2*inferBlock + 11
	x := randFloats(rows*13, 1)
	all, err := m.Logits(x, rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, fewRows, fewRows + 1, 17} {
		for r0 := 0; r0+n <= rows; r0 += 41 {
			part, err := m.Logits(x[r0*13:(r0+n)*13], n)
			if err != nil {
				t.Fatal(err)
			}
			if !sameFloats(part, all[r0*5:(r0+n)*5]) {
				t.Fatalf("rows %d..%d: logits in a batch of %d differ from the batch of %d", r0, r0+n-1, n, rows)
			}
		}
	}
	// ForwardAll's last layer is the softmax of the same logits.
	outs, err := m.ForwardAll(x, rows)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, len(all))
	SoftmaxRows(p, all, 5, 1)
	if !sameFloats(p, outs[2]) {
		t.Error("ForwardAll's output is not the softmax of Logits")
	}
}

// TestBackwardShardsAdd: the gradients of a batch of several shards are the
// shards' gradients, each computed as a batch of its own, added in shard order;
// the input and hidden gradients are the shards' rows.
func TestBackwardShardsAdd(t *testing.T) {
	m, err := NewNeuralSequential([]int{6, 11, 7, 3}, ActTanh, ActSoftmax, 5)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 2*shardRows + 5
	x := randFloats(rows*6, 2)
	dz := randFloats(rows*3, 3)
	dh := randFloats(rows*11, 4)
	run := func(r0, r1 int) (gW, gB [][]float32, dIn []float32) {
		tr, err := m.NewTrainer(Optimizer{})
		if err != nil {
			t.Fatal(err)
		}
		tr.InputGrad = true
		if _, err := tr.Forward(x[r0*6:r1*6], r1-r0); err != nil {
			t.Fatal(err)
		}
		if err := tr.Backward(dz[r0*3:r1*3], [][]float32{dh[r0*11 : r1*11]}); err != nil {
			t.Fatal(err)
		}
		w, b := tr.Gradients()
		for i := range w {
			gW, gB = append(gW, append([]float32(nil), w[i]...)), append(gB, append([]float32(nil), b[i]...))
		}
		return gW, gB, append([]float32(nil), tr.InputGradient()...)
	}
	gW, gB, dIn := run(0, rows)
	var sumW, sumB [][]float32
	var ins []float32
	for r0 := 0; r0 < rows; r0 += shardRows {
		w, b, d := run(r0, min(rows, r0+shardRows))
		if sumW == nil {
			sumW, sumB = w, b
		} else {
			for l := range w {
				for i, v := range w[l] {
					sumW[l][i] += v
				}
				for i, v := range b[l] {
					sumB[l][i] += v
				}
			}
		}
		ins = append(ins, d...)
	}
	for l := range gW {
		if !sameFloats(gW[l], sumW[l]) || !sameFloats(gB[l], sumB[l]) {
			t.Errorf("layer %d: batch gradients differ from the shards' gradients added in order", l)
		}
	}
	if !sameFloats(dIn, ins) {
		t.Error("input gradients differ from the shards' rows")
	}
}

// TestTrainSameBytesAnyCores trains with GOMAXPROCS 1, 2 and 3 and requires the
// same parameter bytes.
func TestTrainSameBytesAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := NewRand(7, 1)
	const rows, cols = 203, 9
	x := Matrix{Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
	y := make([]float64, rows)
	for i := range x.Data {
		x.Data[i] = 2*r.Float64() - 1
	}
	for i := range y {
		y[i] = float64(r.IntN(4))
	}
	for _, opt := range []Optimizer{{Name: "adam"}, {Name: "sgd", Momentum: 0.9, WeightDecay: 1e-3}} {
		var ref []float32
		for _, procs := range []int{1, 2, 3} {
			runtime.GOMAXPROCS(procs)
			// Wide enough that the optimizer and the gradient reduction run in
			// several chunks.
			m, err := NewNeuralSequential([]int{cols, 700, 13, 4}, ActReLU, ActSoftmax, 11)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Fit(x, y, TrainOptions{Epochs: 2, BatchSize: 29, Optimizer: opt, Seed: 4}); err != nil {
				t.Fatal(err)
			}
			var got []float32
			for _, l := range m.Layers {
				got = append(append(got, l.Weight...), l.Bias...)
			}
			if ref == nil {
				ref = got
			} else if !sameFloats(got, ref) {
				t.Errorf("%s: parameters with GOMAXPROCS=%d differ from GOMAXPROCS=1", opt.Name, procs)
			}
		}
	}
}
