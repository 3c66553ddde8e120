package kernels

import (
	"encoding/binary"
	"math"
)

// Quantizers of IQ1_S and IQ1_M: ggml's quantize_row_iq1_s_impl and
// quantize_row_iq1_m_impl in float32, each product rounded before it is added.
//
// Each value becomes one of three levels −1, 0, 1 plus a shift of ±1/8 per
// group (IQ1_S: 32 values, one shift; IQ1_M: 16 values, a shift per 8). The
// best split into three levels is found exactly: the values sorted (stably,
// as glibc's qsort does for these small arrays), every pair of boundaries
// scored from prefix sums. Codes off the grid go to the best listed neighbour
// (iqsearch.go). IQ1_S needs weights (ggml asserts without them); IQ1_M
// without weights weighs each value by x².

var (
	iq1Plus  = [3]float32{-1 + iq1Delta, iq1Delta, 1 + iq1Delta}
	iq1Minus = [3]float32{-1 - iq1Delta, -iq1Delta, 1 - iq1Delta}
)

// sortedIdx fills idx with 0..len(x)-1 ordered by x, equal values in their
// order (an insertion sort: stable, and these are 16 or 32 values).
func sortedIdx(idx []int, x []float32) {
	for j := range idx {
		idx[j] = j
		for k := j; k > 0 && x[idx[k-1]] > x[j]; k-- {
			idx[k], idx[k-1] = idx[k-1], j
		}
	}
}

// absMax is ggml's max of fabsf(x[i]) from x[0].
func absMax(x []float32) float32 {
	m := abs32(x[0])
	for _, v := range x[1:] {
		m = max32(m, abs32(v))
	}
	return m
}

// iq1Levels writes the levels of a three-way split of the sorted values:
// 0 below i1, 1 below i2, 2 from there.
func iq1Levels(L []uint8, idx []int, i1, i2 int) {
	for j, i := range idx {
		switch {
		case j < i1:
			L[i] = 0
		case j < i2:
			L[i] = 1
		default:
			L[i] = 2
		}
	}
}

// iq1Refit is Σ w·q·x and Σ w·q² over 8 values at grid point gi, levels as xx.
func iq1Refit(s *iqSearch, gi int, xx *[3]float32, w, x []float32, sumqx, sumq2 float32) (float32, float32) {
	for j, l := range s.digits[gi] {
		q := xx[l]
		sumqx += float32(float32(w[j]*q) * x[j])
		sumq2 += float32(float32(w[j]*q) * q)
	}
	return sumqx, sumq2
}

func quantRowIQ1_SW(y []byte, x, qw []float32) {
	s := iq1sSearch()
	var weight [32]float32
	var sumx, sumw [33]float32
	var idx [32]int
	var L [32]uint8
	for ibl := range len(x) / qkK {
		b := y[ibl*iq1sBytes:][:iq1sBytes]
		clear(b)
		qs := b[2:34]
		xbl := x[ibl*qkK:][:qkK]
		sigma2 := float32(2*sumSquares(xbl)) / qkK
		var scales [8]float32
		var shifts [8]int8
		var qh [8]uint16
		var maxScale float32
		for ib := range 8 {
			xb := xbl[32*ib:][:32]
			importance(weight[:], xb, qw[ibl*qkK+32*ib:], sigma2)
			shifts[ib] = 1
			maxv := absMax(xb)
			if maxv < 1e-12 { // GROUP_MAX_EPS_IQ1_S
				continue
			}
			sortedIdx(idx[:], xb)
			for j, i := range idx {
				sumx[j+1] = sumx[j] + float32(weight[i]*xb[i])
				sumw[j+1] = sumw[j] + weight[i]
			}
			best, scale := float32(-math.MaxFloat32), maxv
			besti1, besti2, bestShift := -1, -1, 0
			// ggml scores every split i1 <= i2 with shift +1/8 then −1/8: Σ w·x·q and
			// Σ w·q² as three group sums, ((g0 + g1) + g2), each product rounded.
			// The terms of the third group depend on i2 alone and those of the first
			// on i1 alone, so they are computed once (the same float32 values).
			var gx2, gw2 [2][33]float32
			for k, xx := range [2]*[3]float32{&iq1Plus, &iq1Minus} {
				for i2 := range 33 {
					gx2[k][i2] = float32((sumx[32] - sumx[i2]) * xx[2])
					w2 := sumw[32] - sumw[i2]
					gw2[k][i2] = float32(float32(w2*xx[2]) * xx[2])
				}
			}
			p0, p1, m0, m1 := iq1Plus[0], iq1Plus[1], iq1Minus[0], iq1Minus[1]
			for i1 := 0; i1 <= 32; i1++ {
				x0, w0 := sumx[i1]-sumx[0], sumw[i1]-sumw[0]
				gxp, gwp := float32(x0*p0), float32(float32(w0*p0)*p0)
				gxm, gwm := float32(x0*m0), float32(float32(w0*m0)*m0)
				for i2 := i1; i2 <= 32; i2++ {
					x1, w1 := sumx[i2]-sumx[i1], sumw[i2]-sumw[i1]
					sumqx := float32(gxp+float32(x1*p1)) + gx2[0][i2]
					sumq2 := float32(gwp+float32(float32(w1*p1)*p1)) + gw2[0][i2]
					if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
						scale = sumqx / sumq2
						best = scale * sumqx
						besti1, besti2, bestShift = i1, i2, 1
					}
					sumqx = float32(gxm+float32(x1*m1)) + gx2[1][i2]
					sumq2 = float32(gwm+float32(float32(w1*m1)*m1)) + gw2[1][i2]
					if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
						scale = sumqx / sumq2
						best = scale * sumqx
						besti1, besti2, bestShift = i1, i2, -1
					}
				}
			}
			if besti1 < 0 || besti2 < 0 || bestShift == 0 {
				continue
			}
			iq1Levels(L[:], idx[:], besti1, besti2)
			if scale < 0 {
				for j := range L {
					L[j] = 2 - L[j]
				}
				scale, bestShift = -scale, -bestShift
			}
			xx := &iq1Plus
			if bestShift != 1 {
				xx = &iq1Minus
			}
			var index [4]int
			allOnGrid := true
			for k := range 4 {
				u := code8(L[8*k:])
				if gi := s.kmap[u]; gi >= 0 {
					index[k] = int(gi)
				} else {
					allOnGrid = false
					index[k] = s.nearestIQ1(u, xb[8*k:], weight[8*k:], scale, xx, L[8*k:])
				}
			}
			if !allOnGrid {
				var sumqx, sumq2 float32
				for k := range 4 {
					sumqx, sumq2 = iq1Refit(s, index[k], xx, weight[8*k:], xb[8*k:], sumqx, sumq2)
				}
				if sumqx > 0 && sumq2 > 0 {
					scale = sumqx / sumq2
				}
			}
			for k := range 4 {
				qs[4*ib+k] = byte(index[k])
				qh[ib] |= uint16(index[k]>>8) << (3 * k)
			}
			scales[ib], shifts[ib] = scale, int8(bestShift)
			maxScale = max32(maxScale, scale)
		}
		if maxScale != 0 {
			d := maxScale / 15
			putF16(b, d*1.125)
			id := 1 / d
			for ib := range 8 {
				l := uint16(oddLevel(id, scales[ib], 7))
				if shifts[ib] == -1 {
					l |= 8
				}
				qh[ib] |= l << 12
			}
		}
		for ib, h := range qh {
			binary.LittleEndian.PutUint16(b[34+2*ib:], h)
		}
	}
}

func quantIQ1_M(dst []byte, src []float32) { quantRowIQ1_MW(dst, src, nil) }

// iq1mLevels are the levels of group 0 or 1 (of 8 values) under IQ1_M's shift
// pair k: 0 (+, +), 1 (+, −), 2 (−, +), 3 (−, −).
func iq1mLevels(k int, group int) *[3]float32 {
	if (group == 0 && k < 2) || (group == 1 && k%2 == 0) {
		return &iq1Plus
	}
	return &iq1Minus
}

func quantRowIQ1_MW(y []byte, x, qw []float32) {
	s := iq1sSearch()
	var weight [16]float32
	var idx [16]int
	var L [16]uint8
	var px, pw [2][17]float32
	masks := [4]uint8{0x00, 0x80, 0x08, 0x88}
	// The 3-group sums of a split collapse to T·v[2] − p[i1] − p[i2] (the
	// levels step by 1): these are the coefficients of the squares.
	p2, m2 := iq1Plus[2], iq1Minus[2]
	cp1 := float32(iq1Plus[0]*iq1Plus[0]) - float32(iq1Plus[1]*iq1Plus[1])
	cp2 := float32(iq1Plus[1]*iq1Plus[1]) - float32(iq1Plus[2]*iq1Plus[2])
	cm1 := float32(iq1Minus[0]*iq1Minus[0]) - float32(iq1Minus[1]*iq1Minus[1])
	cm2 := float32(iq1Minus[1]*iq1Minus[1]) - float32(iq1Minus[2]*iq1Minus[2])
	for ibl := range len(x) / qkK {
		b := y[ibl*iq1mBytes:][:iq1mBytes]
		clear(b)
		qs, qh := b[0:32], b[32:48]
		xbl := x[ibl*qkK:][:qkK]
		qwb := weightsAt(qw, ibl*qkK, qkK)
		sigma2 := float32(2*sumSquares(xbl)) / qkK
		var scales [16]float32
		var shifts [16]int
		var maxScale float32
		for ib := range 16 {
			xb := xbl[16*ib:][:16]
			fitWeights(weight[:], xb, weightsAt(qwb, 16*ib, 16), sigma2)
			maxv := absMax(xb)
			if maxv < 1e-7 { // GROUP_MAX_EPS_IQ1_M
				continue
			}
			sortedIdx(idx[:], xb)
			for j, i := range idx {
				h := i / 8
				px[h][j+1] = px[h][j] + float32(weight[i]*xb[i])
				px[1-h][j+1] = px[1-h][j]
				pw[h][j+1] = pw[h][j] + weight[i]
				pw[1-h][j+1] = pw[1-h][j]
			}
			txs := [2]float32{px[0][16], px[1][16]}
			tws := [2]float32{pw[0][16], pw[1][16]}
			best, scale := float32(-math.MaxFloat32), maxv
			besti1, besti2, bestK := -1, -1, -1
			// Per half h: qx = T·v2 − (p[i1] + p[i2]) and q2 = ((W·v2)·v2 + w[i1]·c1)
			// + w[i2]·c2, with the shifts' v2, c1, c2; the products of one index
			// are computed once (the same float32 values ggml computes per split).
			var txp, txm, t2p, t2m [2]float32
			var w2p, w2m [2][17]float32
			for h := range 2 {
				txp[h], txm[h] = float32(txs[h]*p2), float32(txs[h]*m2)
				t2p[h], t2m[h] = float32(float32(tws[h]*p2)*p2), float32(float32(tws[h]*m2)*m2)
				for i2 := range 17 {
					w2p[h][i2], w2m[h][i2] = float32(pw[h][i2]*cp2), float32(pw[h][i2]*cm2)
				}
			}
			for i1 := 0; i1 <= 16; i1++ {
				var w1p, w1m [2]float32
				for h := range 2 {
					w1p[h] = float32(t2p[h] + float32(pw[h][i1]*cp1))
					w1m[h] = float32(t2m[h] + float32(pw[h][i1]*cm1))
				}
				for i2 := i1; i2 <= 16; i2++ {
					sx0, sx1 := px[0][i1]+px[0][i2], px[1][i1]+px[1][i2]
					qxP0, qxP1, qxM0, qxM1 := txp[0]-sx0, txp[1]-sx1, txm[0]-sx0, txm[1]-sx1
					q2P0, q2P1 := w1p[0]+w2p[0][i2], w1p[1]+w2p[1][i2]
					q2M0, q2M1 := w1m[0]+w2m[0][i2], w1m[1]+w2m[1][i2]
					// The shift pairs k = 0..3 in ggml's order, written out so that the
					// sums stay in registers.
					if qx, q2 := qxP0+qxP1, q2P0+q2P1; q2 > 0 && float32(qx*qx) > float32(best*q2) {
						scale = qx / q2
						best = scale * qx
						besti1, besti2, bestK = i1, i2, 0
					}
					if qx, q2 := qxP0+qxM1, q2P0+q2M1; q2 > 0 && float32(qx*qx) > float32(best*q2) {
						scale = qx / q2
						best = scale * qx
						besti1, besti2, bestK = i1, i2, 1
					}
					if qx, q2 := qxM0+qxP1, q2M0+q2P1; q2 > 0 && float32(qx*qx) > float32(best*q2) {
						scale = qx / q2
						best = scale * qx
						besti1, besti2, bestK = i1, i2, 2
					}
					if qx, q2 := qxM0+qxM1, q2M0+q2M1; q2 > 0 && float32(qx*qx) > float32(best*q2) {
						scale = qx / q2
						best = scale * qx
						besti1, besti2, bestK = i1, i2, 3
					}
				}
			}
			if besti1 < 0 || besti2 < 0 || bestK < 0 {
				continue
			}
			iq1Levels(L[:], idx[:], besti1, besti2)
			if scale < 0 {
				for j := range L {
					L[j] = 2 - L[j]
				}
				scale, bestK = -scale, 3-bestK
			}
			var index [2]int
			allOnGrid := true
			for k := range 2 {
				u := code8(L[8*k:])
				if gi := s.kmap[u]; gi >= 0 {
					index[k] = int(gi)
				} else {
					allOnGrid = false
					index[k] = s.nearestIQ1(u, xb[8*k:], weight[8*k:], scale, iq1mLevels(bestK, k), L[8*k:])
				}
			}
			if !allOnGrid {
				var sumqx, sumq2 float32
				for k := range 2 {
					sumqx, sumq2 = iq1Refit(s, index[k], iq1mLevels(bestK, k), weight[8*k:], xb[8*k:], sumqx, sumq2)
				}
				if sumqx > 0 && sumq2 > 0 {
					scale = sumqx / sumq2
				}
			}
			qs[2*ib], qs[2*ib+1] = byte(index[0]), byte(index[1])
			qh[ib] = byte(index[0]>>8) | byte(index[1]>>8)<<4
			scales[ib], shifts[ib] = scale, bestK
			maxScale = max32(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		var sc [4]uint16
		d := maxScale / 15
		id := 1 / d
		var sumqx, sumq2 float32
		for ib := range 16 {
			l := oddLevel(id, scales[ib], 7)
			sc[ib/4] |= uint16(l) << (3 * (ib % 4))
			qh[ib] |= masks[shifts[ib]]
			xb := xbl[16*ib:][:16]
			fitWeights(weight[:], xb, weightsAt(qwb, 16*ib, 16), sigma2)
			m := float32(2*l + 1)
			for k := range 2 {
				xx := iq1mLevels(shifts[ib], k)
				gi := int(qs[2*ib+k]) | int(qh[ib])<<(8-4*k)&0x700
				for j, lv := range s.digits[gi] {
					w, q := weight[8*k+j], float32(xx[lv]*m)
					sumqx += float32(float32(w*q) * xb[8*k+j])
					sumq2 += float32(float32(w*q) * q)
				}
			}
		}
		if sumq2 > 0 {
			d = sumqx / sumq2
		}
		h := F32ToF16Bits(d * 1.1125)
		sc[0] |= h & 0x000f << 12
		sc[1] |= h & 0x00f0 << 8
		sc[2] |= h & 0x0f00 << 4
		sc[3] |= h & 0xf000
		for i, v := range sc {
			binary.LittleEndian.PutUint16(b[48+2*i:], v)
		}
	}
}
