package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
)

// Progress wraps a tensor stream so that, when stderr is a terminal, one status line
// shows the tensor being processed, the bytes so far and the rate. It prints nothing
// when stderr is a pipe or a file, so logs and scripts stay clean.
func (e *Env) Progress(s apr.Stream) apr.Stream {
	if !IsTerminal(e.Stderr) && os.Getenv("APR_PROGRESS") != "1" {
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
