package kernels

import (
	"encoding/binary"
	"math"
)

// K-quants: 256-element super-blocks. The quantizers mirror ggml's
// quantize_row_q*_K_ref with no importance matrix, including the helper
// searches (make_qx_quants, make_q3_quants, make_qkx2_quants) and their exact
// float32 evaluation order.

const qkK = 256 // elements per K super-block

const groupMaxEps = 1e-15

// nearestInt is ggml's nearest_int: round to nearest even by adding 1.5·2^23
// in float32 and reading the mantissa. Valid for |f| <= 4194303, like ggml.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// signedMax returns the value of largest magnitude (the first one on ties, as ggml's
// loops keep it) and that magnitude.
func signedMax(x []float32) (maxv, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	return maxv, amax
}

// makeQXQuants is make_qx_quants with rmse_type 1 and no importance weights: the
// weights are x², and x is a sub-block of at most 16 values. L gets values
// 0..2·nmax-1.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	var w [16]float32
	for i, v := range x {
		w[i] = float32(v * v)
	}
	return makeQXQuantsW(nmax, x, L, w[:len(x)])
}

// makeQ3Quants is make_q3_quants with do_rmse: start from nmax/max and move
// single values while the x²-weighted fit improves. L gets 0..2·nmax-1.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	maxv, amax := signedMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
		L[i] = int8(l)
		w := float32(v * v)
		fl := float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				nl := max(-nmax, min(nmax-1, nearestInt(float32(v*sl2)/slx)))
				if nl != int32(L[i]) {
					fn := float32(nl)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(nl)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	return sumlx / suml2
}

// makeQKX2Quants is make_qkx2_quants: an asymmetric (scale, min) fit that
// tries nstep+1 scales and keeps the one with the smallest weighted error
// (absolute when useMad, else squared). It returns the scale and -min.
func makeQKX2Quants(nmax int32, x, weights []float32, L, Laux []uint8,
	rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
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
	for i, v := range x {
		l := max(0, min(nmax, nearestInt(float32(iscale*(v-minv)))))
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+minv) - v
		if useMad {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestMad += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -minv
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + fmax) / (maxv - minv)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := max(0, min(nmax, nearestInt(float32(iscale*(v-minv)))))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var mad float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - v
				if useMad {
					diff = abs32(diff)
				} else {
					diff = float32(diff * diff)
				}
				mad += float32(weights[i] * diff)
			}
			if mad < bestMad {
				copy(L[:n], Laux[:n])
				bestMad = mad
				scale = thisScale
				minv = thisMin
			}
		}
	}
	return scale, -minv
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j from the 12
// packed bytes of Q4_K and Q5_K.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// ---- Q2_K: scales[16] · qs[64] · d · dmin (84 bytes)

func quantQ2_KGeneric(dst []byte, src []float32) { quantQ2_KWith(dst, src, nil) }

// quantQ2_KWith quantizes with fits16 fitting the 16 sub-blocks when it is
// not nil, else with the reference.
func quantQ2_KWith(dst []byte, src []float32, fits16 func(x []float32, L []uint8, scales, mins *[16]float32)) {
	var L [qkK]uint8
	var Laux [16]uint8
	var weights [16]float32
	var mins, scales [16]float32
	const q4scale = 15
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[84:] {
		x := src[:qkK]
		y := dst[:84]
		var maxScale, maxMin float32
		if fits16 != nil {
			fits16(x, L[:], &scales, &mins)
		} else {
			for j := range 16 {
				xs := x[16*j : 16*j+16]
				for l, v := range xs {
					weights[l] = abs32(v)
				}
				scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:16*j+16], Laux[:], -0.5, 0.1, 15, true)
			}
		}
		for j := range 16 {
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		sc := y[0:16]
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putF16(y[80:], maxScale/q4scale)
		} else {
			clear(sc)
			putF16(y[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			putF16(y[82:], maxMin/q4scale)
		} else {
			putF16(y[82:], 0)
		}
		dAll, mAll := getF16(y[80:]), getF16(y[82:])
		for j := range 16 {
			d := float32(dAll * float32(sc[j]&0xf))
			if d == 0 {
				continue
			}
			dm := float32(mAll * float32(sc[j]>>4))
			for ii := range 16 {
				l := nearestInt((x[16*j+ii] + dm) / d)
				L[16*j+ii] = uint8(max(0, min(3, l)))
			}
		}
		packCrumbs(y[16:80], L[:])
	}
}

// packCrumbs packs 2-bit values as Q2_K and Q3_K do: per 128 values, byte l
// holds values l, l+32, l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7.
func packCrumbs(qs []byte, L []uint8) {
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func dequantQ2_K(dst []float32, src []byte) {
	for ; len(src) >= 84; src, dst = src[84:], dst[qkK:] {
		d, m := getF16(src[80:]), getF16(src[82:])
		sc := src[0:16]
		y := dst[:qkK]
		is := 0
		for n := 0; n < qkK; n += 128 {
			q := src[16+n/4 : 16+n/4+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					s := sc[is]
					is++
					dl := float32(d * float32(s&0xf))
					ml := float32(m * float32(s>>4))
					for l := range 16 {
						y[l] = float32(dl*float32((q[l+16*half]>>shift)&3)) - ml
					}
					y = y[16:]
				}
			}
		}
	}
}

// ---- Q3_K: hmask[32] · qs[64] · scales[12] · d (110 bytes)

// quantQ3_KGeneric is quantize_row_q3_K_ref.
func quantQ3_KGeneric(dst []byte, src []float32) {
	var dj [16]float32
	var L [qkK]int8
	var scales [16]float32
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[110:] {
		x := src[:qkK]
		y := dst[:110]
		for j := range 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
		}
		q3Scales(y, &scales, &dj)
		requantize16(x, &dj, nil, L[:], 4, nil)
		packQ3K(y, &L)
	}
}

// requant16Func computes the final levels of Q3_K and Q6_K for 16
// sub-blocks of 16 with scales d (lt[i] is nearest_int(x[i]/d) clamped to
// -nmax..nmax-1, plus nmax; entries of sub-blocks with d == 0 are unused).
type requant16Func func(x []float32, d *[16]float32, lt *[qkK]int32, nmax int32)

// q3Scales stores a Q3_K block's scales (6-bit, relative to the largest in
// magnitude) and d in y, and returns in dj the sub-blocks' scales as the
// stored bytes give them, which the final levels are computed against.
func q3Scales(y []byte, scales, dj *[16]float32) {
	var maxScale, amax float32
	for _, s := range scales {
		if a := abs32(s); a > amax {
			amax, maxScale = a, s
		}
	}
	sc := y[96:108]
	clear(sc)
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j, s := range scales {
			l := int32(int8(nearestInt(float32(iscale * s))))
			l = max(-32, min(31, l)) + 32
			if j < 8 {
				sc[j] = uint8(l & 0xf)
			} else {
				sc[j-8] |= uint8(l&0xf) << 4
			}
			l >>= 4
			sc[j%4+8] |= uint8(l << (2 * (j / 4)))
		}
		putF16(y[108:], 1/iscale)
	} else {
		putF16(y[108:], 0)
	}
	dAll := getF16(y[108:])
	for j := range 16 {
		dj[j] = float32(dAll * float32(q3Scale(sc, j)))
	}
}

// packQ3K stores a Q3_K block's 3-bit levels L in y: the high bit as bit planes (hmask)
// and the low two bits as crumbs, in ggml's order. It works on 8 levels at a
// time in a uint64 (levels are 0..7, so no bits cross between bytes): byte l
// of hmask has bit k from level 32k+l, and crumb byte l of each half of 128
// takes levels l, l+32, l+64, l+96.
func packQ3K(y []byte, L *[qkK]int8) {
	const low2, bit2 = 0x0303030303030303, 0x0404040404040404
	y = y[:96]
	for l := 0; l < 32; l += 8 {
		var a [8]uint64
		for k := range a {
			a[k] = levels8(L, 32*k+l)
		}
		var hm uint64
		for k, v := range a {
			hm |= (v & bit2) >> 2 << k
		}
		binary.LittleEndian.PutUint64(y[l:], hm)
		binary.LittleEndian.PutUint64(y[32+l:], a[0]&low2|(a[1]&low2)<<2|(a[2]&low2)<<4|(a[3]&low2)<<6)
		binary.LittleEndian.PutUint64(y[64+l:], a[4]&low2|(a[5]&low2)<<2|(a[6]&low2)<<4|(a[7]&low2)<<6)
	}
}

// levels8 reads L[i:i+8] as a little-endian uint64.
func levels8(L *[qkK]int8, i int) uint64 {
	b := L[i : i+8 : i+8]
	return uint64(uint8(b[0])) | uint64(uint8(b[1]))<<8 | uint64(uint8(b[2]))<<16 | uint64(uint8(b[3]))<<24 |
		uint64(uint8(b[4]))<<32 | uint64(uint8(b[5]))<<40 | uint64(uint8(b[6]))<<48 | uint64(uint8(b[7]))<<56
}

// q3Scale unpacks Q3_K's 6-bit signed scale j from its 12 packed bytes.
func q3Scale(sc []byte, j int) int8 {
	var lo uint8
	if j < 8 {
		lo = sc[j] & 0xf
	} else {
		lo = sc[j-8] >> 4
	}
	hi := (sc[8+j%4] >> (2 * (j / 4))) & 3
	return int8(lo|hi<<4) - 32
}

func dequantQ3_K(dst []float32, src []byte) {
	for ; len(src) >= 110; src, dst = src[110:], dst[qkK:] {
		d := getF16(src[108:])
		hm := src[0:32]
		sc := src[96:108]
		y := dst[:qkK]
		is := 0
		m := uint8(1)
		for n := 0; n < qkK; n += 128 {
			q := src[32+n/4 : 32+n/4+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					dl := float32(d * float32(q3Scale(sc, is)))
					is++
					for l := range 16 {
						v := int32((q[l+16*half] >> shift) & 3)
						if hm[l+16*half]&m == 0 {
							v -= 4
						}
						y[l] = dl * float32(v)
					}
					y = y[16:]
				}
				m <<= 1
			}
		}
	}
}

// ---- Q4_K: d · dmin · scales[12] · qs[128] (144 bytes)
// ---- Q5_K: d · dmin · scales[12] · qh[32] · qs[128] (176 bytes)

// kx2BlockFunc fits the 8 sub-blocks of 32 of a Q4_K or Q5_K super-block as
// kx2Fits does.
type kx2BlockFunc func(x []float32, L []uint8, scales, mins *[8]float32, nmax int32, rmin float32, nstep int)

// kx2Fits fits each sub-block of 32 of x with make_qkx2_quants,
// weighting each value by the sub-block's RMS plus its magnitude.
func kx2Fits(x []float32, L []uint8, scales, mins *[8]float32, nmax int32, rmin float32, nstep int) {
	var Laux [32]uint8
	var weights [32]float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:32*j+32], Laux[:], rmin, 0.1, nstep, false)
	}
}

// quantKX2 runs the shared first half of Q4_K and Q5_K: per 32-element
// sub-block fits, 6-bit packed scales and mins, d and dmin, then the final
// re-quantization of L against the stored (rounded) scales.
func quantKX2(y []byte, x []float32, L []uint8, nmax int32, rmin float32, nstep int, kx2Block kx2BlockFunc) {
	var mins, scales [8]float32
	var maxScale, maxMin float32
	if kx2Block != nil {
		kx2Block(x, L, &scales, &mins, nmax, rmin, nstep)
	} else {
		kx2Fits(x, L, &scales, &mins, nmax, rmin, nstep)
	}
	for j := range 8 {
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(y[0:], maxScale/63)
	putF16(y[2:], maxMin/63)
	dAll, mAll := getF16(y[0:]), getF16(y[2:])
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		d := float32(dAll * float32(s))
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(m))
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
}

func quantQ4_KGeneric(dst []byte, src []float32) { quantQ4_KWith(dst, src, nil) }

func quantQ4_KWith(dst []byte, src []float32, kx2Block kx2BlockFunc) {
	var L [qkK]uint8
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[144:] {
		y := dst[:144]
		clear(y[4:16])
		quantKX2(y, src[:qkK], L[:], 15, -1, 20, kx2Block)
		q := y[16:144]
		for j := 0; j < qkK; j += 64 {
			for l := range 32 {
				q[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

func dequantQ4_K(dst []float32, src []byte) {
	for ; len(src) >= 144; src, dst = src[144:], dst[qkK:] {
		d, mn := getF16(src[0:]), getF16(src[2:])
		sc := src[4:16]
		y := dst[:qkK]
		for j := 0; j < 4; j++ {
			q := src[16+32*j : 16+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			d1, dm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, dm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			for l, b := range q {
				y[64*j+l] = float32(d1*float32(b&0xf)) - dm1
				y[64*j+32+l] = float32(d2*float32(b>>4)) - dm2
			}
		}
	}
}

func quantQ5_KGeneric(dst []byte, src []float32) { quantQ5_KWith(dst, src, nil) }

func quantQ5_KWith(dst []byte, src []float32, kx2Block kx2BlockFunc) {
	var L [qkK]uint8
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[176:] {
		y := dst[:176]
		clear(y[4:16])
		quantKX2(y, src[:qkK], L[:], 31, -0.5, 15, kx2Block)
		packQ5K(y, &L)
	}
}

// packQ5K stores a Q5_K block's 5-bit levels L in y: the low four bits as nibbles
// (ql) and the fifth as bit planes (qh), in ggml's order.
func packQ5K(y []byte, L *[qkK]uint8) {
	qh := y[16:48]
	clear(qh)
	ql := y[48:176]
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < qkK; n += 64 {
		for j := range 32 {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[n/2+j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
	}
}

func dequantQ5_K(dst []float32, src []byte) {
	for ; len(src) >= 176; src, dst = src[176:], dst[qkK:] {
		d, mn := getF16(src[0:]), getF16(src[2:])
		sc := src[4:16]
		qh := src[16:48]
		y := dst[:qkK]
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < 4; j++ {
			ql := src[48+32*j : 48+32*j+32]
			s1, m1 := scaleMinK4(2*j, sc)
			s2, m2 := scaleMinK4(2*j+1, sc)
			d1, dm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, dm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			for l, b := range ql {
				v1, v2 := b&0xf, b>>4
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				y[64*j+l] = float32(d1*float32(v1)) - dm1
				y[64*j+32+l] = float32(d2*float32(v2)) - dm2
			}
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// ---- Q6_K: ql[128] · qh[64] · scales int8[16] · d (210 bytes)

func quantQ6_KGeneric(dst []byte, src []float32) { quantQ6_KWith(dst, src, nil, nil) }

// quantQ6_KWith quantizes with fits16 fitting the 16 sub-blocks and
// requant16 computing the final levels when they are not nil, else with the
// reference.
func quantQ6_KWith(dst []byte, src []float32, fits16 func(x []float32, L []int8, scales *[16]float32), requant16 requant16Func) {
	// (outside the block loop: passed to function values, they escape)
	dj, lt := new([16]float32), new([qkK]int32)
	var L [qkK]int8
	var scales [16]float32
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[210:] {
		x := src[:qkK]
		y := dst[:210]
		var maxScale, maxAbs float32
		if fits16 != nil {
			fits16(x, L[:], &scales)
		} else {
			for ib := range 16 {
				scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			}
		}
		for ib := range 16 {
			s := scales[ib]
			if a := abs32(s); a > maxAbs {
				maxAbs, maxScale = a, s
			}
		}
		if maxAbs < groupMaxEps {
			clear(y)
			continue
		}
		iscale := -128 / maxScale
		putF16(y[208:], 1/iscale)
		sc := y[192:208]
		for ib := range 16 {
			sc[ib] = uint8(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		dAll := getF16(y[208:])
		for j := range 16 {
			dj[j] = float32(dAll * float32(int8(sc[j])))
		}
		requantize16(x, dj, lt, L[:], 32, requant16)
		ql := y[0:128]
		qh := y[128:192]
		for j := 0; j < qkK; j += 128 {
			for l := range 32 {
				q1 := uint8(L[j+l]) & 0xf
				q2 := uint8(L[j+l+32]) & 0xf
				q3 := uint8(L[j+l+64]) & 0xf
				q4 := uint8(L[j+l+96]) & 0xf
				ql[j/2+l] = q1 | q3<<4
				ql[j/2+l+32] = q2 | q4<<4
				qh[j/4+l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
			}
		}
	}
}

func dequantQ6_K(dst []float32, src []byte) {
	for ; len(src) >= 210; src, dst = src[210:], dst[qkK:] {
		d := getF16(src[208:])
		y := dst[:qkK]
		for n := 0; n < 2; n++ {
			ql := src[64*n : 64*n+64]
			qh := src[128+32*n : 128+32*n+32]
			sc := src[192+8*n : 192+8*n+8]
			yy := y[128*n : 128*n+128]
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				yy[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				yy[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				yy[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				yy[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

// ---- Q8_K: d f32 · qs int8[256] · bsums int16[16] (292 bytes)

func quantQ8_KGeneric(dst []byte, src []float32) {
	for ; len(src) >= qkK; src, dst = src[qkK:], dst[292:] {
		x := src[:qkK]
		y := dst[:292]
		maxv, amax := signedMax(x)
		if amax == 0 {
			clear(y)
			continue
		}
		iscale := -127 / maxv
		for j, v := range x {
			y[4+j] = uint8(int8(min(127, nearestInt(float32(iscale*v)))))
		}
		for j := range 16 {
			var sum int32
			for _, q := range y[4+16*j : 4+16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(y[260+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(y, math.Float32bits(1/iscale))
	}
}

func dequantQ8_K(dst []float32, src []byte) {
	for ; len(src) >= 292; src, dst = src[292:], dst[qkK:] {
		d := math.Float32frombits(binary.LittleEndian.Uint32(src))
		for j, q := range src[4:260] {
			dst[j] = d * float32(int8(q))
		}
	}
}

// requantize16 is Q3_K's and Q6_K's final pass: each value's code from its
// sub-block's scale dj (16 sub-blocks of 16), clamped to [-n, n-1] and offset by n;
// a sub-block whose scale is zero keeps its codes. fast, when not nil, computes the
// codes into lt (the same operations, vectorized).
func requantize16(x []float32, dj *[16]float32, lt *[qkK]int32, L []int8, n int32, fast requant16Func) {
	if fast != nil {
		fast(x, dj, lt, n)
		for j, d := range dj {
			if d != 0 {
				for ii := range 16 {
					L[16*j+ii] = int8(lt[16*j+ii])
				}
			}
		}
		return
	}
	for j, d := range dj {
		if d == 0 {
			continue
		}
		for ii := range 16 {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max(-n, min(n-1, l)) + n)
		}
	}
}
