package container

import (
	"context"

	"golang.org/x/sync/errgroup"

	pool "github.com/apr-go/apr/lib/internal/ordered"
)

// ordered runs work over the items next yields, up to workers at once, and hands the
// results to emit in the order the items came, on ordered.Pool. Memory stays bounded:
// the pool holds at most 2*workers items, running or waiting for emit. next returns ok
// false when done. ordered returns once every item handed to a worker has run.
func ordered[I, O any](ctx context.Context, workers int, next func() (I, bool, error),
	work func(int64, I) (O, error), emit func(O) error) error {
	workers = max(workers, 1)
	type job struct {
		i   int64
		in  I
		out O
		err error
	}
	p := pool.New(workers, 0, 2*workers, func(j *job) {
		j.out, j.err = work(j.i, j.in)
		var zero I
		j.in = zero
	})
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer p.Close()
		for i := int64(0); ; i++ {
			in, ok, err := next()
			if err != nil || !ok {
				return err
			}
			if err := p.Push(ctx, &job{i: i, in: in}); err != nil {
				return err
			}
		}
	})
	g.Go(func() error {
		for {
			j, ok := p.Next()
			if !ok {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if j.err != nil {
				return j.err
			}
			if err := emit(j.out); err != nil {
				return err
			}
		}
	})
	err := g.Wait()
	p.Wait()
	return err
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
