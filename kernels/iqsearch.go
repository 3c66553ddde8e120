package kernels

import (
	"fmt"
	"math"
	"sync"

	"github.com/apr-go/apr/lib/dtype"
)

// Search tables of the 8-coordinate grid quantizers (IQ2_XXS, IQ2_XS, IQ2_S,
// IQ1_S/IQ1_M), as ggml's iq2xs_init_impl builds them. A quantizer rounds 8
// values to levels 0..2 each and reads the point's code (base 4, digit i the
// level of value i) in a map: a grid point's index, or, for a code off the
// grid, a list of grid points near it to choose from by weighted error. The
// list holds every grid point at the nwant smallest squared distances (in
// ggml's units: coordinate 2l+1), nearest first, ties by index; ggml sorts
// (distance, index) pairs, which gives the same order.
//
// ggml fills the map for all 43692 codes up to 0xAAAB (digits 0..3); the
// quantizers only ever look up codes of digits 0..2, so only those 6561 are
// filled here (the lists of the others are never read). Each table is built
// once, on first use, and shared by all goroutines. Memory per table: the map
// 175 KB (an int32 per code) and the lists 2 bytes per entry: IQ2_XXS 239 KB,
// IQ2_XS 376 KB, IQ2_S 100 KB, IQ1_S/IQ1_M 664 KB (TestIQSearchTables logs
// them); about 2.1 MB with all four built. Where the vector search runs
// (iqAsm) each table also keeps its lists' levels transposed, 8 bytes per
// entry padded to groups of 8: IQ2_XXS 1.1 MB, IQ2_XS 1.6 MB, IQ2_S 0.6 MB,
// IQ1 2.7 MB.

// iqMapSize is ggml's kmap_size: codes 0..0xAAAB.
const iqMapSize = 43692

type iqSearch struct {
	digits [][8]uint8 // each grid point's levels 0..2 (ggml's grid stores 2l+1)
	kmap   []int32    // code -> grid index, or -(1+offset of the code's list in neigh)
	neigh  []uint16   // per list: its length, then the grid indices

	// For the vector search (iqAsm): each list's levels transposed, 8
	// neighbours to a group of 64 bytes (coordinate i of neighbour 8g+j at
	// 64g+8i+j, plus 4 for i >= 4: iqNearest8's tables; the last group
	// padded with the list's last point), and where a code's groups start.
	lanes  []uint8
	laneAt []int32
}

// neighbours returns the list of a code that is not on the grid.
func (s *iqSearch) neighbours(u int) []uint16 {
	off := -s.kmap[u] - 1
	return s.neigh[off+1 : off+1+int32(s.neigh[off])]
}

// newIQSearch builds the table of a grid (points as ggml's dequantization
// tables list them, levels through lv) keeping nwant distances per list.
func newIQSearch(grid [][8]int8, lv [3]int8, nwant int) *iqSearch {
	s := &iqSearch{
		digits: make([][8]uint8, len(grid)),
		kmap:   make([]int32, iqMapSize),
	}
	for i := range s.kmap {
		s.kmap[i] = -1
	}
	for j, p := range grid {
		code := 0
		for i, v := range p {
			l := 0
			for lv[l] != v {
				l++
			}
			s.digits[j][i] = uint8(l)
			code |= l << (2 * i)
		}
		s.kmap[code] = int32(j)
	}
	// Squared distances from a code's point (2l+1 per coordinate, l 0..2) to
	// a grid point (1, 3 or 5) are at most 8·16.
	var d2 = make([]uint8, len(grid))
	var seen [129]bool
	for n := range 6561 {
		code := 0
		var at [8]int
		for i, c := 0, n; i < 8; i, c = i+1, c/3 {
			at[i] = 2*(c%3) + 1
			code |= c % 3 << (2 * i)
		}
		if s.kmap[code] >= 0 {
			continue
		}
		seen = [129]bool{}
		for j := range s.digits {
			d := 0
			for i, l := range s.digits[j] {
				e := 2*int(l) + 1 - at[i]
				d += e * e
			}
			d2[j] = uint8(d)
			seen[d] = true
		}
		s.kmap[code] = -int32(len(s.neigh)) - 1
		start := len(s.neigh)
		s.neigh = append(s.neigh, 0)
		for d, have := 0, 0; d < len(seen) && have < nwant; d++ {
			if !seen[d] {
				continue
			}
			have++
			for j := range d2 {
				if int(d2[j]) == d {
					s.neigh = append(s.neigh, uint16(j))
				}
			}
		}
		s.neigh[start] = uint16(len(s.neigh) - start - 1)
	}
	if iqAsm {
		s.transpose()
	}
	return s
}

// transpose fills lanes and laneAt from the lists.
func (s *iqSearch) transpose() {
	s.laneAt = make([]int32, iqMapSize)
	for n := range 6561 {
		u := code3(n)
		if s.kmap[u] >= 0 {
			continue
		}
		nb := s.neighbours(u)
		s.laneAt[u] = int32(len(s.lanes))
		for g := 0; g < len(nb); g += 8 {
			var grp [64]uint8
			for j := range 8 {
				p := &s.digits[nb[min(g+j, len(nb)-1)]]
				for i := range 8 {
					grp[8*i+j] = p[i] + uint8(i/4*4)
				}
			}
			s.lanes = append(s.lanes, grp[:]...)
		}
	}
}

// The tables, built on first use (nwant as in ggml: 2 for IQ2_XXS and IQ2_XS,
// 1 for IQ2_S, 3 for IQ1_S and IQ1_M, which share theirs).
var (
	iq2xxsSearch = sync.OnceValue(func() *iqSearch { return newIQSearch(iq2xxsGrid, [3]int8{8, 25, 43}, 2) })
	iq2xsSearch  = sync.OnceValue(func() *iqSearch { return newIQSearch(iq2xsGrid, [3]int8{8, 25, 43}, 2) })
	iq2sSearch   = sync.OnceValue(func() *iqSearch { return newIQSearch(iq2sGrid, [3]int8{8, 25, 43}, 1) })
	iq1sSearch   = sync.OnceValue(func() *iqSearch { return newIQSearch(iq1sGrid, [3]int8{-1, 0, 1}, 3) })
)

// code3 is the map code of the 8 levels 0..2 that are n's base-3 digits (the
// first the least significant).
func code3(n int) int {
	u := 0
	for i, c := 0, n; i < 8; i, c = i+1, c/3 {
		u |= c % 3 << (2 * i)
	}
	return u
}

// code8 is the map code of 8 levels.
func code8(L []uint8) int {
	u := 0
	for i, l := range L[:8] {
		u |= int(l) << (2 * i)
	}
	return u
}

// nearest is ggml's iq2_find_best_neighbour: the grid point of the code's list
// closest to xval at scale by the weighted squared error (the first of equal
// ones); L gets its levels.
func (s *iqSearch) nearest(u int, xval, w []float32, scale float32, L []uint8) int {
	// Each value's term w·(scale·q − x)² takes one of three values (q = 1, 3, 5):
	// computed once here as ggml computes it per neighbour, then summed in ggml's order.
	q := [4]float32{scale, float32(scale * 3), float32(scale * 5)}
	if iqAsm {
		return s.nearestLanes(u, &q, xval, w, L)
	}
	var e [8][4]float32
	errTerms(&e, &q, xval, w)
	return s.best(u, &e, L)
}

// errTerms sets e[i][l] to w[i]·(q[l] − x[i])² for the 8 values and the three
// levels q[0..2], each product rounded as ggml rounds it (e[i][3] and q[3]
// are padding).
func errTerms(e *[8][4]float32, q *[4]float32, x, w []float32) {
	for i := range e {
		xi, wi := x[i], w[i]
		d0, d1, d2 := q[0]-xi, q[1]-xi, q[2]-xi
		e[i] = [4]float32{float32(float32(wi*d0) * d0), float32(float32(wi*d1) * d1), float32(float32(wi*d2) * d2)}
	}
}

// best returns the grid point of the code's list whose sum of the terms e[i][level i]
// is smallest (the first of equal ones; a sum in ggml's order, value 0 first) and
// puts its levels in L.
func (s *iqSearch) best(u int, e *[8][4]float32, L []uint8) int {
	nb := s.neighbours(u)
	bestD2, gi := float32(math.MaxFloat32), -1
	// Four neighbours at a time: their sums are independent chains of additions
	// (the latency of one chain is what bounds this loop); compared in order.
	k := 0
	for ; k+4 <= len(nb); k += 4 {
		p0, p1, p2, p3 := &s.digits[nb[k]], &s.digits[nb[k+1]], &s.digits[nb[k+2]], &s.digits[nb[k+3]]
		a, b, c, d := e[0][p0[0]], e[0][p1[0]], e[0][p2[0]], e[0][p3[0]]
		for i := 1; i < 8; i++ {
			ei := &e[i]
			a, b, c, d = a+ei[p0[i]], b+ei[p1[i]], c+ei[p2[i]], d+ei[p3[i]]
		}
		for m, v := range [4]float32{a, b, c, d} {
			if v < bestD2 {
				bestD2, gi = v, int(nb[k+m])
			}
		}
	}
	for ; k < len(nb); k++ {
		p := &s.digits[nb[k]]
		d2 := e[0][p[0]]
		for i := 1; i < 8; i++ {
			d2 += e[i][p[i]]
		}
		if d2 < bestD2 {
			bestD2, gi = d2, int(nb[k])
		}
	}
	// ggml's IQ1 search then tries the whole grid, reading past the 8 values
	// (an out-of-bounds bug), and its IQ2 search asserts: only when every sum
	// is infinite or NaN, which values within apr's limits (lib/quant) never give.
	if gi < 0 {
		gi = int(nb[0])
	}
	copy(L[:8], s.digits[gi][:])
	return gi
}

// nearestLanes is nearest in the assembly (iqNearest8), from the levels'
// values q (q[3] unused).
func (s *iqSearch) nearestLanes(u int, q *[4]float32, xval, w []float32, L []uint8) int {
	nb := s.neighbours(u)
	_, _ = xval[7], w[7]
	k := iqNearest8(&s.lanes[s.laneAt[u]], (len(nb)+7)/8, q, &xval[0], &w[0])
	gi := int(nb[max(k, 0)]) // as best: the first point when no sum is below MaxFloat32
	copy(L[:8], s.digits[gi][:])
	return gi
}

// nearestIQ1 is ggml's iq1_find_best_neighbour2: as nearest, with the grid's
// levels l standing for xg[l].
func (s *iqSearch) nearestIQ1(u int, xval, w []float32, scale float32, xg *[3]float32, L []uint8) int {
	q := [4]float32{float32(scale * xg[0]), float32(scale * xg[1]), float32(scale * xg[2])}
	if iqAsm {
		return s.nearestLanes(u, &q, xval, w, L)
	}
	var e [8][4]float32
	errTerms(&e, &q, xval, w)
	return s.best(u, &e, L)
}

// NeedsWeights reports the types ggml quantizes only with importance weights
// (ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S): Quantize refuses
// them, QuantizeWeighted needs qw.
func NeedsWeights(t dtype.DType) bool {
	switch t {
	case dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ1_S:
		return true
	}
	return false
}

// checkFinite refuses a NaN or infinity for the grid quantizers, naming its
// index in src: ggml's searches assert or read out of bounds on them. (apr-quant
// refuses such values before, with the tensor and position; this keeps other
// callers from getting meaningless bytes.)
func checkFinite(t dtype.DType, src []float32) error {
	switch t {
	case dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ1_S, dtype.IQ1_M:
	default:
		return nil
	}
	if !AnyAbsAtLeast(src, 0x7f800000) {
		return nil
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w for %v: %v at value %d", ErrNonFinite, t, v, i)
		}
	}
	return nil
}
