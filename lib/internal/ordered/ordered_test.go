package ordered

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestOrder: jobs that finish in random order come back in push order, with any
// number of workers, queue and limit; Done jobs keep their place.
func TestOrder(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 8} {
		for _, queued := range []int{0, 1, 5} {
			for _, limit := range []int{0, 1, 4} {
				var running, most atomic.Int32
				p := New(workers, queued, limit, func(j *[2]int) {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
					j[1] = j[0] * 2
					running.Add(-1)
				})
				go func() {
					defer p.Close()
					for i := range 100 {
						if i%7 == 3 {
							p.Done(&[2]int{i, 2 * i})
							continue
						}
						if err := p.Push(context.Background(), &[2]int{i, 0}); err != nil {
							t.Error(err)
							return
						}
					}
				}()
				i := 0
				for {
					j, ok := p.Next()
					if !ok {
						break
					}
					if j[0] != i || j[1] != 2*i {
						t.Fatalf("workers %d queued %d limit %d: job %d came as %v", workers, queued, limit, i, *j)
					}
					i++
				}
				p.Wait()
				if i != 100 {
					t.Fatalf("%d jobs came back, want 100", i)
				}
				if m := int(most.Load()); m > max(workers, 1) {
					t.Fatalf("%d jobs ran at once with %d workers", m, workers)
				}
			}
		}
	}
}

// TestReadyAndCancel: Ready does not wait; Push gives up when its context ends.
func TestReadyAndCancel(t *testing.T) {
	release := make(chan struct{})
	p := New(1, 0, 2, func(int) { <-release })
	if _, ok := p.Ready(); ok {
		t.Fatal("Ready on an empty pool")
	}
	if err := p.Push(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	p.Done(2) // the pool now holds its limit of 2
	if _, ok := p.Ready(); ok {
		t.Fatal("Ready before the job ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Push(ctx, 3); err == nil {
		t.Fatal("Push past the limit with an ended context succeeded")
	}
	close(release)
	if v, ok := p.Next(); !ok || v != 1 {
		t.Fatal(v, ok)
	}
	if v, ok := p.Ready(); !ok || v != 2 {
		t.Fatal(v, ok)
	}
	p.Close()
	if _, ok := p.Next(); ok {
		t.Fatal("Next after the end")
	}
	p.Wait()
}
