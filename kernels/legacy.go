package kernels

import (
	"encoding/binary"
	"math"
)

// Legacy 32-element block types. Each quantizer follows ggml's
// quantize_row_*_ref: every product is rounded to float32 before it is added
// (float32(a*b) + c), so that no compiler may fuse it into a multiply-add.

const qk = 32 // elements per legacy block

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16Bits(f)) }

func getF16(b []byte) float32 { return F16BitsToF32(binary.LittleEndian.Uint16(b)) }

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

// truncInt converts like C's float-to-int cast (toward zero). Out-of-range
// and NaN inputs, which ggml never feeds it, give some value but never panic.
func truncInt(f float32) int32 {
	if !(f > -2147483648 && f < 2147483648) {
		return 0
	}
	return int32(f)
}

// roundAway is C's roundf: halfway cases go away from zero. It truncates
// and steps by the remainder, which float32 subtraction gives exactly.
func roundAway(f float32) int32 {
	if !(f > -2147483648 && f < 2147483648) {
		return 0
	}
	t := int32(f)
	r := f - float32(t)
	if r >= 0.5 {
		t++
	} else if r <= -0.5 {
		t--
	}
	return t
}

// q8Scale is a Q8 block's scale, amax/127, and its inverse (0 for an all-zero block).
func q8Scale(x []float32) (d, id float32) {
	var amax float32
	for _, v := range x {
		if a := abs32(v); !(amax > a) {
			amax = a
		}
	}
	d = amax / 127
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

func quantQ8_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[34:] {
		x := src[:qk]
		d, id := q8Scale(x)
		putF16(dst, d)
		q := dst[2:34]
		for j, v := range x {
			q[j] = byte(int8(roundAway(float32(v * id))))
		}
	}
}

func dequantQ8_0(dst []float32, src []byte) {
	for ; len(src) >= 34; src, dst = src[34:], dst[qk:] {
		d := getF16(src)
		for j, q := range src[2:34] {
			dst[j] = float32(int8(q)) * d
		}
	}
}

// signedAbsMax returns the value with the largest magnitude, the first one on
// ties (strict comparison starting from +0, as ggml does).
func signedAbsMax(x []float32) float32 {
	var amax, m float32
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, m = a, v
		}
	}
	return m
}

func quantQ4_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[18:] {
		x := src[:qk]
		d := signedAbsMax(x) / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		q := dst[2:18]
		for j := range 16 {
			q0 := min(15, int32(int8(truncInt(float32(x[j]*id)+8.5))))
			q1 := min(15, int32(int8(truncInt(float32(x[j+16]*id)+8.5))))
			q[j] = byte(q0) | byte(q1)<<4
		}
	}
}

func dequantQ4_0(dst []float32, src []byte) {
	for ; len(src) >= 18; src, dst = src[18:], dst[qk:] {
		d := getF16(src)
		for j, b := range src[2:18] {
			dst[j] = float32(int32(b&0xf)-8) * d
			dst[j+16] = float32(int32(b>>4)-8) * d
		}
	}
}

// minMax returns the smallest and largest value with ggml's strict
// comparisons starting from ±FLT_MAX.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func quantQ4_1Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[20:] {
		x := src[:qk]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		putF16(dst[2:], lo)
		q := dst[4:20]
		for j := range 16 {
			q0 := min(15, int32(int8(truncInt(float32((x[j]-lo)*id)+0.5))))
			q1 := min(15, int32(int8(truncInt(float32((x[j+16]-lo)*id)+0.5))))
			q[j] = byte(q0) | byte(q1)<<4
		}
	}
}

func dequantQ4_1(dst []float32, src []byte) {
	for ; len(src) >= 20; src, dst = src[20:], dst[qk:] {
		d, m := getF16(src), getF16(src[2:])
		for j, b := range src[4:20] {
			dst[j] = float32(float32(b&0xf)*d) + m
			dst[j+16] = float32(float32(b>>4)*d) + m
		}
	}
}

func quantQ5_0Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[22:] {
		x := src[:qk]
		d := signedAbsMax(x) / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		var qh uint32
		q := dst[6:22]
		for j := range 16 {
			q0 := uint8(min(31, int32(int8(truncInt(float32(x[j]*id)+16.5)))))
			q1 := uint8(min(31, int32(int8(truncInt(float32(x[j+16]*id)+16.5)))))
			q[j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(dst[2:], qh)
	}
}

func dequantQ5_0(dst []float32, src []byte) {
	for ; len(src) >= 22; src, dst = src[22:], dst[qk:] {
		d := getF16(src)
		qh := binary.LittleEndian.Uint32(src[2:])
		for j, b := range src[6:22] {
			h0 := int32(qh>>j&1) << 4
			h1 := int32(qh>>(j+16)&1) << 4
			dst[j] = float32(int32(b&0xf)|h0-16) * d
			dst[j+16] = float32(int32(b>>4)|h1-16) * d
		}
	}
}

func quantQ5_1Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[24:] {
		x := src[:qk]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		putF16(dst[2:], lo)
		var qh uint32
		q := dst[8:24]
		for j := range 16 {
			q0 := uint8(truncInt(float32((x[j]-lo)*id) + 0.5))
			q1 := uint8(truncInt(float32((x[j+16]-lo)*id) + 0.5))
			q[j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(dst[4:], qh)
	}
}

func dequantQ5_1(dst []float32, src []byte) {
	for ; len(src) >= 24; src, dst = src[24:], dst[qk:] {
		d, m := getF16(src), getF16(src[2:])
		qh := binary.LittleEndian.Uint32(src[4:])
		for j, b := range src[8:24] {
			h0 := uint32(qh>>j&1) << 4
			h1 := uint32(qh>>(j+16)&1) << 4
			dst[j] = float32(float32(uint32(b&0xf)|h0)*d) + m
			dst[j+16] = float32(float32(uint32(b>>4)|h1)*d) + m
		}
	}
}

// Q8_1 is ggml's activation format: q8_0 plus s = f16(sum(q)·d).
func quantQ8_1Generic(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[36:] {
		x := src[:qk]
		d, id := q8Scale(x)
		putF16(dst, d)
		q := dst[4:36]
		var sum int32
		for j, v := range x {
			qi := int8(roundAway(float32(v * id)))
			q[j] = byte(qi)
			sum += int32(qi)
		}
		putF16(dst[2:], float32(sum)*d)
	}
}

func dequantQ8_1(dst []float32, src []byte) {
	for ; len(src) >= 36; src, dst = src[36:], dst[qk:] {
		d := getF16(src)
		for j, q := range src[4:36] {
			dst[j] = float32(int8(q)) * d
		}
	}
}
