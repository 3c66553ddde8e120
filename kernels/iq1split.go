package kernels

import (
	"math"
	"math/bits"
)

// The split searches of IQ1_S and IQ1_M (iq1quant.go): every pair of
// boundaries i1 <= i2 over the sorted values, each scored as ggml scores it,
// the first of the best kept. With vec (iqAsm) the assembly computes the
// scores of a row i1, i2 in its lanes, and says whether any beats the best
// so far; only such rows are then scanned in ggml's order, on the very
// float32 values ggml computes, so the choice is the same (TestIQ1Split).

// iq1Rescore makes the vector searches score the rest of a row again after
// every better split, grown or not (TestIQ1Split: the path a float32 best
// that did not grow takes, rare in real data).
var iq1Rescore = false

// iq1sScan is the state of IQ1_S's search (offsets fixed in
// iqsearch_amd64.s, checked by TestIQ1ScanLayout). The arrays have room for
// the assembly's last group of 8 lanes.
type iq1sScan struct {
	sumx, sumw [40]float32    // prefix sums of w·x and w over the sorted values (0..32)
	gx2, gw2   [2][40]float32 // per shift (+, −) and i2: the third group's terms
	c          [16]float32    // per row: gxp, gwp, gxm, gwm, best, sumx[i1], sumw[i1], 1/8
	qx, q2     [2][40]float32 // per row, from the assembly: the scores of i2 = i1+j
}

// search returns the scale, boundaries and shift (+1 or −1; 0 if none is
// found) of the best split, scale maxv when none.
func (g *iq1sScan) search(maxv float32, vec bool) (scale float32, besti1, besti2, bestShift int) {
	sumx, sumw := &g.sumx, &g.sumw
	best := float32(-math.MaxFloat32)
	scale, besti1, besti2 = maxv, -1, -1
	// ggml scores every split i1 <= i2 with shift +1/8 then −1/8: Σ w·x·q and
	// Σ w·q² as three group sums, ((g0 + g1) + g2), each product rounded.
	// The terms of the third group depend on i2 alone and those of the first
	// on i1 alone, so they are computed once (the same float32 values).
	for k, xx := range [2]*[3]float32{&iq1Plus, &iq1Minus} {
		for i2 := range 33 {
			g.gx2[k][i2] = float32((sumx[32] - sumx[i2]) * xx[2])
			w2 := sumw[32] - sumw[i2]
			g.gw2[k][i2] = float32(float32(w2*xx[2]) * xx[2])
		}
	}
	p0, p1, m0, m1 := iq1Plus[0], iq1Plus[1], iq1Minus[0], iq1Minus[1]
	for i1 := 0; i1 <= 32; i1++ {
		x0, w0 := sumx[i1]-sumx[0], sumw[i1]-sumw[0]
		gxp, gwp := float32(x0*p0), float32(float32(w0*p0)*p0)
		gxm, gwm := float32(x0*m0), float32(float32(w0*m0)*m0)
		if vec {
			c := &g.c
			c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7] = gxp, gwp, gxm, gwm, best, sumx[i1], sumw[i1], p1
			// Lanes that do not beat the best their mask was made with are
			// skipped; a lane that does is scored in ggml's order. A lane that
			// fails against a best fails against any larger one (q2 > 0, and
			// float32 rounding is monotonic), but a new best is not always
			// larger in float32: then the lanes after it are scored again
			// against it (the row from i2 = i1+at on, with row i1's terms).
			n, at := 33-i1, 0
			for m := iq1sRow(g, i1, n) & (1<<n - 1); m != 0; {
				j := bits.TrailingZeros64(m)
				b0 := best
				if sumqx, sumq2 := g.qx[0][j], g.q2[0][j]; sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					scale = sumqx / sumq2
					best = scale * sumqx
					besti1, besti2, bestShift = i1, i1+at+j, 1
				}
				if sumqx, sumq2 := g.qx[1][j], g.q2[1][j]; sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					scale = sumqx / sumq2
					best = scale * sumqx
					besti1, besti2, bestShift = i1, i1+at+j, -1
				}
				m &= m - 1
				if (!(best >= b0) || iq1Rescore) && at+j+1 < n {
					at += j + 1
					c[4] = best
					m = iq1sRow(g, i1+at, n-at) & (1<<(n-at) - 1)
				}
			}
			continue
		}
		for i2 := i1; i2 <= 32; i2++ {
			x1, w1 := sumx[i2]-sumx[i1], sumw[i2]-sumw[i1]
			sumqx := float32(gxp+float32(x1*p1)) + g.gx2[0][i2]
			sumq2 := float32(gwp+float32(float32(w1*p1)*p1)) + g.gw2[0][i2]
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				scale = sumqx / sumq2
				best = scale * sumqx
				besti1, besti2, bestShift = i1, i2, 1
			}
			sumqx = float32(gxm+float32(x1*m1)) + g.gx2[1][i2]
			sumq2 = float32(gwm+float32(float32(w1*m1)*m1)) + g.gw2[1][i2]
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				scale = sumqx / sumq2
				best = scale * sumqx
				besti1, besti2, bestShift = i1, i2, -1
			}
		}
	}
	return scale, besti1, besti2, bestShift
}

// iq1mScan is the state of IQ1_M's search (offsets fixed in
// iqsearch_amd64.s, checked by TestIQ1ScanLayout).
type iq1mScan struct {
	px [2][24]float32 // per half: prefix sums of w·x over the sorted values (0..16)
	w2 [4][24]float32 // per i2: the terms of the third group, halves 0, 1 under shift +, then −
	c  [16]float32    // per row: px[0][i1], px[1][i1], txp[0..1], txm[0..1], w1p[0..1], w1m[0..1], best
	qx [4][24]float32 // per row, from the assembly: the scores of the shift pairs at i2 = i1+j
	q2 [4][24]float32
}

// The 3-group sums of an IQ1_M split collapse to T·v[2] − p[i1] − p[i2]
// (the levels step by 1): these are the coefficients of the squares.
var (
	iq1mCP1 = float32(iq1Plus[0]*iq1Plus[0]) - float32(iq1Plus[1]*iq1Plus[1])
	iq1mCP2 = float32(iq1Plus[1]*iq1Plus[1]) - float32(iq1Plus[2]*iq1Plus[2])
	iq1mCM1 = float32(iq1Minus[0]*iq1Minus[0]) - float32(iq1Minus[1]*iq1Minus[1])
	iq1mCM2 = float32(iq1Minus[1]*iq1Minus[1]) - float32(iq1Minus[2]*iq1Minus[2])
)

// search returns the scale, boundaries and shift pair (0..3; −1 if none is
// found) of the best split, scale maxv when none; pw holds the prefix sums
// of w per half.
func (g *iq1mScan) search(pw *[2][17]float32, maxv float32, vec bool) (scale float32, besti1, besti2, bestK int) {
	px := &g.px
	p2, m2 := iq1Plus[2], iq1Minus[2]
	cp1, cp2, cm1, cm2 := iq1mCP1, iq1mCP2, iq1mCM1, iq1mCM2
	txs := [2]float32{px[0][16], px[1][16]}
	tws := [2]float32{pw[0][16], pw[1][16]}
	best := float32(-math.MaxFloat32)
	scale, besti1, besti2, bestK = maxv, -1, -1, -1
	// Per half h: qx = T·v2 − (p[i1] + p[i2]) and q2 = ((W·v2)·v2 + w[i1]·c1)
	// + w[i2]·c2, with the shifts' v2, c1, c2; the products of one index
	// are computed once (the same float32 values ggml computes per split).
	var txp, txm, t2p, t2m [2]float32
	w2p, w2m := (*[2][24]float32)(g.w2[0:2]), (*[2][24]float32)(g.w2[2:4])
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
		if vec {
			c := &g.c
			c[0], c[1], c[2], c[3], c[4], c[5] = px[0][i1], px[1][i1], txp[0], txp[1], txm[0], txm[1]
			c[6], c[7], c[8], c[9], c[10] = w1p[0], w1p[1], w1m[0], w1m[1], best
			n, at := 17-i1, 0
			for m := iq1mRow(g, i1, n) & (1<<n - 1); m != 0; {
				j := bits.TrailingZeros64(m)
				b0 := best
				for k := range 4 {
					if qx, q2 := g.qx[k][j], g.q2[k][j]; q2 > 0 && float32(qx*qx) > float32(best*q2) {
						scale = qx / q2
						best = scale * qx
						besti1, besti2, bestK = i1, i1+at+j, k
					}
				}
				m &= m - 1
				if (!(best >= b0) || iq1Rescore) && at+j+1 < n {
					at += j + 1
					c[10] = best
					m = iq1mRow(g, i1+at, n-at) & (1<<(n-at) - 1)
				}
			}
			continue
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
	return scale, besti1, besti2, bestK
}
