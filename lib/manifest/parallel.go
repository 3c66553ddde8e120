package manifest

import (
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/apr-go/apr/lib/container"
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
type Parallel struct {
	b       *Builder
	slots   chan struct{} // one token per tensor being hashed on a goroutine
	pool    chunkPool
	pending []*job // tensors not yet added to the Builder, in file order
	wg      sync.WaitGroup
	scratch [64]byte // for the read that must find the end of a tensor
	err     error
	summed  bool
}

// job is one tensor of a Parallel; sum is valid once done is closed.
type job struct {
	info container.TensorInfo
	size int64
	sum  [sha256.Size]byte
	done chan struct{}
}

// NewParallel starts hashing b's tensors on up to workers goroutines at once
// (workers <= 0: runtime.GOMAXPROCS). b must have no tensor open.
func NewParallel(b *Builder, workers int) *Parallel {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, maxWorkers)
	p := &Parallel{
		b:     b,
		slots: make(chan struct{}, workers),
	}
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
	j := &job{info: info, size: size, done: make(chan struct{})}
	p.pending = append(p.pending, j)
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
			close(j.done)
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
		close(j.done)
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
	j := &job{info: info, size: size, done: make(chan struct{})}
	p.pending = append(p.pending, j)
	if len(data) <= inlineMax {
		j.sum = sha256.Sum256(data)
		close(j.done)
		return nil
	}
	p.slots <- struct{}{}
	p.wg.Go(func() {
		defer func() { <-p.slots }()
		h := sha256.New()
		for len(data) > 0 {
			n := min(len(data), parallelChunk)
			clearUpper()
			h.Write(data[:n])
			data = data[n:]
		}
		h.Sum(j.sum[:0])
		close(j.done)
	})
	return nil
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
	p.wg.Wait()
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
// file order; with wait, it waits for all of them.
func (p *Parallel) collect(wait bool) {
	for len(p.pending) > 0 {
		j := p.pending[0]
		if wait {
			<-j.done
		} else {
			select {
			case <-j.done:
			default:
				return
			}
		}
		p.b.add(j.info, j.size, j.sum[:])
		p.pending[0] = nil
		p.pending = p.pending[1:]
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
	p.slots <- struct{}{}
	ch := make(chan []byte, parallelChunks)
	p.wg.Go(func() {
		defer func() { <-p.slots }()
		h := sha256.New()
		for b := range ch {
			clearUpper()
			h.Write(b)
			p.pool.put(b[:cap(b)])
		}
		h.Sum(j.sum[:0])
		close(j.done)
	})
	return ch
}

// abort ends the current tensor's goroutine, if any, and fails p with err.
func (p *Parallel) abort(ch chan []byte, err error) error {
	if ch != nil {
		close(ch)
	}
	p.err = err
	return err
}
