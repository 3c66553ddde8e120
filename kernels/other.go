package kernels

import (
	"encoding/binary"
	"math"
)

// Dequantizers for GGML types apr reads but does not write (the non-linear
// 4-bit types), and the ternary types and MXFP4, which it writes too.

// iq4nlValues are the 16 levels of IQ4_NL and IQ4_XS, fixed by the format.
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// fp4Values are the E2M1 code points doubled (MXFP4 stores a half scale).
var fp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func dequantIQ4_NL(dst []float32, src []byte) {
	for ; len(src) >= 18; src, dst = src[18:], dst[qk:] {
		d := getF16(src)
		for j, b := range src[2:18] {
			dst[j] = d * float32(iq4nlValues[b&0xf])
			dst[j+16] = d * float32(iq4nlValues[b>>4])
		}
	}
}

func dequantIQ4_XS(dst []float32, src []byte) {
	for ; len(src) >= 136; src, dst = src[136:], dst[qkK:] {
		d := getF16(src)
		sh := binary.LittleEndian.Uint16(src[2:])
		sl := src[4:8]
		for ib := range 8 {
			ls := int32(sl[ib/2]>>(4*(ib%2)))&0xf | int32(sh>>(2*ib)&3)<<4
			dl := float32(d * float32(ls-32))
			qs := src[8+16*ib : 8+16*ib+16]
			y := dst[32*ib : 32*ib+32]
			for j, b := range qs {
				y[j] = dl * float32(iq4nlValues[b&0xf])
				y[j+16] = dl * float32(iq4nlValues[b>>4])
			}
		}
	}
}

// tritAt extracts the base-3 digit that TQ1_0 stores at position n of a
// byte: the byte holds a fixed-point fraction, so multiplying by 3^n (mod 256)
// shifts the wanted digit to the top, where ·3>>8 reads it.
func tritAt(b uint8, n int) float32 {
	q := b * [5]uint8{1, 3, 9, 27, 81}[n]
	return float32(int32((uint16(q)*3)>>8) - 1)
}

func dequantTQ1_0(dst []float32, src []byte) {
	for ; len(src) >= 54; src, dst = src[54:], dst[qkK:] {
		d := getF16(src[52:])
		y := dst[:qkK]
		k := 0
		for n := range 5 {
			for m := range 32 {
				y[k] = tritAt(src[m], n) * d
				k++
			}
		}
		for n := range 5 {
			for m := range 16 {
				y[k] = tritAt(src[32+m], n) * d
				k++
			}
		}
		for n := range 4 {
			for j := range 4 {
				y[k] = tritAt(src[48+j], n) * d
				k++
			}
		}
	}
}

func dequantTQ2_0(dst []float32, src []byte) {
	for ; len(src) >= 66; src, dst = src[66:], dst[qkK:] {
		d := getF16(src[64:])
		y := dst[:qkK]
		for j := 0; j < 64; j += 32 {
			for l := uint(0); l < 4; l++ {
				for m := range 32 {
					y[m] = float32(int32((src[j+m]>>(2*l))&3)-1) * d
				}
				y = y[32:]
			}
		}
	}
}

// e8m0Half is 2^(e-128): half the E8M0 scale, matching the doubled FP4 levels.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantMXFP4(dst []float32, src []byte) {
	for ; len(src) >= 17; src, dst = src[17:], dst[qk:] {
		d := e8m0Half(src[0])
		for j, b := range src[1:17] {
			dst[j] = float32(fp4Values[b&0xf]) * d
			dst[j+16] = float32(fp4Values[b>>4]) * d
		}
	}
}

// mxfp4Exponent is ggml's E8M0 code for a block whose largest magnitude is
// amax: (uint8_t)(floorf(log2f(amax)) - 2 + 127), so the block's largest level,
// 6 (doubled: 12), sits at 1.5·2^floor(log2 amax). log2f is glibc's; a float64
// logarithm rounded to float32 has the same floor on every value checked around
// every power of two (testdata/quant/README.md). Below 2^-125 the C conversion of a
// negative float to uint8_t is undefined; ggml's x86-64 build truncates through
// int32 and keeps the low byte, and so does this.
func mxfp4Exponent(amax float32) uint8 {
	if !(amax > 0) {
		return 0
	}
	l := float32(math.Log2(float64(amax)))
	return uint8(int32(math.Floor(float64(l))) - 2 + 127)
}

// quantMXFP4Generic is ggml's quantize_row_mxfp4_ref: one E8M0 exponent per 32
// values, then 16 bytes of E2M1 codes, value j in the low nibble of byte j and
// value j+16 in the high nibble, each the nearest level (lowest code on a tie).
func quantMXFP4Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[17:] {
		var amax float32
		for _, v := range src[:qk] {
			if a := abs32(v); amax < a {
				amax = a
			}
		}
		e := mxfp4Exponent(amax)
		d := e8m0Half(e)
		dst[0] = e
		for j := range qk / 2 {
			dst[1+j] = nearestFP4(src[j], d) | nearestFP4(src[j+qk/2], d)<<4
		}
	}
}

// ternaryAbsMax is the tq*_0 scale: the largest magnitude in the block.
func ternaryAbsMax(x []float32) (d, id float32) {
	for _, v := range x {
		if a := abs32(v); !(d > a) {
			d = a
		}
	}
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// trit is round(x·id) + 1 ∈ {0, 1, 2}, as ggml's lroundf (half away from zero).
func trit(v, id float32) uint8 { return uint8(roundAway(v*id) + 1) }

// packTrits stores 5 trits (first one most significant) as the byte
// ceil(q·256/243), the fixed-point fraction tritAt reads back.
func packTrits(q uint8) uint8 { return uint8((uint16(q)*256 + 242) / 243) }

func quantTQ1_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[54:] {
		x := src[:qkK]
		d, id := ternaryAbsMax(x)
		putF16(dst[52:], d)
		for m := range 32 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(x[m+32*n], id)
			}
			dst[m] = packTrits(q)
		}
		for m := range 16 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(x[160+m+16*n], id)
			}
			dst[32+m] = packTrits(q)
		}
		for j := range 4 {
			var q uint8
			for m := range 4 {
				q = q*3 + trit(x[240+j+4*m], id)
			}
			dst[48+j] = packTrits(q * 3) // four trits, shifted to the top
		}
	}
}

func quantTQ2_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[66:] {
		x := src[:qkK]
		d, id := ternaryAbsMax(x)
		putF16(dst[64:], d)
		for j := 0; j < 64; j += 32 {
			for m := range 32 {
				var q uint8
				for n := range 4 {
					q |= (trit(x[4*j+m+32*n], id) & 3) << (2 * n)
				}
				dst[j+m] = q
			}
		}
	}
}
