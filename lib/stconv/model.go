package stconv

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/atomicfile"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/internal/jsonobj"
	"github.com/apr-go/apr/lib/internal/regfile"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/safetensors"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// SaveModel writes m to path as a SafeTensors file, atomically (a failed save leaves
// no file): its tensors as they are (for LinearRegression and LogisticRegression
// "coefficients" F32 [n_features] and "intercept" F32 [1]; a multinomial
// LogisticRegression has [n_classes, n_features] and [n_classes]) and __metadata__
// {"apr.model_type": TYPE, "apr.model_config": JSON}. The bytes depend only on the
// model: saving the same model twice gives the same file, and the same file as
// `apr-st export` of the model saved as APR.
func SaveModel(path string, m model.Model) error {
	f, err := atomicfile.Create(path, 0o666)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := EncodeModel(f, m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// EncodeModel writes m as a SafeTensors file to w (see SaveModel).
func EncodeModel(w io.Writer, m model.Model) error {
	if err := fitted(m); err != nil {
		return err
	}
	meta, err := typeMetadata(m.Type(), m.Config())
	if err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	for _, t := range m.Tensors() {
		tensors = append(tensors, safetensors.Tensor{TensorSpec: safetensors.TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}, Data: t.Data})
	}
	return safetensors.Encode(w, meta, tensors)
}

// fitted refuses to save a classical model that has no coefficients.
func fitted(m model.Model) error {
	var n int
	switch x := m.(type) {
	case *model.LinearRegressionModel:
		n = len(x.Coefficients)
	case *model.LogisticRegressionModel:
		n = len(x.Coefficients)
	default:
		return nil
	}
	if n == 0 {
		return fmt.Errorf("cannot save a %v: %w (call Fit first)", m.Type(), model.ErrNotFitted)
	}
	return nil
}

// LoadModel reads the SafeTensors model at path as type want; M is the concrete type,
// e.g. LoadModel[*model.LinearRegressionModel](path, model.LinearRegression). A file
// whose __metadata__ names another type fails with *container.TypeMismatchError; a file
// without that key (as the case study's writer makes them) is taken to be of type
// want, and its tensors and config are checked by the model's decoder. Float
// tensors of other dtypes (F16, BF16, F64) are converted to F32.
func LoadModel[M model.Model](path string, want modeltype.Type) (M, error) {
	var zero M
	f, err := regfile.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return zero, err
	}
	const maxModel = 1 << 30 // classical models are small; a bigger file is not one
	if st.Size() > maxModel {
		return zero, fmt.Errorf("%s: %d bytes, more than the %d a classical model may have", path, st.Size(), maxModel)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	m, err := DecodeModel[M](b, want)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// DecodeModel is LoadModel for a file held in memory.
func DecodeModel[M model.Model](b []byte, want modeltype.Type) (M, error) {
	var zero M
	h, err := safetensors.Decode(b)
	if err != nil {
		return zero, err
	}
	if v, ok := h.Metadata.Get(MetaModelType); ok {
		found, err := modeltype.ParseType(v)
		if err != nil {
			return zero, fmt.Errorf("__metadata__ %q: %w", MetaModelType, err)
		}
		if found != want {
			return zero, &container.TypeMismatchError{Expected: want, Found: found}
		}
	}
	var cfg map[string]any
	if v, ok := h.Metadata.Get(MetaModelConfig); ok {
		if cfg, err = jsonobj.Decode(v); err != nil {
			return zero, fmt.Errorf("__metadata__ %q: %w", MetaModelConfig, err)
		}
	}
	tensors := make(map[string]tensor.Tensor, len(h.Tensors))
	for _, t := range h.Tensors {
		data := b[h.DataStart()+t.Begin : h.DataStart()+t.End]
		mt, err := stream.ToF32(tensor.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: bytes.Clone(data)})
		if err != nil {
			return zero, err
		}
		tensors[t.Name] = mt
	}
	m, err := model.Decode(want, cfg, tensors)
	if err != nil {
		return zero, err
	}
	typed, ok := m.(M)
	if !ok {
		return zero, fmt.Errorf("model of type %v decodes to %T, not %T", want, m, zero)
	}
	return typed, nil
}
