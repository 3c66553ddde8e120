package manifest

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

// shrinkPool makes Parallel's chunks and pool small, so that small tensors span
// many chunks and the reader waits for free ones.
func shrinkPool(t *testing.T, chunk, chunks int) {
	oc, on := parallelChunk, parallelChunks
	parallelChunk, parallelChunks = chunk, chunks
	t.Cleanup(func() { parallelChunk, parallelChunks = oc, on })
}

// randomTensors returns count tensors with sizes drawn from sizes, named in order.
func randomTensors(rng *rand.Rand, count int, sizes []int) []tensor {
	var ts []tensor
	for i := range count {
		n := sizes[rng.IntN(len(sizes))]
		d := make([]byte, n)
		for j := range d {
			d[j] = byte(rng.Uint32())
		}
		ts = append(ts, tensor{container.TensorInfo{Name: fmt.Sprintf("layer.%d", i), DType: dtype.U8, Shape: []int64{int64(n)}}, d})
	}
	return ts
}

// parallelDigest feeds ts to a Parallel, each tensor through a reader returning
// at most piece bytes per Read, or (every third one, with mixed) from memory.
func parallelDigest(t *testing.T, h container.Header, ts []tensor, workers, piece int, mixed bool) [32]byte {
	t.Helper()
	b, err := New(h.Type, &h.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	p := NewParallel(b, workers)
	defer p.Close()
	for i, tt := range ts {
		if mixed && i%3 == 2 {
			if err := p.AddTensor(tt.info, tt.data); err != nil {
				t.Fatal(err)
			}
			continue
		}
		n, err := p.ReadTensor(tt.info, &chunkyReader{data: tt.data, n: piece})
		if err != nil || n != int64(len(tt.data)) {
			t.Fatalf("tensor %d: read %d of %d bytes, %v", i, n, len(tt.data), err)
		}
	}
	d, err := p.Sum()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestParallelMatchesSequential: the digest of Parallel is that of the one-tensor-
// at-a-time Builder, for tensor counts from none to many, sizes from zero to
// several times the chunk pool, any number of workers and any read sizes.
func TestParallelMatchesSequential(t *testing.T) {
	h, _ := sample()
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(t *testing.T, sizes []int) {
		for _, count := range []int{0, 1, 2, 3, 17, 60} {
			ts := randomTensors(rng, count, sizes)
			want := digestOf(t, h, ts)
			for _, workers := range []int{1, 2, 3, 0} {
				for _, piece := range []int{1 << 30, 1000, 4097} {
					if got := parallelDigest(t, h, ts, workers, piece, piece == 1000); got != want {
						t.Fatalf("%d tensors, %d workers, reads of %d: digest %x, want %x", count, workers, piece, got, want)
					}
				}
			}
		}
	}
	t.Run("small pool", func(t *testing.T) {
		shrinkPool(t, 4096, 3)
		check(t, []int{0, 1, 7, 4095, 4096, 4097, 3 * 4096, 3*4096 + 1, 10*4096 + 5})
	})
	t.Run("default pool", func(t *testing.T) {
		check(t, []int{0, 3, inlineMax, inlineMax + 1, parallelChunk - 1, parallelChunk + 1})
	})
	t.Run("one large tensor", func(t *testing.T) {
		shrinkPool(t, 4096, 4)
		ts := randomTensors(rng, 1, []int{20*4096 + 3})
		if got, want := parallelDigest(t, h, ts, 2, 5000, false), digestOf(t, h, ts); got != want {
			t.Fatalf("digest %x, want %x", got, want)
		}
	})
}

// TestParallelErrors: a read error, a short or a long tensor fails the tensor
// and the whole manifest, in any position, without leaving goroutines behind.
func TestParallelErrors(t *testing.T) {
	shrinkPool(t, 4096, 3)
	h, _ := sample()
	ts := randomTensors(rand.New(rand.NewPCG(3, 4)), 6, []int{0, 10, 5000, 9 * 4096})
	boom := errors.New("boom")
	before := runtime.NumGoroutine()
	bad := map[string]func(tt tensor) io.Reader{
		"read error": func(tt tensor) io.Reader { return &chunkyReader{data: tt.data[:len(tt.data)/2], n: 1000, err: boom} },
		"short":      func(tt tensor) io.Reader { return &chunkyReader{data: tt.data[:len(tt.data)-1], n: 1000} },
		"long":       func(tt tensor) io.Reader { return &chunkyReader{data: append(tt.data, 1), n: 1000} },
	}
	for name, reader := range bad {
		for at := range ts {
			if name != "long" && len(ts[at].data) == 0 {
				continue
			}
			b, _ := New(h.Type, &h.Metadata)
			p := NewParallel(b, 2)
			var err error
			for i, tt := range ts {
				r := io.Reader(&chunkyReader{data: tt.data, n: 3000})
				if i == at {
					r = reader(tt)
				}
				if _, err = p.ReadTensor(tt.info, r); err != nil {
					break
				}
			}
			switch {
			case name == "read error" && !errors.Is(err, boom):
				t.Errorf("%s in tensor %d: %v, want boom", name, at, err)
			case name != "read error" && !errors.Is(err, ErrManifest):
				t.Errorf("%s tensor %d: %v, want ErrManifest", name, at, err)
			}
			if _, err := p.ReadTensor(ts[0].info, &chunkyReader{data: ts[0].data, n: 10}); err == nil {
				t.Errorf("%s in tensor %d: the next tensor was accepted", name, at)
			}
			if _, err := p.Sum(); err == nil {
				t.Errorf("%s in tensor %d: Sum succeeded", name, at)
			}
			p.Close()
		}
	}
	if err := p2Misuse(h, ts); err != nil {
		t.Error(err)
	}
	// Close has waited for the workers, which then only have to return. Wait for
	// that as long as the test may run rather than a fixed few seconds, which a
	// loaded machine can exceed: only goroutines that never exit fail the test.
	deadline := time.Now().Add(time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-5 * time.Second)
	}
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left, %d before", n, before)
	}
}

// p2Misuse checks the calls out of order: a wrong size from memory, a tensor
// after Sum, the Builder used while a Parallel owns it, Sum after Close.
func p2Misuse(h container.Header, ts []tensor) error {
	b, _ := New(h.Type, &h.Metadata)
	p := NewParallel(b, 2)
	if err := p.AddTensor(ts[2].info, ts[2].data[1:]); !errors.Is(err, ErrManifest) {
		return fmt.Errorf("AddTensor with a wrong size: %v", err)
	}
	b, _ = New(h.Type, &h.Metadata)
	p = NewParallel(b, 2)
	if _, err := b.Tensor(ts[0].info); !errors.Is(err, ErrManifest) {
		return fmt.Errorf("Builder.Tensor while a Parallel owns it: %v", err)
	}
	b, _ = New(modeltype.Custom, nil)
	p = NewParallel(b, 2)
	if _, err := p.Sum(); err != nil {
		return fmt.Errorf("Sum of no tensors: %v", err)
	}
	if err := p.AddTensor(ts[1].info, ts[1].data); !errors.Is(err, ErrManifest) {
		return fmt.Errorf("AddTensor after Sum: %v", err)
	}
	b, _ = New(modeltype.Custom, nil)
	p = NewParallel(b, 2)
	p.Close()
	if _, err := p.Sum(); !errors.Is(err, ErrManifest) {
		return fmt.Errorf("Sum after Close: %v", err)
	}
	return nil
}
