package kernels

import "encoding/binary"

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
	var g iq1sScan
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
				g.sumx[j+1] = g.sumx[j] + float32(weight[i]*xb[i])
				g.sumw[j+1] = g.sumw[j] + weight[i]
			}
			scale, besti1, besti2, bestShift := g.search(maxv, iqAsm)
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
	var g iq1mScan
	var pw [2][17]float32
	px := &g.px
	masks := [4]uint8{0x00, 0x80, 0x08, 0x88}
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
			scale, besti1, besti2, bestK := g.search(&pw, maxv, iqAsm)
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
