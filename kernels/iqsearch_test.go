package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/apr-go/apr/lib/dtype"
)

// TestIQNearestLanes compares the vector neighbour search (nearestLanes,
// the assembly) with the plain one (errTerms and best) on every list of
// every table, for values, weights and levels drawn at random, from a few
// small integers (many equal sums: the first must win), with zeros, with
// sums overflowing to +Inf and with NaN and infinite values.
func TestIQNearestLanes(t *testing.T) {
	if !iqAsm {
		t.Skip("no vector neighbour search on this build or CPU")
	}
	r := rand.New(rand.NewPCG(28, 5))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	draws := []func() float32{
		func() float32 { return r.Float32() },
		func() float32 { return float32(r.IntN(3)) },
		func() float32 { return 0 },
		func() float32 { return float32(r.IntN(2)) * 1e19 },
		func() float32 { return []float32{inf, nan, 1, 0, -inf}[r.IntN(5)] },
		func() float32 { return float32(r.NormFloat64() * 1e10) },
	}
	for name, s := range map[string]*iqSearch{"IQ2_XXS": iq2xxsSearch(), "IQ2_XS": iq2xsSearch(), "IQ2_S": iq2sSearch(), "IQ1": iq1sSearch()} {
		lists := 0
		for n := range 6561 {
			u := code3(n)
			if s.kmap[u] >= 0 {
				continue
			}
			lists++
			for _, draw := range draws {
				var x, w [8]float32
				for i := range x {
					x[i], w[i] = draw(), draw()
				}
				q := [4]float32{draw(), draw(), draw()}
				var e [8][4]float32
				errTerms(&e, &q, x[:], w[:])
				var L1, L2 [8]uint8
				g1, g2 := s.best(u, &e, L1[:]), s.nearestLanes(u, &q, x[:], w[:], L2[:])
				if g1 != g2 || L1 != L2 {
					t.Fatalf("%s code %#x, q %v x %v w %v: best %d %v, nearestLanes %d %v", name, u, q, x, w, g1, L1, g2, L2)
				}
			}
		}
		if lists == 0 {
			t.Fatalf("%s: no lists", name)
		}
	}
}

// iq1Draws are ways to draw the sorted values and weights of the IQ1 split
// tests: Gaussian, small integers (many equal scores: the first must win),
// zero weights, and magnitudes near float32's limits.
func iq1Draws(r *rand.Rand) []func() (x, w float32) {
	return []func() (x, w float32){
		func() (float32, float32) { return float32(r.NormFloat64()), r.Float32() },
		func() (float32, float32) { return float32(r.IntN(5) - 2), float32(r.IntN(3)) },
		func() (float32, float32) { return float32(r.NormFloat64()), float32(r.IntN(2)) },
		func() (float32, float32) { return float32(r.NormFloat64() * 1e18), float32(r.ExpFloat64()) },
		func() (float32, float32) { return float32(r.NormFloat64() * 1e-20), float32(r.ExpFloat64() * 1e-10) },
		func() (float32, float32) { return 1, 1 },
	}
}

// TestIQ1Split compares the IQ1_S and IQ1_M split searches with the
// assembly rows (vec) and without, on random sorted blocks.
func TestIQ1Split(t *testing.T) {
	if !iqAsm {
		t.Skip("no vector split search on this build or CPU")
	}
	for _, rescore := range []bool{false, true} {
		iq1Rescore = rescore
		testIQ1Split(t)
	}
	iq1Rescore = false
}

func testIQ1Split(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 6))
	for d, draw := range iq1Draws(r) {
		for trial := range 3000 {
			var x, w [32]float32
			for i := range x {
				x[i], w[i] = draw()
			}
			var idx [32]int
			sortedIdx(idx[:], x[:])
			maxv := absMax(x[:])
			var gs iq1sScan
			for j, i := range idx {
				gs.sumx[j+1] = gs.sumx[j] + float32(w[i]*x[i])
				gs.sumw[j+1] = gs.sumw[j] + w[i]
			}
			s1, a1, b1, k1 := gs.search(maxv, false)
			s2, a2, b2, k2 := gs.search(maxv, true)
			if math.Float32bits(s1) != math.Float32bits(s2) || a1 != a2 || b1 != b2 || k1 != k2 {
				t.Fatalf("IQ1_S draw %d trial %d: plain %v %d %d %d, vector %v %d %d %d", d, trial, s1, a1, b1, k1, s2, a2, b2, k2)
			}
			var gm iq1mScan
			var pw [2][17]float32
			sortedIdx(idx[:16], x[:16])
			for j, i := range idx[:16] {
				h := i / 8
				gm.px[h][j+1] = gm.px[h][j] + float32(w[i]*x[i])
				gm.px[1-h][j+1] = gm.px[1-h][j]
				pw[h][j+1] = pw[h][j] + w[i]
				pw[1-h][j+1] = pw[1-h][j]
			}
			s1, a1, b1, k1 = gm.search(&pw, maxv, false)
			s2, a2, b2, k2 = gm.search(&pw, maxv, true)
			if math.Float32bits(s1) != math.Float32bits(s2) || a1 != a2 || b1 != b2 || k1 != k2 {
				t.Fatalf("IQ1_M draw %d trial %d: plain %v %d %d %d, vector %v %d %d %d", d, trial, s1, a1, b1, k1, s2, a2, b2, k2)
			}
		}
	}
}

// TestIQ1ScanLayout checks the offsets iqsearch_amd64.s uses.
func TestIQ1ScanLayout(t *testing.T) {
	var s iq1sScan
	var m iq1mScan
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"iq1sScan.sumw", unsafe.Offsetof(s.sumw), 160},
		{"iq1sScan.gx2", unsafe.Offsetof(s.gx2), 320},
		{"iq1sScan.gw2", unsafe.Offsetof(s.gw2), 640},
		{"iq1sScan.c", unsafe.Offsetof(s.c), 960},
		{"iq1sScan.qx", unsafe.Offsetof(s.qx), 1024},
		{"iq1sScan.q2", unsafe.Offsetof(s.q2), 1344},
		{"iq1mScan.w2", unsafe.Offsetof(m.w2), 192},
		{"iq1mScan.c", unsafe.Offsetof(m.c), 576},
		{"iq1mScan.qx", unsafe.Offsetof(m.qx), 640},
		{"iq1mScan.q2", unsafe.Offsetof(m.q2), 1024},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the assembly reads %d", c.name, c.got, c.want)
		}
	}
}

// TestIQ2TrialsLayout checks the offsets iqsearch_amd64.s uses.
func TestIQ2TrialsLayout(t *testing.T) {
	var tr iq2Trials
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"w", unsafe.Offsetof(tr.w), 128},
		{"wx", unsafe.Offsetof(tr.wx), 256},
		{"id", unsafe.Offsetof(tr.id), 384},
		{"lv", unsafe.Offsetof(tr.lv), 480},
		{"code", unsafe.Offsetof(tr.code), 3552},
		{"sqx", unsafe.Offsetof(tr.sqx), 3936},
		{"sq2", unsafe.Offsetof(tr.sq2), 4032},
	} {
		if c.got != c.want {
			t.Errorf("iq2Trials.%s at %d, the assembly reads %d", c.name, c.got, c.want)
		}
	}
}

// The quantizers that ggml also runs without weights, without them (the
// weighted ones are in iq2quant_test.go).
func BenchmarkQuantizeIQ2_SNoWeights(b *testing.B) { benchQuantize(b, dtype.IQ2_S) }
func BenchmarkQuantizeIQ1_MNoWeights(b *testing.B) { benchQuantize(b, dtype.IQ1_M) }
