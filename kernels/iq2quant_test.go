package kernels

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// The IQ2/IQ1 goldens (testdata/quant/README.md, "Grid i-quants"), made by
// today's ggml: rows.f32 read as rows of 512 values with the importance vector
// rows512.imatrix.f32 (NAME.w.bin) and, for the types ggml quantizes without weights
// too, without it (NAME.bin); iqrand.f32, random blocks of four shapes, as rows
// of 1024 values with iqrand.imatrix.f32 (NAME.rand.w.bin, NAME.rand.bin);
// iqedge.f32, five groups of blocks of extreme values, each group with its own
// extreme importance vector from iqedge.imatrix.f32 (NAME.edge.w.bin).
var iqSets = []struct {
	input, imatrix, suffix string
	cols, groups           int
	unweighted             bool
}{
	{"rows.f32", "rows512.imatrix.f32", "", 512, 1, true},
	{"iqrand.f32", "iqrand.imatrix.f32", ".rand", 1024, 1, true},
	{"iqedge.f32", "iqedge.imatrix.f32", ".edge", 256, 5, false},
}

var iqGoldens = []struct {
	t          dtype.DType
	name       string
	unweighted bool
}{
	{dtype.IQ2_XXS, "iq2_xxs", false},
	{dtype.IQ2_XS, "iq2_xs", false},
	{dtype.IQ2_S, "iq2_s", true},
	{dtype.IQ1_S, "iq1_s", false},
	{dtype.IQ1_M, "iq1_m", true},
}

func init() {
	for k, v := range map[string]string{
		"rows512.imatrix.f32": "c387459fd7964ece83de4da76e1412c917aff26622236a269d824d69023c3bfa",
		"iq2_xxs.w.bin":       "8dcaa8af433ea79fe211eef238e1fd5c8ae0d5d3538c10abdaace749a640445b",
		"iq2_xs.w.bin":        "db89082d04ec6939af8f91678c58f4e25a92bd252b65fa534f128e6d57e3d499",
		"iq2_s.w.bin":         "f3b520135e0c51fccdfa71de15734886b470b327b5ace65ee32b7cc0770f731c",
		"iq2_s.bin":           "16ffcf8de2279b1a3e223d04dc7f1bf3658a406d42e36b3ae870c46fdb1b21b1",
		"iq1_s.w.bin":         "bc17163cb137713af4bd31527082767fc29ed578c0948c6a3a503f570afd58c2",
		"iq1_m.w.bin":         "b376da4a6ed3c7d7d4449c50d4e791e20403898773f90b77f81adc143f1e57c9",
		"iq1_m.bin":           "493722c3716ecc301495e12ac1dc1e1102b0e40413b266d3dc754aa97a663071",
		"iqrand.f32":          "bfeda4fb23cdc3bbcc7e815f12b398e30ecc54ec27d2cc7ee66bab39cb081fe2",
		"iqrand.imatrix.f32":  "8635d3216dc74e965978c46335b8dfd86f71136e99fb054a294963e3ac263795",
		"iq2_xxs.rand.w.bin":  "a5db2cc85f6b0d6ad9b6aeac58bfeef774c0da04425df819e9df93ac25b5aad5",
		"iq2_xs.rand.w.bin":   "bb6606aba7e660835ebcca30a1336cd5250b958490482bb1e85ceba6b2d33787",
		"iq2_s.rand.w.bin":    "bb5fd90b430dd1ea479876cd28e82475b189f03b461e3c80aa0c28b71dd59f18",
		"iq2_s.rand.bin":      "dc9f6157ec15a91e1fdeac5337786749a3b8de66aea9ad86555f42b75069e41e",
		"iq1_s.rand.w.bin":    "2a7bd7976b33f5e5f90c9d7cf18042abfcca72b29567a38282216eb8bd5cd8b2",
		"iq1_m.rand.w.bin":    "8e75715c5258e72a931e9c979b079d38051d10afa8344a4cbdc84e799159b3d6",
		"iq1_m.rand.bin":      "caaca48eb860bfef327cea2c1b76222445ecf039bbe63e6be8064fe3abff42b2",
		"iqedge.f32":          "1b42e83af5772e4c44c868a1f27d89f896cf10aa17549e27ce021df6ccd50a53",
		"iqedge.imatrix.f32":  "cbf063f7eae08da9c3f988fe4632569f83ac2464f739a3703c3adeb10194d7a7",
		"iq2_xxs.edge.w.bin":  "3232637c85dce339c2284e1176b2b4e1a85548df146dff6ee6fc4a522fd18139",
		"iq2_xs.edge.w.bin":   "adb65f5e22ecd358c6a0b453bf62246ce5e87de2ffb9784747e04dd015ab399f",
		"iq2_s.edge.w.bin":    "0620d69e7061df947eeab8ec3682a3b57b3b28b3d3afbe0bd0c7d7b932308a0e",
		"iq1_s.edge.w.bin":    "5858fcef2c480a559526e46250f1dd9e693bd665689ea831bbf7f6313d7fc8e4",
		"iq1_m.edge.w.bin":    "0c1dde4e0110ad0ef56bdedc2a975950dfa4ec60a9b164bee0b27f06329c30af",
	} {
		goldenSHA[k] = v
	}
}

// TestGoldenIQ checks the grid quantizers against ggml's bytes, block by block
// (a failure names the block; in rows.f32 block b is row b, whose crafted
// content rows_index.json describes).
func TestGoldenIQ(t *testing.T) {
	for _, set := range iqSets {
		x := floatsLE(readGolden(t, set.input))
		qw := floatsLE(readGolden(t, set.imatrix))
		for _, g := range iqGoldens {
			for _, weighted := range []bool{true, false} {
				if !weighted && !(g.unweighted && set.unweighted) {
					continue
				}
				file, w := g.name+set.suffix+".bin", []float32(nil)
				if weighted {
					file, w = g.name+set.suffix+".w.bin", qw
				}
				t.Run(file, func(t *testing.T) {
					want := readGolden(t, file)
					bb := g.t.Info().BlockBytes
					if len(want) != len(x)/qkK*bb {
						t.Fatalf("%s has %d bytes, want %d", file, len(want), len(x)/qkK*bb)
					}
					got := make([]byte, len(want))
					xn, qn, bn := len(x)/set.groups, set.cols, len(want)/set.groups
					for k := range set.groups {
						var wk []float32
						if w != nil {
							wk = w[k*qn : (k+1)*qn]
						}
						if err := QuantizeWeighted(g.t, got[k*bn:(k+1)*bn], x[k*xn:(k+1)*xn], set.cols, wk); err != nil {
							t.Fatal(err)
						}
					}
					bad := 0
					for b := range len(want) / bb {
						if g, w := got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]; !bytes.Equal(g, w) {
							if bad++; bad <= 5 {
								i := firstDiff(g, w)
								t.Errorf("block %d: byte %d: got %#02x want %#02x", b, i, g[i], w[i])
							}
						}
					}
					if bad > 0 {
						t.Fatalf("%d of %d blocks differ", bad, len(want)/bb)
					}
				})
			}
		}
	}
}

// TestIQSearchTables checks the search tables against ggml's construction done
// the slow way: for every code of levels 0..2 off the grid, all (distance, index)
// pairs sorted, kept while there are at most nwant distinct distances.
func TestIQSearchTables(t *testing.T) {
	for _, c := range []struct {
		name  string
		s     *iqSearch
		nwant int
	}{
		{"IQ2_XXS", iq2xxsSearch(), 2}, {"IQ2_XS", iq2xsSearch(), 2}, {"IQ2_S", iq2sSearch(), 1}, {"IQ1_S", iq1sSearch(), 3},
	} {
		s := c.s
		onGrid := 0
		type pair struct{ d2, j int }
		pairs := make([]pair, len(s.digits))
		step := 1
		if testing.Short() {
			step = 7 // a sample under qemu (make test-arm64)
		}
		for n := 0; n < 6561; n += step {
			var lv [8]uint8
			for i, m := 0, n; i < 8; i, m = i+1, m/3 {
				lv[i] = uint8(m % 3)
			}
			u := code8(lv[:])
			if s.kmap[u] >= 0 {
				if s.digits[s.kmap[u]] != lv {
					t.Fatalf("%s: code %#x maps to grid point %d with levels %v", c.name, u, s.kmap[u], s.digits[s.kmap[u]])
				}
				onGrid++
				continue
			}
			for j, p := range s.digits {
				d2 := 0
				for i := range p {
					e := 2*int(p[i]) - 2*int(lv[i])
					d2 += e * e
				}
				pairs[j] = pair{d2, j}
			}
			slices.SortFunc(pairs, func(a, b pair) int { return cmp.Or(cmp.Compare(a.d2, b.d2), cmp.Compare(a.j, b.j)) })
			var want []uint16
			for k, have := 0, 1; k < len(pairs); k++ {
				if k > 0 && pairs[k].d2 > pairs[k-1].d2 {
					if have == c.nwant {
						break
					}
					have++
				}
				want = append(want, uint16(pairs[k].j))
			}
			if got := s.neighbours(u); !slices.Equal(got, want) {
				t.Fatalf("%s: code %#x: neighbours %v, want %v", c.name, u, got, want)
			}
		}
		if step == 1 && onGrid != len(s.digits) {
			t.Errorf("%s: %d grid points found in the map, want %d", c.name, onGrid, len(s.digits))
		}
		t.Logf("%s: %d neighbour list entries (%d KB), map %d KB", c.name, len(s.neigh), 2*len(s.neigh)/1000, 4*len(s.kmap)/1000)
	}
}

var iqAll = []dtype.DType{dtype.IQ2_XXS, dtype.IQ2_XS, dtype.IQ2_S, dtype.IQ1_S, dtype.IQ1_M}

// TestIQRoundTrip quantizes random rows of several scales and checks ggml's
// decoding of them against the source: the relative rms error within a bound
// per type (the fits are weighted, so the largest error is not bounded).
// Edge blocks (zeros, ±0, values below ggml's thresholds, one value, a
// constant, alternating signs) decode without a NaN, the first three to zeros.
// (A constant does not come back near itself: IQ2_XXS's sparse grid has no
// point of 8 equal levels but 0s; the goldens hold ggml's bytes for such rows.)
func TestIQRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 1))
	bound := map[dtype.DType]float64{dtype.IQ2_XXS: 0.5, dtype.IQ2_XS: 0.4, dtype.IQ2_S: 0.33, dtype.IQ1_S: 0.62, dtype.IQ1_M: 0.6}
	for _, d := range iqAll {
		for trial := range 24 {
			n := 256 * (1 + trial%4)
			x := randRow(r, n, math.Pow(10, float64(trial%7-3)))
			qw := make([]float32, n)
			for i := range qw {
				qw[i] = float32(r.ExpFloat64())
			}
			y := iqRoundTrip(t, d, x, qw)
			var se, sx float64
			for i := range x {
				se += float64(x[i]-y[i]) * float64(x[i]-y[i])
				sx += float64(x[i]) * float64(x[i])
			}
			if rms := math.Sqrt(se / sx); rms > bound[d] {
				t.Errorf("%v trial %d: relative rms error %.3f > %.3f", d, trial, rms, bound[d])
			}
		}
		ones := make([]float32, qkK)
		for i := range ones {
			ones[i] = 1
		}
		edges := map[string][]float32{
			"zeros": make([]float32, qkK), "negative zeros": make([]float32, qkK), "tiny": make([]float32, qkK),
			"one value": make([]float32, qkK), "constant": make([]float32, qkK), "signs": make([]float32, qkK),
		}
		for i := range qkK {
			edges["negative zeros"][i] = float32(math.Copysign(0, -1))
			edges["tiny"][i] = float32(1e-20 * float64(i%5-2))
			edges["constant"][i] = -3.5
			edges["signs"][i] = float32(1 - 2*(i%2))
		}
		edges["one value"][77] = 12
		for name, x := range edges {
			y := iqRoundTrip(t, d, x, ones)
			for i, v := range y {
				if v != v || math.IsInf(float64(v), 0) {
					t.Fatalf("%v %s: value %d decodes to %v", d, name, i, v)
				}
				if (name == "zeros" || name == "negative zeros" || name == "tiny") && v != 0 {
					t.Fatalf("%v %s: value %d decodes to %v, want 0", d, name, i, v)
				}
			}
		}
	}
}

// iqRoundTrip is x quantized to d as one row (weights qw; nil: none) and decoded.
func iqRoundTrip(t *testing.T, d dtype.DType, x, qw []float32) []float32 {
	t.Helper()
	nb, _ := sizes(d, len(x))
	q := make([]byte, nb)
	if err := QuantizeWeighted(d, q, x, len(x), qw); err != nil {
		t.Fatalf("%v: %v", d, err)
	}
	y := make([]float32, len(x))
	if err := Dequantize(d, y, q); err != nil {
		t.Fatalf("%v: %v", d, err)
	}
	return y
}

// TestIQErrors: the types ggml quantizes only with weights say so, with or
// without QuantizeWeighted; a NaN or infinity is refused with its index; the
// weights must cover a row.
func TestIQErrors(t *testing.T) {
	x := randRow(rand.New(rand.NewPCG(5, 6)), 512, 1)
	for _, d := range iqAll {
		nb, _ := sizes(d, len(x))
		q := make([]byte, nb)
		err := Quantize(d, q, x)
		if NeedsWeights(d) != errors.Is(err, ErrNeedsWeights) || (!NeedsWeights(d) && err != nil) {
			t.Errorf("Quantize(%v) without weights: %v", d, err)
		}
		if err := QuantizeWeighted(d, q, x, 512, nil); NeedsWeights(d) != errors.Is(err, ErrNeedsWeights) {
			t.Errorf("QuantizeWeighted(%v) with nil weights: %v", d, err)
		}
		if !CanQuantizeWeighted(d) {
			t.Errorf("CanQuantizeWeighted(%v) false", d)
		}
		qw := make([]float32, 512)
		for i := range qw {
			qw[i] = 1
		}
		if err := QuantizeWeighted(d, q, x, 512, qw[:256]); !errors.Is(err, ErrLength) {
			t.Errorf("%v with 256 weights for rows of 512: %v", d, err)
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			y := slices.Clone(x)
			y[300] = bad
			err := QuantizeWeighted(d, q, y, 512, qw)
			if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "at value 300") {
				t.Errorf("%v with %v at 300: %v", d, bad, err)
			}
		}
	}
}

// TestIQConcurrent quantizes from several goroutines at once (the search
// tables are built by whichever comes first): every result is the same.
func TestIQConcurrent(t *testing.T) {
	x := randRow(rand.New(rand.NewPCG(9, 10)), 1024, 1)
	qw := make([]float32, 1024)
	for i := range qw {
		qw[i] = float32(1 + i%7)
	}
	for _, d := range iqAll {
		nb, _ := sizes(d, len(x))
		outs := make([][]byte, 6)
		var wg sync.WaitGroup
		for g := range outs {
			outs[g] = make([]byte, nb)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := QuantizeWeighted(d, outs[g], x, 1024, qw); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for g := range outs {
			if !bytes.Equal(outs[g], outs[0]) {
				t.Fatalf("%v: goroutine %d wrote other bytes", d, g)
			}
		}
	}
}

func BenchmarkQuantizeIQ2_XXS(b *testing.B) { benchWeighted(b, dtype.IQ2_XXS) }
func BenchmarkQuantizeIQ2_XS(b *testing.B)  { benchWeighted(b, dtype.IQ2_XS) }
func BenchmarkQuantizeIQ2_S(b *testing.B)   { benchWeighted(b, dtype.IQ2_S) }
func BenchmarkQuantizeIQ1_S(b *testing.B)   { benchWeighted(b, dtype.IQ1_S) }
func BenchmarkQuantizeIQ1_M(b *testing.B)   { benchWeighted(b, dtype.IQ1_M) }

// BenchmarkIQSearchInit builds the largest search table (IQ1_S/IQ1_M's), as the
// first quantization of the type does once.
func BenchmarkIQSearchInit(b *testing.B) {
	for b.Loop() {
		newIQSearch(iq1sGrid, [3]int8{-1, 0, 1}, 3)
	}
}
