//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import "simd/archsimd"

// mxfp4Codes with AVX-512, a block a step: its maximum folded across the
// lanes, the inverse scale 2^(3 - exponent) made from the maximum's exponent
// bits, and each code as the number of midpoints between the doubled levels
// that |x/d| passes (a midpoint itself goes to the lower level, as the cell
// table), plus 8 for a negative value off level 0.

func init() {
	if archsimd.X86.AVX512() {
		mxfp4Codes = mxfp4CodesAVX512
	}
}

// fp4MidBits are the float32 bits of the midpoints 0.5, 1.5, 2.5, 3.5, 5, 7, 10.
var fp4MidBits = [7]uint32{0x3f000000, 0x3fc00000, 0x40200000, 0x40600000, 0x40a00000, 0x40e00000, 0x41200000}

//go:noinline
func mxfp4CodesAVX512(dst []byte, src []float32, amaxes *[mxfp4Run]uint32) {
	n := min(len(src)/qk, len(dst)/17, mxfp4Run)
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	expM := archsimd.BroadcastUint32x16(0x7f800000)
	invBase := archsimd.BroadcastUint32x16(0x80800000)
	signBit := archsimd.BroadcastUint32x16(0x80000000)
	one, eight, sixteen := archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(8), archsimd.BroadcastUint32x16(16)
	var zero archsimd.Uint32x16
	m0, m1, m2, m3 := archsimd.BroadcastUint32x16(fp4MidBits[0]), archsimd.BroadcastUint32x16(fp4MidBits[1]), archsimd.BroadcastUint32x16(fp4MidBits[2]), archsimd.BroadcastUint32x16(fp4MidBits[3])
	m4, m5, m6 := archsimd.BroadcastUint32x16(fp4MidBits[4]), archsimd.BroadcastUint32x16(fp4MidBits[5]), archsimd.BroadcastUint32x16(fp4MidBits[6])
	f0, f1 := archsimd.LoadUint32x16(&laneXor[0]), archsimd.LoadUint32x16(&laneXor[1])
	f2, f3 := archsimd.LoadUint32x16(&laneXor[2]), archsimd.LoadUint32x16(&laneXor[3])
	var lanes [16]uint32
	for b := range n {
		x := src[qk*b : qk*b+qk]
		v0 := archsimd.LoadFloat32x16Slice(x[0:16])
		v1 := archsimd.LoadFloat32x16Slice(x[16:32])
		m := v0.AsUint32x16().And(absM).Max(v1.AsUint32x16().And(absM))
		m = m.Max(m.Permute(f0))
		m = m.Max(m.Permute(f1))
		m = m.Max(m.Permute(f2))
		m = m.Max(m.Permute(f3))
		m.Store(&lanes)
		amaxes[b] = lanes[0]
		inv := invBase.Sub(m.And(expM)).AsFloat32x16()
		var code [2]archsimd.Uint32x16
		for h, v := range [2]archsimd.Float32x16{v0, v1} {
			y := v.Mul(inv).AsUint32x16()
			a := y.And(absM)
			c := zero.Add(one).Merge(zero, a.Greater(m0))
			c = c.Add(one).Merge(c, a.Greater(m1))
			c = c.Add(one).Merge(c, a.Greater(m2))
			c = c.Add(one).Merge(c, a.Greater(m3))
			c = c.Add(one).Merge(c, a.Greater(m4))
			c = c.Add(one).Merge(c, a.Greater(m5))
			c = c.Add(one).Merge(c, a.Greater(m6))
			code[h] = c.Add(eight).Merge(c, y.GreaterEqual(signBit).And(c.Greater(zero)))
		}
		code[0].Add(code[1].Mul(sixteen)).TruncateToUint8().StoreSlice(dst[17*b+1 : 17*b+17])
	}
	archsimd.ClearAVXUpperBits()
}
