//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"math"
	"simd/archsimd"
)

// The K-quant searches (make_qkx2_quants for Q2_K, Q4_K and Q5_K,
// make_q3_quants for Q3_K, make_qx_quants for Q6_K) with one sub-block per lane of an AVX2 vector:
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

// quantQ3_KSIMD is quantQ3_KGeneric with the sub-block searches
// (make_q3_quants with nmax 4 on the 16 sub-blocks of 16) done by q3LanesN,
// one sub-block per lane, q3BatchBlocks blocks at once, and the final levels
// and their packing by q3LevelsSIMD.
func quantQ3_KSIMD(dst []byte, src []float32) {
	var g q3Chains
	var dj [16]float32
	for len(src) >= qkK {
		nb := min(len(src)/qkK, q3BatchBlocks)
		q3LanesN(&g, f32bits(src[:nb*qkK]), 2*nb, 4)
		for b := range nb {
			y := dst[110*b : 110*b+110]
			q3Scales(y, (*[16]float32)(g.scale[16*b:]), &dj)
			q3LevelsSIMD(y, src[qkK*b:qkK*b+qkK], &dj, (*[qkK]int32)(g.lt[qkK*b:]))
		}
		src, dst = src[nb*qkK:], dst[nb*110:]
	}
}

// q3BatchBlocks is how many Q3_K blocks quantQ3_KSIMD gives q3LanesN at
// once: the sub-blocks of 4 blocks make 8 chains of 8 lanes.
const q3BatchBlocks = 4

// q3LevelsSIMD is requantize16 and packQ3K for Q3_K, 8 values at a time: the
// levels of each sub-block with a nonzero scale dj from the same division
// and nearest_int by the same bit operations as the reference (so any value,
// even a huge quotient where dj is tiny, gives its level), over the search's
// levels in lt, then packed into y from lt.
//
//go:noinline
func q3LevelsSIMD(y []byte, x []float32, dj *[16]float32, lt *[qkK]int32) {
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	lo := archsimd.BroadcastInt32x8(-4)
	hi := archsimd.BroadcastInt32x8(3)
	top := archsimd.BroadcastInt32x8(4)
	xb := f32bits(x[:qkK])
	for j, d := range f32bits(dj[:]) {
		if d&0x7fffffff == 0 { // (±0: the search's levels stay)
			continue
		}
		dk := archsimd.BroadcastUint32x8(d).AsFloat32x8()
		for h := 16 * j; h < 16*j+16; h += 8 {
			v := archsimd.LoadUint32x8Slice(xb[h : h+8]).AsFloat32x8()
			l := v.Div(dk).Add(magic).AsInt32x8().And(mant).Sub(off).Max(lo).Min(hi).Add(top)
			l.StoreSlice(lt[h : h+8])
		}
	}
	// levels 0..7: byte l of hmask has bit k from level 32k+l; crumb byte l
	// of each half of 128 takes levels l, l+32, l+64, l+96 (as packQ3K)
	three := archsimd.BroadcastInt32x8(3)
	y = y[:96]
	var out [8]uint32
	for l := 0; l < 32; l += 8 {
		hm := archsimd.BroadcastInt32x8(0)
		c0, c1 := hm, hm
		for k := range 8 {
			a := archsimd.LoadInt32x8Slice(lt[32*k+l : 32*k+l+8])
			hm = hm.Or(a.ShiftAllRight(2).ShiftAllLeft(uint64(k)))
			if k < 4 {
				c0 = c0.Or(a.And(three).ShiftAllLeft(uint64(2 * k)))
			} else {
				c1 = c1.Or(a.And(three).ShiftAllLeft(uint64(2 * (k - 4))))
			}
		}
		hm.Or(c0.ShiftAllLeft(8)).Or(c1.ShiftAllLeft(16)).AsUint32x8().StoreSlice(out[:])
		for i, w := range out {
			y[l+i], y[32+l+i], y[64+l+i] = byte(w), byte(w>>8), byte(w>>16)
		}
	}
	archsimd.ClearAVXUpperBits()
}

// transpose8 transposes the 8x8 matrix of 32-bit values whose rows are r.
func transpose8(r *[8]archsimd.Uint32x8) {
	s0, s1, s2, s3 := transpose4x2(r[0], r[1], r[2], r[3])
	s4, s5, s6, s7 := transpose4x2(r[4], r[5], r[6], r[7])
	r[0], r[4] = s0.Select128FromPair(0, 2, s4), s0.Select128FromPair(1, 3, s4)
	r[1], r[5] = s1.Select128FromPair(0, 2, s5), s1.Select128FromPair(1, 3, s5)
	r[2], r[6] = s2.Select128FromPair(0, 2, s6), s2.Select128FromPair(1, 3, s6)
	r[3], r[7] = s3.Select128FromPair(0, 2, s7), s3.Select128FromPair(1, 3, s7)
}

// transpose4x2 transposes the two 4x4 matrices (the 128-bit halves) of rows
// a..d: pairs of rows interleaved, then pairs of pairs.
func transpose4x2(a, b, c, d archsimd.Uint32x8) (s0, s1, s2, s3 archsimd.Uint32x8) {
	t0, t1 := a.InterleaveLoGrouped(b).AsUint64x4(), a.InterleaveHiGrouped(b).AsUint64x4()
	t2, t3 := c.InterleaveLoGrouped(d).AsUint64x4(), c.InterleaveHiGrouped(d).AsUint64x4()
	return t0.InterleaveLoGrouped(t2).AsUint32x8(), t0.InterleaveHiGrouped(t2).AsUint32x8(),
		t1.InterleaveLoGrouped(t3).AsUint32x8(), t1.InterleaveHiGrouped(t3).AsUint32x8()
}

// q3Chains is q3LanesN's output and state: chain c holds 8 sub-blocks.
type q3Chains struct {
	xt           [2 * q3BatchBlocks][128]uint32 // element i of sub-block j at 8i+j, as bits
	scale        [16 * q3BatchBlocks]float32    // results, in x's order
	lt           [qkK * q3BatchBlocks]int32     // the chosen levels (0..2·nmax-1), in x's order
	lv           [2 * q3BatchBlocks][16]archsimd.Int32x8
	sumlx, suml2 [2 * q3BatchBlocks]archsimd.Float32x8
	flat         [2 * q3BatchBlocks]archsimd.Mask32x8
}

// q3LanesN runs make_q3_quants on the sub-blocks of x (bits of float32), 8
// per chain, in the first nc chains of g. A pass steps through the elements
// in order and, for each element, through the chains, whose steps are
// independent, so the processor overlaps them (one chain alone waits on its
// steps' latency). A chain whose last pass changed nothing stays as it is in
// further passes (the pass is a function of its state), so it drops out;
// the others go on to the reference's 5 passes.
//
//go:noinline
func q3LanesN(g *q3Chains, xb []uint32, nc int, nmax int32) {
	magic := archsimd.BroadcastFloat32x8(12582912)
	mant := archsimd.BroadcastInt32x8(0x007fffff)
	off := archsimd.BroadcastInt32x8(0x00400000)
	lo := archsimd.BroadcastInt32x8(-nmax)
	hi := archsimd.BroadcastInt32x8(nmax - 1)
	zeroI := archsimd.BroadcastInt32x8(0)
	zero := zeroI.AsFloat32x8()
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	eps := archsimd.BroadcastFloat32x8(groupMaxEps)
	fnmax := archsimd.BroadcastInt32x8(-nmax).ConvertToFloat32()
	nearest := func(f archsimd.Float32x8) archsimd.Int32x8 {
		return f.Add(magic).AsInt32x8().And(mant).Sub(off).Max(lo).Min(hi)
	}
	nc = min(nc, len(g.xt), len(xb)/128)
	var r [8]archsimd.Uint32x8
	for c := range nc {
		xt := &g.xt[c]
		for h := 0; h < 16; h += 8 {
			for j := range 8 {
				r[j] = archsimd.LoadUint32x8Slice(xb[128*c+16*j+h:])
			}
			transpose8(&r)
			for k := range 8 {
				r[k].StoreSlice(xt[8*(h+k):])
			}
		}
		maxv, amax := zero, zero
		for i := range 16 {
			v := archsimd.LoadUint32x8Slice(xt[8*i : 8*i+8]).AsFloat32x8()
			a := v.AsUint32x8().And(abs).AsFloat32x8()
			gt := a.Greater(amax)
			amax = a.Merge(amax, gt)
			maxv = v.Merge(maxv, gt)
		}
		g.flat[c] = amax.Less(eps)
		iscale := fnmax.Div(maxv)
		lv := &g.lv[c]
		sumlx, suml2 := zero, zero
		for i := range 16 {
			v := archsimd.LoadUint32x8Slice(xt[8*i : 8*i+8]).AsFloat32x8()
			l := nearest(iscale.Mul(v))
			lv[i] = l
			w := v.Mul(v)
			fl := l.ConvertToFloat32()
			sumlx = sumlx.Add(w.Mul(v).Mul(fl))
			suml2 = suml2.Add(w.Mul(fl).Mul(fl))
		}
		g.sumlx[c], g.suml2[c] = sumlx, suml2
	}
	var active [2 * q3BatchBlocks]bool
	for c := range nc {
		active[c] = true
	}
	left := nc
	for range 5 {
		var changed [2 * q3BatchBlocks]uint8
		for i := range 16 {
			for c := range nc {
				if !active[c] {
					continue
				}
				v := archsimd.LoadUint32x8Slice(g.xt[c][8*i : 8*i+8]).AsFloat32x8()
				sumlx, suml2 := g.sumlx[c], g.suml2[c]
				lvi := g.lv[c][i]
				w := v.Mul(v)
				wv := w.Mul(v)
				li := lvi.ConvertToFloat32()
				slx := sumlx.Sub(wv.Mul(li))
				pos := slx.Greater(zero)
				sl2 := suml2.Sub(w.Mul(li).Mul(li))
				nl := nearest(v.Mul(sl2).Div(slx))
				diff := nl.NotEqual(lvi)
				fn := nl.ConvertToFloat32()
				slx = slx.Add(wv.Mul(fn))
				sl2 = sl2.Add(w.Mul(fn).Mul(fn))
				better := sl2.Greater(zero).And(slx.Mul(slx).Mul(suml2).Greater(sumlx.Mul(sumlx).Mul(sl2)))
				take := pos.And(diff).And(better)
				g.lv[c][i] = nl.Merge(lvi, take)
				g.sumlx[c] = slx.Merge(sumlx, take)
				g.suml2[c] = sl2.Merge(suml2, take)
				changed[c] |= take.ToBits()
			}
		}
		for c := range nc {
			if active[c] && changed[c] == 0 {
				active[c] = false
				left--
			}
		}
		if left == 0 {
			break
		}
	}
	top := archsimd.BroadcastInt32x8(nmax)
	for c := range nc {
		flat := g.flat[c]
		zero.Merge(g.sumlx[c].Div(g.suml2[c]), flat).StoreSlice(g.scale[8*c : 8*c+8])
		for h := 0; h < 16; h += 8 {
			for k := range 8 {
				r[k] = zeroI.Merge(g.lv[c][h+k].Add(top), flat).AsUint32x8()
			}
			transpose8(&r)
			for j := range 8 {
				r[j].AsInt32x8().StoreSlice(g.lt[128*c+16*j+h:])
			}
		}
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
