//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"math/bits"
	"simd/archsimd"
)

// AVX-512 fast paths for the legacy quantizers and AVX2 paths for the f32
// vector loops, built with GOEXPERIMENT=simd. Each vector operation is a
// separate IEEE float32 operation in the same order as the reference (the
// tests compare bytes), so the results are identical for finite input.
// For NaN or Inf input (which callers refuse, as llama.cpp does) the bytes
// may differ from the reference.

func init() {
	if archsimd.X86.AVX512() {
		quantQ8_0 = quantQ8_0AVX512
		quantQ4_0 = quantQ4_0AVX512
		quantQ4_1 = quantQ4_1AVX512
		f32ToF16 = f32ToF16AVX512
		f16ToF32 = f16ToF32AVX512
		fastName = "avx512"
	}
	if archsimd.X86.AVX2() {
		dotF32 = dotAVX2
		axpy = axpyAVX2
		if fastName == "" {
			fastName = "avx2"
		}
	}
}

func hmax16(v archsimd.Float32x16) float32 {
	w := v.GetLo().Max(v.GetHi())
	u := w.GetLo().Max(w.GetHi())
	var a [4]float32
	u.Store(&a)
	return max(a[0], a[1], a[2], a[3])
}

func hmin16(v archsimd.Float32x16) float32 {
	w := v.GetLo().Min(v.GetHi())
	u := w.GetLo().Min(w.GetHi())
	var a [4]float32
	u.Store(&a)
	return min(a[0], a[1], a[2], a[3])
}

var (
	absMask16  = archsimd.BroadcastUint32x16(0x7fffffff)
	signMask16 = archsimd.BroadcastUint32x16(0x80000000)
)

func abs16(v archsimd.Float32x16) archsimd.Float32x16 {
	return v.AsUint32x16().And(absMask16).AsFloat32x16()
}

// roundAway16 is roundf on each lane: truncate, then step away from zero when
// the (exact) remainder is at least one half.
func roundAway16(p archsimd.Float32x16) archsimd.Int32x16 {
	half := archsimd.BroadcastFloat32x16(0.5)
	one := archsimd.BroadcastFloat32x16(1)
	r := p.TruncScaled(0)
	f := p.Sub(r)
	up := abs16(f).GreaterEqual(half)
	step := one.AsUint32x16().Or(p.AsUint32x16().And(signMask16)).AsFloat32x16()
	return r.Add(step.Masked(up)).ConvertToInt32()
}

func quantQ8_0AVX512(dst []byte, src []float32) {
	for ; len(src) >= qk; src, dst = src[qk:], dst[34:] {
		v0 := archsimd.LoadFloat32x16Slice(src[0:16])
		v1 := archsimd.LoadFloat32x16Slice(src[16:32])
		amax := hmax16(abs16(v0).Max(abs16(v1)))
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		vid := archsimd.BroadcastFloat32x16(id)
		roundAway16(v0.Mul(vid)).TruncateToInt8().AsUint8x16().StoreSlice(dst[2:18])
		roundAway16(v1.Mul(vid)).TruncateToInt8().AsUint8x16().StoreSlice(dst[18:34])
	}
}

// signedAbsMax16 is signedAbsMax on a 32-element block: the first element
// whose magnitude equals the block maximum, or +0 for an all-zero block.
func signedAbsMax16(x []float32, v0, v1 archsimd.Float32x16) float32 {
	a0, a1 := abs16(v0), abs16(v1)
	amax := hmax16(a0.Max(a1))
	if amax == 0 {
		return 0
	}
	m := archsimd.BroadcastFloat32x16(amax)
	hits := uint32(a0.Equal(m).ToBits()) | uint32(a1.Equal(m).ToBits())<<16
	return x[bits.TrailingZeros32(hits)]
}

func quantQ4_0AVX512(dst []byte, src []float32) {
	add := archsimd.BroadcastFloat32x16(8.5)
	top := archsimd.BroadcastInt32x16(15)
	for ; len(src) >= qk; src, dst = src[qk:], dst[18:] {
		x := src[:qk]
		v0 := archsimd.LoadFloat32x16Slice(x[0:16])
		v1 := archsimd.LoadFloat32x16Slice(x[16:32])
		d := signedAbsMax16(x, v0, v1) / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		vid := archsimd.BroadcastFloat32x16(id)
		q0 := v0.Mul(vid).Add(add).ConvertToInt32().Min(top)
		q1 := v1.Mul(vid).Add(add).ConvertToInt32().Min(top)
		q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(dst[2:18])
	}
}

func quantQ4_1AVX512(dst []byte, src []float32) {
	add := archsimd.BroadcastFloat32x16(0.5)
	top := archsimd.BroadcastInt32x16(15)
	for ; len(src) >= qk; src, dst = src[qk:], dst[20:] {
		x := src[:qk]
		v0 := archsimd.LoadFloat32x16Slice(x[0:16])
		v1 := archsimd.LoadFloat32x16Slice(x[16:32])
		lo, hi := hmin16(v0.Min(v1)), hmax16(v0.Max(v1))
		if lo == 0 || hi == 0 {
			lo, hi = minMax(x) // the sign of a zero extreme depends on element order
		}
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(dst, d)
		putF16(dst[2:], lo)
		vid := archsimd.BroadcastFloat32x16(id)
		vlo := archsimd.BroadcastFloat32x16(lo)
		q0 := v0.Sub(vlo).Mul(vid).Add(add).ConvertToInt32().Min(top)
		q1 := v1.Sub(vlo).Mul(vid).Add(add).ConvertToInt32().Min(top)
		q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(dst[4:20])
	}
}

func dotAVX2(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var acc archsimd.Float32x8
	for i := 0; i < n; i += 8 {
		va := archsimd.LoadFloat32x8Slice(a[i : i+8])
		vb := archsimd.LoadFloat32x8Slice(b[i : i+8])
		acc = acc.Add(va.Mul(vb))
	}
	var s [8]float32
	acc.Store(&s)
	return reduce8(&s) + dotTail(a[n:], b[n:])
}

func axpyAVX2(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	n := len(y) &^ 7
	va := archsimd.BroadcastFloat32x8(alpha)
	for i := 0; i < n; i += 8 {
		vy := archsimd.LoadFloat32x8Slice(y[i : i+8])
		vx := archsimd.LoadFloat32x8Slice(x[i : i+8])
		vy.Add(va.Mul(vx)).StoreSlice(y[i : i+8])
	}
	axpyGeneric(y[n:], alpha, x[n:])
}

// f32ToF16AVX512 converts 16 values at a time with integer arithmetic when
// every value is zero or in the half normal range [2^-14, 2^16) (where
// round-to-nearest-even is one add and a shift, overflow to inf included);
// any other group of 16 goes through the scalar reference.
func f32ToF16AVX512(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := len(src) &^ 15
	var (
		absM  = archsimd.BroadcastUint32x16(0x7fffffff)
		lo    = archsimd.BroadcastUint32x16(113<<23 - 1)
		hi    = archsimd.BroadcastUint32x16(143 << 23)
		zero  = archsimd.BroadcastUint32x16(0)
		bias  = archsimd.BroadcastUint32x16(112 << 23)
		one   = archsimd.BroadcastUint32x16(1)
		round = archsimd.BroadcastUint32x16(0xfff)
		sgn   = archsimd.BroadcastUint32x16(0x8000)
	)
	for i := 0; i < n; i += 16 {
		b := archsimd.LoadFloat32x16Slice(src[i : i+16]).AsUint32x16()
		a := b.And(absM)
		nz := a.Greater(zero)
		if a.Greater(lo).And(a.Less(hi)).Or(a.Equal(zero)).ToBits() != 0xffff {
			f32ToF16Generic(dst[i:i+16], src[i:i+16])
			continue
		}
		t := a.Sub(bias)
		h := t.Add(round).Add(t.ShiftAllRight(13).And(one)).ShiftAllRight(13).Masked(nz)
		h.Or(b.ShiftAllRight(16).And(sgn)).TruncateToUint16().StoreSlice(dst[i : i+16])
	}
	f32ToF16Generic(dst[n:], src[n:])
}

// f16ToF32AVX512 widens 16 halves at a time when all are zero or normal;
// groups with subnormals, infinities or NaNs use the scalar reference.
func f16ToF32AVX512(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	n := len(src) &^ 15
	var (
		expM = archsimd.BroadcastUint32x16(0x7c00)
		magM = archsimd.BroadcastUint32x16(0x7fff)
		sgn  = archsimd.BroadcastUint32x16(0x8000)
		zero = archsimd.BroadcastUint32x16(0)
		bias = archsimd.BroadcastUint32x16(112 << 23)
	)
	for i := 0; i < n; i += 16 {
		h := archsimd.LoadUint16x16Slice(src[i : i+16]).ExtendToUint32()
		e := h.And(expM)
		m := h.And(magM)
		nz := m.Greater(zero)
		if e.Greater(zero).And(e.Less(expM)).Or(m.Equal(zero)).ToBits() != 0xffff {
			f16ToF32Generic(dst[i:i+16], src[i:i+16])
			continue
		}
		f := m.ShiftAllLeft(13).Add(bias).Masked(nz).Or(h.And(sgn).ShiftAllLeft(16))
		f.AsFloat32x16().StoreSlice(dst[i : i+16])
	}
	f16ToF32Generic(dst[n:], src[n:])
}
