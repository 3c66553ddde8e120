package stream

import (
	"bufio"
	"bytes"
	"io"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/tensor"
)

// Stream is the one tensor stream of apr: every importer produces it and every
// exporter and transform consumes it, one tensor at a time.
type Stream interface {
	// Header is the model type, declared flags and metadata, known before any tensor,
	// and the tensor table when the producer knows every tensor up front (nil
	// otherwise): a transform that changes tensors must change or drop the table.
	Header() container.Header
	// Next returns the next tensor and a reader of exactly its raw bytes, or io.EOF
	// once the input is exhausted and fully verified.
	Next() (container.TensorInfo, io.Reader, error)
	// Blocks returns the input's signature and license blocks, after io.EOF.
	Blocks() []container.Block
	Close() error
}

// Open reads an APR v2 stream or an aprender file from r, chosen by its magic.
// An APR v2 input streams in bounded memory; an aprender file is read whole (its
// layouts put the checksum at the end of a single payload).
func Open(r io.Reader) (Stream, error) {
	br, whole, err := sniff(r)
	if err != nil {
		return nil, err
	}
	if whole != nil {
		return aprenderStream(whole)
	}
	cr, err := container.NewReader(br)
	if err != nil {
		return nil, err
	}
	return FromReader(cr), nil
}

// FromReader returns the tensor stream of an APR v2 reader (a sealed one included).
func FromReader(r *container.Reader) Stream { return &v2Stream{r: r} }

type v2Stream struct{ r *container.Reader }

func (s *v2Stream) Header() container.Header {
	h := s.r.Header()
	return container.Header{Type: h.Type, Flags: h.Flags & (container.FlagSigned | container.FlagLicensed | container.FlagQuantized), Metadata: *h.Metadata, Table: h.Table}
}

func (s *v2Stream) Next() (container.TensorInfo, io.Reader, error) {
	t, err := s.r.Next()
	if err != nil {
		return container.TensorInfo{}, nil, err
	}
	return t.TensorInfo, t, nil
}

func (s *v2Stream) Blocks() []container.Block { return s.r.Blocks() }
func (s *v2Stream) Close() error              { return s.r.Close() }

// memStream serves tensors held in memory.
type memStream struct {
	h       container.Header
	tensors []tensor.Tensor
	i       int
}

func aprenderStream(b []byte) (Stream, error) {
	af, err := aprender.Read(b)
	if err != nil {
		return nil, AprenderError(err)
	}
	info, err := InspectAprender(b)
	if err != nil {
		return nil, err
	}
	md := *info.Metadata
	if md.ModelConfig == nil && len(af.Config) > 0 {
		md.ModelConfig = af.Config
	}
	md.Provenance = map[string]any{"source_format": af.Layout, "source_version": af.Version}
	return FromTensors(af.ModelType, md, af.Tensors), nil
}

// FromTensors returns a Stream over tensors held in memory (a model being saved, an
// aprender file read whole).
func FromTensors(t modeltype.Type, md container.Metadata, tensors []tensor.Tensor) Stream {
	h := container.Header{Type: t, Metadata: md, Table: make([]container.TensorInfo, 0, len(tensors))}
	for _, tt := range tensors {
		if tt.DType.Info().Quantized() {
			h.Flags |= container.FlagQuantized
		}
		h.Table = append(h.Table, container.TensorInfo{Name: tt.Name, DType: tt.DType, Shape: tt.Shape})
	}
	return &memStream{h: h, tensors: tensors}
}

func (s *memStream) Header() container.Header { return s.h }
func (s *memStream) Next() (container.TensorInfo, io.Reader, error) {
	if s.i == len(s.tensors) {
		return container.TensorInfo{}, nil, io.EOF
	}
	t := s.tensors[s.i]
	s.i++
	return container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}, bytes.NewReader(t.Data), nil
}
func (s *memStream) Blocks() []container.Block { return nil }
func (s *memStream) Close() error              { return nil }

// Copy writes every remaining tensor of s to w, in order: the library's one loop
// "read a stream, transform each tensor, write a stream" (a transform is a Stream
// whose Next transforms, like quant.Stream; Write, Reencode, quant.Quantize and
// ggufconv.Import are built on it). An error of the writer names the tensor once.
func Copy(w *container.Writer, s Stream) error {
	return Each(s, func(info container.TensorInfo, r io.Reader) error {
		if err := w.WriteTensor(info, r); err != nil {
			return tensor.Wrap(info.Name, err)
		}
		return nil
	})
}

// Each calls fn for every remaining tensor of s, in order, and returns nil at the end
// of s, or the first error of s or fn. fn may leave a tensor's bytes unread: the next
// call of s.Next reads (and verifies) the rest.
func Each(s Stream, fn func(container.TensorInfo, io.Reader) error) error {
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(info, r); err != nil {
			return err
		}
	}
}

// ReadAll reads every remaining tensor of s into memory, in order.
func ReadAll(s Stream) ([]tensor.Tensor, error) {
	var tensors []tensor.Tensor
	err := Each(s, func(info container.TensorInfo, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		tensors = append(tensors, tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
		return nil
	})
	return tensors, err
}

// Write writes s as a new APR v2 stream on dst, with the header of s and the writer
// options given (compression, shuffle, workers), and closes the writer. The blocks of
// s are not copied (Reencode keeps them when asked).
func Write(dst io.Writer, s Stream, opts ...container.Option) error {
	w, err := container.NewWriter(dst, s.Header(), opts...)
	if err != nil {
		return err
	}
	if err := Copy(w, s); err != nil {
		return err
	}
	return w.Close()
}

// sniff looks at the start of r: for an aprender file it returns the whole file (its
// layouts can only be checked whole, and are capped at aprender.MaxFileSize); otherwise
// a buffered reader positioned at the start.
func sniff(r io.Reader) (*bufio.Reader, []byte, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	prefix, _ := br.Peek(5)
	if _, ok := aprender.Detect(prefix); !ok {
		return br, nil, nil
	}
	b, err := aprender.ReadAll(br)
	return nil, b, err
}
