package kernels

import "math"

// F8E4M3ToF32Bits decodes one OCP FP8 E4M3 byte (the "FN" variant SafeTensors
// calls F8_E4M3: bias 7, no infinities, S.1111.111 is NaN, max ±448).
func F8E4M3ToF32Bits(b uint8) float32 {
	sign := uint32(b&0x80) << 24
	exp := uint32(b>>3) & 0xf
	man := uint32(b & 7)
	switch {
	case exp == 0xf && man == 7:
		return math.Float32frombits(sign | 0x7fc00000)
	case exp != 0:
		return math.Float32frombits(sign | (exp+120)<<23 | man<<20)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2^-9, exact in float32.
	v := float32(man) / 512
	if sign != 0 {
		v = -v
	}
	return v
}

// F8E5M2ToF32Bits decodes one OCP FP8 E5M2 byte: the top byte of an IEEE
// half, so infinities and NaNs follow IEEE rules.
func F8E5M2ToF32Bits(b uint8) float32 { return F16BitsToF32(uint16(b) << 8) }

// F8E8M0ToF32Bits decodes one E8M0 byte (the MX scale type): 2^(b-127), with
// 0xFF as NaN. 2^-127 is a float32 subnormal and is returned exactly.
func F8E8M0ToF32Bits(b uint8) float32 {
	switch b {
	case 0xff:
		return math.Float32frombits(0x7fc00000)
	case 0:
		return math.Float32frombits(0x00400000)
	}
	return math.Float32frombits(uint32(b) << 23)
}

// F8E4M3ToF32 decodes min(len(dst), len(src)) E4M3 bytes.
func F8E4M3ToF32(dst []float32, src []byte) {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = F8E4M3ToF32Bits(v)
	}
}

// F8E5M2ToF32 decodes min(len(dst), len(src)) E5M2 bytes.
func F8E5M2ToF32(dst []float32, src []byte) {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = F8E5M2ToF32Bits(v)
	}
}

// F8E8M0ToF32 decodes min(len(dst), len(src)) E8M0 bytes.
func F8E8M0ToF32(dst []float32, src []byte) {
	n := min(len(dst), len(src))
	for i, v := range src[:n] {
		dst[i] = F8E8M0ToF32Bits(v)
	}
}
