//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import "simd/archsimd"

// tritsOf with AVX-512: the block's largest |x| bits by lane maxima folded
// across the lanes, its inverse by one VDIVPS, then 16 trits at a time from the
// products' bits, as tritsOfGeneric computes them (the same float32 products).

func init() {
	if archsimd.X86.AVX512() {
		tritsOf = tritsOfAVX512
	}
}

// laneXor[k] holds, for each lane i, lane i^(8>>k): the permutations that fold
// 16 lanes onto one.
var laneXor = func() (t [4][16]uint32) {
	for k := range t {
		for i := range t[k] {
			t[k][i] = uint32(i ^ (8 >> k))
		}
	}
	return t
}()

//go:noinline
func tritsOfAVX512(t *[qkK]uint8, x []float32) uint32 {
	x = x[:qkK:qkK]
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	var m archsimd.Uint32x16
	for i := 0; i < qkK; i += 16 {
		m = m.Max(archsimd.LoadFloat32x16Slice(x[i : i+16]).AsUint32x16().And(absM))
	}
	for k := range laneXor {
		m = m.Max(m.Permute(archsimd.LoadUint32x16(&laneXor[k])))
	}
	var lanes [16]uint32
	m.Store(&lanes)
	var zeroF archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	d := m.AsFloat32x16()
	id := zeroF.Merge(archsimd.BroadcastFloat32x16(1).Div(d), d.Equal(zeroF))
	var zero archsimd.Uint32x16
	one, two := archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(2)
	halfBits, signBit := archsimd.BroadcastUint32x16(0x3f000000), archsimd.BroadcastUint32x16(0x80000000)
	for i := 0; i < qkK; i += 16 {
		b := archsimd.LoadFloat32x16Slice(x[i : i+16]).Mul(id).AsUint32x16()
		half := b.And(absM).GreaterEqual(halfBits)
		neg := b.GreaterEqual(signBit)
		tr := two.Merge(one, half)         // 2 where |x·id| >= 0.5
		tr = zero.Merge(tr, half.And(neg)) // 0 where x·id <= -0.5
		tr.TruncateToUint8().Store((*[16]uint8)(t[i : i+16]))
	}
	archsimd.ClearAVXUpperBits()
	return lanes[0]
}
