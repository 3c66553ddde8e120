package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apr-go/apr/lib/dtype"
)

// Errors returned by Quantize, Dequantize and DotQ.
var (
	// ErrUnsupported is returned for a dtype this package cannot convert.
	ErrUnsupported = errors.New("kernels: unsupported dtype")
	// ErrLength is returned when a slice length does not fit the dtype's blocks.
	ErrLength = errors.New("kernels: length mismatch")
	// ErrNeedsWeights is returned by Quantize for the types ggml quantizes only
	// with importance weights (IQ2_XXS, IQ2_XS, IQ1_S): use QuantizeWeighted.
	ErrNeedsWeights = errors.New("kernels: importance weights needed")
	// ErrNonFinite is returned for a NaN or infinity given to the grid (IQ)
	// quantizers, whose searches ggml does not define for them.
	ErrNonFinite = errors.New("kernels: NaN or infinite value")
)

type rowFunc struct {
	quant   func(dst []byte, src []float32)
	dequant func(dst []float32, src []byte)
}

// codecs maps each dtype to its row kernels. The quantizers are looked up
// through function variables so a fast path can replace the reference at
// init time.
func codec(t dtype.DType) (rowFunc, bool) {
	switch t {
	case dtype.F64:
		return rowFunc{nil, dequantF64}, true
	case dtype.F32:
		return rowFunc{quantF32, dequantF32}, true
	case dtype.F16:
		return rowFunc{quantF16, dequantF16}, true
	case dtype.BF16:
		return rowFunc{quantBF16, dequantBF16}, true
	case dtype.F8E4M3:
		return rowFunc{nil, F8E4M3ToF32}, true
	case dtype.F8E5M2:
		return rowFunc{nil, F8E5M2ToF32}, true
	case dtype.F8E8M0:
		return rowFunc{nil, F8E8M0ToF32}, true
	case dtype.Q8_0:
		return rowFunc{quantQ8_0, dequantQ8_0}, true
	case dtype.Q8_1:
		return rowFunc{quantQ8_1Generic, dequantQ8_1}, true
	case dtype.Q4_0:
		return rowFunc{quantQ4_0, dequantQ4_0}, true
	case dtype.Q4_1:
		return rowFunc{quantQ4_1, dequantQ4_1}, true
	case dtype.Q5_0:
		return rowFunc{quantQ5_0Generic, dequantQ5_0}, true
	case dtype.Q5_1:
		return rowFunc{quantQ5_1Generic, dequantQ5_1}, true
	case dtype.Q2_K:
		return rowFunc{quantQ2_K, dequantQ2_K}, true
	case dtype.Q3_K:
		return rowFunc{quantQ3_K, dequantQ3_K}, true
	case dtype.Q4_K:
		return rowFunc{quantQ4_K, dequantQ4_K}, true
	case dtype.Q5_K:
		return rowFunc{quantQ5_K, dequantQ5_K}, true
	case dtype.Q6_K:
		return rowFunc{quantQ6_K, dequantQ6_K}, true
	case dtype.Q8_K:
		return rowFunc{quantQ8_KGeneric, dequantQ8_K}, true
	case dtype.IQ4_NL:
		return rowFunc{quantIQ4_NL, dequantIQ4_NL}, true
	case dtype.IQ4_XS:
		return rowFunc{quantIQ4_XS, dequantIQ4_XS}, true
	case dtype.IQ2_XXS:
		return rowFunc{nil, dequantIQ2_XXS}, true
	case dtype.IQ2_XS:
		return rowFunc{nil, dequantIQ2_XS}, true
	case dtype.IQ2_S:
		return rowFunc{quantIQ2_S, dequantIQ2_S}, true
	case dtype.IQ3_XXS:
		return rowFunc{quantIQ3_XXS, dequantIQ3_XXS}, true
	case dtype.IQ3_S:
		return rowFunc{quantIQ3_S, dequantIQ3_S}, true
	case dtype.IQ1_S:
		return rowFunc{nil, dequantIQ1_S}, true
	case dtype.IQ1_M:
		return rowFunc{quantIQ1_M, dequantIQ1_M}, true
	case dtype.TQ1_0:
		return rowFunc{quantTQ1_0, dequantTQ1_0}, true
	case dtype.TQ2_0:
		return rowFunc{quantTQ2_0, dequantTQ2_0}, true
	case dtype.MXFP4:
		return rowFunc{quantMXFP4, dequantMXFP4}, true
	case dtype.NVFP4:
		return rowFunc{quantNVFP4Generic, dequantNVFP4}, true
	case dtype.Q1_0:
		return rowFunc{quantQ1_0Generic, dequantQ1_0}, true
	case dtype.Q2_0:
		return rowFunc{quantQ2_0Generic, dequantQ2_0}, true
	}
	return rowFunc{}, false
}

// CanQuantize reports whether Quantize supports t.
func CanQuantize(t dtype.DType) bool { c, ok := codec(t); return ok && c.quant != nil }

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t dtype.DType) bool { c, ok := codec(t); return ok && c.dequant != nil }

// sizes checks that n elements form whole blocks of t and returns the byte size.
func sizes(t dtype.DType, n int) (int, error) {
	info, ok := dtype.Lookup(t)
	if !ok || info.BlockElems <= 0 {
		return 0, fmt.Errorf("%w %v", ErrUnsupported, t)
	}
	if n%info.BlockElems != 0 {
		return 0, fmt.Errorf("%w: %d elements is not a whole number of %v blocks (%d)", ErrLength, n, t, info.BlockElems)
	}
	return n / info.BlockElems * info.BlockBytes, nil
}

// Quantize encodes src as type t into dst, which must be exactly the encoded
// size. len(src) must be a multiple of t's block size. For GGML block types the
// bytes equal ggml's reference quantizer (ggml_quantize_chunk without an
// importance matrix); the types ggml quantizes only with one (NeedsWeights) give
// ErrNeedsWeights, and the grid types refuse NaN and infinities (ErrNonFinite).
func Quantize(t dtype.DType, dst []byte, src []float32) error {
	c, ok := codec(t)
	if NeedsWeights(t) {
		return fmt.Errorf("%w: ggml quantizes %v only with an importance matrix (llama-quantize --imatrix)", ErrNeedsWeights, t)
	}
	if !ok || c.quant == nil {
		return fmt.Errorf("%w: cannot quantize to %v", ErrUnsupported, t)
	}
	n, err := sizes(t, len(src))
	if err != nil {
		return err
	}
	if len(dst) != n {
		return fmt.Errorf("%w: %v needs %d bytes for %d values, dst has %d", ErrLength, t, n, len(src), len(dst))
	}
	if err := checkFinite(t, src); err != nil {
		return err
	}
	c.quant(dst, src)
	return nil
}

// Dequantize decodes src (whole blocks of type t) into dst, which must hold
// exactly the number of encoded elements. It is the library's one decoder to F32:
// every float dtype (F64, F32, F16, BF16, F8) and every GGML block type goes through
// it (lib/stream.ToF32, quant's workers, stconv's dequantizing export).
func Dequantize(t dtype.DType, dst []float32, src []byte) error {
	c, ok := codec(t)
	if !ok || c.dequant == nil {
		return fmt.Errorf("%w: cannot dequantize %v", ErrUnsupported, t)
	}
	n, err := sizes(t, len(dst))
	if err != nil {
		return err
	}
	if len(src) != n {
		return fmt.Errorf("%w: %d %v values need %d bytes, src has %d", ErrLength, len(dst), t, n, len(src))
	}
	c.dequant(dst, src)
	return nil
}

func quantF32(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// dequantF64 rounds F64 values to the nearest F32 (Go's conversion).
func dequantF64(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

func dequantF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// The 16-bit conversions work through a stack buffer so the fast slice
// kernels can be used without allocating.
const convChunk = 512

func quantF16(dst []byte, src []float32) {
	if f32ToF16Bytes != nil {
		f32ToF16Bytes(dst[:2*len(src)], src)
		return
	}
	var buf [convChunk]uint16
	for len(src) > 0 {
		n := min(len(src), convChunk)
		f32ToF16(buf[:n], src[:n])
		for i, h := range buf[:n] {
			binary.LittleEndian.PutUint16(dst[2*i:], h)
		}
		src, dst = src[n:], dst[2*n:]
	}
}

func dequantF16(dst []float32, src []byte) {
	if f16BytesToF32 != nil {
		f16BytesToF32(dst, src[:2*len(dst)])
		return
	}
	var buf [convChunk]uint16
	for len(dst) > 0 {
		n := min(len(dst), convChunk)
		for i := range buf[:n] {
			buf[i] = binary.LittleEndian.Uint16(src[2*i:])
		}
		f16ToF32(dst[:n], buf[:n])
		src, dst = src[2*n:], dst[n:]
	}
}

func quantBF16(dst []byte, src []float32) {
	if f32ToBF16Bytes != nil {
		f32ToBF16Bytes(dst[:2*len(src)], src)
		return
	}
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16Bits(v))
	}
}

func dequantBF16(dst []float32, src []byte) {
	if bf16BytesToF32 != nil {
		bf16BytesToF32(dst, src[:2*len(dst)])
		return
	}
	for i := range dst {
		dst[i] = BF16BitsToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}
