// Package apr is the Go API of the .apr model format: save a model, load it back with
// its type checked, inspect a file without reading its weights. It reads apr's own
// APRN v2 files and imports aprender's APRN v1 and APR\0 files.
//
// It is a thin façade over the layers below (docs/DESIGN.md): lib/model encodes and
// decodes models, lib/stream opens, inspects and checks files, lib/sign and lib/seal
// sign and encrypt them. Nothing else under lib/ imports it.
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
	"fmt"
	"io"
	"os"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/version"
)

// Version is the version of apr written into the producer field of new files.
const Version = version.Number

// Producer is the producer string of files written by this library.
const Producer = version.Producer

// SaveOptions are the metadata and encoding of a saved model.
type SaveOptions = modelfile.EncodeOptions

// Stream is the tensor stream every importer produces and every exporter consumes.
type Stream = stream.Stream

// Info describes a model file without its weights.
type Info = stream.Info

// Save writes m to path as an APR v2 file, atomically.
func Save(path string, m model.Model, opts SaveOptions) error {
	return saveFile(path, func(w io.Writer) error { return Encode(w, m, opts) })
}

// saveFile writes path atomically with encode, naming the path in its errors.
func saveFile(path string, encode func(io.Writer) error) error {
	f, err := atomicfile.Create(path, 0o666)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := encode(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// Encode writes m as an APR v2 stream to w.
func Encode(w io.Writer, m model.Model, opts SaveOptions) error { return modelfile.Encode(w, m, opts) }

// Load reads the model at path and checks that it is of type want; M is the concrete
// model type, e.g. Load[*model.LinearRegressionModel](path, modeltype.LinearRegression).
func Load[M model.Model](path string, want modeltype.Type) (M, error) {
	return loadFile[M](path, want, func(r io.Reader) (model.Model, error) { return modelfile.Read(r, want) })
}

// loadFile decodes the file at path with decode, naming the path in its errors, and
// checks that the model is an M.
func loadFile[M model.Model](path string, want modeltype.Type, decode func(io.Reader) (model.Model, error)) (M, error) {
	var zero M
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	m, err := decode(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return as[M](m, want)
}

// LoadFromBytes is Load for a file already in memory (a download, an embedded asset).
func LoadFromBytes[M model.Model](b []byte, want modeltype.Type) (M, error) {
	m, err := modelfile.ReadBytes(b, want)
	if err != nil {
		var zero M
		return zero, err
	}
	return as[M](m, want)
}

func as[M model.Model](m model.Model, want modeltype.Type) (M, error) {
	typed, ok := m.(M)
	if !ok {
		var zero M
		return zero, fmt.Errorf("model of type %v decodes to %T, not %T", want, m, zero)
	}
	return typed, nil
}

// Inspect reports type, version, flags, sizes, metadata and tensor list of the file at
// path; for an APR v2 file it reads only header, metadata, footer and index.
func Inspect(path string) (*Info, error) { return stream.Inspect(path) }

// InspectReader describes a model read from a stream that cannot seek.
func InspectReader(r io.Reader) (*Info, error) { return stream.InspectReader(r) }

// Check reads a whole file from r and verifies every checksum on the way; it returns
// the number of tensors and of bytes read.
func Check(r io.Reader) (tensors int, size int64, err error) { return stream.Check(r) }

// OpenStream reads an APR v2 stream or an aprender file from r as a tensor stream.
func OpenStream(r io.Reader) (Stream, error) { return stream.Open(r) }
