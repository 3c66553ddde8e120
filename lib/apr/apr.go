// Package apr is the Go API of the .apr model format: save a model, load it back with
// its type checked, inspect a file without reading its weights. It reads apr's own
// APRN v2 files and imports aprender's APRN v1 and APR\0 files.
//
// # Guarantees
//
// Every load verifies every checksum of what it reads and fails with a typed error
// (ChecksumMismatch, ModelTypeMismatch, UnsupportedVersion, FormatError) instead of
// returning a model built from damaged bytes. Save writes to a temporary file and
// renames it into place, so a failed save leaves no file behind. Saving the same
// model with the same options (and SOURCE_DATE_EPOCH set) gives the same bytes.
package apr

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/aprender"
	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
)

// Version is the version of apr written into the producer field of new files.
const Version = "0.1.0"

// Producer is the producer string of files written by this library.
var Producer = "apr " + Version

// SaveOptions are the metadata and encoding of a saved model.
type SaveOptions struct {
	Name            string
	Description     string
	Hyperparameters map[string]any
	Metrics         map[string]any
	Custom          map[string]any
	Compression     container.Compression
	Shuffle         bool
}

// Save writes m to path as an APR v2 file, atomically.
func Save(path string, m model.Model, opts SaveOptions) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := Encode(f, m, opts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// Encode writes m as an APR v2 stream to w.
func Encode(w io.Writer, m model.Model, opts SaveOptions) error {
	created, err := container.CreatedAt()
	if err != nil {
		return err
	}
	tensors := m.Tensors()
	h := container.Header{Type: m.Type(), Metadata: container.Metadata{
		Name: opts.Name, Description: opts.Description, CreatedAt: created, Producer: Producer,
		Hyperparameters: opts.Hyperparameters, Metrics: opts.Metrics, Custom: opts.Custom,
		ModelConfig: m.Config(),
	}}
	for _, t := range tensors {
		if t.DType.Info().Quantized() {
			h.Flags |= container.FlagQuantized
		}
	}
	cw, err := container.NewWriter(w, h, container.WithCompression(opts.Compression), container.WithShuffle(opts.Shuffle))
	if err != nil {
		return err
	}
	for _, t := range tensors {
		if err := cw.WriteTensorBytes(container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}, t.Data); err != nil {
			return err
		}
	}
	return cw.Close()
}

// Load reads the model at path and checks that it is of type want; M is the concrete
// model type, e.g. Load[*model.LinearRegressionModel](path, model.LinearRegression).
func Load[M model.Model](path string, want model.Type) (M, error) {
	var zero M
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	var m model.Model
	if isAprenderFile(path) {
		var b []byte
		if b, err = io.ReadAll(io.LimitReader(f, aprender.MaxFileSize+1)); err == nil {
			m, err = decodeBytes(b, want)
		}
	} else {
		m, err = decodeStream(f, want)
	}
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return as[M](m, want)
}

// LoadFromBytes is Load for a file already in memory (a download, an embedded asset).
func LoadFromBytes[M model.Model](b []byte, want model.Type) (M, error) {
	m, err := decodeBytes(b, want)
	if err != nil {
		var zero M
		return zero, err
	}
	return as[M](m, want)
}

func as[M model.Model](m model.Model, want model.Type) (M, error) {
	typed, ok := m.(M)
	if !ok {
		var zero M
		return zero, fmt.Errorf("model of type %v decodes to %T, not %T", want, m, zero)
	}
	return typed, nil
}

// isAprenderFile reports whether path starts like one of aprender's layouts; every
// other file goes to the APR v2 reader, whose errors say what an APR file needs.
func isAprenderFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [5]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	_, ok := aprender.Detect(b[:])
	return ok
}

func decodeBytes(b []byte, want model.Type) (model.Model, error) {
	if _, ok := aprender.Detect(b); ok {
		af, err := aprender.Read(b)
		if err != nil {
			return nil, aprenderErr(err)
		}
		if af.ModelType != want {
			return nil, &ModelTypeMismatch{Expected: want, Found: af.ModelType}
		}
		return decodeTensors(af.ModelType, af.Config, af.Tensors)
	}
	return decodeStream(bytes.NewReader(b), want)
}

// decodeStream checks the type first (no tensor data read for the wrong type), then
// reads every tensor; the stream reader verifies every byte of the file on the way.
func decodeStream(r io.Reader, want model.Type) (model.Model, error) {
	cr, err := container.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	h := cr.Header()
	if h.Type != want {
		return nil, &ModelTypeMismatch{Expected: want, Found: h.Type}
	}
	var tensors []model.Tensor
	for {
		t, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(t)
		if err != nil {
			return nil, err
		}
		tensors = append(tensors, model.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: data})
	}
	return decodeTensors(h.Type, h.Metadata.ModelConfig, tensors)
}

// decodeTensors converts float tensors to F32 (dequantizing quantized ones) and
// rebuilds the model.
func decodeTensors(t model.Type, config map[string]any, tensors []model.Tensor) (model.Model, error) {
	byName := make(map[string]model.Tensor, len(tensors))
	for _, tt := range tensors {
		f32, err := ToF32(tt)
		if err != nil {
			return nil, err
		}
		byName[tt.Name] = f32
	}
	return model.Decode(t, config, byName)
}

// aprenderErr maps aprender's checksum error onto the one ChecksumMismatch type.
func aprenderErr(err error) error {
	if ce, ok := err.(*aprender.ChecksumError); ok {
		return &ChecksumMismatch{What: ce.What, Offset: ce.Offset, Expected: ce.Expected, Actual: ce.Actual}
	}
	return err
}
