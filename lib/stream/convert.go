package stream

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// ToF32 returns a float tensor as F32, converting F64, F16, BF16 and F8 values and
// dequantizing GGML block types; other tensors (integers, bools) come back unchanged.
func ToF32(t tensor.Tensor) (tensor.Tensor, error) {
	info := t.DType.Info()
	if !info.Float || t.DType == dtype.F32 {
		return t, nil
	}
	n, err := dtype.Elems(t.Shape)
	if err != nil {
		return t, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if want, err := dtype.Size(t.DType, t.Shape); err != nil || want != int64(len(t.Data)) {
		return t, fmt.Errorf("tensor %q: %d bytes for %v of %v", t.Name, len(t.Data), t.Shape, t.DType)
	}
	out := make([]float32, n)
	switch t.DType {
	case dtype.F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	case dtype.F16, dtype.BF16:
		h := make([]uint16, n)
		for i := range h {
			h[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
		}
		if t.DType == dtype.F16 {
			kernels.F16ToF32(out, h)
		} else {
			kernels.BF16ToF32(out, h)
		}
	case dtype.F8E4M3:
		kernels.F8E4M3ToF32(out, t.Data)
	case dtype.F8E5M2:
		kernels.F8E5M2ToF32(out, t.Data)
	case dtype.F8E8M0:
		kernels.F8E8M0ToF32(out, t.Data)
	default:
		if err := kernels.Dequantize(t.DType, out, t.Data); err != nil {
			return t, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	b := make([]byte, 4*n)
	for i, v := range out {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return tensor.Tensor{Name: t.Name, DType: dtype.F32, Shape: t.Shape, Data: b}, nil
}
