package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
)

// littleEndian is true on every platform apr targets (amd64, arm64, wasm); F32 input
// is then used in place instead of being decoded.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// elemBytes is the byte size of n values of t (n a whole number of t's blocks).
func elemBytes(t dtype.DType, n int) int {
	i := t.Info()
	return n / i.BlockElems * i.BlockBytes
}

// decode returns the n values of src (type t) as float32: src itself for F32 on a
// little-endian machine (when 4-byte aligned), else decoded into scratch.
func decode(t dtype.DType, src []byte, scratch []float32) ([]float32, error) {
	n := len(scratch)
	if t == dtype.F32 && littleEndian && n > 0 && uintptr(unsafe.Pointer(&src[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&src[0])), n), nil
	}
	return scratch, kernels.Dequantize(t, scratch, src)
}

// firstNonFinite returns the index of the first NaN or infinity in x, or -1.
func firstNonFinite(x []float32) int {
	if !kernels.AnyAbsAtLeast(x, 0x7F800000) {
		return -1
	}
	for i, v := range x {
		if v != v || v > math.MaxFloat32 || v < -math.MaxFloat32 {
			return i
		}
	}
	return -1
}

// firstAbove returns the index of the first value of magnitude above bound, or -1.
func firstAbove(x []float32, bound float32) int {
	for i, v := range x {
		if v > bound || v < -bound {
			return i
		}
	}
	return -1
}

// maxMagnitude is the largest |value| each target type can hold: for the GGML types
// the largest F16 scale (65504) times the largest multiplier of its blocks (plus the
// largest offset for the types with a minimum); for F16 and BF16 the largest float32
// that does not round to infinity. A value beyond it would make the block's scale
// overflow (or, where a ggml quantizer's sums of squares overflow float32 first, make
// it write a wrong block); apr refuses it instead of writing either.
//
// Q1_0 and Q2_0 write ±d (and 0), d an F16 scale no larger than the block's largest
// magnitude (Q1_0: the mean magnitude; Q2_0: the largest), so they hold what F16
// holds. MXFP4's E8M0 exponent covers the whole float32 range (a block's values
// beyond 1.5 times the power of two below its maximum become that, as in ggml).
// NVFP4's largest value is its largest level, 6, times its largest scale, 448
// (E4M3): ggml has no tensor-wide scale and writes every larger value as ±2688, which
// apr refuses instead.
var maxMagnitude = map[dtype.DType]float32{
	dtype.Q8_0:  65504 * 127,
	dtype.Q4_0:  65504 * 8,
	dtype.Q4_1:  65504*15 + 65504,
	dtype.Q5_0:  65504 * 16,
	dtype.Q5_1:  65504*31 + 65504,
	dtype.Q2_K:  65504*15*3 + 65504*15,
	dtype.Q3_K:  65504 * 32 * 4,
	dtype.Q4_K:  65504*63*15 + 65504*63,
	dtype.Q5_K:  65504*63*31 + 65504*63,
	dtype.Q6_K:  65504 * 128 * 32,
	dtype.MXFP4: math.MaxFloat32,
	dtype.NVFP4: 6 * 448,
	dtype.Q1_0:  65519.996,
	dtype.Q2_0:  65519.996,
	dtype.TQ1_0: 65519.996, // d = the block's largest magnitude, codes -1, 0, 1
	dtype.TQ2_0: 65519.996,
	dtype.F16:   65519.996, // 65520 and up round to infinity
	dtype.BF16:  math.Float32frombits(0x7F7F7FFF),
	dtype.F32:   math.MaxFloat32,
}

// limitExp is the exponent field of the largest power of two not above bound: values
// from there up are checked one by one.
func limitExp(bound float32) uint32 {
	return math.Float32bits(bound) & 0x7F800000
}

// halfFields are the byte offsets of the f16 scales (d, and dmin where the type has
// one) inside one block of each GGML type apr writes, as laid out in ggml-common.h.
var halfFields = map[dtype.DType][]int{
	dtype.Q8_0: {0},
	dtype.Q4_0: {0},
	dtype.Q4_1: {0, 2},
	dtype.Q5_0: {0},
	dtype.Q5_1: {0, 2},
	dtype.Q2_K: {80, 82},
	dtype.Q3_K: {108},
	dtype.Q4_K: {0, 2},
	dtype.Q5_K: {0, 2},
	dtype.Q6_K: {208},
	dtype.Q1_0: {0},
	dtype.Q2_0: {0},
}

// overflow looks for an F16 infinity among the block scales of the output of finite
// values within maxMagnitude (a second line of defence). It returns the index of the
// first value of the offending block, or -1.
func overflow(t dtype.DType, out []byte) int {
	fields, ok := halfFields[t]
	if !ok || scaleBounded[t] {
		return -1
	}
	info := t.Info()
	for b, off := 0, 0; off+info.BlockBytes <= len(out); b, off = b+1, off+info.BlockBytes {
		for _, f := range fields {
			if binary.LittleEndian.Uint16(out[off+f:])&0x7C00 == 0x7C00 {
				return b * info.BlockElems
			}
		}
	}
	return -1
}

// scaleBounded are the types whose one scale is amax divided by a constant (127, 8,
// 16, or 1 for Q2_0): with every |value| within maxMagnitude it cannot exceed 65504,
// so their output needs no second look. (Q1_0's scale is a float32 sum divided by
// 128, whose rounding can exceed the block's largest magnitude, so it is looked at.)
var scaleBounded = map[dtype.DType]bool{dtype.Q8_0: true, dtype.Q4_0: true, dtype.Q5_0: true, dtype.Q2_0: true,
	dtype.TQ1_0: true, dtype.TQ2_0: true}

// errAcc accumulates the error of converted values against their source.
type errAcc struct {
	n        int64
	sumSq    float64 // Σ (q - x)²
	srcSq    float64 // Σ x²
	maxAbs   float64 // max |q - x|
	measured bool
}

func (a *errAcc) add(x, q []float32) {
	var s, ss, m float64
	for i, v := range x {
		d := float64(q[i]) - float64(v)
		s += d * d
		ss += float64(v) * float64(v)
		if d < 0 {
			d = -d
		}
		if d > m {
			m = d
		}
	}
	a.sumSq += s
	a.srcSq += ss
	a.maxAbs = max(a.maxAbs, m)
	a.n += int64(len(x))
	a.measured = true
}

func (a *errAcc) merge(b errAcc) {
	a.sumSq += b.sumSq
	a.srcSq += b.srcSq
	a.maxAbs = max(a.maxAbs, b.maxAbs)
	a.n += b.n
	a.measured = a.measured || b.measured
}

// position names element i of a tensor with rows of rowLen values.
func position(i, rowLen int64) string {
	if rowLen <= 0 {
		return fmt.Sprintf("element %d", i)
	}
	return fmt.Sprintf("row %d, column %d", i/rowLen, i%rowLen)
}
