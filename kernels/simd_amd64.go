//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"encoding/binary"
	"math/bits"
	"simd/archsimd"
	"unsafe"
)

// AVX-512 fast paths for the legacy quantizers and f16 -> f32, and
// AVX2 paths for the f32 vector loops, built with GOEXPERIMENT=simd. Each
// vector operation is a separate IEEE float32 operation in the same order as
// the reference (the tests compare bytes), so results are identical for
// finite input. For NaN or Inf input (which callers refuse, as llama.cpp
// does) the bytes may differ from the reference.
//
// The vector loops contain no scalar float instructions: Go encodes those as
// legacy SSE, and SSE code running while the upper vector state is dirty is
// extremely slow on some CPUs (about 1 µs per transition here, by perf). Two
// less obvious sources are avoided too: BroadcastFloat32x16(0) (a legacy
// XORPS) and ShiftAllRight on 32-bit lanes (its count goes through a legacy
// MOVQ); `objdump -d` of the kernels shows no SSE instruction after the
// first vector one. Every kernel clears that state (VZEROUPPER) before it
// returns; the rare blocks that need the scalar reference are handed back
// to the caller, outside the vector loop.
//
// The Q8_0, Q4_0 and Q4_1 kernels take 16 blocks at a time: fold16 reduces
// them to one vector of 16 maxima and one of 16 minima, so the scales and
// their inverses of 16 blocks take one division each, and their f16 bits
// one conversion (f16x16).

func init() {
	if archsimd.X86.AVX512() {
		quantMaxQ8_0 = runBlocks(q8_0Run, quantQ8_0Generic, 34)
		quantMaxQ4_0 = runBlocks(q4_0Run, quantQ4_0Generic, 18)
		quantMaxQ4_1 = runBlocks(q4_1Run, quantQ4_1Generic, 20)
		quantQ8_0 = dropMax(quantMaxQ8_0)
		quantQ4_0 = dropMax(quantMaxQ4_0)
		quantQ4_1 = dropMax(quantMaxQ4_1)
		f16ToF32 = f16ToF32AVX512
		f32ToF16 = f32ToF16AVX512
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

// runBlocks drives a vector block kernel: run quantizes blocks until it meets
// one it does not handle and returns how many it did, and the largest |x| of
// those as float32 bits; that block goes to the scalar reference. The result
// is the largest |x| bits of all of src (NaN above infinity above any finite
// value), which QuantizeChecked compares with its limit.
func runBlocks(run func(dst []byte, src []float32) (int, uint32), ref func([]byte, []float32), bs int) func([]byte, []float32) uint32 {
	return func(dst []byte, src []float32) uint32 {
		var m uint32
		for len(src) >= qk {
			k, km := run(dst, src)
			m = max(m, km)
			src, dst = src[k*qk:], dst[k*bs:]
			if len(src) >= qk {
				m = max(m, absMaxBits(src[:qk]))
				ref(dst[:bs], src[:qk])
				src, dst = src[qk:], dst[bs:]
			}
		}
		return m
	}
}

func dropMax(f func([]byte, []float32) uint32) func([]byte, []float32) {
	return func(dst []byte, src []float32) { f(dst, src) }
}

// maxOf returns the largest of the 16 lanes of a vector stored by a kernel
// (once per call, after it cleared the upper vector state).
func maxOf(t *[16]uint32) uint32 {
	var r uint32
	for _, v := range t {
		r = max(r, v)
	}
	return r
}

func f32bits(x []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// lanes holds the permutations that fold 16 lanes in halves.
type lanes struct{ r8, r4, r2, r1 archsimd.Uint32x16 }

func newLanes() lanes {
	var a, b, c, d [16]uint32
	for i := range 16 {
		a[i], b[i], c[i], d[i] = uint32(i^8), uint32(i^4), uint32(i^2), uint32(i^1)
	}
	return lanes{archsimd.LoadUint32x16(&a), archsimd.LoadUint32x16(&b), archsimd.LoadUint32x16(&c), archsimd.LoadUint32x16(&d)}
}

// lane0 returns the bits of lane 0 through memory, as an integer.
func lane0(v archsimd.Float32x16, tmp *[16]uint32) uint32 {
	v.AsUint32x16().Store(tmp)
	return tmp[0]
}

// max and min of all lanes, in every lane (exact: max and min do not round).
func (l *lanes) max(v archsimd.Float32x16) archsimd.Float32x16 {
	v = v.Max(v.Permute(l.r8))
	v = v.Max(v.Permute(l.r4))
	v = v.Max(v.Permute(l.r2))
	return v.Max(v.Permute(l.r1))
}

func (l *lanes) min(v archsimd.Float32x16) archsimd.Float32x16 {
	v = v.Min(v.Permute(l.r8))
	v = v.Min(v.Permute(l.r4))
	v = v.Min(v.Permute(l.r2))
	return v.Min(v.Permute(l.r1))
}

func putF16Bits(b []byte, h uint16) { b[0], b[1] = byte(h), byte(h>>8) }

// q8_0Run quantizes groups of 16 blocks with q8_0Run16, the last blocks
// with q8_0Run1.
func q8_0Run(dst []byte, src []float32) (int, uint32) {
	n, m := q8_0Run16(dst, src)
	k, km := q8_0Run1(dst[n*34:], src[n*qk:])
	return n + k, max(m, km)
}

// q8_0Run16 quantizes 16 blocks at a time like q4_1Run16: the largest |x|
// of a block is the larger of its maximum and minus its minimum (as +0 for a
// block of zeros, like the reference).
//
//go:noinline
func q8_0Run16(dst []byte, src []float32) (int, uint32) {
	var tmp [16]uint32
	var hdr [16]uint16
	var r ranges
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	var m archsimd.Uint32x16     // largest |x| bits per lane
	n := 0
	for len(src) >= 16*qk {
		fold16(src, &r)
		hi, lo := archsimd.LoadFloat32x16(&r.hi), archsimd.LoadFloat32x16(&r.lo)
		m = m.Max(archsimd.LoadUint32x16(&r.abs))
		absM := archsimd.BroadcastUint32x16(0x7fffffff)
		amax := hi.Max(zero.Sub(lo)).AsUint32x16().And(absM).AsFloat32x16()
		d := amax.Div(archsimd.BroadcastFloat32x16(127))
		one := archsimd.BroadcastFloat32x16(1)
		id := zero.Merge(one.Div(d), d.Equal(zero))
		f16x16(d).TruncateToUint16().Store(&hdr)
		signM := archsimd.BroadcastUint32x16(0x80000000)
		half := archsimd.BroadcastFloat32x16(0.5)
		roundAway := func(p archsimd.Float32x16) archsimd.Int32x16 {
			r := p.TruncScaled(0)
			up := p.Sub(r).AsUint32x16().And(absM).AsFloat32x16().GreaterEqual(half)
			step := one.AsUint32x16().Or(p.AsUint32x16().And(signM)).AsFloat32x16()
			return r.Add(step.Masked(up)).ConvertToInt32()
		}
		step := archsimd.BroadcastUint32x16(1)
		var sel archsimd.Uint32x16 // b in every lane
		for b := range 16 {
			ib := id.Permute(sel)
			sel = sel.Add(step)
			x, q := src[b*qk:][:qk], dst[b*34:][:34]
			binary.LittleEndian.PutUint16(q, hdr[b])
			roundAway(archsimd.LoadFloat32x16Slice(x[0:16]).Mul(ib)).TruncateToInt8().AsUint8x16().StoreSlice(q[2:18])
			roundAway(archsimd.LoadFloat32x16Slice(x[16:32]).Mul(ib)).TruncateToInt8().AsUint8x16().StoreSlice(q[18:34])
		}
		n += 16
		src, dst = src[16*qk:], dst[16*34:]
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// q8_0Run1 quantizes one block at a time.
//
//go:noinline
func q8_0Run1(dst []byte, src []float32) (int, uint32) {
	var tmp [16]uint32
	l := newLanes()
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	signM := archsimd.BroadcastUint32x16(0x80000000)
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	one := archsimd.BroadcastFloat32x16(1)
	half := archsimd.BroadcastFloat32x16(0.5)
	c127 := archsimd.BroadcastFloat32x16(127)
	roundAway := func(p archsimd.Float32x16) archsimd.Int32x16 {
		r := p.TruncScaled(0)
		up := p.Sub(r).AsUint32x16().And(absM).AsFloat32x16().GreaterEqual(half)
		step := one.AsUint32x16().Or(p.AsUint32x16().And(signM)).AsFloat32x16()
		return r.Add(step.Masked(up)).ConvertToInt32()
	}
	var m archsimd.Uint32x16 // largest |x| bits per lane
	n := 0
	for ; len(src) >= qk; src, dst, n = src[qk:], dst[34:], n+1 {
		v0 := archsimd.LoadFloat32x16Slice(src[0:16])
		v1 := archsimd.LoadFloat32x16Slice(src[16:32])
		b0, b1 := v0.AsUint32x16().And(absM), v1.AsUint32x16().And(absM)
		m = m.Max(b0).Max(b1)
		d := l.max(b0.AsFloat32x16().Max(b1.AsFloat32x16())).Div(c127)
		id := zero.Merge(one.Div(d), d.Equal(zero))
		putF16Bits(dst, f16FromBits(lane0(d, &tmp)))
		roundAway(v0.Mul(id)).TruncateToInt8().AsUint8x16().StoreSlice(dst[2:18])
		roundAway(v1.Mul(id)).TruncateToInt8().AsUint8x16().StoreSlice(dst[18:34])
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// q4_0Run quantizes groups of 16 blocks with q4_0Run16, the last blocks
// with q4_0Run1.
func q4_0Run(dst []byte, src []float32) (int, uint32) {
	n, m := q4_0Run16(dst, src)
	k, km := q4_0Run1(dst[n*18:], src[n*qk:])
	return n + k, max(m, km)
}

// firstAbs returns the bits of the first value of x whose magnitude has the
// bits a (a itself if there is none): the value the reference's scan keeps
// where the fold cannot tell which of several it met first. Integer
// instructions only, so the vector loops may call it.
func firstAbs(x []float32, a uint32) uint32 {
	for _, b := range f32bits(x) {
		if b&0x7fffffff == a {
			return b
		}
	}
	return a
}

// q4_0Run16 quantizes 16 blocks at a time like q4_1Run16. The reference's
// scale is the first value of largest magnitude over -8: from the fold, that
// is the maximum when it is larger than minus the minimum, the minimum when
// smaller, +0 when both are zero; on a tie of nonzero values (+a and -a both
// present) firstAbs looks for the first.
//
//go:noinline
func q4_0Run16(dst []byte, src []float32) (int, uint32) {
	var tmp, vb [16]uint32
	var hdr [16]uint16
	var r ranges
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	var m archsimd.Uint32x16     // largest |x| bits per lane
	n := 0
	for len(src) >= 16*qk {
		fold16(src, &r)
		hi, lo := archsimd.LoadFloat32x16(&r.hi), archsimd.LoadFloat32x16(&r.lo)
		m = m.Max(archsimd.LoadUint32x16(&r.abs))
		nlo := zero.Sub(lo) // exact
		pos, neg := hi.Greater(nlo), nlo.Greater(hi)
		v := hi.Merge(lo.Merge(zero, neg), pos) // pos: hi, neg: lo, else +0
		if tie := ^(pos.Or(neg).ToBits()) &^ hi.Equal(zero).ToBits(); tie != 0 {
			v.AsUint32x16().Store(&vb)
			for ; tie != 0; tie &= tie - 1 {
				b := bits.TrailingZeros16(tie)
				vb[b] = firstAbs(src[b*qk:][:qk], f32bits(r.hi[:])[b]&0x7fffffff)
			}
			v = archsimd.LoadUint32x16(&vb).AsFloat32x16()
		}
		d := v.Mul(archsimd.BroadcastFloat32x16(-0.125)) // rounds exactly as v / -8
		id := zero.Merge(archsimd.BroadcastFloat32x16(1).Div(d), d.Equal(zero))
		f16x16(d).TruncateToUint16().Store(&hdr)
		add := archsimd.BroadcastFloat32x16(8.5)
		top := archsimd.BroadcastInt32x16(15)
		step := archsimd.BroadcastUint32x16(1)
		var sel archsimd.Uint32x16 // b in every lane
		for b := range 16 {
			ib := id.Permute(sel)
			sel = sel.Add(step)
			x, q := src[b*qk:][:qk], dst[b*18:][:18]
			binary.LittleEndian.PutUint16(q, hdr[b])
			q0 := archsimd.LoadFloat32x16Slice(x[0:16]).Mul(ib).Add(add).ConvertToInt32().Min(top)
			q1 := archsimd.LoadFloat32x16Slice(x[16:32]).Mul(ib).Add(add).ConvertToInt32().Min(top)
			q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(q[2:18])
		}
		n += 16
		src, dst = src[16*qk:], dst[16*18:]
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// q4_0Run1 quantizes one block at a time.
//
//go:noinline
func q4_0Run1(dst []byte, src []float32) (int, uint32) {
	var tmp [16]uint32
	l := newLanes()
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	one := archsimd.BroadcastFloat32x16(1)
	negEighth := archsimd.BroadcastFloat32x16(-0.125) // x * -0.125 rounds exactly as x / -8
	add := archsimd.BroadcastFloat32x16(8.5)
	top := archsimd.BroadcastInt32x16(15)
	var m archsimd.Uint32x16 // largest |x| bits per lane
	n := 0
	for ; len(src) >= qk; src, dst, n = src[qk:], dst[18:], n+1 {
		xb := f32bits(src[:qk])
		v0 := archsimd.LoadFloat32x16Slice(src[0:16])
		v1 := archsimd.LoadFloat32x16Slice(src[16:32])
		b0, b1 := v0.AsUint32x16().And(absM), v1.AsUint32x16().And(absM)
		m = m.Max(b0).Max(b1)
		a0, a1 := b0.AsFloat32x16(), b1.AsFloat32x16()
		am := l.max(a0.Max(a1))
		// The first element of largest magnitude, or +0 for an all-zero block.
		var mbits uint32
		if lane0(am, &tmp) != 0 {
			hits := uint32(a0.Equal(am).ToBits()) | uint32(a1.Equal(am).ToBits())<<16
			mbits = xb[bits.TrailingZeros32(hits)&31]
		}
		d := archsimd.BroadcastUint32x16(mbits).AsFloat32x16().Mul(negEighth)
		id := zero.Merge(one.Div(d), d.Equal(zero))
		putF16Bits(dst, f16FromBits(lane0(d, &tmp)))
		q0 := v0.Mul(id).Add(add).ConvertToInt32().Min(top)
		q1 := v1.Mul(id).Add(add).ConvertToInt32().Min(top)
		q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(dst[2:18])
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// q4_1Run quantizes groups of 16 blocks with q4_1Run16, then the last
// blocks one at a time with q4_1Run1, which stops before a block with a zero
// minimum or maximum (the caller's scalar reference quantizes it).
func q4_1Run(dst []byte, src []float32) (int, uint32) {
	n, m := q4_1Run16(dst, src)
	k, km := q4_1Run1(dst[n*20:], src[n*qk:])
	return n + k, max(m, km)
}

// foldIdx holds the permutations that fold 16 vectors into one whose lane b
// is the maximum (or minimum) of vector b's lanes. Each of the 4 levels
// merges pairs of vectors: every group of lanes keeps its first half through
// foldIdx[l][0] and its second half through foldIdx[l][1], and a max (min)
// of the two halves the group's reduction, so 15 merges of 3 instructions
// reduce 16 blocks, where folding each block alone takes 8 per block.
var foldIdx = func() (t [4][2][16]uint32) {
	for l, s := range [4]int{16, 8, 4, 2} { // lanes per group in each input
		for i := range 16 {
			g, j := i/(s/2), i%(s/2)
			t[l][0][i], t[l][1][i] = uint32(g*s+j), uint32(g*s+s/2+j)
		}
	}
	return t
}()

func foldMax(x, y archsimd.Float32x16, a, b archsimd.Uint32x16) archsimd.Float32x16 {
	return x.ConcatPermute(y, a).Max(x.ConcatPermute(y, b))
}

func foldMin(x, y archsimd.Float32x16, a, b archsimd.Uint32x16) archsimd.Float32x16 {
	return x.ConcatPermute(y, a).Min(x.ConcatPermute(y, b))
}

// f16c holds f16x16's constants (loaded from memory where used, which keeps
// the function small enough to inline into the kernel loops). The shifts
// take their counts from vectors: Go builds the count of ShiftAllRight in a
// register with a legacy SSE MOVQ, which stalls while the upper vector state
// is dirty.
var f16c = struct{ sign, bias, one, s13, s16, half, small, big, inf, inf16, nan16 [16]uint32 }{}

func init() {
	for i := range 16 {
		f16c.sign[i], f16c.bias[i], f16c.one[i] = 0x80000000, 0xc8000fff, 1 // bias: (15-127)<<23 + 0xfff
		f16c.s13[i], f16c.s16[i] = 13, 16
		f16c.half[i], f16c.small[i], f16c.big[i] = 126<<23, 113<<23, 143<<23
		f16c.inf[i], f16c.inf16[i], f16c.nan16[i] = 0x7f800000, 0x7c00, 0x7e00
	}
}

// f16x16 converts 16 float32 lanes to IEEE half bits (in the low 16 bits of
// each lane), rounding to nearest even exactly as f16FromBits does for every
// input: normal halves by adding the rounding bias to the bits, subnormal
// halves by a float32 addition of 0.5 (whose ulp, 2^-24, is the subnormal
// half's step), overflow to infinity, NaN to 0x7e00.
func f16x16(v archsimd.Float32x16) archsimd.Uint32x16 {
	c := &f16c
	b := v.AsUint32x16()
	sign := b.And(archsimd.LoadUint32x16(&c.sign))
	a := b.Xor(sign)
	s13 := archsimd.LoadUint32x16(&c.s13)
	nrm := a.Add(archsimd.LoadUint32x16(&c.bias)).Add(a.ShiftRight(s13).And(archsimd.LoadUint32x16(&c.one))).ShiftRight(s13)
	half := archsimd.LoadUint32x16(&c.half)
	sub := a.AsFloat32x16().Add(half.AsFloat32x16()).AsUint32x16().Sub(half)
	h := sub.Merge(nrm, a.Less(archsimd.LoadUint32x16(&c.small)))
	h = archsimd.LoadUint32x16(&c.inf16).Merge(h, a.GreaterEqual(archsimd.LoadUint32x16(&c.big)))
	h = archsimd.LoadUint32x16(&c.nan16).Merge(h, a.Greater(archsimd.LoadUint32x16(&c.inf)))
	return h.Or(sign.ShiftRight(archsimd.LoadUint32x16(&c.s16)))
}

// ranges holds, lane b for block b of 16, the largest and smallest value
// and the largest |x| bits.
type ranges struct {
	hi, lo [16]float32
	abs    [16]uint32
}

// fold16 measures 16 blocks (512 values) into r: max and min are exact (they
// do not round), except that the sign of a zero result may differ from the
// reference's scan. Its own function, called once per 16 blocks, because
// the fold's live vectors leave too few of Go's 15 vector registers for the
// quantizing loop around it.
//
//go:noinline
func fold16(x []float32, r *ranges) {
	x = x[:16*qk]
	ia0, ib0 := archsimd.LoadUint32x16(&foldIdx[0][0]), archsimd.LoadUint32x16(&foldIdx[0][1])
	ia1, ib1 := archsimd.LoadUint32x16(&foldIdx[1][0]), archsimd.LoadUint32x16(&foldIdx[1][1])
	ia2, ib2 := archsimd.LoadUint32x16(&foldIdx[2][0]), archsimd.LoadUint32x16(&foldIdx[2][1])
	ia3, ib3 := archsimd.LoadUint32x16(&foldIdx[3][0]), archsimd.LoadUint32x16(&foldIdx[3][1])
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	var m archsimd.Uint32x16
	// Fold 8 pairs of blocks, merging each level as soon as both halves
	// are there (a binary counter over p).
	var h1, l1, h2, l2, h3, l3 archsimd.Float32x16
	for p := 0; p < 8; p++ {
		y := x[p*2*qk:][:2*qk]
		a0 := archsimd.LoadFloat32x16Slice(y[0:16])
		a1 := archsimd.LoadFloat32x16Slice(y[16:32])
		b0 := archsimd.LoadFloat32x16Slice(y[32:48])
		b1 := archsimd.LoadFloat32x16Slice(y[48:64])
		m = m.Max(a0.AsUint32x16().And(absM)).Max(a1.AsUint32x16().And(absM)).
			Max(b0.AsUint32x16().And(absM)).Max(b1.AsUint32x16().And(absM))
		h := foldMax(a0.Max(a1), b0.Max(b1), ia0, ib0)
		l := foldMin(a0.Min(a1), b0.Min(b1), ia0, ib0)
		if p&1 == 0 {
			h1, l1 = h, l
			continue
		}
		h, l = foldMax(h1, h, ia1, ib1), foldMin(l1, l, ia1, ib1)
		if p&2 == 0 {
			h2, l2 = h, l
			continue
		}
		h, l = foldMax(h2, h, ia2, ib2), foldMin(l2, l, ia2, ib2)
		if p&4 == 0 {
			h3, l3 = h, l
			continue
		}
		foldMax(h3, h, ia3, ib3).Store(&r.hi)
		foldMin(l3, l, ia3, ib3).Store(&r.lo)
	}
	m.Store(&r.abs)
}

// q4_1Run16 quantizes 16 blocks at a time: one fold finds their 16 minima
// and maxima, one division their 16 scales, one more the 16 inverses (the
// reference's IEEE operations, lane by lane), and one f16 conversion each
// their scales and minima. A zero minimum or maximum is the first zero of
// the block in the reference's scan (with its sign); firstAbs finds it.
//
//go:noinline
func q4_1Run16(dst []byte, src []float32) (int, uint32) {
	var tmp, hdr [16]uint32
	var r ranges
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	var m archsimd.Uint32x16     // largest |x| bits per lane
	n := 0
	for len(src) >= 16*qk {
		fold16(src, &r)
		hi, lo := archsimd.LoadFloat32x16(&r.hi), archsimd.LoadFloat32x16(&r.lo)
		m = m.Max(archsimd.LoadUint32x16(&r.abs))
		if loZ, hiZ := lo.Equal(zero).ToBits(), hi.Equal(zero).ToBits(); loZ|hiZ != 0 {
			lb, hb := f32bits(r.lo[:]), f32bits(r.hi[:])
			for z := loZ | hiZ; z != 0; z &= z - 1 {
				b := bits.TrailingZeros16(z)
				first := firstAbs(src[b*qk:][:qk], 0)
				if loZ>>b&1 != 0 {
					lb[b] = first
				}
				if hiZ>>b&1 != 0 {
					hb[b] = first
				}
			}
			hi, lo = archsimd.LoadFloat32x16(&r.hi), archsimd.LoadFloat32x16(&r.lo)
		}
		d := hi.Sub(lo).Div(archsimd.BroadcastFloat32x16(15))
		id := zero.Merge(archsimd.BroadcastFloat32x16(1).Div(d), d.Equal(zero))
		f16x16(d).Or(f16x16(lo).ShiftAllLeft(16)).Store(&hdr)
		add := archsimd.BroadcastFloat32x16(0.5)
		top := archsimd.BroadcastInt32x16(15)
		step := archsimd.BroadcastUint32x16(1)
		var sel archsimd.Uint32x16 // b in every lane
		for b := range 16 {
			lb, ib := lo.Permute(sel), id.Permute(sel)
			sel = sel.Add(step)
			x, q := src[b*qk:][:qk], dst[b*20:][:20]
			binary.LittleEndian.PutUint32(q, hdr[b])
			q0 := archsimd.LoadFloat32x16Slice(x[0:16]).Sub(lb).Mul(ib).Add(add).ConvertToInt32().Min(top)
			q1 := archsimd.LoadFloat32x16Slice(x[16:32]).Sub(lb).Mul(ib).Add(add).ConvertToInt32().Min(top)
			q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(q[4:20])
		}
		n += 16
		src, dst = src[16*qk:], dst[16*20:]
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// q4_1Run1 quantizes one block at a time.
//
//go:noinline
func q4_1Run1(dst []byte, src []float32) (int, uint32) {
	var tmp [16]uint32
	l := newLanes()
	absM := archsimd.BroadcastUint32x16(0x7fffffff)
	var zero archsimd.Float32x16 // not a broadcast: Go would build the 0 with a legacy SSE XORPS
	one := archsimd.BroadcastFloat32x16(1)
	add := archsimd.BroadcastFloat32x16(0.5)
	c15 := archsimd.BroadcastFloat32x16(15)
	top := archsimd.BroadcastInt32x16(15)
	var m archsimd.Uint32x16 // largest |x| bits per lane
	n := 0
	for ; len(src) >= qk; src, dst, n = src[qk:], dst[20:], n+1 {
		v0 := archsimd.LoadFloat32x16Slice(src[0:16])
		v1 := archsimd.LoadFloat32x16Slice(src[16:32])
		lo := l.min(v0.Min(v1))
		hi := l.max(v0.Max(v1))
		lb, hb := lane0(lo, &tmp), lane0(hi, &tmp)
		if lb<<1 == 0 || hb<<1 == 0 {
			break // a zero extreme: its sign depends on element order
		}
		m = m.Max(v0.AsUint32x16().And(absM)).Max(v1.AsUint32x16().And(absM))
		d := hi.Sub(lo).Div(c15)
		id := zero.Merge(one.Div(d), d.Equal(zero))
		putF16Bits(dst, f16FromBits(lane0(d, &tmp)))
		putF16Bits(dst[2:], f16FromBits(lb))
		q0 := v0.Sub(lo).Mul(id).Add(add).ConvertToInt32().Min(top)
		q1 := v1.Sub(lo).Mul(id).Add(add).ConvertToInt32().Min(top)
		q0.Or(q1.ShiftAllLeft(4)).TruncateToInt8().AsUint8x16().StoreSlice(dst[4:20])
	}
	m.Store(&tmp)
	archsimd.ClearAVXUpperBits()
	return n, maxOf(&tmp)
}

// f32ToF16AVX512 converts 16 values at a time with f16x16 (the same bits as
// F32ToF16Bits for every input, NaN included), the rest with the reference.
func f32ToF16AVX512(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := f32ToF16Run(dst, src)
	f32ToF16Generic(dst[n:], src[n:])
}

//go:noinline
func f32ToF16Run(dst []uint16, src []float32) int {
	i := 0
	for ; i+16 <= len(src); i += 16 {
		f16x16(archsimd.LoadFloat32x16Slice(src[i : i+16])).TruncateToUint16().StoreSlice(dst[i : i+16])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

// f16ToF32AVX512 widens 16 halves at a time when all are zero or normal;
// groups with subnormals, infinities or NaNs use the scalar reference.
func f16ToF32AVX512(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for len(src) >= 16 {
		k := f16ToF32Run(dst, src)
		dst, src = dst[k:], src[k:]
		if len(src) >= 16 {
			f16ToF32Generic(dst[:16], src[:16])
			dst, src = dst[16:], src[16:]
		}
	}
	f16ToF32Generic(dst, src)
}

//go:noinline
func f16ToF32Run(dst []float32, src []uint16) int {
	expM := archsimd.BroadcastUint32x16(0x7c00)
	magM := archsimd.BroadcastUint32x16(0x7fff)
	sgn := archsimd.BroadcastUint32x16(0x8000)
	zero := archsimd.BroadcastUint32x16(0)
	bias := archsimd.BroadcastUint32x16(112 << 23)
	i := 0
	for ; i+16 <= len(src); i += 16 {
		h := archsimd.LoadUint16x16Slice(src[i : i+16]).ExtendToUint32()
		e := h.And(expM)
		m := h.And(magM)
		if e.Greater(zero).And(e.Less(expM)).Or(m.Equal(zero)).ToBits() != 0xffff {
			break
		}
		f := m.ShiftAllLeft(13).Add(bias).Masked(m.Greater(zero)).Or(h.And(sgn).ShiftAllLeft(16))
		f.AsFloat32x16().StoreSlice(dst[i : i+16])
	}
	archsimd.ClearAVXUpperBits()
	return i
}

//go:noinline
func dotAVX2(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var s [8]float32
	var acc archsimd.Float32x8
	for i := 0; i < n; i += 8 {
		va := archsimd.LoadFloat32x8Slice(a[i : i+8])
		vb := archsimd.LoadFloat32x8Slice(b[i : i+8])
		acc = acc.Add(va.Mul(vb))
	}
	acc.Store(&s)
	archsimd.ClearAVXUpperBits()
	return reduce8(&s) + dotTail(a[n:], b[n:])
}

func axpyAVX2(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	n := axpyRun(y, math32bits(alpha), x)
	axpyGeneric(y[n:], alpha, x[n:])
}

func math32bits(f float32) uint32 { return *(*uint32)(unsafe.Pointer(&f)) }

//go:noinline
func axpyRun(y []float32, alphaBits uint32, x []float32) int {
	n := len(y) &^ 7
	va := archsimd.BroadcastUint32x8(alphaBits).AsFloat32x8()
	for i := 0; i < n; i += 8 {
		vy := archsimd.LoadFloat32x8Slice(y[i : i+8])
		vx := archsimd.LoadFloat32x8Slice(x[i : i+8])
		vy.Add(va.Mul(vx)).StoreSlice(y[i : i+8])
	}
	archsimd.ClearAVXUpperBits()
	return n
}
