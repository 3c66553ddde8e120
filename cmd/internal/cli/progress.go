package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
)

// Progress goes to stderr only when stderr is a terminal (or --progress, or
// APR_PROGRESS=1, asks for it), never with -q, so that logs and scripts stay clean.
// Two meters: Progress follows a tensor stream the program reads itself; Meter is for
// work the library does out of sight (quantizing, converting a file, fitting), shown
// from its first second on.

// ShowProgress reports whether progress lines are printed.
func (e *Env) ShowProgress() bool {
	return !e.Quiet && (e.ForceProgress || IsTerminal(e.Stderr) || os.Getenv("APR_PROGRESS") == "1")
}

// Progress wraps a tensor stream so that one status line shows the tensor being
// processed, the bytes so far and the rate.
func (e *Env) Progress(s apr.Stream) apr.Stream {
	if !e.ShowProgress() {
		return s
	}
	return &progressStream{Stream: s, w: e.Stderr, name: e.Name, start: time.Now()}
}

type progressStream struct {
	apr.Stream
	w       io.Writer
	name    string
	start   time.Time
	last    time.Time
	tensors int
	bytes   int64
	current string
}

func (p *progressStream) Next() (container.TensorInfo, io.Reader, error) {
	info, r, err := p.Stream.Next()
	if err != nil {
		p.finish()
		return info, r, err
	}
	p.tensors++
	p.current = info.Name
	p.show(true)
	return info, &progressReader{r: r, p: p}, nil
}

func (p *progressStream) show(force bool) {
	now := time.Now()
	if !force && now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(p.bytes) / now.Sub(p.start).Seconds() / 1e6
	name := p.current
	if len(name) > 40 {
		name = "..." + name[len(name)-37:]
	}
	fmt.Fprintf(p.w, "\r\033[K%s: tensor %d %s, %.1f MB, %.0f MB/s", p.name, p.tensors, name, float64(p.bytes)/1e6, rate)
}

func (p *progressStream) finish() {
	if p.tensors > 0 {
		fmt.Fprintf(p.w, "\r\033[K")
	}
}

type progressReader struct {
	r io.Reader
	p *progressStream
}

func (r *progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.bytes += int64(n)
	r.p.show(false)
	return n, err
}

// meterDelay is how long work runs before its meter shows (tests set it to 0).
var meterDelay = time.Second

// Meter is the status line of work done out of sight: "apr-quant: quantizing,
// 123.4 MB, 98 MB/s, 3 s" (bytes, from Add or a probe), "apr-distill: fit-logistic,
// step 120 of 500, 2 s" (steps), or just the elapsed time. It is redrawn five times a
// second from a goroutine, from meterDelay on, and cleared by Done. Messages the
// program prints meanwhile (Errorf, Warnf, Infof) clear the line first. A nil *Meter
// (progress off) is a no-op.
type Meter struct {
	env   *Env
	label string
	steps bool
	total int64
	n     atomic.Int64
	probe func() int64
	start time.Time
	mu    sync.Mutex
	shown bool
	once  sync.Once
	stop  chan struct{}
	done  chan struct{}
}

// Meter starts a meter for work called label; steps counts steps of total (0:
// unknown) rather than bytes.
func (e *Env) Meter(label string, steps bool, total int64) *Meter {
	if !e.ShowProgress() {
		return nil
	}
	m := &Meter{env: e, label: label, steps: steps, total: total, start: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	e.meter.Store(m)
	go m.run()
	return m
}

func (m *Meter) run() {
	defer close(m.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	wait := time.NewTimer(meterDelay)
	defer wait.Stop()
	select {
	case <-m.stop:
		return
	case <-wait.C:
	}
	for {
		m.draw()
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

func (m *Meter) draw() {
	m.mu.Lock()
	defer m.mu.Unlock()
	el := time.Since(m.start)
	line := m.env.Name + ": " + m.label
	n := m.n.Load()
	if m.probe != nil {
		n = m.probe()
	}
	switch {
	case m.steps && m.total > 0:
		line += fmt.Sprintf(", step %d of %d", n, m.total)
	case m.steps:
		line += fmt.Sprintf(", step %d", n)
	case n > 0 && m.total > 0:
		line += fmt.Sprintf(", %.1f of %.1f MB (%d%%), %.0f MB/s", float64(n)/1e6, float64(m.total)/1e6, n*100/m.total, float64(n)/el.Seconds()/1e6)
	case n > 0:
		line += fmt.Sprintf(", %.1f MB, %.0f MB/s", float64(n)/1e6, float64(n)/el.Seconds()/1e6)
	}
	line += fmt.Sprintf(", %.0f s", el.Seconds())
	if w := termWidth(m.env.Stderr) - 1; len(line) > w && w > 10 {
		line = line[:w]
	}
	fmt.Fprintf(m.env.Stderr, "\r\033[K%s", line)
	m.shown = true
}

// clear erases the line; callers hold mu.
func (m *Meter) clear() {
	if m.shown {
		fmt.Fprint(m.env.Stderr, "\r\033[K")
		m.shown = false
	}
}

// Add counts n more bytes or steps.
func (m *Meter) Add(n int64) {
	if m != nil {
		m.n.Add(n)
	}
}

// Set sets the count.
func (m *Meter) Set(n int64) {
	if m != nil {
		m.n.Store(n)
	}
}

// Probe makes the meter ask fn for the count (e.g. an output file's size); fn runs on
// the meter's goroutine and returns -1 when it cannot tell.
func (m *Meter) Probe(fn func() int64) {
	if m != nil {
		m.mu.Lock()
		m.probe = func() int64 { return max(fn(), 0) }
		m.mu.Unlock()
	}
}

// Writer counts the bytes written to w.
func (m *Meter) Writer(w io.Writer) io.Writer {
	if m == nil {
		return w
	}
	return &meterWriter{w: w, m: m}
}

type meterWriter struct {
	w io.Writer
	m *Meter
}

func (w *meterWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.m.n.Add(int64(n))
	return n, err
}

// Done stops the meter and clears its line; later calls do nothing.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	m.once.Do(func() {
		close(m.stop)
		<-m.done
		m.mu.Lock()
		m.clear()
		m.mu.Unlock()
		m.env.meter.CompareAndSwap(m, nil)
	})
}

// Size is how many bytes the output holds so far, or -1 when it cannot tell (a pipe).
func (o *Output) Size() int64 {
	var f *os.File
	if o.file != nil {
		f = o.file.File
	} else if sf, ok := o.Writer.(*os.File); ok {
		f = sf
	}
	if f == nil {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return st.Size()
}
