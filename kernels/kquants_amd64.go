//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"math"
	"simd/archsimd"
)

// AVX-512 fast paths for the K-quant searches. The reference tries its
// candidate scales one after another, each a pass over the sub-block with
// float32 sums accumulated in element order; here 16 candidates run at once,
// one per lane, each lane doing the reference's operations in the same order
// (Mul then Add, never fused), so every candidate's sums are the reference's
// bit for bit. The choice among candidates stays a scalar scan in candidate
// order, outside the vector code (see simd_amd64.go on mixing scalar and
// vector float code), and the chosen candidate's levels are recomputed by the
// reference's expression.
//
// make_qkx2_quants has a sequential twist: accepting a candidate replaces
// min, which later candidates' iscale and levels use. The lanes are evaluated
// speculatively with the current min; after an acceptance that changes min,
// the candidates after it are evaluated again with the new one.

func init() {
	switch {
	case archsimd.X86.AVX512():
		kquantWide = true
	case archsimd.X86.AVX2():
	default:
		return
	}
	quantQ2_K = func(dst []byte, src []float32) { quantQ2_KWith(dst, src, makeQKX2QuantsSIMD) }
	quantQ4_K = func(dst []byte, src []float32) { quantQ4_KWith(dst, src, makeQKX2QuantsSIMD, kx2BlockSIMD) }
	quantQ5_K = func(dst []byte, src []float32) { quantQ5_KWith(dst, src, makeQKX2QuantsSIMD, kx2BlockSIMD) }
	quantQ6_K = func(dst []byte, src []float32) { quantQ6_KWith(dst, src, makeQXQuantsSIMD) }
}

// kquantWide selects 16-lane (AVX-512) passes; without it every pass has 8
// lanes (AVX2). With it, passes with at most 8 candidates left still take 8
// lanes, which cost less.
var kquantWide bool

// kx2Lanes holds 16 candidates' results: weighted error (+Inf where the
// reference skips the candidate, D <= 0), scale and min.
type kx2Lanes struct {
	mad, scale, min [16]float32
}

// makeQKX2QuantsSIMD is makeQKX2Quants with the candidate passes on 16 or 8
// lanes; same arguments, same results.
func makeQKX2QuantsSIMD(nmax int32, x, weights []float32, L, Laux []uint8,
	rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
	if n > 32 || nstep > 47 || nstep < 1 {
		return makeQKX2Quants(nmax, x, weights, L, Laux, rmin, rdelta, nstep, useMad)
	}
	minv, maxv := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < minv {
			minv = x[i]
		}
		if x[i] > maxv {
			maxv = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if minv > 0 {
		minv = 0
	}
	if maxv == minv {
		for i := range n {
			L[i] = 0
		}
		return 0, -minv
	}
	fmax := float32(nmax)
	iscale := fmax / (maxv - minv)
	scale = 1 / iscale
	var bestMad float32
	var xm [32]float32
	for i, v := range x {
		xm[i] = v - minv
		l := max(0, min(nmax, nearestInt(float32(iscale*xm[i]))))
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+minv) - v
		if useMad {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestMad += float32(weights[i] * diff)
	}
	// num[is] is the numerator of candidate is's iscale.
	var num [64]float32
	for is := 0; is <= nstep; is++ {
		num[is] = float32(rmin+float32(rdelta*float32(is))) + fmax
	}
	var out kx2Lanes
	lo, hi := 0, 0 // candidates lo..hi-1 are in out, evaluated with the current min
	best, bestMin := -1, minv
	for is := 0; is <= nstep; is++ {
		if is >= hi {
			// (direct calls: through a func value, out and num would escape)
			rb, wb, xb := math.Float32bits(maxv-minv), math.Float32bits(sumW), math.Float32bits(sumX)
			lo, hi = is, is+8
			if kquantWide && nstep-is >= 8 {
				kx2Pass(&out, f32bits(x), f32bits(xm[:n]), f32bits(weights[:n]), &num, is, rb, wb, xb, nmax, useMad)
				hi = is + 16
			} else {
				kx2Pass8(&out, f32bits(x), f32bits(xm[:n]), f32bits(weights[:n]), &num, is, rb, wb, xb, nmax, useMad)
			}
		}
		k := is - lo
		if out.mad[k] < bestMad {
			bestMad = out.mad[k]
			scale = out.scale[k]
			best, bestMin = is, minv
			if math.Float32bits(out.min[k]) != math.Float32bits(minv) {
				minv = out.min[k]
				hi = 0 // the later candidates depend on min
				for i, v := range x {
					xm[i] = v - minv
				}
			}
		}
	}
	if best >= 0 {
		// The chosen candidate's levels, with the min it was evaluated with.
		iscale := num[best] / (maxv - bestMin)
		for i, v := range x {
			L[i] = uint8(max(0, min(nmax, nearestInt(float32(iscale*(v-bestMin))))))
		}
	}
	return scale, -minv
}

// kx2Pass evaluates candidates is0..is0+15 of make_qkx2_quants, one per lane.
// x, xm (x - min) and w are the sub-block's values, as bits.
//
//go:noinline
func kx2Pass(o *kx2Lanes, x, xm, w []uint32, num *[64]float32, is0 int,
	rangeBits, sumWBits, sumXBits uint32, nmax int32, useMad bool) {
	iscale := archsimd.LoadFloat32x16Slice(num[is0 : is0+16]).Div(archsimd.BroadcastUint32x16(rangeBits).AsFloat32x16())
	magic := archsimd.BroadcastFloat32x16(12582912)
	mant := archsimd.BroadcastInt32x16(0x007fffff)
	off := archsimd.BroadcastInt32x16(0x00400000)
	zeroI := archsimd.BroadcastInt32x16(0)
	top := archsimd.BroadcastInt32x16(nmax)
	zero := zeroI.AsFloat32x16()
	level := func(d archsimd.Float32x16) archsimd.Float32x16 {
		return iscale.Mul(d).Add(magic).AsInt32x16().And(mant).Sub(off).Max(zeroI).Min(top).ConvertToFloat32()
	}
	sumL, sumL2, sumXL := zero, zero, zero
	for i := range xm {
		fl := level(archsimd.BroadcastUint32x16(xm[i]).AsFloat32x16())
		wfl := archsimd.BroadcastUint32x16(w[i]).AsFloat32x16().Mul(fl)
		sumL = sumL.Add(wfl)
		sumL2 = sumL2.Add(wfl.Mul(fl))
		sumXL = sumXL.Add(wfl.Mul(archsimd.BroadcastUint32x16(x[i]).AsFloat32x16()))
	}
	sumW := archsimd.BroadcastUint32x16(sumWBits).AsFloat32x16()
	sumX := archsimd.BroadcastUint32x16(sumXBits).AsFloat32x16()
	D := sumW.Mul(sumL2).Sub(sumL.Mul(sumL))
	sc := sumW.Mul(sumXL).Sub(sumX.Mul(sumL)).Div(D)
	mn := sumL2.Mul(sumX).Sub(sumL.Mul(sumXL)).Div(D)
	pos := mn.Greater(zero)
	sc = sumXL.Div(sumL2).Merge(sc, pos)
	mn = zero.Merge(mn, pos)
	abs := archsimd.BroadcastUint32x16(0x7fffffff)
	mad := zero
	for i := range xm {
		fl := level(archsimd.BroadcastUint32x16(xm[i]).AsFloat32x16())
		diff := sc.Mul(fl).Add(mn).Sub(archsimd.BroadcastUint32x16(x[i]).AsFloat32x16())
		if useMad {
			diff = diff.AsUint32x16().And(abs).AsFloat32x16()
		} else {
			diff = diff.Mul(diff)
		}
		mad = mad.Add(archsimd.BroadcastUint32x16(w[i]).AsFloat32x16().Mul(diff))
	}
	inf := archsimd.BroadcastUint32x16(0x7f800000).AsFloat32x16()
	mad = mad.Merge(inf, D.Greater(zero))
	mad.Store(&o.mad)
	sc.Store(&o.scale)
	mn.Store(&o.min)
	archsimd.ClearAVXUpperBits()
}

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

// kx2Pass8 is kx2Pass on 8 lanes (AVX2): candidates is0..is0+7 into the
// first 8 entries of o.
//
//go:noinline
func kx2Pass8(o *kx2Lanes, x, xm, w []uint32, num *[64]float32, is0 int,
	rangeBits, sumWBits, sumXBits uint32, nmax int32, useMad bool) {
	iscale := archsimd.LoadFloat32x8Slice(num[is0 : is0+8]).Div(archsimd.BroadcastUint32x8(rangeBits).AsFloat32x8())
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	zeroI := archsimd.BroadcastInt32x8(0)
	top := archsimd.BroadcastInt32x8(nmax)
	zero := zeroI.AsFloat32x8()
	level := func(d archsimd.Float32x8) archsimd.Float32x8 {
		return iscale.Mul(d).Add(magic).AsInt32x8().And(mant).Sub(off).Max(zeroI).Min(top).ConvertToFloat32()
	}
	sumL, sumL2, sumXL := zero, zero, zero
	for i := range xm {
		fl := level(archsimd.BroadcastUint32x8(xm[i]).AsFloat32x8())
		wfl := archsimd.BroadcastUint32x8(w[i]).AsFloat32x8().Mul(fl)
		sumL = sumL.Add(wfl)
		sumL2 = sumL2.Add(wfl.Mul(fl))
		sumXL = sumXL.Add(wfl.Mul(archsimd.BroadcastUint32x8(x[i]).AsFloat32x8()))
	}
	sumW := archsimd.BroadcastUint32x8(sumWBits).AsFloat32x8()
	sumX := archsimd.BroadcastUint32x8(sumXBits).AsFloat32x8()
	D := sumW.Mul(sumL2).Sub(sumL.Mul(sumL))
	sc := sumW.Mul(sumXL).Sub(sumX.Mul(sumL)).Div(D)
	mn := sumL2.Mul(sumX).Sub(sumL.Mul(sumXL)).Div(D)
	pos := mn.Greater(zero)
	sc = sumXL.Div(sumL2).Merge(sc, pos)
	mn = zero.Merge(mn, pos)
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	mad := zero
	for i := range xm {
		fl := level(archsimd.BroadcastUint32x8(xm[i]).AsFloat32x8())
		diff := sc.Mul(fl).Add(mn).Sub(archsimd.BroadcastUint32x8(x[i]).AsFloat32x8())
		if useMad {
			diff = diff.AsUint32x8().And(abs).AsFloat32x8()
		} else {
			diff = diff.Mul(diff)
		}
		mad = mad.Add(archsimd.BroadcastUint32x8(w[i]).AsFloat32x8().Mul(diff))
	}
	inf := archsimd.BroadcastUint32x8(0x7f800000).AsFloat32x8()
	mad = mad.Merge(inf, D.Greater(zero))
	mad.Store((*[8]float32)(o.mad[:8]))
	sc.Store((*[8]float32)(o.scale[:8]))
	mn.Store((*[8]float32)(o.min[:8]))
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
