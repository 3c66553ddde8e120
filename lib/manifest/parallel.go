package manifest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/ordered"
)

// Reading ahead for Parallel: the tensors being hashed share a pool of at most
// parallelChunks buffers of parallelChunk bytes, so a Parallel holds at most
// 4 MiB of tensor data however large the tensors are. The pool is kept small
// enough to stay in a CPU's cache between the read and the hash: with 16 MiB the
// same work took about a fifth more CPU time (docs/SECURITY-BENCH.md).
// Variables so that tests can shrink them.
var (
	parallelChunk  = 512 << 10
	parallelChunks = 8
)

const (
	// maxWorkers bounds the goroutines hashing at once; SHA-256 is CPU-bound, so
	// more than the CPUs brings nothing.
	maxWorkers = 16
	// inlineMax: a tensor of at most this many bytes is hashed on the calling
	// goroutine, where handing it over would cost more than hashing it.
	inlineMax = 64 << 10
)

// Parallel computes a manifest like Builder.Tensor does, but hashes up to a
// number of tensors at once, each on a goroutine of its own, while the caller
// reads the next ones: on a stream, where tensors arrive one after another, the
// hashing of tensor i overlaps the reading of tensor i+1 and the hashing of the
// tensors before it. Tensor records still enter the manifest in file order, so the
// digest is that of the sequential Builder. A tensor larger than the chunk pool
// (4 MiB) overlaps only with its neighbours: the reader waits for free chunks.
//
// Feed it every tensor in file order with ReadTensor or AddTensor, then call Sum.
// Call Close when giving up early (it is safe after Sum too): it waits for the
// goroutines. The Builder must not be used directly in between.
//
// The tensors in flight are the jobs of an ordered worker pool (lib/internal/ordered)
// whose goroutines hash one tensor each and which hands them back in file order. A
// job occupies its goroutine from the tensor's first chunk to its last, so Parallel
// keeps its own buffers (chunkPool) rather than a free list of jobs like quant's: the
// chunks of one tensor are fed to the goroutine already hashing it.
type Parallel struct {
	b       *Builder
	jobs    *ordered.Pool[*job] // tensors not yet added to the Builder, in file order
	pool    chunkPool
	scratch [64]byte // for the read that must find the end of a tensor
	err     error
	summed  bool
	closed  bool // jobs is closed
}

// job is one tensor of a Parallel; sum is valid once the pool hands it back. Its
// bytes come from chunks (a tensor read from a stream) or from data (in memory).
type job struct {
	info   container.TensorInfo
	size   int64
	sum    [sha256.Size]byte
	chunks chan []byte
	data   []byte
}

// NewParallel starts hashing b's tensors on up to workers goroutines at once
// (workers <= 0: runtime.GOMAXPROCS). b must have no tensor open.
func NewParallel(b *Builder, workers int) *Parallel {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, maxWorkers)
	// A job waits for a free goroutine (queued 0), as many jobs as there are
	// tensors may wait to be added to the Builder (no limit).
	p := &Parallel{b: b}
	p.jobs = ordered.New(workers, 0, 0, p.hash)
	p.pool.init(parallelChunk, parallelChunks)
	if b.open {
		p.err = b.fail("Parallel started with a tensor still open")
	}
	b.open = true // the Builder belongs to p until Sum
	return p
}

// ReadTensor adds the next tensor, reading its raw bytes from r until io.EOF. It
// returns when r is read to the end, while the last bytes may still be hashed on
// another goroutine. r must yield exactly info.RawSize() bytes: r is always read
// until it reports the end, so that a check it makes there (a container.Tensor
// verifies its CRC) is not skipped. An error from r is returned as it is; after
// any error the Parallel fails.
func (p *Parallel) ReadTensor(info container.TensorInfo, r io.Reader) (int64, error) {
	size, err := p.start(info)
	if err != nil {
		return 0, err
	}
	j := &job{info: info, size: size}
	var ch chan []byte // the hashing goroutine's queue, once it runs
	var total int64
	for total < size {
		buf := p.pool.get()
		want := int(min(int64(len(buf)), size-total))
		n, err := readChunk(r, buf[:want])
		total += int64(n)
		switch {
		case ch == nil && total == size && err == nil && n <= inlineMax:
			j.sum = sha256.Sum256(buf[:n])
			p.jobs.Done(j)
			p.pool.put(buf)
		case n == 0:
			p.pool.put(buf)
		default:
			if ch == nil {
				ch = p.spawn(j)
			}
			ch <- buf[:n]
		}
		if err != nil {
			return total, p.abort(ch, err)
		}
		if n < want {
			break // r ended early; reported below
		}
	}
	if total == size {
		n, err := readChunk(r, p.scratch[:])
		total += int64(n)
		if err != nil {
			return total, p.abort(ch, err)
		}
	}
	if total < size {
		return total, p.abort(ch, p.b.fail("tensor %q: read %d bytes, its raw size is %d", info.Name, total, size))
	}
	if total > size {
		return total, p.abort(ch, p.b.fail("tensor %q: more bytes than its raw size of %d", info.Name, size))
	}
	switch {
	case ch != nil:
		close(ch)
	case size == 0:
		j.sum = sha256.Sum256(nil)
		p.jobs.Done(j)
	}
	return total, nil
}

// AddTensor adds the next tensor from its raw bytes in memory, hashing them on
// another goroutine. data must not change until Sum or Close returns.
func (p *Parallel) AddTensor(info container.TensorInfo, data []byte) error {
	size, err := p.start(info)
	if err != nil {
		return err
	}
	if int64(len(data)) != size {
		p.err = p.b.fail("tensor %q: %d bytes, its raw size is %d", info.Name, len(data), size)
		return p.err
	}
	j := &job{info: info, size: size}
	if len(data) <= inlineMax {
		j.sum = sha256.Sum256(data)
		p.jobs.Done(j)
		return nil
	}
	j.data = data
	p.jobs.Push(context.Background(), j)
	return nil
}

// hash runs on the pool's goroutines: it hashes j's chunks as they come (returning
// each to the chunk pool), or its data.
func (p *Parallel) hash(j *job) {
	h := sha256.New()
	if j.chunks != nil {
		for b := range j.chunks {
			clearUpper()
			h.Write(b)
			p.pool.put(b[:cap(b)])
		}
	}
	for data := j.data; len(data) > 0; {
		n := min(len(data), parallelChunk)
		clearUpper()
		h.Write(data[:n])
		data = data[n:]
	}
	j.data = nil
	h.Sum(j.sum[:0])
}

// Sum waits for the tensors still being hashed and returns the manifest digest.
func (p *Parallel) Sum() ([32]byte, error) {
	if p.err != nil {
		p.Close()
		return [32]byte{}, p.err
	}
	if !p.summed {
		p.collect(true)
		p.b.open = false
		p.summed = true
	}
	return p.b.Sum()
}

// Close waits for every hashing goroutine to end. It does not finish the
// manifest; after Close without Sum the Parallel is unusable.
func (p *Parallel) Close() {
	if !p.closed {
		p.closed = true
		p.jobs.Close()
	}
	p.jobs.Wait()
	if p.err == nil && !p.summed {
		p.err = fmt.Errorf("%w: Parallel closed before Sum", ErrManifest)
	}
}

// start checks that the next tensor may be added and returns its raw size,
// after adding the finished tensors at the head of the queue to the Builder.
func (p *Parallel) start(info container.TensorInfo) (int64, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.summed {
		p.err = p.b.fail("tensor %q after Sum", info.Name)
		return 0, p.err
	}
	p.collect(false)
	size, err := p.b.check(info)
	if err != nil {
		p.err = err
	}
	return size, err
}

// collect adds the finished tensors at the head of the queue to the Builder, in
// file order; with wait, it waits for all of them, and no tensor may follow.
func (p *Parallel) collect(wait bool) {
	if wait && !p.closed {
		p.closed = true
		p.jobs.Close()
	}
	for {
		next := p.jobs.Ready
		if wait {
			next = p.jobs.Next
		}
		j, ok := next()
		if !ok {
			return
		}
		p.b.add(j.info, j.size, j.sum[:])
	}
}

// chunkPool hands out at most max chunks of size bytes, allocated on first
// use. When all are in use, get waits until a quarter of them are free again
// rather than for one: the reader then reads several chunks in a row, and the
// goroutines (and the program writing into a pipe) switch far less often.
type chunkPool struct {
	mu    sync.Mutex
	freed sync.Cond
	free  [][]byte
	size  int
	n     int // allocated
	max   int
	want  int // how many free chunks get is waiting for; 0 when it is not
}

func (c *chunkPool) init(size, max int) {
	c.freed.L = &c.mu
	c.size, c.max = size, max
}

func (c *chunkPool) get() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) == 0 {
		if c.n < c.max {
			c.n++
			return make([]byte, c.size)
		}
		// Every chunk is queued for a running goroutine, so they all come back.
		c.want = max(1, c.max/4)
		for len(c.free) < c.want {
			c.freed.Wait()
		}
		c.want = 0
	}
	b := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return b
}

func (c *chunkPool) put(b []byte) {
	c.mu.Lock()
	c.free = append(c.free, b)
	if c.want > 0 && len(c.free) >= c.want {
		c.freed.Signal()
	}
	c.mu.Unlock()
}

// spawn starts the goroutine that hashes j from the chunks sent to the returned
// queue, once fewer than the allowed number of tensors are being hashed. The
// queue holds as many chunks as the pool, so sending never blocks.
func (p *Parallel) spawn(j *job) chan []byte {
	j.chunks = make(chan []byte, parallelChunks)
	p.jobs.Push(context.Background(), j)
	return j.chunks
}

// abort ends the current tensor's goroutine, if any, and fails p with err.
func (p *Parallel) abort(ch chan []byte, err error) error {
	if ch != nil {
		close(ch)
	}
	p.err = err
	return err
}
