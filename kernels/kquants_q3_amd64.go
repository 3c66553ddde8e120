//go:build amd64 && !purego && !noasm

package kernels

import (
	"math/bits"
	"sync"
)

// Q3_K's quantizer in assembly (kquants_q3_amd64.s, AVX2), in plain and
// GOEXPERIMENT=simd builds alike: make_q3_quants on the 16 sub-blocks of 16
// of several blocks at once, one sub-block per lane of 8, then the scales,
// the final levels and their packing. It is quantQ3_KGeneric's arithmetic,
// lane by lane in the reference's order, so the bytes are the reference's
// (TestQ3KAsm, and the K-quant tests through quantQ3_K).

// q3AsmBlocks is how many blocks quantQ3_KAsm searches at once: their
// sub-blocks make 2·q3AsmBlocks chains of 8 lanes, whose steps are
// independent, so the core overlaps them (one chain alone waits on the
// division and compare that each of its steps depends on).
const q3AsmBlocks = 16

// q3Chains is the number of chains in q3Asm: the blocks' own (home) chains,
// then as many work chains, into which the sub-blocks still changing are
// gathered after each pass.
const q3Chains = 4 * q3AsmBlocks

// q3Asm is the state of the assembly search (offsets fixed in
// kquants_q3_amd64.s, checked by TestQ3KAsmLayout).
type q3Asm struct {
	xt      [q3Chains][128]uint32     // chain c: element i of sub-block j at 8i+j, as bits
	lv      [q3Chains][128]int32      // the current levels (-4..3), transposed as xt
	sums    [q3Chains][16]float32     // sumlx in lanes 0-7, suml2 in 8-15
	flat    [q3Chains][8]int32        // all ones where a sub-block's max |x| is below groupMaxEps
	changed [q3Chains]int32           // the lanes whose levels changed in the last pass, as bits
	scale   [16 * q3AsmBlocks]float32 // results: the scales, in x's order
	lt      [qkK * q3AsmBlocks]int32  // results: the levels 0..7, in x's order
}

// q3Pool holds q3Asm's (89 KiB each) between calls: every field is
// written before it is read, so they need no clearing.
var q3Pool = sync.Pool{New: func() any { return new(q3Asm) }}

// quantQ3_KAsm is quantQ3_KGeneric with the sub-block searches, the scales,
// the final levels and the packing in assembly.
//
// The reference runs make_q3_quants' passes on a sub-block until one
// changes nothing (at most 5); 8 sub-blocks in the lanes of a chain would
// run as many passes as the slowest of them, about twice as many as each
// needs. So the first pass runs over the blocks' own chains, and after each
// pass the sub-blocks that changed are gathered into work chains for the
// next, 8 to a chain (the rest of the last one zeros, which a pass leaves
// as they are: their sums stay 0, never above it); a sub-block that changed nothing in a pass would
// change nothing in the next (a pass is a function of its state), so its
// levels and sums go back to its own chain, as final.
func quantQ3_KAsm(dst []byte, src []float32) {
	g := q3Pool.Get().(*q3Asm)
	defer q3Pool.Put(g)
	var dj [16]float32
	var origin [8 * q3Chains / 2]int32 // the lanes of the work chains: home chain·8 + lane
	for len(src) >= qkK {
		nb := min(len(src)/qkK, q3AsmBlocks)
		dst = dst[:len(src)/qkK*110]
		nc := 2 * nb
		q3InitAVX2(g, &src[0], nc)
		clear(g.changed[:nc])
		q3PassAVX2(g, 0, nc)
		// gather the lanes that changed into work chains nc, nc+1, ...
		n := 0
		for c := range nc {
			for bits := g.changed[c]; bits != 0; bits &= bits - 1 {
				j := lowBit(bits)
				g.moveLane(nc+n/8, n%8, c, j)
				origin[n] = int32(8*c + j)
				n++
			}
		}
		for pass := 1; pass < 5 && n > 0; pass++ {
			nw := (n + 7) / 8
			for k := n; k < 8*nw; k++ {
				g.clearLane(nc+k/8, k%8)
			}
			clear(g.changed[nc : nc+nw])
			q3PassAVX2(g, nc, nw)
			m := 0
			for k := range n {
				wc, wl := nc+k/8, k%8
				o := origin[k]
				if g.changed[wc]>>wl&1 == 0 || pass == 4 {
					g.keepLane(int(o/8), int(o%8), wc, wl)
					continue
				}
				if m != k {
					g.moveLane(nc+m/8, m%8, wc, wl)
					origin[m] = o
				}
				m++
			}
			n = m
		}
		q3FinishAVX2(g, nc)
		for b := range nb {
			y := dst[110*b : 110*b+110]
			q3BlockAVX2(&y[0], &src[qkK*b], (*[16]float32)(g.scale[16*b:]), &dj, &g.lt[qkK*b])
		}
		src, dst = src[nb*qkK:], dst[nb*110:]
	}
}

// lowBit is the index of the lowest set bit of a nonzero b.
func lowBit(b int32) int { return bits.TrailingZeros32(uint32(b)) }

// moveLane copies lane sl of chain sc (values, levels, sums) to lane dl of
// chain dc.
func (g *q3Asm) moveLane(dc, dl, sc, sl int) {
	dx, sx := &g.xt[dc], &g.xt[sc]
	dv, sv := &g.lv[dc], &g.lv[sc]
	for i := 0; i < 128; i += 8 {
		dx[(i+dl)&127] = sx[(i+sl)&127]
		dv[(i+dl)&127] = sv[(i+sl)&127]
	}
	g.sums[dc][dl&15] = g.sums[sc][sl&15]
	g.sums[dc][(8+dl)&15] = g.sums[sc][(8+sl)&15]
}

// keepLane copies the levels and sums of lane sl of work chain sc back to
// lane dl of home chain dc.
func (g *q3Asm) keepLane(dc, dl, sc, sl int) {
	dv, sv := &g.lv[dc], &g.lv[sc]
	for i := 0; i < 128; i += 8 {
		dv[(i+dl)&127] = sv[(i+sl)&127]
	}
	g.sums[dc][dl&15] = g.sums[sc][sl&15]
	g.sums[dc][(8+dl)&15] = g.sums[sc][(8+sl)&15]
}

// clearLane zeroes lane l of chain c: a lane of zeros changes nothing in a
// pass (its sums stay 0, never above), so it fills a work chain's rest.
func (g *q3Asm) clearLane(c, l int) {
	x, v := &g.xt[c], &g.lv[c]
	for i := 0; i < 128; i += 8 {
		x[(i+l)&127] = 0
		v[(i+l)&127] = 0
	}
	g.sums[c][l&15] = 0
	g.sums[c][(8+l)&15] = 0
}

//go:noescape
func q3InitAVX2(grp *q3Asm, x *float32, nc int)

//go:noescape
func q3PassAVX2(grp *q3Asm, first, n int)

//go:noescape
func q3FinishAVX2(grp *q3Asm, nc int)

//go:noescape
func q3BlockAVX2(y *byte, x *float32, scales, dj *[16]float32, lt *int32)
