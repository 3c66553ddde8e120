package kernels

import "encoding/binary"

// Quantizers of IQ2_XXS, IQ2_XS and IQ2_S: ggml's quantize_row_iq2_*_impl,
// step by step in float32 (every product rounded before it is added, as the
// ggml built without fused multiply-add that the goldens come from).
//
// Each group of 8 values takes its signs out (IQ2_XXS and IQ2_XS store 7 and
// make the count of negatives even by flipping the least important value),
// then a scale search rounds the magnitudes to levels 0..2 (values 1, 3, 5 at
// that scale), moves codes off the grid to their best listed neighbour
// (iqsearch.go), and keeps the scale of the best weighted fit. The sub-block
// scales are then coded in 4 bits against the super-block's F16 scale.
//
// The weights qw are one per value of the row (an importance matrix's
// column weights); each quantizer weighs value i by qw[i]·sqrt(σ² + x[i]²),
// σ² from the super-block. ggml's IQ2_XXS and IQ2_XS take no quantization
// without them (QuantizeWeighted needs qw, Quantize refuses); IQ2_S without
// weights uses σ²/4 + x[i]².

// iqSigns takes the signs out of 8 values: xval gets |x|, the result has bit
// i set for x[i] < 0. With even, an odd count of negatives is made even by
// negating the value of least w·x² (first of equal ones), whose xval then
// turns negative, and only the low 7 bits are kept (the 8th is implied).
func iqSigns(xval, x, w []float32, even bool) uint8 {
	var s uint8
	nflip := 0
	for i, v := range x[:8] {
		if v >= 0 {
			xval[i] = v
		} else {
			xval[i] = -v
			s |= 1 << i
			nflip++
		}
	}
	if !even {
		return s
	}
	if nflip%2 != 0 {
		imin, m := 0, float32(float32(w[0]*x[0])*x[0])
		for i := 1; i < 8; i++ {
			if a := float32(float32(w[i]*x[i]) * x[i]); a < m {
				imin, m = i, a
			}
		}
		xval[imin] = -xval[imin]
		s ^= 1 << imin
	}
	return s & 127
}

// iqMaxOf is ggml's loop of MAX(max, x[i]) from x[0].
func iqMaxOf(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		m = max32(m, v)
	}
	return m
}

// oddLevel is ggml's level l of the magnitude x on the grid of odd multiples 2l+1
// at inverse scale id: nearest_int(0.5·(id·x − 1)) clamped to 0..top (the levels of
// IQ2 and IQ3, the sub-block scales of IQ1, IQ2 and IQ3).
func oddLevel(id, x float32, top int32) int32 {
	return max(0, min(top, nearestInt(float32(0.5*float32(float32(id*x)-1)))))
}

// iq2Levels rounds xval·id to levels 0..2 (nearest_int(0.5·(id·x − 1)),
// clamped) into L and returns their code.
func iq2Levels(L []uint8, xval []float32, id float32) int {
	u := 0
	for i, v := range xval[:8] {
		l := oddLevel(id, v, 2)
		L[i] = uint8(l)
		u |= int(l) << (2 * i)
	}
	return u
}

// levelFit returns Σ w·x·q and Σ w·q² for q = 2L+1 (the least-squares sums of
// the IQ2 and IQ3 searches, each product rounded, in the values' order).
func levelFit[T uint8 | int8](w, xval []float32, L []T) (sumqx, sumq2 float32) {
	for i, l := range L[:len(xval)] {
		q := float32(2*int32(l) + 1)
		sumqx += float32(float32(w[i]*xval[i]) * q)
		sumq2 += float32(float32(w[i]*q) * q)
	}
	return sumqx, sumq2
}

// iqScale4 is a sub-block scale in 4 bits against the super-block scale
// (its inverse id).
func iqScale4(id, scale float32) uint8 {
	return uint8(oddLevel(id, scale, 15))
}

func quantRowIQ2_XXSW(y []byte, x, qw []float32) {
	s := iq2xxsSearch()
	var weight, waux, xval [32]float32
	var L [32]uint8
	tr := new(iq2Trials)
	for ibl := range len(x) / qkK {
		b := y[ibl*iq2xxsBytes:][:iq2xxsBytes]
		xbl, qwb := x[ibl*qkK:][:qkK], qw[ibl*qkK:][:qkK]
		sigma2 := sumSquares(xbl) / qkK
		var scales [8]float32
		var q2 [16]uint32
		var maxScale float32
		for ib := range 8 {
			xb := xbl[32*ib:][:32]
			iqWeights(weight[:], waux[:], xb, qwb[32*ib:], sigma2)
			var signs [4]uint8
			for k := range 4 {
				signs[k] = iqSigns(xval[8*k:], xb[8*k:], weight[8*k:], true)
			}
			if iqMaxOf(xval[:]) < groupMaxEps {
				continue
			}
			scale := makeQPQuants(4, xval[:], L[:], weight[:])
			effMax := scale * 3
			if effMax <= 0 {
				continue
			}
			scale = iq2Trials32(s, tr, &xval, &weight, &waux, &L, effMax, scale, iqAsm)
			if scale > 0 {
				id := 1 / scale
				for k := range 4 {
					u := iq2Levels(L[8*k:], xval[8*k:], id)
					if s.kmap[u] < 0 {
						s.nearest(u, xval[8*k:], waux[8*k:], scale, L[8*k:])
					}
				}
				if sumqx, sumq2 := levelFit(weight[:], xval[:], L[:]); sumq2 > 0 {
					scale = sumqx / sumq2
				}
			}
			if scale < 0 { // never expected; ggml flips the signs
				scale = -scale
				for k := range signs {
					signs[k] = ^signs[k] & 127
				}
			}
			for k := range 4 {
				q2[2*ib] |= uint32(s.onGrid(L[8*k:])) << (8 * k)
				q2[2*ib+1] |= uint32(signs[k]) << (7 * k)
			}
			scales[ib] = scale
			maxScale = max32(maxScale, scale)
		}
		clear(b)
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		putF16(b, d)
		id := 1 / d
		for ib := range 8 {
			q2[2*ib+1] |= uint32(iqScale4(id, scales[ib])) << 28
		}
		for i, v := range q2 {
			binary.LittleEndian.PutUint32(b[2+4*i:], v)
		}
	}
}

// iq2Trials32 is IQ2_XXS's scale search on 32 values: 13 trial scales
// around effMax/5, codes off the grid moved to their best neighbour; the
// best fit's levels go to L and its scale is returned (scale and L as they
// came when no trial fits). With vec the trials run in the assembly (tr).
func iq2Trials32(s *iqSearch, tr *iq2Trials, xval, weight, waux *[32]float32, L *[32]uint8, effMax, scale float32, vec bool) float32 {
	var best float32
	if vec {
		bt, scale := tr.best(s, xval[:], weight[:], waux[:], effMax, 13, scale)
		if bt >= 0 {
			tr.levels(bt, L[:])
		}
		return scale
	}
	var Laux [32]uint8
	for is := -6; is <= 6; is++ {
		id := (float32(float32(is)*0.1) + 5) / effMax
		thisScale := 1 / id
		for k := range 4 {
			if u := iq2Levels(Laux[8*k:], xval[8*k:], id); s.kmap[u] < 0 {
				s.nearest(u, xval[8*k:], waux[8*k:], thisScale, Laux[8*k:])
			}
		}
		sumqx, sumq2 := levelFit(weight[:], xval[:], Laux[:])
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = scale * sumqx
			*L = Laux
		}
	}
	return scale
}

// max32 is ggml's MAX(a, b): a > b ? a : b (so a NaN b wins, a NaN a loses).
func max32(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// onGrid is the grid index of 8 levels that the search left on the grid (ggml
// aborts otherwise; only non-finite input, refused before, could get there).
func (s *iqSearch) onGrid(L []uint8) int {
	if gi := s.kmap[code8(L)]; gi >= 0 {
		return int(gi)
	}
	return 0
}

// iq2Fit16 is the scale search of IQ2_XS and IQ2_S on 16 values (two groups
// of 8): 19 trial scales around max/5, then the codes off the grid refitted at
// the best one. It returns the scale and leaves the levels in L. With vec
// the trials run in the assembly (tr).
func iq2Fit16(s *iqSearch, tr *iq2Trials, xval, weight, waux *[16]float32, L *[16]uint8, vec bool) float32 {
	var Laux [16]uint8
	var onGrid, onGridAux [2]bool
	*L = [16]uint8{}
	maxv := iqMaxOf(xval[:])
	var best float32
	scale := maxv / 5
	onGrid = [2]bool{true, true}
	if vec {
		var bt int
		bt, scale = tr.best(s, xval[:], weight[:], waux[:], maxv, 19, scale)
		if bt >= 0 {
			tr.levels(bt, L[:])
			for k := range 2 {
				onGrid[k] = s.kmap[tr.code[k][bt]] >= 0
			}
		}
	}
	for is := -9; is <= 9 && !vec; is++ {
		id := (float32(float32(is)*0.1) + 5) / maxv
		thisScale := 1 / id
		for k := range 2 {
			u := iq2Levels(Laux[8*k:], xval[8*k:], id)
			onGridAux[k] = s.kmap[u] >= 0
			if !onGridAux[k] {
				s.nearest(u, xval[8*k:], waux[8*k:], thisScale, Laux[8*k:])
			}
		}
		sumqx, sumq2 := levelFit(weight[:], xval[:], Laux[:])
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = scale * sumqx
			*L = Laux
			onGrid = onGridAux
		}
	}
	if (!onGrid[0] || !onGrid[1]) && scale > 0 {
		id := 1 / scale
		for k := range 2 {
			if onGrid[k] {
				continue
			}
			if u := iq2Levels(L[8*k:], xval[8*k:], id); s.kmap[u] < 0 {
				s.nearest(u, xval[8*k:], waux[8*k:], scale, L[8*k:])
			}
		}
		if sumqx, sumq2 := levelFit(weight[:], xval[:], L[:]); sumq2 > 0 {
			scale = sumqx / sumq2
		}
	}
	return scale
}

func quantRowIQ2_XSW(y []byte, x, qw []float32) {
	s := iq2xsSearch()
	var weight, waux, xval [16]float32
	var L [16]uint8
	tr := new(iq2Trials)
	for ibl := range len(x) / qkK {
		b := y[ibl*iq2xsBytes:][:iq2xsBytes]
		xbl, qwb := x[ibl*qkK:][:qkK], qw[ibl*qkK:][:qkK]
		sigma2 := sumSquares(xbl) / qkK
		var scales [16]float32
		var q2 [32]uint16
		var maxScale float32
		for ib := range 16 {
			xb := xbl[16*ib:][:16]
			iqWeights(weight[:], waux[:], xb, qwb[16*ib:], sigma2)
			var signs [2]uint8
			for k := range 2 {
				signs[k] = iqSigns(xval[8*k:], xb[8*k:], weight[8*k:], true)
			}
			if iqMaxOf(xval[:]) < groupMaxEps {
				continue
			}
			scale := iq2Fit16(s, tr, &xval, &weight, &waux, &L, iqAsm)
			if scale < 0 {
				scale = -scale
				for k := range signs {
					signs[k] = ^signs[k] & 127
				}
			}
			for k := range 2 {
				q2[2*ib+k] = uint16(s.onGrid(L[8*k:])) | uint16(signs[k])<<9
			}
			scales[ib] = scale
			maxScale = max32(maxScale, scale)
		}
		clear(b)
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		putF16(b, d)
		id := 1 / d
		for ib := range 16 {
			b[66+ib/2] |= iqScale4(id, scales[ib]) << (4 * (ib % 2))
		}
		for i, v := range q2 {
			binary.LittleEndian.PutUint16(b[2+2*i:], v)
		}
	}
}

func quantIQ2_S(dst []byte, src []float32) { quantRowIQ2_SW(dst, src, nil) }

func quantRowIQ2_SW(y []byte, x, qw []float32) {
	s := iq2sSearch()
	var weight, waux, xval [16]float32
	var L [16]uint8
	tr := new(iq2Trials)
	for ibl := range len(x) / qkK {
		b := y[ibl*iq2sBytes:][:iq2sBytes]
		clear(b)
		xbl := x[ibl*qkK:][:qkK]
		sigma2 := float32(2*sumSquares(xbl)) / qkK
		qs, signs, qh := b[2:34], b[34:66], b[66:74]
		var scales [16]float32
		var maxScale float32
		for ib := range 16 {
			xb := xbl[16*ib:][:16]
			if qw != nil {
				importance(weight[:], xb, qw[ibl*qkK+16*ib:], sigma2)
			} else {
				for i, v := range xb {
					weight[i] = float32(0.25*sigma2) + float32(v*v)
				}
			}
			for i, w := range weight {
				waux[i] = sqrt32(w)
			}
			var sg [2]uint8
			for k := range 2 {
				sg[k] = iqSigns(xval[8*k:], xb[8*k:], nil, false)
			}
			if iqMaxOf(xval[:]) < 1e-8 { // GROUP_MAX_EPS_IQ2_S
				continue
			}
			scale := iq2Fit16(s, tr, &xval, &weight, &waux, &L, iqAsm)
			if scale < 0 {
				scale = -scale
				sg[0], sg[1] = ^sg[0], ^sg[1]
			}
			for k := range 2 {
				gi := s.onGrid(L[8*k:])
				i8 := 2*ib + k
				qs[i8] = byte(gi)
				qh[i8/4] |= byte(gi>>8) << (2 * (i8 % 4))
				signs[i8] = sg[k]
			}
			scales[ib] = scale
			maxScale = max32(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		putF16(b, d*0.9875)
		id := 1 / d
		for ib := range 16 {
			b[74+ib/2] |= iqScale4(id, scales[ib]) << (4 * (ib % 2))
		}
	}
}
