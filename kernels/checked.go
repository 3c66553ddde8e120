package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apr-go/apr/lib/dtype"
)

// QuantizeChecked quantizes src like Quantize unless some |src[i]|, as float32
// bits, is limit or more; it reports whether one is (NaN counts as above
// infinity, so limit 0x7F800000 finds NaN and infinities, and the bits of a
// power of two find every value from it up). When it reports true, dst holds
// no meaningful bytes.
//
// Callers that refuse such values (apr-quant) get the test in the same pass
// over src where a fast kernel measures the block maxima anyway; elsewhere
// src is checked first, so the reference quantizers never see those values.
func QuantizeChecked(t dtype.DType, dst []byte, src []float32, limit uint32) (bool, error) {
	var fused func([]byte, []float32) uint32
	switch t {
	case dtype.Q8_0:
		fused = quantMaxQ8_0
	case dtype.Q4_0:
		fused = quantMaxQ4_0
	case dtype.Q4_1:
		fused = quantMaxQ4_1
	case dtype.MXFP4:
		fused = quantMaxMXFP4
	case dtype.TQ1_0:
		fused = quantMaxTQ1_0
	case dtype.TQ2_0:
		fused = quantMaxTQ2_0
	}
	if fused == nil {
		if AnyAbsAtLeast(src, limit) {
			return true, nil
		}
		return false, Quantize(t, dst, src)
	}
	n, err := sizes(t, len(src))
	if err != nil {
		return false, err
	}
	if len(dst) != n {
		return false, fmt.Errorf("%w: %v needs %d bytes for %d values, dst has %d", ErrLength, t, n, len(src), len(dst))
	}
	return fused(dst, src) >= limit, nil
}

// bf16ToF16Max, where the CPU has a kernel for it, converts BF16 bytes to F16 bytes
// in one pass and returns the largest |x| as float32 bits.
var bf16ToF16Max func(dst, src []byte) uint32

// BF16ToF16Checked converts the little-endian BF16 values of src to F16 in dst in one
// pass, without the float32 round trip, when the CPU has a kernel for it and no
// |value| is limit or more (float32 bits, as for QuantizeChecked). It reports false
// otherwise, dst then holding no meaningful bytes: convert through float32, with
// the checks, instead. Its bytes are the reference's (Dequantize to float32, then
// Quantize to F16).
func BF16ToF16Checked(dst, src []byte, limit uint32) bool {
	if bf16ToF16Max == nil || len(dst) != len(src) || len(src)%2 != 0 {
		return false
	}
	return bf16ToF16Max(dst, src) < limit
}

// bf16ToF16Generic is bf16ToF16Max in Go, for the tails.
func bf16ToF16Generic(dst, src []byte) uint32 {
	var m uint32
	for i := 0; i+1 < len(src); i += 2 {
		b := uint32(src[i])<<16 | uint32(src[i+1])<<24
		m = max(m, b&0x7fffffff)
		h := F32ToF16Bits(math.Float32frombits(b))
		dst[i], dst[i+1] = byte(h), byte(h>>8)
	}
	return m
}

// absMaxBits returns the largest |x| of x as float32 bits (magnitudes order as
// their bits do; NaN above infinity above any finite value).
func absMaxBits(x []float32) uint32 {
	var m0, m1, m2, m3 uint32 // four running maxima: four independent chains
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0 = max(m0, math.Float32bits(x[i])&0x7fffffff)
		m1 = max(m1, math.Float32bits(x[i+1])&0x7fffffff)
		m2 = max(m2, math.Float32bits(x[i+2])&0x7fffffff)
		m3 = max(m3, math.Float32bits(x[i+3])&0x7fffffff)
	}
	for ; i < len(x); i++ {
		m0 = max(m0, math.Float32bits(x[i])&0x7fffffff)
	}
	return max(m0, m1, m2, m3)
}

// AnyAbsAtLeast reports whether some |x[i]|, as float32 bits, is limit or more
// (limit at most 0x80000000).
//
// The test is branch-free per value: (bits & 0x7FFFFFFF) + (0x80000000 - limit)
// reaches bit 31 exactly when |x| is limit or more; the sum stays below 2^32,
// so two values are tested per 64-bit word without carries between them.
func AnyAbsAtLeast(x []float32, limit uint32) bool {
	if len(x) == 0 {
		return false
	}
	add32 := 0x80000000 - limit
	var acc uint64
	i := 0
	if uintptr(unsafe.Pointer(&x[0]))%8 != 0 {
		acc = uint64((math.Float32bits(x[0]) & 0x7FFFFFFF) + add32)
		i = 1
	}
	pairs := (len(x) - i) / 2
	if pairs > 0 {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(&x[i])), pairs)
		const mask = 0x7FFFFFFF7FFFFFFF
		add := uint64(add32)<<32 | uint64(add32)
		var a0, a1, a2, a3 uint64
		j := 0
		for ; j+4 <= len(w); j += 4 {
			a0 |= (w[j] & mask) + add
			a1 |= (w[j+1] & mask) + add
			a2 |= (w[j+2] & mask) + add
			a3 |= (w[j+3] & mask) + add
		}
		for ; j < len(w); j++ {
			a0 |= (w[j] & mask) + add
		}
		acc |= a0 | a1 | a2 | a3
		i += 2 * pairs
	}
	for ; i < len(x); i++ {
		acc |= uint64((math.Float32bits(x[i]) & 0x7FFFFFFF) + add32)
	}
	return acc&0x8000000080000000 != 0
}
