package kernels

import "math"

// ggml's newest block types: NVFP4 (ggml type 40), Q1_0 (41) and Q2_0 (42).
//
//	NVFP4  64 values in 36 bytes: four UE4M3 scales (one per 16 values), then
//	       32 bytes of E2M1 codes; byte j of sub-block s holds value 16s+j in
//	       its low nibble and value 16s+j+8 in its high nibble.
//	Q1_0   128 values in 18 bytes: an f16 scale d, then one bit per value
//	       (value j is bit j%8 of byte j/8): 1 is +d, 0 is -d.
//	Q2_0   64 values in 18 bytes: an f16 scale d, then a 2-bit code per value
//	       (value j is bits 2(j%4)..2(j%4)+1 of byte j/4): code c is (c-1)·d.
//
// The layouts and rules are those of ggml commit d99724f2 (ggml-common.h,
// ggml-quants.c). The quantizers follow its quantize_row_*_ref rules: Q1_0
// keeps each sign and the block's mean magnitude; Q2_0 scales by the block
// maximum and rounds x/max half away from zero, so it writes only codes 0-2
// (code 3, +2d, is read but never written); NVFP4 encodes each sub-block's
// max/6 as its UE4M3 scale and picks each code as the nearest level (the
// lowest code on a tie). ggml's NVFP4 has no tensor-wide scale, so a sub-block
// whose maximum is below 6·2^-10 (about 0.0059) quantizes to zeros, and one
// below 6·2^-6 (0.094) gets a subnormal scale of 1 to 3 significant bits.

const (
	qkNVFP4    = 64
	qkNVFP4Sub = 16
	qk1_0      = 128
	qk2_0      = 64
)

// ue4m3Half decodes an NVFP4 scale byte as ggml does, halved to match the
// doubled levels of fp4Values: an unsigned E4M3 (bias 7, subnormals m·2^-9).
// ggml ignores bit 7 but reads only 0x7F (E4M3's NaN) as 0, so 0xFF is
// 1.875·2^8 = 480, not NaN. The results are exact in float32.
func ue4m3Half(b uint8) float32 {
	if b == 0x7f {
		return 0
	}
	e, m := uint32(b>>3)&0xf, uint32(b&7)
	if e == 0 {
		return float32(m) / 1024 // m·2^-9, halved
	}
	return math.Float32frombits((e+119)<<23 | m<<20) // (1+m/8)·2^(e-7), halved
}

// toUE4M3 encodes a positive scale as ggml's NVFP4 quantizer does: the
// mantissa is cut to 3 bits and rounded half up; every value whose exponent is
// (or rounds up to) 2^8 gives 0x7E (448), so 256 and +Inf both give 448 and
// the codes 0x78-0x7D never occur; subnormals round to the nearest multiple
// of 2^-9 (half up); zero, negatives, NaN and anything below 2^-10 give 0.
func toUE4M3(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	x = min(x, 448)
	bits := math.Float32bits(x)
	e := int32(bits>>23&0xff) - 127 + 7
	if e <= 0 {
		m := int32(float32(x*512) + 0.5) // x·2^9 is exact; truncation as in C
		return uint8(min(m, 7))          // m < 1 gives 0
	}
	if e >= 15 {
		return 0x7e
	}
	m := int32(bits>>20&7) + int32(bits>>19&1)
	if m > 7 {
		m = 0
		if e++; e >= 15 {
			return 0x7e
		}
	}
	return uint8(e<<3 | m)
}

// nearestFP4 returns the index of the fp4Values level that, times the half
// scale d (>= 0), is closest to x; the lowest index wins a tie (so +0 over -0), as
// ggml's scan of all 16 does. Only the levels of x's sign (and 0) are scanned: a level
// of the other sign is never closer than its mirror, whose index is lower, or than 0
// (rounding is monotonic: |-k·d - x| = k·d + x >= |k·d - x| for x >= 0), so it can
// only tie, and ties go to the lower index. The goldens check every byte.
func nearestFP4(x, d float32) uint8 {
	best := uint8(0)
	bestErr := abs32(x) // level 0: |0·d - x|, exact
	lo := 1
	if x < 0 {
		lo = 9
	}
	for i := lo; i < lo+7; i++ {
		if err := abs32(float32(float32(fp4Values[i])*d) - x); err < bestErr {
			best, bestErr = uint8(i), err
		}
	}
	return best
}

func dequantNVFP4(dst []float32, src []byte) {
	for ; len(src) >= 36; src, dst = src[36:], dst[qkNVFP4:] {
		for s := range 4 {
			d := ue4m3Half(src[s])
			y := dst[qkNVFP4Sub*s : qkNVFP4Sub*(s+1)]
			for j, b := range src[4+8*s : 4+8*s+8] {
				y[j] = float32(fp4Values[b&0xf]) * d
				y[j+8] = float32(fp4Values[b>>4]) * d
			}
		}
	}
}

func quantNVFP4Generic(dst []byte, src []float32) {
	for ; len(src) >= qkNVFP4; src, dst = src[qkNVFP4:], dst[36:] {
		for s := range 4 {
			x := src[qkNVFP4Sub*s : qkNVFP4Sub*(s+1)]
			var amax float32
			for _, v := range x {
				if a := abs32(v); amax < a { // NaN never wins, as in ggml
					amax = a
				}
			}
			ue := toUE4M3(amax / 6) // the largest level, 6, meets amax
			dst[s] = ue
			d := ue4m3Half(ue)
			for j := range 8 {
				dst[4+8*s+j] = nearestFP4(x[j], d) | nearestFP4(x[j+8], d)<<4
			}
		}
	}
}

func dequantQ1_0(dst []float32, src []byte) {
	for ; len(src) >= 18; src, dst = src[18:], dst[qk1_0:] {
		d := getF16(src)
		for i, b := range src[2:18] {
			y := dst[8*i : 8*i+8]
			for k := range y {
				if b>>k&1 != 0 {
					y[k] = d
				} else {
					y[k] = -d
				}
			}
		}
	}
}

func quantQ1_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qk1_0; src, dst = src[qk1_0:], dst[18:] {
		x := src[:qk1_0]
		var sum float32
		for _, v := range x {
			sum += abs32(v)
		}
		putF16(dst, sum/qk1_0)
		for i := range 16 {
			var b uint8
			for k, v := range x[8*i : 8*i+8] {
				if v >= 0 { // -0 counts as positive; NaN as negative
					b |= 1 << k
				}
			}
			dst[2+i] = b
		}
	}
}

func dequantQ2_0(dst []float32, src []byte) {
	for ; len(src) >= 18; src, dst = src[18:], dst[qk2_0:] {
		d := getF16(src)
		for i, b := range src[2:18] {
			for k := range 4 {
				dst[4*i+k] = float32(int32(b>>(2*k)&3)-1) * d
			}
		}
	}
}

func quantQ2_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qk2_0; src, dst = src[qk2_0:], dst[18:] {
		x := src[:qk2_0]
		var d float32
		for _, v := range x {
			if a := abs32(v); a > d { // NaN never wins, as in ggml
				d = a
			}
		}
		var id float32
		if d > 0 {
			id = 1 / d
		}
		putF16(dst, d) // the unrounded d sets the codes, as in ggml
		for i := range 16 {
			var b uint8
			for k, v := range x[4*i : 4*i+4] {
				b |= q2Code(v*id) << (2 * k)
			}
			dst[2+i] = b
		}
	}
}

// q2Code is ggml's Q2_0 code for x/d: round half away from zero, plus one,
// clamped to 0..3. When d is below about 2^-128, 1/d overflows and x/d is
// ±Inf or NaN; C's int conversion of those is undefined, and on x86 (where
// llama-quantize's bytes were compared) it yields INT_MIN, which clamps to 0.
func q2Code(p float32) uint8 {
	if !(abs32(p) <= math.MaxFloat32) {
		return 0
	}
	return uint8(min(max(roundAway(p)+1, 0), 3))
}
