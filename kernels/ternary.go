package kernels

import "math"

// Faster TQ1_0 and TQ2_0 quantizers giving quantTQ1_0Generic's and
// quantTQ2_0Generic's bytes, and the largest |x| for QuantizeChecked in the
// same pass. A value's trit is lroundf(x·id) + 1 with |x·id| <= 1: 2 from 0.5
// up, 0 from -0.5 down, else 1, which the product's float32 bits give without
// a branch. A block holding NaN or an infinity, or whose largest |x| is
// subnormal (its inverse overflows), takes the reference.

func quantTQ1_0(dst []byte, src []float32) { quantMaxTQ1_0(dst, src) }
func quantTQ2_0(dst []byte, src []float32) { quantMaxTQ2_0(dst, src) }

// tritsOf sets t to the trits of the 256 values x at inverse scale 1/d, d
// their largest |x|, and returns d's bits; t is meaningful only where
// tritsOK(d) (a block with NaN, an infinity or a subnormal maximum, whose
// inverse overflows, takes the reference). A vector kernel replaces it where the
// build and CPU have one (ternary_simd_amd64.go).
var tritsOf = tritsOfGeneric

func tritsOK(amax uint32) bool { return amax < 0x7f800000 && (amax == 0 || amax >= 0x00800000) }

func tritsOfGeneric(t *[qkK]uint8, x []float32) uint32 {
	x = x[:qkK:qkK]
	amax := absMaxBits(x)
	if !tritsOK(amax) {
		return amax
	}
	var id float32
	if amax != 0 {
		id = 1 / math.Float32frombits(amax)
	}
	for i, v := range x {
		b := math.Float32bits(v * id)
		half := (b&0x7fffffff-0x3f000000)>>31 ^ 1 // |x·id| >= 0.5
		t[i] = uint8(1 + half - half*(b>>31)<<1)
	}
	return amax
}

func quantMaxTQ1_0(dst []byte, src []float32) uint32 {
	return quantMaxTernary(dst, src, 54, quantTQ1_0Generic, packTQ1_0)
}

func quantMaxTQ2_0(dst []byte, src []float32) uint32 {
	return quantMaxTernary(dst, src, 66, quantTQ2_0Generic, packTQ2_0)
}

// quantMaxTernary quantizes the blocks of src (bs bytes each, the f16 scale
// last) with their trits packed by pack, a block the fast path cannot take
// by ref, and returns the largest |x| bits of src.
func quantMaxTernary(dst []byte, src []float32, bs int, ref func([]byte, []float32), pack func(out []byte, t *[qkK]uint8)) uint32 {
	var all uint32
	var t [qkK]uint8
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[bs:] {
		amax := tritsOf(&t, src[:qkK])
		all = max(all, amax)
		if !tritsOK(amax) {
			ref(dst[:bs], src[:qkK])
			continue
		}
		putF16(dst[bs-2:], math.Float32frombits(amax))
		pack(dst[:bs-2], &t)
	}
	return all
}

// packTQ1_0 packs 5 trits a byte (4 in the last 4 bytes) in TQ1_0's order.
func packTQ1_0(out []byte, t *[qkK]uint8) {
	for m := range 32 {
		out[m] = packTrits(t[m]*81 + t[m+32]*27 + t[m+64]*9 + t[m+96]*3 + t[m+128])
	}
	for m := range 16 {
		out[32+m] = packTrits(t[160+m]*81 + t[176+m]*27 + t[192+m]*9 + t[208+m]*3 + t[224+m])
	}
	for j := range 4 {
		out[48+j] = packTrits((t[240+j]*27 + t[244+j]*9 + t[248+j]*3 + t[252+j]) * 3)
	}
}

// packTQ2_0 packs 4 trits a byte, 2 bits each, in TQ2_0's order.
func packTQ2_0(out []byte, t *[qkK]uint8) {
	for j := 0; j < 64; j += 32 {
		for m := range 32 {
			out[j+m] = t[4*j+m] | t[4*j+m+32]<<2 | t[4*j+m+64]<<4 | t[4*j+m+96]<<6
		}
	}
}
