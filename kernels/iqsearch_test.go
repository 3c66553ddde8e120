package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQBestLanes compares the vector neighbour search (bestLanes, the
// assembly) with the plain one (best) on every list of every table, for
// terms drawn at random, from a few small integers (many equal sums: the
// first must win), with zeros, with sums overflowing to +Inf and with NaN
// and infinite terms.
func TestIQBestLanes(t *testing.T) {
	if !iqAsm {
		t.Skip("no vector neighbour search on this build or CPU")
	}
	r := rand.New(rand.NewPCG(28, 5))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	draws := []func() float32{
		func() float32 { return r.Float32() },
		func() float32 { return float32(r.IntN(3)) },
		func() float32 { return 0 },
		func() float32 { return float32(r.IntN(2)) * math.MaxFloat32 / 3 },
		func() float32 { return []float32{inf, nan, 1, 0}[r.IntN(4)] },
		func() float32 { return float32(r.NormFloat64() * 1e30) },
	}
	for name, s := range map[string]*iqSearch{"IQ2_XXS": iq2xxsSearch(), "IQ2_XS": iq2xsSearch(), "IQ2_S": iq2sSearch(), "IQ1": iq1sSearch()} {
		lists := 0
		for n := range 6561 {
			u := 0
			for i, c := 0, n; i < 8; i, c = i+1, c/3 {
				u |= c % 3 << (2 * i)
			}
			if s.kmap[u] >= 0 {
				continue
			}
			lists++
			for _, draw := range draws {
				var e [8][4]float32
				for i := range e {
					e[i] = [4]float32{draw(), draw(), draw(), draw()}
				}
				var L1, L2 [8]uint8
				g1, g2 := s.best(u, &e, L1[:]), s.bestLanes(u, &e, L2[:])
				if g1 != g2 || L1 != L2 {
					t.Fatalf("%s code %#x, terms %v: best %d %v, bestLanes %d %v", name, u, e, g1, L1, g2, L2)
				}
			}
		}
		if lists == 0 {
			t.Fatalf("%s: no lists", name)
		}
	}
}
