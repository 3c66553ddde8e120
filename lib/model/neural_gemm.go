package model

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apr-go/apr/kernels"
)

// Batched products and the parallel loops of NeuralSequential.
//
// A dense layer's output for a block of rows is one matrix product,
// Z = A·Wᵀ + b, computed by kernels.MatMul against the transposed weights: every
// output value is summed over the inputs p = 0..In-1 in order, each product
// rounded to float32 before it is added. That value depends only on its own row,
// so the forward pass may cut a batch into blocks of any size, and run the blocks
// on any number of goroutines, without changing a bit. For very few rows, where
// transposing the weights would cost as much as the product, affineFew computes
// the same sums in the same order directly from W.
//
// Training cuts every mini-batch into shards of shardRows rows (a number that
// depends on the batch only, never on the machine). Each shard computes its own
// weight and bias gradients; the shards' gradients are then added in shard order
// (((g0 + g1) + g2) + ...), element by element. Which goroutine runs which shard
// does not matter, so the parameters after training are the same bytes with
// GOMAXPROCS=1 or 64.

// shardRows is the number of rows of a training shard.
const shardRows = 8

// fewRows is the largest row count for which inference skips the transpose.
const fewRows = 3

// inferBlock is the number of rows of an inference task.
const inferBlock = 64

// paramChunk is the number of parameters of one reduction or optimizer task.
const paramChunk = 4096

// parallelFor calls f(0), ..., f(n-1) on up to GOMAXPROCS goroutines (inline
// when one is enough). Calls must write disjoint memory.
func parallelFor(n int, f func(i int)) {
	p := min(runtime.GOMAXPROCS(0), n)
	if p <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return
			}
			f(i)
		}
	}
	var wg sync.WaitGroup
	wg.Add(p - 1)
	for range p - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// transposeInto writes the In×Out transpose of l.Weight into dst (grown as
// needed) and returns it.
func (l *DenseLayer) transposeInto(dst []float32) []float32 {
	dst = grow(dst, l.In*l.Out)
	for j := range l.Out {
		row := l.Weight[j*l.In : (j+1)*l.In]
		for p, v := range row {
			dst[p*l.Out+j] = v
		}
	}
	return dst
}

// affine computes dst (rows×Out) = a·Wᵀ + Bias for rows×In inputs a, with
// wT = Wᵀ (In×Out), by kernels.MatMul.
func (l *DenseLayer) affine(dst, a, wT []float32, rows int) error {
	if err := kernels.MatMul(dst, a, wT, rows, l.In, l.Out); err != nil {
		return err
	}
	for i := range rows {
		row := dst[i*l.Out : (i+1)*l.Out]
		for j, b := range l.Bias[:len(row)] {
			row[j] += b
		}
	}
	return nil
}

// affineFew computes the same values as affine, bit for bit, without the
// transposed weights: each sum runs over p in order with rounded products.
func (l *DenseLayer) affineFew(dst, a []float32, rows int) {
	for i := range rows {
		ai := a[i*l.In : (i+1)*l.In]
		di := dst[i*l.Out : (i+1)*l.Out]
		for j := range di {
			w := l.Weight[j*l.In : (j+1)*l.In]
			w = w[:len(ai)]
			var s float32
			for p, v := range ai {
				s += float32(v * w[p])
			}
			di[j] = s + l.Bias[j]
		}
	}
}

// infer runs rows×Inputs() values x through the network and returns every
// layer's output (rows×Out each); the last layer's activation is applied only
// when activateLast is set. Blocks of rows run in parallel.
func (m *NeuralSequentialModel) infer(x []float32, rows int, activateLast bool) ([][]float32, error) {
	n := len(m.Layers)
	outs := make([][]float32, n)
	for i, l := range m.Layers {
		outs[i] = make([]float32, rows*l.Out)
	}
	var wT [][]float32
	if rows > fewRows {
		wT = make([][]float32, n)
		parallelFor(n, func(i int) { wT[i] = m.Layers[i].transposeInto(nil) })
	}
	blocks := (rows + inferBlock - 1) / inferBlock
	errs := make([]error, blocks)
	parallelFor(blocks, func(b int) {
		r0, r1 := b*inferBlock, min(rows, (b+1)*inferBlock)
		a := x[r0*m.Inputs() : r1*m.Inputs()]
		for i := range m.Layers {
			l := &m.Layers[i]
			z := outs[i][r0*l.Out : r1*l.Out]
			if wT == nil {
				l.affineFew(z, a, r1-r0)
			} else if err := l.affine(z, a, wT[i], r1-r0); err != nil {
				errs[b] = err
				return
			}
			if i < n-1 || activateLast {
				activate(l.Activation, z, l.Out)
			}
			a = z
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// shardGrads is one training shard's gradient buffers.
type shardGrads struct {
	gW, gB [][]float32
	dzT    []float32
}

// paramTask is a range of one layer's weights (bias false) or biases.
type paramTask struct {
	layer, lo, hi int
	bias          bool
}

// paramTasks cuts every layer's weights and biases into chunks of paramChunk.
func paramTasks(m *NeuralSequentialModel) []paramTask {
	var ts []paramTask
	for i, l := range m.Layers {
		for lo := 0; lo < len(l.Weight); lo += paramChunk {
			ts = append(ts, paramTask{layer: i, lo: lo, hi: min(len(l.Weight), lo+paramChunk)})
		}
		for lo := 0; lo < len(l.Bias); lo += paramChunk {
			ts = append(ts, paramTask{layer: i, lo: lo, hi: min(len(l.Bias), lo+paramChunk), bias: true})
		}
	}
	return ts
}
