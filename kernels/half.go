package kernels

import "math"

// F32ToF16Bits converts f to IEEE binary16 bits, rounding to nearest even.
// Subnormal halves are produced, overflow gives ±inf and every NaN becomes
// the quiet NaN 0x7E00 with f's sign, as ggml's software conversion does.
func F32ToF16Bits(f float32) uint16 { return f16FromBits(math.Float32bits(f)) }

// f16FromBits is F32ToF16Bits on the float's bit pattern, in integer
// arithmetic only (the vector kernels use it without touching float registers).
func f16FromBits(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal (or zero): the result counts units of 2^-24.
		if e < -10 {
			return sign // below 2^-25: rounds to zero
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++ // may carry into the smallest normal, which is the right encoding
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is correct, up to and including inf
	}
	return sign | uint16(h)
}

// F16BitsToF32 converts IEEE binary16 bits to float32 exactly; NaN payloads
// are kept (shifted into the float32 mantissa).
func F16BitsToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: normalise the mantissa.
	e := uint32(113)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// F32ToBF16Bits converts f to bfloat16 bits with ggml's rule: NaN keeps its
// sign and top payload bits and gets the quiet bit 0x0040; anything else is
// rounded to nearest even (f32 subnormals are kept, large values may become inf).
func F32ToBF16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16BitsToF32 converts bfloat16 bits to float32 (exact).
func BF16BitsToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToF16 converts src to half bits in dst; it converts min(len(dst), len(src)) values.
func F32ToF16(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	f32ToF16(dst[:n], src[:n])
}

// F16ToF32 converts half bits in src to float32 in dst; it converts min(len(dst), len(src)) values.
func F16ToF32(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	f16ToF32(dst[:n], src[:n])
}

// F32ToBF16 converts src to bfloat16 bits in dst; it converts min(len(dst), len(src)) values.
func F32ToBF16(dst []uint16, src []float32) {
	n := min(len(dst), len(src))
	f32ToBF16(dst[:n], src[:n])
}

// BF16ToF32 converts bfloat16 bits in src to float32 in dst; it converts min(len(dst), len(src)) values.
func BF16ToF32(dst []float32, src []uint16) {
	n := min(len(dst), len(src))
	bf16ToF32(dst[:n], src[:n])
}

func f32ToF16Generic(dst []uint16, src []float32) {
	for i, v := range src {
		dst[i] = F32ToF16Bits(v)
	}
}

func f32ToBF16Generic(dst []uint16, src []float32) {
	for i, v := range src {
		dst[i] = F32ToBF16Bits(v)
	}
}

func bf16ToF32Generic(dst []float32, src []uint16) {
	for i, v := range src {
		dst[i] = BF16BitsToF32(v)
	}
}

func f16ToF32Generic(dst []float32, src []uint16) {
	for i, v := range src {
		dst[i] = F16BitsToF32(v)
	}
}

// fp16 rounds f through half precision and back, as ggml does when it stores
// a scale with GGML_FP32_TO_FP16 and reads it again with GGML_FP16_TO_FP32.
func fp16(f float32) float32 { return F16BitsToF32(F32ToF16Bits(f)) }
