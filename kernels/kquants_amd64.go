//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"simd/archsimd"
)

// Fast paths for the K-quant searches (AVX2, and AVX-512 where it helps).
// Every vector lane does the reference's float32 operations in the
// reference's order (Mul then Add, never fused), so results are the
// reference's bit for bit; the tests compare bytes.
//
// make_qx_quants (Q6_K) tries 18 candidate scales, each a pass over the
// sub-block with sums accumulated in element order; here 16 (AVX-512) or 8
// candidates run at once, one per lane. The choice among them stays a scalar
// scan in candidate order, outside the vector code (see simd_amd64.go on
// mixing scalar and vector float code), and the chosen candidate's levels are
// recomputed by the reference's expression.
//
// make_qkx2_quants (Q2_K, Q4_K, Q5_K) cannot be split that way: accepting a
// candidate replaces min, which later candidates use. There one lane runs
// one sub-block's whole search (kquants_lanes_amd64.go).

func init() {
	switch {
	case archsimd.X86.AVX512():
		kquantWide = true
	case archsimd.X86.AVX2():
	default:
		return
	}
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, q2Fits16SIMD) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, kx2BlockSIMD) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, kx2BlockSIMD) }
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, makeQXQuantsSIMD) }
}

// kquantWide selects 16-lane (AVX-512) candidate passes; without it they
// have 8 lanes (AVX2).
var kquantWide bool

// makeQXQuantsSIMD is makeQXQuants with its 18 candidate passes on 16 or 8
// lanes; same arguments, same results.
func makeQXQuantsSIMD(nmax int32, x []float32, L []int8) float32 {
	if len(x) > 32 {
		return makeQXQuants(nmax, x, L)
	}
	maxv, amax := signedMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
		L[i] = int8(l + nmax)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	// The candidates is = -9..9 without 0, as iscales.
	var isc [32]float32
	k := 0
	for is := int32(-9); is <= 9; is++ {
		if is != 0 {
			isc[k] = -(float32(nmax) + float32(0.1*float32(is))) / maxv
			k++
		}
	}
	var slx, sl2 [32]float32
	xb := f32bits(x)
	if kquantWide {
		qxPass(slx[0:16], sl2[0:16], xb, isc[0:16], nmax)
	} else {
		qxPass8(slx[0:8], sl2[0:8], xb, isc[0:8], nmax)
		qxPass8(slx[8:16], sl2[8:16], xb, isc[8:16], nmax)
	}
	qxPass8(slx[16:24], sl2[16:24], xb, isc[16:24], nmax)
	chosen := -1
	for k := range 18 {
		if sl2[k] > 0 && float32(slx[k]*slx[k]) > float32(best*sl2[k]) {
			chosen = k
			scale = slx[k] / sl2[k]
			best = float32(scale * slx[k])
		}
	}
	if chosen >= 0 {
		iscale := isc[chosen]
		for i, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
			L[i] = int8(nmax + l)
		}
	}
	return scale
}

// qxPass evaluates 16 candidate iscales of make_qx_quants, one per lane:
// the sums of w·x·l and w·l² with w = x².
//
//go:noinline
func qxPass(slx, sl2 []float32, x []uint32, isc []float32, nmax int32) {
	iscale := archsimd.LoadFloat32x16Slice(isc[:16])
	magic := archsimd.BroadcastFloat32x16(12582912)
	mant := archsimd.BroadcastInt32x16(0x007fffff)
	off := archsimd.BroadcastInt32x16(0x00400000)
	lo := archsimd.BroadcastInt32x16(-nmax)
	hi := archsimd.BroadcastInt32x16(nmax - 1)
	zero := archsimd.BroadcastInt32x16(0).AsFloat32x16()
	sumlx, suml2 := zero, zero
	for _, b := range x {
		v := archsimd.BroadcastUint32x16(b).AsFloat32x16()
		fl := iscale.Mul(v).Add(magic).AsInt32x16().And(mant).Sub(off).Max(lo).Min(hi).ConvertToFloat32()
		w := v.Mul(v)
		sumlx = sumlx.Add(w.Mul(v).Mul(fl))
		suml2 = suml2.Add(w.Mul(fl).Mul(fl))
	}
	sumlx.StoreSlice(slx[:16])
	suml2.StoreSlice(sl2[:16])
	archsimd.ClearAVXUpperBits()
}

// qxPass8 is qxPass on 8 lanes (AVX2).
//
//go:noinline
func qxPass8(slx, sl2 []float32, x []uint32, isc []float32, nmax int32) {
	iscale := archsimd.LoadFloat32x8Slice(isc[:8])
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	lo := archsimd.BroadcastInt32x8(-nmax)
	hi := archsimd.BroadcastInt32x8(nmax - 1)
	zero := archsimd.BroadcastInt32x8(0).AsFloat32x8()
	sumlx, suml2 := zero, zero
	for _, b := range x {
		v := archsimd.BroadcastUint32x8(b).AsFloat32x8()
		fl := iscale.Mul(v).Add(magic).AsInt32x8().And(mant).Sub(off).Max(lo).Min(hi).ConvertToFloat32()
		w := v.Mul(v)
		sumlx = sumlx.Add(w.Mul(v).Mul(fl))
		suml2 = suml2.Add(w.Mul(fl).Mul(fl))
	}
	sumlx.StoreSlice(slx[:8])
	suml2.StoreSlice(sl2[:8])
	archsimd.ClearAVXUpperBits()
}

func init() {
	if kquantWide {
		kquantNarrow = func() (restore func()) {
			kquantWide = false
			return func() { kquantWide = true }
		}
	}
}
