// Package tensor holds Tensor, one named tensor held in memory. It is a leaf beside
// lib/dtype so that the models, the format readers and the tensor stream can share it
// without importing one another.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apr-go/apr/lib/dtype"
)

// Tensor is one named tensor, its data raw little-endian and row-major (outermost
// dimension first).
type Tensor struct {
	Name  string
	DType dtype.DType
	Shape []int64
	Data  []byte
}

// F32 builds a 1-D F32 tensor from float32 values (little-endian).
func F32(name string, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: dtype.F32, Shape: []int64{int64(len(v))}, Data: b}
}

// Float32s returns the values of an F32 tensor, checking that its data length agrees
// with its shape. Any shape is accepted; the values come out row-major.
func (t Tensor) Float32s() ([]float32, error) {
	if t.DType != dtype.F32 {
		return nil, fmt.Errorf("tensor %q: dtype %v, expected F32", t.Name, t.DType)
	}
	n, err := dtype.Elems(t.Shape)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if uint64(len(t.Data))%4 != 0 || int64(len(t.Data)/4) != n {
		return nil, fmt.Errorf("tensor %q: shape %v needs %d bytes of F32, data has %d", t.Name, t.Shape, n, len(t.Data))
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Wrap prefixes err with the tensor's name, unless its message names that tensor
// already (the readers' and writers' errors often do), so that no message says
// `tensor "x": tensor "x": ...`.
func Wrap(name string, err error) error {
	if err == nil || strings.Contains(err.Error(), fmt.Sprintf("tensor %q", name)) {
		return err
	}
	return fmt.Errorf("tensor %q: %w", name, err)
}
