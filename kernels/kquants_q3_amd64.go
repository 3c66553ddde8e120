//go:build amd64 && !purego && !noasm

package kernels

// Q3_K's quantizer in assembly (kquants_q3_amd64.s, AVX2) for plain builds:
// make_q3_quants on the 16 sub-blocks of 16 of several blocks at once, one
// sub-block per lane of 8, then the final levels and their packing. It is
// quantQ3_KGeneric's arithmetic, lane by lane in the reference's order, as
// q3LanesN (kquants_lanes_amd64.go) does it in a GOEXPERIMENT=simd build.

// q3AsmBlocks is how many blocks quantQ3_KAsm searches at once: 2 chains of
// 8 lanes each, whose steps are independent, so the core overlaps them (one
// chain alone waits on the division and compare that each step depends on).
const q3AsmBlocks = 4

// q3Asm is the state of the assembly search (offsets fixed in
// kquants_q3_amd64.s, checked by TestAsmLayout).
type q3Asm struct {
	xt      [2 * q3AsmBlocks][128]uint32 // chain c: element i of sub-block j at 8i+j, as bits
	lv      [2 * q3AsmBlocks][128]int32  // the current levels (-4..3), transposed as xt
	sums    [2 * q3AsmBlocks][16]float32 // sumlx in lanes 0-7, suml2 in 8-15
	flat    [2 * q3AsmBlocks][8]int32    // all ones where a sub-block's max |x| is below groupMaxEps
	changed [2 * q3AsmBlocks]int32       // the lanes whose levels changed in the last pass, as bits
	scale   [16 * q3AsmBlocks]float32    // results: the scales, in x's order
	lt      [qkK * q3AsmBlocks]int32     // results: the levels 0..7, in x's order
}

// quantQ3_KAsm is quantQ3_KGeneric with the sub-block searches and the final
// levels in assembly. A pass goes on only with the chains (of 8 sub-blocks)
// of which a level changed in the previous one: a pass over a chain that
// changed nothing would change nothing again, which is where the reference
// stops too.
func quantQ3_KAsm(dst []byte, src []float32) {
	var g q3Asm
	var dj [16]float32
	var list [2 * q3AsmBlocks]int64
	for len(src) >= qkK {
		nb := min(len(src)/qkK, q3AsmBlocks)
		dst = dst[:len(src)/qkK*110]
		nc := 2 * nb
		q3InitAVX2(&g, &src[0], nc)
		for c := range nc {
			list[c] = int64(c)
		}
		for pass, n := 0, nc; pass < 5 && n > 0; pass++ {
			clear(g.changed[:])
			q3PassAVX2(&g, &list[0], n)
			k := 0
			for _, c := range list[:n] {
				if g.changed[c] != 0 {
					list[k] = c
					k++
				}
			}
			n = k
		}
		q3FinishAVX2(&g, nc)
		for b := range nb {
			y := dst[110*b : 110*b+110]
			q3Scales(y, (*[16]float32)(g.scale[16*b:]), &dj)
			q3LevelsAVX2(&y[0], &src[qkK*b], &dj, &g.lt[qkK*b])
		}
		src, dst = src[nb*qkK:], dst[nb*110:]
	}
}

//go:noescape
func q3InitAVX2(grp *q3Asm, x *float32, nc int)

//go:noescape
func q3PassAVX2(grp *q3Asm, chains *int64, n int)

//go:noescape
func q3FinishAVX2(grp *q3Asm, nc int)

//go:noescape
func q3LevelsAVX2(y *byte, x *float32, dj *[16]float32, lt *int32)
