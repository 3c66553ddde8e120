package container

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// job is one chunk in flight: its input, and its result once done is closed.
type job struct {
	in   []byte
	out  []byte
	err  error
	done chan struct{}
}

// ordered runs work over the items next yields, up to workers at once, and hands the
// results to emit in the order the items came. Memory stays bounded: at most about
// 2*workers items are held at any time. next returns (nil, false, nil) when done.
func ordered(ctx context.Context, workers int, next func() ([]byte, bool, error),
	work func(int64, []byte) ([]byte, error), emit func([]byte) error) error {
	if workers < 1 {
		workers = 1
	}
	g, ctx := errgroup.WithContext(ctx)
	queue := make(chan *job, workers)
	g.Go(func() error {
		defer close(queue)
		sem := make(chan struct{}, workers)
		for i := int64(0); ; i++ {
			in, ok, err := next()
			if err != nil || !ok {
				return err
			}
			j := &job{in: in, done: make(chan struct{})}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			go func(i int64) {
				j.out, j.err = work(i, j.in)
				j.in = nil
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
