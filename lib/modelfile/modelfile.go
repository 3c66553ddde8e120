// Package modelfile reads and writes lib/model's models as APR files: Encode a model
// into an APR v2 stream, Read one back with its type checked (APR v2 or aprender), and
// rebuild a model from tensors of any float dtype.
//
// Layer: it bridges the models (lib/model, which know nothing of files) and the
// format (lib/container, lib/stream); converters, transforms and lib/apr use it.
package modelfile

import (
	"bufio"
	"bytes"
	"io"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
	"github.com/apr-go/apr/lib/version"
)

// EncodeOptions are the metadata and encoding of a model written with Encode.
type EncodeOptions struct {
	Name            string
	Description     string
	Hyperparameters map[string]any
	Metrics         map[string]any
	Custom          map[string]any
	Provenance      map[string]any
	Compression     container.Compression
	Shuffle         bool
}

// Encode writes m as an APR v2 stream to w. With SOURCE_DATE_EPOCH set, the same
// model and options give the same bytes.
func Encode(w io.Writer, m model.Model, opts EncodeOptions) error {
	s, err := Stream(m, opts)
	if err != nil {
		return err
	}
	return stream.Reencode(w, s, nil, false, container.WithCompression(opts.Compression), container.WithShuffle(opts.Shuffle))
}

// Stream returns m as a tensor stream with the metadata of opts (its encoding options
// are the writer's business), for the transforms that take a stream: sealing, signing.
func Stream(m model.Model, opts EncodeOptions) (stream.Stream, error) {
	created, err := container.CreatedAt()
	if err != nil {
		return nil, err
	}
	md := container.Metadata{
		Name: opts.Name, Description: opts.Description, CreatedAt: created, Producer: version.Producer,
		Hyperparameters: opts.Hyperparameters, Metrics: opts.Metrics, Custom: opts.Custom,
		ModelConfig: m.Config(), Provenance: opts.Provenance,
	}
	return stream.FromTensors(m.Type(), md, m.Tensors()), nil
}

// Read decodes a model of type want from r: an APR v2 stream (the type is checked
// before any tensor data is read, and every byte is verified on the way) or an
// aprender file (read whole, its header checked first; see aprender.ReadAll). Quantized and half-precision
// tensors come back as F32.
func Read(r io.Reader, want modeltype.Type) (model.Model, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	prefix, _ := br.Peek(5)
	if _, ok := aprender.Detect(prefix); ok {
		b, err := aprender.ReadAll(br)
		if err != nil {
			return nil, err
		}
		return ReadBytes(b, want)
	}
	return readStream(br, want)
}

// ReadBytes is Read for a file already in memory (a download, an embedded asset).
func ReadBytes(b []byte, want modeltype.Type) (model.Model, error) {
	if _, ok := aprender.Detect(b); ok {
		af, err := aprender.Read(b)
		if err != nil {
			return nil, stream.AprenderError(err)
		}
		if af.ModelType != want {
			return nil, &container.TypeMismatchError{Expected: want, Found: af.ModelType}
		}
		return FromTensors(af.ModelType, af.Config, af.Tensors)
	}
	return readStream(bytes.NewReader(b), want)
}

func readStream(r io.Reader, want modeltype.Type) (model.Model, error) {
	cr, err := container.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	h := cr.Header()
	if h.Type != want {
		return nil, &container.TypeMismatchError{Expected: want, Found: h.Type}
	}
	tensors, err := stream.ReadAll(stream.FromReader(cr))
	if err != nil {
		return nil, err
	}
	return FromTensors(h.Type, h.Metadata.ModelConfig, tensors)
}

// FromTensors converts float tensors to F32 (dequantizing quantized ones) and rebuilds
// the model of type t with its registered decoder.
func FromTensors(t modeltype.Type, config map[string]any, tensors []tensor.Tensor) (model.Model, error) {
	byName := make(map[string]tensor.Tensor, len(tensors))
	for _, tt := range tensors {
		f32, err := stream.ToF32(tt)
		if err != nil {
			return nil, err
		}
		byName[tt.Name] = f32
	}
	return model.Decode(t, config, byName)
}
