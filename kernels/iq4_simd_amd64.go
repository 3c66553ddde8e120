//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import "simd/archsimd"

// The IQ4_NL/IQ4_XS trial fits with AVX-512: the 16 trial scales of a
// sub-block in the 16 lanes, the 32 values taken one after another, so that
// each lane adds its products in ggml's order (separate multiplies and adds,
// as the scalar code). A value's level is found by a binary search over the
// midpoints between the levels (multiples of 0.5): a value at a midpoint or
// above takes the upper level, which is iq4Index's answer for every finite
// value (iq4Cells' cells start at the midpoints), NaN and infinities included.

func init() {
	if archsimd.X86.AVX512() {
		iq4Trials16 = iq4Trials16AVX512
	}
}

// iq4Midpoints[k] is the midpoint between levels k and k+1 (the last unused).
var iq4Midpoints = func() (t [16]float32) {
	for k := range 15 {
		t[k] = (float32(iq4nlValues[k]) + float32(iq4nlValues[k+1])) / 2
	}
	return t
}()

//go:noinline
func iq4Trials16AVX512(x, w []float32, ids, sumqx, sumq2 *[16]float32) {
	x, w = x[:qk], w[:qk]
	id := archsimd.LoadFloat32x16(ids)
	levels := archsimd.LoadFloat32x16(&iq4Levels)
	mids := archsimd.LoadFloat32x16(&iq4Midpoints)
	var sx, s2 archsimd.Float32x16
	var zero archsimd.Uint32x16
	one := archsimd.BroadcastUint32x16(1)
	s8, s4, s2i := archsimd.BroadcastUint32x16(8), archsimd.BroadcastUint32x16(4), archsimd.BroadcastUint32x16(2)
	for half := 0; half < qk; half += 16 {
		xv := archsimd.LoadFloat32x16Slice(x[half : half+16])
		wv := archsimd.LoadFloat32x16Slice(w[half : half+16])
		var sel archsimd.Uint32x16 // j in every lane
		for range 16 {
			xj, wj := xv.Permute(sel), wv.Permute(sel)
			sel = sel.Add(one)
			y := id.Mul(xj)
			// lo = the number of midpoints at or below y, by halves: y is at or
			// above midpoint k-1 when its level is k or more (as "not below", so
			// that NaN takes the top level, as in iq4Index).
			lo := zero.Merge(s8, y.Less(mids.Permute(s8.Sub(one))))
			c := lo.Add(s4)
			lo = lo.Merge(c, y.Less(mids.Permute(c.Sub(one))))
			c = lo.Add(s2i)
			lo = lo.Merge(c, y.Less(mids.Permute(c.Sub(one))))
			c = lo.Add(one)
			lo = lo.Merge(c, y.Less(mids.Permute(lo)))
			q := levels.Permute(lo)
			wq := wj.Mul(q)
			sx = sx.Add(wq.Mul(xj))
			s2 = s2.Add(wq.Mul(q))
		}
	}
	sx.Store(sumqx)
	s2.Store(sumq2)
	archsimd.ClearAVXUpperBits()
}
