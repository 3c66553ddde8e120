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
// search must give ggml's index), with zero weights among them.
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
			if math.Float32bits(gx[k]) != math.Float32bits(wx[k]) || math.Float32bits(g2[k]) != math.Float32bits(w2[k]) {
				t.Fatalf("round %d, trial %d (id %v): sums %v, %v; want %v, %v (x %v)", round, k, ids[k], gx[k], g2[k], wx[k], w2[k], x)
			}
		}
	}
}
