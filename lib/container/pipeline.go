package container

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// job is one item in flight: its input, and its result once done is closed.
type job[I, O any] struct {
	in   I
	out  O
	err  error
	done chan struct{}
}

// ordered runs work over the items next yields, up to workers at once, and hands the
// results to emit in the order the items came. Memory stays bounded: at most about
// 2*workers items are held at any time. next returns ok false when done.
func ordered[I, O any](ctx context.Context, workers int, next func() (I, bool, error),
	work func(int64, I) (O, error), emit func(O) error) error {
	if workers < 1 {
		workers = 1
	}
	g, ctx := errgroup.WithContext(ctx)
	queue := make(chan *job[I, O], workers)
	g.Go(func() error {
		defer close(queue)
		sem := make(chan struct{}, workers)
		for i := int64(0); ; i++ {
			in, ok, err := next()
			if err != nil || !ok {
				return err
			}
			j := &job[I, O]{in: in, done: make(chan struct{})}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			go func(i int64) {
				j.out, j.err = work(i, j.in)
				var zero I
				j.in = zero
				<-sem
				close(j.done)
			}(i)
			select {
			case queue <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	g.Go(func() error {
		for j := range queue {
			select {
			case <-j.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if j.err != nil {
				return j.err
			}
			if err := emit(j.out); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// bufPool is a small free list of chunk buffers, so that a stream of chunks reuses a
// bounded set of buffers instead of allocating (and the runtime zeroing) a new
// megabyte for every chunk read, sealed, opened or written. A nil pool allocates.
type bufPool struct {
	size int // capacity of new buffers; smaller ones are not kept
	free chan []byte
}

func newBufPool(size, keep int) *bufPool {
	return &bufPool{size: size, free: make(chan []byte, keep)}
}

// get returns a buffer of length n (its contents are not cleared).
func (p *bufPool) get(n int) []byte {
	if p == nil {
		return make([]byte, n)
	}
	select {
	case b := <-p.free:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]byte, n, max(n, p.size))
}

// put hands a buffer back; the caller must not use it afterwards.
func (p *bufPool) put(b []byte) {
	if p == nil || cap(b) < p.size {
		return
	}
	select {
	case p.free <- b[:0]:
	default:
	}
}
