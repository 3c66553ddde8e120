package quant

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/apr-go/apr/lib/internal/crcjoin"
	pool "github.com/apr-go/apr/lib/internal/ordered"
	"github.com/apr-go/apr/lib/tensor"
)

// job is one chunk of a tensor in flight. Its buffers are reused from chunk to chunk
// and from tensor to tensor; done is closed when a worker has filled out and acc.
type job struct {
	start int64 // index of the chunk's first value in the tensor
	n     int   // values in the chunk
	in    []byte
	buf   []byte // storage for in, unless in is a view of a mapped file
	crc   uint32 // CRC-32 of in, when in is a view of a mapped file
	out   []byte
	f32   []float32 // decoded source values (unless the input is used in place)
	deq   []float32 // the output decoded again, for stats
	acc   errAcc
	err   error
}

// grow returns b with length n, reusing its storage when it is large enough. Byte
// buffers are carved from []uint64 so they are 8-byte aligned.
func growBytes(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	words := make([]uint64, (n+7)/8)
	return unsafeBytes(words)[:n]
}

func growF32(b []float32, n int) []float32 {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]float32, n)
}

// convertReader is the output of one converted tensor, on the ordered worker pool
// (lib/internal/ordered). A producer goroutine reads chunks of the source tensor into
// free jobs and pushes them to the pool; Read takes each job in turn, so the bytes
// come out in input order whatever the number of workers. At most cap(free) jobs
// exist, which bounds memory by chunk size x jobs; the pool queues as many, so the
// producer reads ahead while every worker is busy.
type convertReader struct {
	s      *Stream
	p      *plan
	src    io.Reader
	ctx    context.Context
	cancel context.CancelFunc
	pool   *pool.Pool[*job]
	wg     sync.WaitGroup // the producer
	cur    *job
	off    int
	left   int64         // output bytes not yet returned
	mapped *mappedTensor // the source, when the workers read it in place
	view   []byte        // the source in place, from another mapped reader (inMapping)
	viewOf inMapping
	crc    uint32 // CRC-32 of the mapped source so far, joined from the jobs'
	acc    errAcc
	err    error
	ended  bool // every job was taken from order
}

// inMapping is a source tensor reader over a read-only file mapping (the mapped
// SafeTensors of lib/stconv, GGUF of lib/ggufconv): TakeMapped returns the rest of the
// tensor in place and moves the reader to its end (or returns nil and leaves it,
// when it cannot), ReleaseMapped(n) gives back the pages of its first n bytes. The workers then read the tensor in place, as they read a mapped APR file
// (no copy into a job buffer); the file has no checksum to join.
type inMapping interface {
	Len() int
	TakeMapped() []byte
	ReleaseMapped(n int)
}

func (s *Stream) startConvert(p *plan, src io.Reader) *convertReader {
	ctx, cancel := context.WithCancel(context.Background())
	c := &convertReader{s: s, p: p, src: src, ctx: ctx, cancel: cancel, left: p.outBytes}
	if m, ok := src.(*mappedTensor); ok && !m.taken && m.off == 0 {
		c.mapped, m.taken = m, true
	} else if m, ok := src.(inMapping); ok && m.Len() == elemBytes(p.from, int(p.elems)) {
		if b := m.TakeMapped(); b != nil { // the whole rest, Len() bytes; nil: read it instead
			c.view, c.viewOf = b, m
		}
	}
	c.pool = pool.New(s.workers, cap(s.free), 0, func(j *job) {
		if c.mapped != nil {
			j.crc = crc32.ChecksumIEEE(j.in)
		}
		j.err = p.convert(j)
	})
	c.wg.Add(1)
	go c.produce()
	return c
}

// produce reads the source tensor chunk by chunk, then checks that it ends where its
// shape says (the container reader reports a checksum failure at that point). A
// mapped source is not read: each job gets a view of its chunk.
func (c *convertReader) produce() {
	defer c.wg.Done()
	defer c.pool.Close()
	p := c.p
	for start := int64(0); start < p.elems; start += int64(p.chunk) {
		var j *job
		select {
		case j = <-c.s.free:
		case <-c.ctx.Done():
			return
		}
		j.start, j.n, j.err = start, int(min(int64(p.chunk), p.elems-start)), nil
		if c.mapped != nil {
			off := elemBytes(p.from, int(start))
			j.in = c.mapped.data[off : off+elemBytes(p.from, j.n)]
		} else if c.view != nil {
			off := elemBytes(p.from, int(start))
			j.in = c.view[off : off+elemBytes(p.from, j.n)]
		} else {
			j.buf = growBytes(j.buf, elemBytes(p.from, j.n))
			j.in = j.buf
			if _, err := io.ReadFull(c.src, j.in); err != nil {
				j.err = fmt.Errorf("tensor %q: reading values %d..%d: %w", p.name, start, start+int64(j.n), eofErr(err))
				c.pool.Done(j)
				return
			}
		}
		if err := c.pool.Push(c.ctx, j); err != nil { // never waits but for abort: the pool queues every job
			c.s.free <- j
			return
		}
	}
	if c.mapped != nil || c.view != nil {
		return // its length is the shape's (FileStream.Next, startConvert checked)
	}
	var one [1]byte
	n, err := c.src.Read(one[:])
	if err == nil && n == 0 {
		n, err = c.src.Read(one[:])
	}
	if n > 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = errors.New("more data than its shape holds")
		}
		c.pool.Done(&job{err: tensor.Wrap(p.name, err)})
	}
}

func eofErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// chunk returns the unread rest of the current converted chunk, taking the next one
// from the pool once it is used up, and io.EOF after the last.
func (c *convertReader) chunk() ([]byte, error) {
	for {
		if c.err != nil {
			return nil, c.err
		}
		if c.cur != nil {
			if c.off < len(c.cur.out) {
				return c.cur.out[c.off:], nil
			}
			c.acc.merge(c.cur.acc)
			if c.mapped != nil {
				c.mapped.release(elemBytes(c.p.from, int(c.cur.start)+c.cur.n))
			} else if c.view != nil {
				c.viewOf.ReleaseMapped(elemBytes(c.p.from, int(c.cur.start)+c.cur.n))
			}
			c.s.free <- c.cur
			c.cur = nil
		}
		j, ok := c.pool.Next()
		if !ok {
			c.ended = true
			if c.left != 0 {
				c.err = fmt.Errorf("tensor %q: conversion ended %d bytes early", c.p.name, c.left)
				return nil, c.err
			}
			if c.mapped != nil {
				if err := c.mapped.end(c.crc); err != io.EOF {
					c.err = err
					return nil, err
				}
			}
			return nil, io.EOF
		}
		if c.mapped != nil && j.err == nil {
			c.crc = crcjoin.Join(c.crc, j.crc, int64(len(j.in)))
		}
		if j.err != nil {
			c.err = j.err
			if j.in != nil {
				c.s.free <- j
			}
			c.abort()
			return nil, c.err
		}
		c.cur, c.off = j, 0
	}
}

func (c *convertReader) Read(b []byte) (int, error) {
	p, err := c.chunk()
	if err != nil {
		return 0, err
	}
	n := copy(b, p)
	c.off += n
	c.left -= int64(n)
	return n, nil
}

// Len is the number of output bytes not yet read (container.InPlace).
func (c *convertReader) Len() int { return int(c.left) }

// WriteTo writes each converted chunk to w from its worker's buffer, not copied
// through the writer's buffer first.
func (c *convertReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		p, err := c.chunk()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(p)
		c.off += n
		c.left -= int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// finish drains the reader after its consumer stopped: it returns the tensor's
// error, if any (a checksum failure found after the last value), and stops the
// workers.
func (c *convertReader) finish() error {
	if c.err == nil && c.left == 0 {
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && err != io.EOF {
			return err
		}
	}
	c.abort()
	return c.err
}

// abort stops the producer and workers and returns every job to the free list.
func (c *convertReader) abort() {
	c.cancel()
	if c.cur != nil {
		c.s.free <- c.cur
		c.cur = nil
	}
	for {
		j, ok := c.pool.Next()
		if !ok {
			break
		}
		if j.in != nil {
			c.s.free <- j
		}
	}
	c.wg.Wait()
	c.pool.Wait()
	c.ended = true
}
