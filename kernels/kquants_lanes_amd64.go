//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"math"
	"simd/archsimd"
)

// The K-quant searches (make_qkx2_quants for Q2_K, Q4_K and Q5_K,
// make_qx_quants for Q6_K; Q3_K's make_q3_quants is assembly in every build,
// kquants_q3_amd64.s) with one sub-block per lane of an AVX2 vector:
// each lane runs the reference's whole search for its sub-block, candidates
// in order, accepting or not by a per-lane mask, so nothing is speculative
// (make_qkx2_quants cannot be split by candidate: accepting one replaces the
// min that later candidates use). Every lane operation is the reference's
// float32 operation in the reference's order (Mul then Add, never fused;
// nearest_int by its 1.5·2^23 trick on the bits), so the results are the
// reference's bit for bit; the tests compare bytes. A block is transposed
// first, so that element i of 8 sub-blocks is one load, and the chosen
// levels are transposed back. The vector functions hold no scalar float
// code and clear the upper vector state before they return (see
// simd_amd64.go).

// kx2BlockSIMD is kx2Fits (make_qkx2_quants on the 8 sub-blocks of 32 of a
// Q4_K or Q5_K super-block), one sub-block per lane.
func kx2BlockSIMD(x []float32, L []uint8, scales, mins *[8]float32, nmax int32, rmin float32, nstep int) {
	if nstep > 63 {
		kx2Fits(x, L, scales, mins, nmax, rmin, nstep)
		return
	}
	var g kx2Group
	xb := f32bits(x[:qkK])
	for i := range 32 {
		for j := range 8 {
			g.xt[8*i+j] = xb[32*j+i]
		}
	}
	fmax := float32(nmax)
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(rmin+float32(0.1*float32(is))) + fmax)
	}
	g.fmax = math.Float32bits(fmax)
	kx2Lanes8(&g, 32, nmax, nstep, false)
	*scales, *mins = g.scale, g.min
	for i := range 32 {
		for j := range 8 {
			L[32*j+i] = uint8(g.lt[8*i+j])
		}
	}
}

// kx2Group is kx2Lanes8's input and output.
type kx2Group struct {
	xt         [256]uint32 // element i of sub-block j at 8i+j, as bits
	num        [64]uint32  // the numerators of the candidates' iscales
	fmax       uint32
	scale, min [8]float32 // results: scale and -min per sub-block
	lt         [256]int32 // the chosen levels, transposed as xt
	// scratch: each element's weights, and its levels in the current pass
	w, fl [32]archsimd.Float32x8
}

//go:noinline
func kx2Lanes8(g *kx2Group, n int, nmax int32, nstep int, q2 bool) {
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	zeroI := archsimd.BroadcastInt32x8(0)
	top := archsimd.BroadcastInt32x8(nmax)
	zero := zeroI.AsFloat32x8()
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	load := func(i int) archsimd.Float32x8 {
		return archsimd.LoadUint32x8Slice(g.xt[8*i : 8*i+8]).AsFloat32x8()
	}
	levels := func(iscale, v, minv archsimd.Float32x8) archsimd.Int32x8 {
		return iscale.Mul(v.Sub(minv)).Add(magic).AsInt32x8().And(mant).Sub(off).Max(zeroI).Min(top)
	}
	// Weights: the RMS of the sub-block plus |x| (Q4_K, Q5_K) or |x| (Q2_K).
	avX := zero
	if !q2 {
		sumX2 := zero
		for i := range n {
			v := load(i)
			sumX2 = sumX2.Add(v.Mul(v))
		}
		avX = sumX2.Div(archsimd.BroadcastInt32x8(int32(n)).ConvertToFloat32()).Sqrt() // n exactly, without a scalar conversion
	}
	weight := func(v archsimd.Float32x8) archsimd.Float32x8 {
		a := v.AsUint32x8().And(abs).AsFloat32x8()
		if q2 {
			return a
		}
		return avX.Add(a)
	}
	// err is the reference's error of one value: |diff| (Q2_K) or diff².
	err := func(diff archsimd.Float32x8) archsimd.Float32x8 {
		if q2 {
			return diff.AsUint32x8().And(abs).AsFloat32x8()
		}
		return diff.Mul(diff)
	}
	wt, flt := &g.w, &g.fl
	for i := range n {
		wt[i] = weight(load(i))
	}
	v0 := load(0)
	minv, maxv := v0, v0
	sumW := weight(v0)
	sumX := sumW.Mul(v0)
	for i := 1; i < n; i++ {
		v := load(i)
		minv = v.Merge(minv, v.Less(minv))
		maxv = v.Merge(maxv, v.Greater(maxv))
		w := weight(v)
		sumW = sumW.Add(w)
		sumX = sumX.Add(w.Mul(v))
	}
	minv = zero.Merge(minv, minv.Greater(zero))
	flat := maxv.Equal(minv)
	minv0 := minv
	fmax := archsimd.BroadcastUint32x8(g.fmax).AsFloat32x8()
	iscale := fmax.Div(maxv.Sub(minv))
	scale := archsimd.BroadcastFloat32x8(1).Div(iscale)
	bestMad := zero
	for i := range n {
		v := load(i)
		fl := levels(iscale, v, minv).ConvertToFloat32()
		diff := scale.Mul(fl).Add(minv).Sub(v)
		bestMad = bestMad.Add(wt[i].Mul(err(diff)))
	}
	bestNum, bestMin := fmax, minv
	for is := 0; is <= nstep; is++ {
		num := archsimd.BroadcastUint32x8(g.num[is]).AsFloat32x8()
		iscale := num.Div(maxv.Sub(minv))
		sumL, sumL2, sumXL := zero, zero, zero
		for i := range n {
			v := load(i)
			fl := levels(iscale, v, minv).ConvertToFloat32()
			flt[i] = fl
			wfl := wt[i].Mul(fl)
			sumL = sumL.Add(wfl)
			sumL2 = sumL2.Add(wfl.Mul(fl))
			sumXL = sumXL.Add(wfl.Mul(v))
		}
		D := sumW.Mul(sumL2).Sub(sumL.Mul(sumL))
		sc := sumW.Mul(sumXL).Sub(sumX.Mul(sumL)).Div(D)
		mn := sumL2.Mul(sumX).Sub(sumL.Mul(sumXL)).Div(D)
		pos := mn.Greater(zero)
		sc = sumXL.Div(sumL2).Merge(sc, pos)
		mn = zero.Merge(mn, pos)
		mad := zero
		for i := range n {
			diff := sc.Mul(flt[i]).Add(mn).Sub(load(i))
			mad = mad.Add(wt[i].Mul(err(diff)))
		}
		take := D.Greater(zero).And(mad.Less(bestMad))
		bestMad = mad.Merge(bestMad, take)
		scale = sc.Merge(scale, take)
		bestNum = num.Merge(bestNum, take)
		bestMin = minv.Merge(bestMin, take)
		minv = mn.Merge(minv, take)
	}
	// Flat sub-blocks: levels 0, scale 0, min as found.
	scale = zero.Merge(scale, flat)
	minv = minv0.Merge(minv, flat)
	minv.AsUint32x8().Xor(archsimd.BroadcastUint32x8(0x80000000)).AsFloat32x8().Store(&g.min) // -min
	scale.Store(&g.scale)
	iscale = bestNum.Div(maxv.Sub(bestMin))
	for i := range n {
		l := levels(iscale, load(i), bestMin)
		zeroI.Merge(l, flat).StoreSlice(g.lt[8*i : 8*i+8])
	}
	archsimd.ClearAVXUpperBits()
}

// q2Fits16SIMD is the sub-block loop of Q2_K (make_qkx2_quants on the 16
// sub-blocks of 16, weights |x|, absolute error) as kx2BlockSIMD does it: two
// groups of 8 sub-blocks, one per lane.
func q2Fits16SIMD(x []float32, L []uint8, scales, mins *[16]float32) {
	var g kx2Group
	xb := f32bits(x[:qkK])
	const nmax, nstep = 3, 15
	for is := 0; is <= nstep; is++ {
		g.num[is] = math.Float32bits(float32(-0.5+float32(0.1*float32(is))) + nmax)
	}
	g.fmax = math.Float32bits(nmax)
	for h := range 2 {
		for i := range 16 {
			for j := range 8 {
				g.xt[8*i+j] = xb[16*(8*h+j)+i]
			}
		}
		kx2Lanes8(&g, 16, nmax, nstep, true)
		copy(scales[8*h:], g.scale[:])
		copy(mins[8*h:], g.min[:])
		for i := range 16 {
			for j := range 8 {
				L[16*(8*h+j)+i] = uint8(g.lt[8*i+j])
			}
		}
	}
}

// q6Fits16SIMD is the sub-block loop of Q6_K (make_qx_quants with nmax 32 on
// the 16 sub-blocks of 16) with one sub-block per lane, two groups of 8:
// each lane runs the reference's whole search in order.
func q6Fits16SIMD(x []float32, L []int8, scales *[16]float32) {
	var g qxGroup
	xb := f32bits(x[:qkK])
	const nmax = 32
	k := 0
	for is := int32(-9); is <= 9; is++ {
		if is != 0 {
			g.num[k] = math.Float32bits(-(float32(nmax) + float32(0.1*float32(is))))
			k++
		}
	}
	for h := range 2 {
		for i := range 16 {
			for j := range 8 {
				g.xt[8*i+j] = xb[16*(8*h+j)+i]
			}
		}
		qxLanes8(&g, nmax)
		copy(scales[8*h:], g.scale[:])
		for i := range 16 {
			for j := range 8 {
				L[16*(8*h+j)+i] = int8(g.lt[8*i+j])
			}
		}
	}
}

// qxGroup is qxLanes8's input and output.
type qxGroup struct {
	xt    [128]uint32 // element i of sub-block j at 8i+j, as bits
	num   [18]uint32  // the numerators of the candidates' iscales
	scale [8]float32
	lt    [128]int32 // the chosen levels (0..2·nmax-1), transposed as xt
}

//go:noinline
func qxLanes8(g *qxGroup, nmax int32) {
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	lo := archsimd.BroadcastInt32x8(-nmax)
	hi := archsimd.BroadcastInt32x8(nmax - 1)
	zeroI := archsimd.BroadcastInt32x8(0)
	zero := zeroI.AsFloat32x8()
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	load := func(i int) archsimd.Float32x8 {
		return archsimd.LoadUint32x8Slice(g.xt[8*i : 8*i+8]).AsFloat32x8()
	}
	levels := func(iscale, v archsimd.Float32x8) archsimd.Int32x8 {
		return iscale.Mul(v).Add(magic).AsInt32x8().And(mant).Sub(off).Max(lo).Min(hi)
	}
	maxv, amax := zero, zero
	for i := range 16 {
		v := load(i)
		a := v.AsUint32x8().And(abs).AsFloat32x8()
		gt := a.Greater(amax)
		amax = a.Merge(amax, gt)
		maxv = v.Merge(maxv, gt)
	}
	flat := amax.Less(archsimd.BroadcastFloat32x8(groupMaxEps))
	sums := func(iscale archsimd.Float32x8) (sumlx, suml2 archsimd.Float32x8) {
		sumlx, suml2 = zero, zero
		for i := range 16 {
			v := load(i)
			fl := levels(iscale, v).ConvertToFloat32()
			w := v.Mul(v)
			sumlx = sumlx.Add(w.Mul(v).Mul(fl))
			suml2 = suml2.Add(w.Mul(fl).Mul(fl))
		}
		return sumlx, suml2
	}
	iscale := archsimd.BroadcastInt32x8(-nmax).ConvertToFloat32().Div(maxv)
	sumlx, suml2 := sums(iscale)
	scale := zero.Merge(sumlx.Div(suml2), suml2.Equal(zero))
	best := scale.Mul(sumlx)
	bestIscale := iscale
	for k := range g.num { // (by index: ranging over the array would copy it with SSE moves)
		iscale := archsimd.BroadcastUint32x8(g.num[k]).AsFloat32x8().Div(maxv)
		sumlx, suml2 := sums(iscale)
		take := suml2.Greater(zero).And(sumlx.Mul(sumlx).Greater(best.Mul(suml2)))
		scale = sumlx.Div(suml2).Merge(scale, take)
		best = scale.Mul(sumlx).Merge(best, take)
		bestIscale = iscale.Merge(bestIscale, take)
	}
	zero.Merge(scale, flat).Store(&g.scale)
	top := archsimd.BroadcastInt32x8(nmax)
	for i := range 16 {
		l := levels(bestIscale, load(i)).Add(top)
		zeroI.Merge(l, flat).StoreSlice(g.lt[8*i : 8*i+8])
	}
	archsimd.ClearAVXUpperBits()
}

// requant16SIMD is the final re-quantization of Q3_K and Q6_K (see
// requant16Func), 8 values at a time: the same division, and nearest_int by
// the same bit operations, so any value (even a huge quotient where d is
// tiny) gives the reference's level.
//
//go:noinline
func requant16SIMD(x []float32, d *[16]float32, lt *[qkK]int32, nmax int32) {
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	lo := archsimd.BroadcastInt32x8(-nmax)
	hi := archsimd.BroadcastInt32x8(nmax - 1)
	top := archsimd.BroadcastInt32x8(nmax)
	xb := f32bits(x[:qkK])
	db := f32bits(d[:])
	for k := 0; k < qkK; k += 8 {
		dk := archsimd.BroadcastUint32x8(db[k/16]).AsFloat32x8()
		v := archsimd.LoadUint32x8Slice(xb[k : k+8]).AsFloat32x8()
		l := v.Div(dk).Add(magic).AsInt32x8().And(mant).Sub(off).Max(lo).Min(hi).Add(top)
		l.StoreSlice(lt[k : k+8])
	}
	archsimd.ClearAVXUpperBits()
}
