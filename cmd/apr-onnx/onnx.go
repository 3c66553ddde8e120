package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/onnx"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// regularSize is the bytes left to read in r when it is a regular file, else -1.
func regularSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return -1
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return fi.Size() - off
}

func (c *exportCmd) Run(env *cli.Env) error {
	u, err := cli.Unsealer(&c.IdentityFlag, &c.PassphraseFlags)
	if err != nil {
		return err
	}
	in, name, err := env.Input(c.InputFlag.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	// The model is read as a stream, as every reader of a model reads it; the
	// metadata comes with it.
	var md container.Metadata
	keep := func(_ modeltype.Type, m *container.Metadata, _ []container.TensorInfo) error {
		if m != nil {
			md = *m
		}
		return nil
	}
	m, _, err := apr.ReadModel(in, apr.ReadOptions{Accept: onnx.Supported, Policy: apr.Policy{Unsealer: u}, Describe: keep})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	data, err := onnx.Marshal(m, md)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	return out.Commit()
}

func (c *importCmd) Run(env *cli.Env) error {
	comp, err := c.Compression()
	if err != nil {
		return err
	}
	in, name, err := env.Input(c.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	size := regularSize(in)
	if c.Input == "" || c.Input == "-" {
		size = regularSize(env.Stdin)
	}
	m, md, err := onnx.Read(in, size)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if c.Name != "" {
		md.Name = c.Name
	}
	if md.CreatedAt, err = container.CreatedAt(); err != nil {
		return err
	}
	md.Producer, md.ModelConfig = version.Producer, m.Config()
	out, err := env.Create(c.Output, true)
	if err != nil {
		return err
	}
	defer out.Abort()
	s := newNetworkStream(m, md)
	if err := stream.Reencode(out, s, nil, false, container.WithCompression(comp)); err != nil {
		return fmt.Errorf("%s: %w", out.Name, err)
	}
	env.Infof("%s: NeuralSequential %v (%s), %d parameters", name, m.Widths(), activationsText(m), m.ParamCount())
	return out.Commit()
}

// activationsText lists the layers' activations: "relu, relu, softmax".
func activationsText(m *model.NeuralSequentialModel) string {
	a := make([]string, len(m.Layers))
	for i, l := range m.Layers {
		a[i] = string(l.Activation)
	}
	return strings.Join(a, ", ")
}

// networkStream is stream.FromTensors(m.Type(), md, m.Tensors()) with each tensor's
// bytes made as the writer reads them: Tensors would copy every weight first, and
// the import would hold the network twice.
type networkStream struct {
	h container.Header
	v [][]float32
	i int
}

func newNetworkStream(m *model.NeuralSequentialModel, md container.Metadata) *networkStream {
	s := &networkStream{h: container.Header{Type: m.Type(), Metadata: md}}
	for i, l := range m.Layers {
		s.h.Table = append(s.h.Table,
			container.TensorInfo{Name: fmt.Sprintf("layers.%d.weight", i), DType: dtype.F32, Shape: []int64{int64(l.Out), int64(l.In)}},
			container.TensorInfo{Name: fmt.Sprintf("layers.%d.bias", i), DType: dtype.F32, Shape: []int64{int64(l.Out)}})
		s.v = append(s.v, l.Weight, l.Bias)
	}
	return s
}

func (s *networkStream) Header() container.Header { return s.h }

func (s *networkStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.i == len(s.v) {
		return container.TensorInfo{}, nil, io.EOF
	}
	s.i++
	return s.h.Table[s.i-1], &f32Reader{v: s.v[s.i-1]}, nil
}

func (s *networkStream) Blocks() []container.Block { return nil }
func (s *networkStream) Close() error              { return nil }

// f32Reader reads float32 values as little-endian bytes, encoded as they are read.
type f32Reader struct {
	v   []float32
	off int // bytes read
}

func (r *f32Reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.off < 4*len(r.v) {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(r.v[r.off/4]))
		k := copy(p[n:], b[r.off%4:])
		n += k
		r.off += k
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}
