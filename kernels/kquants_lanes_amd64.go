//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"simd/archsimd"
)

// Q3_K's search (make_q3_quants) with one sub-block per lane of an AVX2
// vector: each lane runs the reference's whole search for its sub-block, in
// order, so nothing is speculative. Every lane operation is the reference's
// float32 operation in the reference's order (Mul then Add, never fused;
// nearest_int by its 1.5·2^23 trick on the bits), so the results are the
// reference's bit for bit; the tests compare bytes. A block is transposed
// first, so that element i of 8 sub-blocks is one load, and the chosen
// levels are transposed back. The vector functions hold no scalar float
// code and clear the upper vector state before they return (see
// simd_amd64.go). The other K-quants' searches are assembly (asm_amd64.s),
// in this build too.

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
