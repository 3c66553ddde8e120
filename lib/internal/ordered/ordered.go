// Package ordered is apr's one ordered worker pool: jobs run on a fixed number of
// goroutines and come back in the order they were pushed, whatever order they finish
// in. The container's chunk pipeline, quant's chunk converter and manifest's tensor
// hasher are built on it. It is a leaf of layer 0 and imports nothing of ours.
//
// A Pool has one producer (Push, Done, Close) and one consumer (Next, Ready), which
// may be the same goroutine. Memory is the caller's to bound: by the pool's limit, by
// a free list of jobs the caller keeps, or both. The pool allocates one channel per
// job pushed and nothing per job marked done.
package ordered

import (
	"context"
	"sync"
)

// item is a job in the queue; done is closed once the job has run.
type item[T any] struct {
	v    T
	done chan struct{}
}

// closed is the done of jobs that need not run.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Pool runs a function over jobs on a fixed number of goroutines and hands the jobs
// back in the order they were pushed.
type Pool[T any] struct {
	fn      func(T)
	work    chan item[T]
	workers int           // goroutines to run at most
	started int           // goroutines started (by Push, one per job until workers)
	slots   chan struct{} // one token per job between Push and Next; nil: no limit
	wg      sync.WaitGroup

	mu     sync.Mutex
	queue  []item[T] // jobs pushed, in push order; queue[first:] not yet taken
	first  int
	more   chan struct{} // signalled when the queue grows or the pool closes
	ended  bool          // Close was called
	head   item[T]       // the consumer's current head, taken from queue (Ready)
	loaded bool          // head holds a job
}

// New returns a pool of up to workers goroutines (at least one) that run fn on the
// jobs pushed; they start with the first jobs, so a pool that runs one job costs one
// goroutine.
// queued is how many pushed jobs may wait for a goroutine before Push waits (0: Push
// returns once a goroutine has taken the job, so it also bounds the jobs running).
// limit, when above 0, is how many jobs the pool may hold between Push and Next
// before Push waits.
func New[T any](workers, queued, limit int, fn func(T)) *Pool[T] {
	p := &Pool[T]{fn: fn, work: make(chan item[T], queued), workers: max(workers, 1), more: make(chan struct{}, 1)}
	if limit > 0 {
		p.slots = make(chan struct{}, limit)
	}
	return p
}

func (p *Pool[T]) run() {
	defer p.wg.Done()
	for it := range p.work {
		p.fn(it.v)
		close(it.done)
	}
}

// Push queues v to be run by a goroutine and then taken by Next in its turn. It waits
// while the pool holds limit jobs or queued jobs wait for a goroutine; when ctx ends
// first it returns ctx's error and v is not in the pool.
func (p *Pool[T]) Push(ctx context.Context, v T) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	if p.started < p.workers {
		p.started++
		p.wg.Add(1)
		go p.run()
	}
	it := item[T]{v: v, done: make(chan struct{})}
	select {
	case p.work <- it:
	case <-ctx.Done():
		p.release()
		return ctx.Err()
	}
	p.enqueue(it)
	return nil
}

// Done queues v, which needs no running (a result computed on the spot, or an
// error), to be taken by Next in its turn. It waits while the pool holds limit jobs.
func (p *Pool[T]) Done(v T) {
	p.acquire(context.Background())
	p.enqueue(item[T]{v: v, done: closed})
}

// Close tells the pool no more jobs come: Next reports the end once the queue is
// empty, and the goroutines end once they have run every job. Call it once, from the
// producer.
func (p *Pool[T]) Close() {
	close(p.work)
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.signal()
}

// Wait waits for the goroutines to end; call it after Close.
func (p *Pool[T]) Wait() { p.wg.Wait() }

// Next waits for the oldest job not yet taken to have run and returns it; ok is
// false once the pool is closed and every job taken.
func (p *Pool[T]) Next() (v T, ok bool) {
	if !p.loaded && !p.load(true) {
		return v, false
	}
	<-p.head.done
	return p.take(), true
}

// Ready returns the oldest job not yet taken if it has run, without waiting; ok is
// false when there is none.
func (p *Pool[T]) Ready() (v T, ok bool) {
	if !p.loaded && !p.load(false) {
		return v, false
	}
	select {
	case <-p.head.done:
		return p.take(), true
	default:
		return v, false
	}
}

func (p *Pool[T]) acquire(ctx context.Context) error {
	if p.slots == nil {
		return nil
	}
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Pool[T]) release() {
	if p.slots != nil {
		<-p.slots
	}
}

func (p *Pool[T]) enqueue(it item[T]) {
	p.mu.Lock()
	p.queue = append(p.queue, it)
	p.mu.Unlock()
	p.signal()
}

func (p *Pool[T]) signal() {
	select {
	case p.more <- struct{}{}:
	default:
	}
}

// load moves the oldest queued job to head, waiting for one (or the end) with wait.
func (p *Pool[T]) load(wait bool) bool {
	for {
		p.mu.Lock()
		if p.first < len(p.queue) {
			p.head, p.loaded = p.queue[p.first], true
			p.queue[p.first] = item[T]{}
			p.first++
			if p.first == len(p.queue) { // drained: reuse the array from its start
				p.queue, p.first = p.queue[:0], 0
			} else if p.first >= 64 && p.first*2 >= len(p.queue) {
				n := copy(p.queue, p.queue[p.first:])
				clear(p.queue[n:])
				p.queue, p.first = p.queue[:n], 0
			}
			p.mu.Unlock()
			return true
		}
		ended := p.ended
		p.mu.Unlock()
		if ended || !wait {
			return false
		}
		<-p.more
	}
}

func (p *Pool[T]) take() T {
	v := p.head.v
	p.head, p.loaded = item[T]{}, false
	p.release()
	return v
}
