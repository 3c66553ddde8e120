package kernels

import (
	"encoding/binary"
	"math"
	"sync"
)

// Quantizers for IQ3_XXS and IQ3_S, byte for byte as ggml's quantize_iq3_xxs
// and quantize_iq3_s (ggml-quants.c, quantize_row_iq3_xxs_impl and
// quantize_row_iq3_s_impl), with or without an importance matrix.
//
// Both fit each 32-value sub-block of a 256-value block as 8 groups of 4
// magnitudes, each group a point of the type's codebook (iqgrids.go) with the
// coordinates 1, 3, ..., 15, times a sub-block scale; the signs are stored
// apart. The search tries scales around max/15 (31 for IQ3_XXS, 19 for IQ3_S);
// a group whose rounded point is not in the codebook takes the nearest of its
// precomputed neighbours (iq3Tables.search; on amd64 with AVX2 searchLanes,
// eight trial scales at a time in assembly, the same bytes). The sub-block
// scales are then stored in 4 bits against the block's f16 d.
//
// IQ3_XXS stores only 7 sign bits per 8 values (an even number of negatives):
// when the count is odd, the value with the smallest weighted square is flipped,
// as ggml does. IQ3_S keeps every sign.
//
// NaN and infinities give some bytes, never a panic, where ggml stops on an
// assertion (apr-quant refuses such input before it gets here).

// iq3Tables are ggml's search tables for one codebook (iq3xs_init_impl): the
// points with coordinates 2l+1, the map from the code of 4 levels l (3 bits
// each) to the point's index, and for each code off the codebook a list of
// neighbour points.
type iq3Tables struct {
	grid   [][4]int8
	levels [][4]uint8 // each point's levels l, (coordinate - 1)/2
	// index holds each code's point index, or -(offset+1) for a code off the
	// codebook, whose neighbour list starts at neighbours[offset] with its length.
	index      [4096]int32
	neighbours []uint16
	// The same lists for the lane kernel (iq3Lanes): nbr holds each code's
	// offset<<8 | count in list (0 for a code on the codebook), and list the
	// neighbours' codes (their 4 levels, 3 bits each), with one 0 after the
	// last (the assembly reads two codes at a time).
	nbr  [4096]uint32
	list []uint16
}

var (
	iq3xxsTables = sync.OnceValue(func() *iq3Tables { return newIQ3Tables(iq3xxsPoints, 256, 2) })
	iq3sTables   = sync.OnceValue(func() *iq3Tables { return newIQ3Tables(iq3sPoints, 512, 3) })
)

// newIQ3Tables builds the tables for the codebook given by its bitmap of codes
// (size points). A code off the codebook gets as neighbours every point at the
// nwant smallest squared distances from it, by distance, then index: ggml's
// list (its qsort by distance and index, then the first nwant distances).
func newIQ3Tables(bitmap string, size, nwant int) *iq3Tables {
	t := &iq3Tables{}
	for i := range t.index {
		t.index[i] = -1
	}
	for n := range eachBit(bitmap, 4096) {
		var p [4]int8
		for i := range p {
			p[i] = int8(2*(n>>(3*i)&7) + 1)
		}
		t.index[n] = int32(len(t.grid))
		t.grid = append(t.grid, p)
		t.levels = append(t.levels, [4]uint8{uint8(n & 7), uint8(n >> 3 & 7), uint8(n >> 6 & 7), uint8(n >> 9 & 7)})
	}
	checkGrid(t.grid, size)
	dist := make([]int32, size)
	for code := range t.index {
		if t.index[code] >= 0 {
			continue
		}
		// The distances are at most 4·14², so the nwant smallest are found by
		// scanning upwards.
		var levels []int32
		for j, p := range t.grid {
			var d2 int32
			for i := range p {
				d := int32(p[i]) - int32(2*(code>>(3*i)&7)+1)
				d2 += d * d
			}
			dist[j] = d2
		}
		for len(levels) < nwant {
			next := int32(math.MaxInt32)
			for _, d := range dist {
				if d < next && (len(levels) == 0 || d > levels[len(levels)-1]) {
					next = d
				}
			}
			if next == math.MaxInt32 {
				break
			}
			levels = append(levels, next)
		}
		start := len(t.neighbours)
		t.index[code] = -int32(start + 1)
		t.neighbours = append(t.neighbours, 0)
		for _, l := range levels {
			for j, d := range dist {
				if d == l {
					t.neighbours = append(t.neighbours, uint16(j))
				}
			}
		}
		t.neighbours[start] = uint16(len(t.neighbours) - start - 1)
		n := len(t.neighbours) - start - 1
		t.nbr[code] = uint32(len(t.list))<<8 | uint32(n)
		for _, j := range t.neighbours[start+1:] {
			l := t.levels[j]
			t.list = append(t.list, uint16(l[0])|uint16(l[1])<<3|uint16(l[2])<<6|uint16(l[3])<<9)
		}
	}
	t.list = append(t.list, 0)
	return t
}

// nearest is ggml's iq3_find_best_neighbour for the group of 4 magnitudes x
// (weights w) whose code is off the codebook: the neighbour point that, times
// the scale, has the smallest weighted squared error (the first on ties). sq
// holds the scale times each coordinate 2l+1 (float32 products, as ggml's). It
// sets L to the point's levels and returns its index. Where every error is NaN
// ggml stops; here the first neighbour is taken.
func (t *iq3Tables) nearest(code int, x, w []float32, sq *[8]float32, L []int8) int32 {
	off := -t.index[code] - 1
	nb := t.neighbours[off+1 : off+1+int32(t.neighbours[off])]
	x, w = x[:4], w[:4]
	best, bestD2 := int32(nb[0]), float32(math.MaxFloat32)
	for _, j := range nb {
		p := &t.levels[j]
		var d2 float32
		d := sq[p[0]&7] - x[0]
		d2 += float32(float32(w[0]*d) * d)
		d = sq[p[1]&7] - x[1]
		d2 += float32(float32(w[1]*d) * d)
		d = sq[p[2]&7] - x[2]
		d2 += float32(float32(w[2]*d) * d)
		d = sq[p[3]&7] - x[3]
		d2 += float32(float32(w[3]*d) * d)
		if d2 < bestD2 {
			bestD2, best = d2, int32(j)
		}
	}
	for i, l := range t.levels[best] {
		L[i] = int8(l)
	}
	return best
}

// scaledLevels is scale·(2l+1) for the levels l = 0..7.
func scaledLevels(scale float32) (sq [8]float32) {
	for l := range sq {
		sq[l] = float32(scale * float32(2*l+1))
	}
	return sq
}

// iq3Level is oddLevel's 0..7.
func iq3Level(id, x float32) int8 { return int8(oddLevel(id, x, 7)) }

// iq3Code is the codebook code of 4 levels.
func iq3Code(L []int8) int {
	return int(L[0]) | int(L[1])<<3 | int(L[2])<<6 | int(L[3])<<9
}

// iq3Products are the per-value products of ggml's least-squares sums, which
// do not depend on the trial scale: w·x, and w·q·q for each level's q = 2l+1.
type iq3Products struct {
	wx  [32]float32
	wqq [32][8]float32
}

func (p *iq3Products) set(x, w []float32) {
	for i, v := range x[:32] {
		p.wx[i] = float32(w[i] * v)
		for l := range 8 {
			q := float32(2*l + 1)
			p.wqq[i][l] = float32(float32(w[i]*q) * q)
		}
	}
}

// sums are ggml's Σ w·x·q and Σ w·q² (in order, each product rounded) at levels L.
func (p *iq3Products) sums(L *[32]int8) (sumqx, sumq2 float32) {
	for i, l := range L {
		sumqx += float32(p.wx[i] * float32(2*int32(l)+1))
		sumq2 += p.wqq[i][l&7]
	}
	return sumqx, sumq2
}

// search fits the 32 magnitudes x (maximum maxv) with weights w (waux their
// square roots) to codebook points: trial scales at inverse (15 + 0.2·is)/maxv
// for |is| <= trials, keeping the best; then the groups that were off the
// codebook (every group with redoAll, as IQ3_S does; groups start as off it
// unless onGridFirst) are fitted again at the best scale and the scale refitted.
// L gets the levels, and the scale is returned.
//
// This is the reference, one trial and one group at a time as ggml's loop;
// searchLanes is the same search eight trials at a time.
func (t *iq3Tables) search(x, w, waux []float32, maxv float32, trials int, onGridFirst, redoAll bool, L *[32]int8) float32 {
	var Laux [32]int8
	var onGrid, onGridAux [8]bool
	var prod iq3Products
	prod.set(x, w)
	*L = [32]int8{}
	for k := range onGrid {
		onGrid[k] = onGridFirst
	}
	var best float32
	scale := maxv / 15
	for is := -trials; is <= trials; is++ {
		id := iq3TrialID(is, maxv)
		sq := scaledLevels(1 / id)
		for k := range 8 {
			g := Laux[4*k : 4*k+4]
			for i := range g {
				g[i] = iq3Level(id, x[4*k+i])
			}
			code := iq3Code(g)
			onGridAux[k] = t.index[code] >= 0
			if !onGridAux[k] {
				t.nearest(code, x[4*k:4*k+4], waux[4*k:4*k+4], &sq, g)
			}
		}
		sumqx, sumq2 := prod.sums(&Laux)
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = float32(scale * sumqx)
			*L, onGrid = Laux, onGridAux
		}
	}
	return t.refit(x, w, waux, scale, redoAll, &onGrid, L)
}

// iq3TrialID is the inverse scale of trial is: (15 + 0.2·is)/maxv, rounded as ggml's.
func iq3TrialID(is int, maxv float32) float32 {
	return (float32(float32(is)*0.2) + 15) / maxv
}

// refit is the end of search: if a group of the best trial was off the codebook,
// the groups (those off it, or all with redoAll) are rounded again at the best
// scale, and the scale refitted to the levels L.
func (t *iq3Tables) refit(x, w, waux []float32, scale float32, redoAll bool, onGrid *[8]bool, L *[32]int8) float32 {
	offGrid := false
	for _, on := range onGrid {
		offGrid = offGrid || !on
	}
	if !offGrid || scale <= 0 {
		return scale
	}
	id := 1 / scale
	sq := scaledLevels(scale)
	for k := range 8 {
		if onGrid[k] && !redoAll {
			continue
		}
		g := L[4*k : 4*k+4]
		for i := range g {
			g[i] = iq3Level(id, x[4*k+i])
		}
		if code := iq3Code(g); t.index[code] < 0 {
			t.nearest(code, x[4*k:4*k+4], waux[4*k:4*k+4], &sq, g)
		}
	}
	if sumqx, sumq2 := levelFit(w, x[:32], L[:]); sumq2 > 0 {
		scale = sumqx / sumq2
	}
	return scale
}

// iq3Lanes is the state of the lane kernel (iq3LanesGeneric, and its assembly
// in iq3quant_amd64.s, whose offsets TestIQ3LanesLayout checks): eight trial
// scales of one sub-block, one per lane.
type iq3Lanes struct {
	x, wa, w, wx [32]float32 // the magnitudes, the weights' square roots, the weights, w·x
	id, s        [8]float32  // each lane's inverse scale and scale 1/id
	code         [8][8]int32 // result: group k's code (4 levels, 3 bits each) in lane t at [k][t]
	nn           [8][8]int32 // result: the length of the neighbour list group k searched (0: on the codebook)
	sumqx, sumq2 [8]float32  // result: each lane's Σ w·x·q and Σ w·q² (q = 2l+1, in order)
	off          [8][8]int32 // the assembly's scratch: the offsets of the lists
}

// iq3LanesGeneric is the body of search's trial loop for the eight lanes of b:
// each lane's levels, codebook points (nearest for a group off it) and sums,
// with the same float32 operations in the same order. Between a d2 that
// starts from 0 (the reference's) and one that starts from the first term only
// the sign of a zero differs, which no comparison sees.
func (t *iq3Tables) iq3LanesGeneric(b *iq3Lanes) {
	for ln := range 8 {
		id, s := b.id[ln], b.s[ln]
		var sumqx, sumq2 float32
		for k := range 8 {
			x, wa := b.x[4*k:4*k+4], b.wa[4*k:4*k+4]
			var code int32
			for c := range 4 {
				code |= int32(iq3Level(id, x[c])) << (3 * c)
			}
			e := t.nbr[code]
			n, nb := int32(e&255), t.list[e>>8:]
			best, bestD2 := code, float32(math.MaxFloat32)
			for j := range n {
				p := int32(nb[j])
				if j == 0 {
					best = p
				}
				var d2 float32
				for c := range 4 {
					sq := float32(s * float32(2*(p>>(3*c)&7)+1))
					d := sq - x[c]
					if c == 0 {
						d2 = float32(float32(wa[c]*d) * d)
					} else {
						d2 += float32(float32(wa[c]*d) * d)
					}
				}
				if d2 < bestD2 {
					bestD2, best = d2, p
				}
			}
			b.code[k][ln], b.nn[k][ln] = best, n
			for c := range 4 {
				q := float32(2*(best>>(3*c)&7) + 1)
				sumqx += float32(b.wx[4*k+c] * q)
				sumq2 += float32(float32(b.w[4*k+c]*q) * q)
			}
		}
		b.sumqx[ln], b.sumq2[ln] = sumqx, sumq2
	}
}

// searchLanes is search with its trials eight at a time through the lane
// kernel (b is its scratch): the same levels and scale, the best trial kept
// in the reference's order and by its comparison.
func (t *iq3Tables) searchLanes(b *iq3Lanes, x, w, waux []float32, maxv float32, trials int, onGridFirst, redoAll bool, L *[32]int8) float32 {
	copy(b.x[:], x[:32])
	copy(b.w[:], w[:32])
	copy(b.wa[:], waux[:32])
	for i, v := range b.x {
		b.wx[i] = float32(b.w[i] * v)
	}
	*L = [32]int8{}
	var onGrid [8]bool
	for k := range onGrid {
		onGrid[k] = onGridFirst
	}
	var best float32
	scale := maxv / 15
	for is0 := -trials; is0 <= trials; is0 += 8 {
		for ln := range 8 {
			// Lanes past the last trial repeat it; their results are not read.
			id := iq3TrialID(min(is0+ln, trials), maxv)
			b.id[ln], b.s[ln] = id, 1/id
		}
		t.lanes(b)
		for ln := range min(8, trials-is0+1) {
			sumqx, sumq2 := b.sumqx[ln], b.sumq2[ln]
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				scale = sumqx / sumq2
				best = float32(scale * sumqx)
				for k := range 8 {
					code := b.code[k][ln]
					for c := range 4 {
						L[4*k+c] = int8(code >> (3 * c) & 7)
					}
					onGrid[k] = b.nn[k][ln] == 0
				}
			}
		}
	}
	return t.refit(x, w, waux, scale, redoAll, &onGrid, L)
}

// fit is searchLanes where the lane kernel is assembly, else search.
func (t *iq3Tables) fit(b *iq3Lanes, x, w, waux []float32, maxv float32, trials int, onGridFirst, redoAll bool, L *[32]int8) float32 {
	if iq3Asm {
		return t.searchLanes(b, x, w, waux, maxv, trials, onGridFirst, redoAll, L)
	}
	return t.search(x, w, waux, maxv, trials, onGridFirst, redoAll, L)
}

// point returns the codebook index of levels L, which are always a point of it
// (a code off it would be a bug here; ggml stops there, this takes point 0).
func (t *iq3Tables) point(L []int8) int32 { return max(0, t.index[iq3Code(L)]) }

// iqWeights fills w with the fit's weights for the sub-block x of IQ2_XXS,
// IQ2_XS or IQ3 (x², or qw·sqrt(σ² + x²) with importance weights qw) and waux
// with their square roots.
func iqWeights(w, waux, x, qw []float32, sigma2 float32) {
	fitWeights(w, x, qw, sigma2)
	for i, v := range w {
		waux[i] = sqrt32(v)
	}
}

func quantIQ3_XXS(dst []byte, src []float32) { quantRowIQ3_XXSW(dst, src, nil) }
func quantIQ3_S(dst []byte, src []float32)   { quantRowIQ3_SW(dst, src, nil) }

// quantRowIQ3_XXSW quantizes whole IQ3_XXS blocks of x with importance weights
// qw (one per value of x; nil: none).
func quantRowIQ3_XXSW(y []byte, x, qw []float32) {
	t := iq3xxsTables()
	var w, waux, xval [32]float32
	var L [32]int8
	var scales [8]float32
	var lanes iq3Lanes
	for ibl := 0; ibl < len(x)/qkK; ibl++ {
		xbl, b := x[qkK*ibl:qkK*ibl+qkK], y[iq3xxsBytes*ibl:iq3xxsBytes*ibl+iq3xxsBytes]
		clear(b)
		qs, ss := b[2:66], b[66:98]
		sigma2 := float32(2*sumSquares(xbl)) / qkK
		var maxScale float32
		for ib := range 8 {
			xb := xbl[32*ib : 32*ib+32]
			iqWeights(w[:], waux[:], xb, weightsAt(qw, qkK*ibl+32*ib, 32), sigma2)
			var signs [4]uint8
			for k := range 4 {
				signs[k] = iqSigns(xval[8*k:], xb[8*k:], w[8*k:], true)
			}
			maxv := iqMaxOf(xval[:])
			if maxv < 1e-8 { // GROUP_MAX_EPS_IQ3_XXS
				scales[ib] = 0
				continue
			}
			scale := t.fit(&lanes, xval[:], w[:], waux[:], maxv, 15, true, false, &L)
			if scale < 0 { // never for finite input, as ggml says; its remedy
				scale = -scale
				for k := range signs {
					signs[k] = ^signs[k] & 127
				}
			}
			for k := range 8 {
				qs[8*ib+k] = uint8(t.point(L[4*k : 4*k+4]))
			}
			binary.LittleEndian.PutUint32(ss[4*ib:], uint32(signs[0])|uint32(signs[1])<<7|uint32(signs[2])<<14|uint32(signs[3])<<21)
			scales[ib] = scale
			maxScale = max32(maxScale, scale)
		}
		if maxScale == 0 {
			clear(b)
			continue
		}
		d := maxScale / 31
		putF16(b, float32(d*1.0125))
		id := 1 / d
		for ib := range 8 {
			s := binary.LittleEndian.Uint32(ss[4*ib:])
			binary.LittleEndian.PutUint32(ss[4*ib:], s|uint32(iqScale4(id, scales[ib]))<<28)
		}
	}
}

// quantRowIQ3_SW quantizes whole IQ3_S blocks of x with importance weights qw
// (one per value of x; nil: none).
//
// ggml writes a sub-block's indices and signs at running positions that an
// all-zero sub-block does not advance, so the sub-blocks after one land a
// sub-block early (and the last slot keeps zeros); this does the same, as the
// bytes must be ggml's.
func quantRowIQ3_SW(y []byte, x, qw []float32) {
	t := iq3sTables()
	var w, waux, xval [32]float32
	var L [32]int8
	var scales [8]float32
	var lanes iq3Lanes
	for ibl := 0; ibl < len(x)/qkK; ibl++ {
		xbl, b := x[qkK*ibl:qkK*ibl+qkK], y[iq3sBytes*ibl:iq3sBytes*ibl+iq3sBytes]
		clear(b)
		qs, qh, signs, sc := b[2:66], b[66:74], b[74:106], b[106:110]
		sigma2 := float32(2*sumSquares(xbl)) / qkK
		var maxScale float32
		for ib := range 8 {
			xb := xbl[32*ib : 32*ib+32]
			iqWeights(w[:], waux[:], xb, weightsAt(qw, qkK*ibl+32*ib, 32), sigma2)
			var bs [4]uint8
			for k := range 4 {
				bs[k] = iqSigns(xval[8*k:], xb[8*k:], nil, false)
			}
			maxv := iqMaxOf(xval[:])
			if maxv == 0 {
				scales[ib] = 0
				continue
			}
			scale := t.fit(&lanes, xval[:], w[:], waux[:], maxv, 9, false, true, &L)
			if scale < 0 { // never for finite input, as ggml says; its remedy
				scale = -scale
				for k := range bs {
					bs[k] = ^bs[k]
				}
			}
			for k := range 8 {
				p := t.point(L[4*k : 4*k+4])
				qs[k] = uint8(p)
				qh[ib] |= uint8(p>>8) << k
			}
			qs = qs[8:]
			copy(signs, bs[:])
			signs = signs[4:]
			scales[ib] = scale
			maxScale = max32(maxScale, scale)
		}
		if maxScale == 0 {
			continue
		}
		d := maxScale / 31
		putF16(b, float32(d*1.033))
		id := 1 / d
		for ib := range 8 {
			sc[ib/2] |= iqScale4(id, scales[ib]) << (4 * (ib % 2))
		}
	}
}
