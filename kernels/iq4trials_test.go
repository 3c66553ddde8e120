package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQ4TrialsMatchGeneric checks the trial-fit kernel in use (a vector one
// where the build and CPU have it) against the scalar one, bit for bit: random
// sub-blocks at random scales, and values on and a few ulps around every
// midpoint between levels and every level at inverse scale 1 (where the binary
// search must give ggml's index), with zero weights, NaN and infinities among them.
func TestIQ4TrialsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var edges []float32
	for k := range 16 {
		edges = append(edges, float32(iq4nlValues[k]))
		if k < 15 {
			edges = append(edges, (float32(iq4nlValues[k])+float32(iq4nlValues[k+1]))/2)
		}
	}
	for round := range 4000 {
		var x, w [qk]float32
		var ids [16]float32
		scale := float32(math.Ldexp(1, r.IntN(40)-20))
		for j := range x {
			if round%2 == 0 {
				e := edges[r.IntN(len(edges))]
				x[j] = math.Float32frombits(uint32(int32(math.Float32bits(e)) + int32(r.IntN(5)-2)))
			} else {
				x[j] = float32(r.NormFloat64()) * scale
			}
			if r.IntN(8) != 0 {
				w[j] = float32(r.ExpFloat64())
			}
		}
		if round%5 == 4 { // NaN and infinities, in values or weights
			special := [3]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
			if r.IntN(2) == 0 {
				x[r.IntN(qk)] = special[r.IntN(3)]
			} else {
				w[r.IntN(qk)] = special[r.IntN(3)]
			}
		}
		for k := range ids {
			if round%2 == 0 && r.IntN(2) == 0 {
				ids[k] = 1
			} else {
				ids[k] = float32(r.Float64()*300-150) / scale
			}
		}
		var gx, g2, wx, w2 [16]float32
		iq4Trials16(x[:], w[:], &ids, &gx, &g2)
		iq4Trials16Generic(x[:], w[:], &ids, &wx, &w2)
		for k := range ids {
			if !sameF32(gx[k], wx[k]) || !sameF32(g2[k], w2[k]) {
				t.Fatalf("round %d, trial %d (id %v): sums %v, %v; want %v, %v (x %v)", round, k, ids[k], gx[k], g2[k], wx[k], w2[k], x)
			}
		}
	}
}

// sameF32 is bit equality, any NaN equal to any NaN (their payloads mean nothing to the fit).
func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}
