package kernels

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// The i-quant goldens: ggml_quantize_chunk of today's ggml over rows.f32, without
// and with the importance vector imatrix.f32 (testdata/quant/README.md, mkiq.py).
var iqGoldenSHA = map[string]string{
	"imatrix.f32":         "887befe93ea5dd345f9ec89171d98e5556ba028ed0f60052d6d6519ef91e3585",
	"iq4_nl.bin":          "fdd751f22de30118d53f5e313f19769cff74f37cb61be88fdc3b883492130427",
	"iq4_nl.imatrix.bin":  "1edc64af4eb98b9a191d52f2d4a4aa3ba9dc43c227fed2de130523d063876c56",
	"iq4_xs.bin":          "4f94ac9670b62d10ddf8cbe3f8fe492cd0f8b26f2acb58871ce76fa0af27cdc4",
	"iq4_xs.imatrix.bin":  "829366904f6c3d2311e61eb2e0ffa03685087814cf6b3e7ecec84f6e7fe16bf3",
	"iq3_xxs.bin":         "ec67eba99367e43195ac80f1fe7af3808d162a501a49f4a41481c6ca78455b69",
	"iq3_xxs.imatrix.bin": "a28cd1213ead1e1949b39cf69812947681776e419dd6ba1930022827fc5d65ae",
	"iq3_s.bin":           "7a5addaceea684ced71bc3c2df40ff9023cfb46613f78d1eb694857294aa018f",
	"iq3_s.imatrix.bin":   "2e935807b18b10a7c9fdd09f2f329ce8fb236337a85c81ee02b6ce13e213f70c",
}

func init() { maps.Copy(goldenSHA, iqGoldenSHA) }

var iqGoldenTypes = []struct {
	name string
	t    dtype.DType
}{
	{"iq4_nl", dtype.IQ4_NL},
	{"iq4_xs", dtype.IQ4_XS},
	{"iq3_xxs", dtype.IQ3_XXS},
	{"iq3_s", dtype.IQ3_S},
}

// TestGoldenIQuantize checks the i-quant quantizers against ggml's bytes, without
// and with importance weights, row by row (a failure names the crafted row).
func TestGoldenIQuantize(t *testing.T) {
	x, desc := goldenInput(t)
	qw := floatsLE(readGolden(t, "imatrix.f32"))
	for _, g := range iqGoldenTypes {
		for _, weighted := range []bool{false, true} {
			file, w := g.name+".bin", []float32(nil)
			if weighted {
				file, w = g.name+".imatrix.bin", qw
			}
			want := readGolden(t, file)
			got := make([]byte, len(want))
			if err := QuantizeWeighted(g.t, got, x, goldenCols, w); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			rb := len(want) / goldenRows
			bad := 0
			for r := range goldenRows {
				if !bytes.Equal(got[r*rb:(r+1)*rb], want[r*rb:(r+1)*rb]) {
					if bad++; bad <= 5 {
						t.Errorf("%s: row %d (%s) differs from ggml", file, r, desc[r])
					}
				}
			}
			if bad > 5 {
				t.Errorf("%s: %d rows differ", file, bad)
			}
		}
	}
}

var iqTypesWritten = []dtype.DType{dtype.IQ4_NL, dtype.IQ4_XS, dtype.IQ3_XXS, dtype.IQ3_S}

// TestIQuantizeWeighted: QuantizeWeighted's contract (checkWeighted) for the
// i-quants, doubling every weight changes no fit, and short weights are refused.
func TestIQuantizeWeighted(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const rowLen, rows = 512, 4
	x := randRow(r, rows*rowLen, 1)
	qw := make([]float32, rowLen)
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	for _, typ := range iqTypesWritten {
		if !CanQuantize(typ) || !CanQuantizeWeighted(typ) || IgnoresWeights(typ) {
			t.Fatalf("%v: not a weighted quantizable type", typ)
		}
		w := checkWeighted(t, typ, x, qw)
		again := make([]byte, len(w))
		// Doubling every weight changes no fit (the weights only compare).
		qw2 := make([]float32, rowLen)
		for i, v := range qw {
			qw2[i] = 2 * v
		}
		if err := QuantizeWeighted(typ, again, x, rowLen, qw2); err != nil || !bytes.Equal(again, w) {
			t.Errorf("%v: doubled weights change the bytes (%v)", typ, err)
		}
		if err := QuantizeWeighted(typ, again, x, rowLen, qw[:rowLen-1]); !errors.Is(err, ErrLength) {
			t.Errorf("%v: short weights: %v", typ, err)
		}
	}
}

// TestIQuantizeEdges: blocks of zeros, of one repeated value, of values below
// ggml's thresholds, with one outlier, and of each single level give ggml's
// special cases: zeros decode to zeros, and a constant block to its value within
// the type's resolution (coarse for IQ3: 4-bit scales and ggml's fudge factors
// of 1.0125 and 1.033 on d).
func TestIQuantizeEdges(t *testing.T) {
	for _, typ := range iqTypesWritten {
		res := 1.0
		if typ == dtype.IQ3_XXS || typ == dtype.IQ3_S {
			res = 7
		}
		for _, c := range []struct {
			name string
			v    float32
			tol  float64 // relative error of the decoded constant
		}{{"zeros", 0, 0}, {"negative zeros", float32(math.Copysign(0, -1)), 0}, {"ones", 1, 0.05}, {"minus twos", -2, 0.05}, {"1e-20", 1e-20, 1}, {"65504", 65504, 0.05}} {
			x := make([]float32, 512)
			for i := range x {
				x[i] = c.v
			}
			y := iqRoundTrip(t, typ, x, nil)
			for i, v := range y {
				if math.Abs(float64(v-x[i])) > res*c.tol*math.Abs(float64(x[i])) {
					t.Errorf("%v %s: value %d decodes to %g", typ, c.name, i, v)
					break
				}
			}
		}
		// An outlier among tiny values keeps its magnitude and sign.
		x := make([]float32, 256)
		for i := range x {
			x[i] = float32(i%7-3) * 1e-6
		}
		x[77] = -1000
		y := iqRoundTrip(t, typ, x, nil)
		if y[77] > -500 || y[77] < -1500 {
			t.Errorf("%v: outlier -1000 decodes to %g", typ, y[77])
		}
	}
}

// TestIQuantizeNonFinite: NaN and infinities anywhere in a block, with and without
// weights (and NaN weights), give some bytes, never a panic; ggml stops on an
// assertion for IQ3_XXS and IQ3_S there, and apr-quant refuses such input first.
func TestIQuantizeNonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32}
	for _, typ := range iqTypesWritten {
		for trial := range 200 {
			x := randRow(r, 256, 1)
			for range 1 + trial%40 {
				x[r.IntN(len(x))] = specials[r.IntN(len(specials))]
			}
			if trial%10 == 0 {
				for i := range x {
					x[i] = specials[trial/10%len(specials)]
				}
			}
			qw := make([]float32, 256)
			for i := range qw {
				qw[i] = float32(r.ExpFloat64())
			}
			if trial%3 == 0 {
				qw[r.IntN(256)] = float32(math.NaN())
			}
			n, _ := sizes(typ, len(x))
			q := make([]byte, n)
			if err := Quantize(typ, q, x); err != nil {
				t.Fatal(err)
			}
			if err := QuantizeWeighted(typ, q, x, len(x), qw); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(typ, make([]float32, len(x)), q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestIQ3Tables checks the search tables' invariants: every code of a codebook
// point maps to it, every other code to a non-empty list of points that are its
// nearest (the nearest distance first), and the tables are built once for any
// number of goroutines (run with -race).
func TestIQ3Tables(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]*iq3Tables, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				got[i] = iq3xxsTables()
			} else {
				got[i] = iq3sTables()
			}
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[i%2] {
			t.Fatal("tables built more than once")
		}
	}
	for _, c := range []struct {
		tb     *iq3Tables
		grid   [][4]int8
		levels [8]int8
		nwant  int
	}{{iq3xxsTables(), iq3xxsGrid, [8]int8{4, 12, 20, 28, 36, 44, 52, 62}, 2}, {iq3sTables(), iq3sGrid, [8]int8{1, 3, 5, 7, 9, 11, 13, 15}, 3}} {
		tb := c.tb
		if len(tb.grid) != len(c.grid) {
			t.Fatalf("%d points, want %d", len(tb.grid), len(c.grid))
		}
		for j, p := range tb.grid {
			var l [4]int8
			for i := range p {
				l[i] = (p[i] - 1) / 2
			}
			if tb.index[iq3Code(l[:])] != int32(j) {
				t.Errorf("point %d: its code maps to %d", j, tb.index[iq3Code(l[:])])
			}
			// The dequantization grid holds the same points, in the same order.
			for i := range l {
				if c.grid[j][i] != c.levels[l[i]] {
					t.Errorf("point %d: %v, dequantization grid %v", j, p, c.grid[j])
				}
			}
		}
		for code, v := range tb.index {
			if v >= 0 {
				continue
			}
			off := -v - 1
			nb := tb.neighbours[off+1 : off+1+int32(tb.neighbours[off])]
			if len(nb) == 0 {
				t.Fatalf("code %#o: no neighbours", code)
			}
			dist := func(j uint16) int {
				d2 := 0
				for i, g := range tb.grid[j] {
					d := int(g) - (2*(code>>(3*i)&7) + 1)
					d2 += d * d
				}
				return d2
			}
			nearest, levels := 1<<30, 1
			for j := range tb.grid {
				nearest = min(nearest, dist(uint16(j)))
			}
			if dist(nb[0]) != nearest {
				t.Errorf("code %#o: first neighbour at %d, nearest point at %d", code, dist(nb[0]), nearest)
			}
			for i := 1; i < len(nb); i++ {
				if a, b := dist(nb[i-1]), dist(nb[i]); a > b || a == b && nb[i-1] >= nb[i] {
					t.Fatalf("code %#o: neighbours out of order", code)
				} else if a < b {
					levels++
				}
			}
			if levels > c.nwant {
				t.Errorf("code %#o: %d distances among its neighbours, want at most %d", code, levels, c.nwant)
			}
		}
	}
}

// TestIQ4Index: the table lookup is ggml's binary search near every level midpoint,
// at the ends, for infinities and NaN, and for every 101st float32 of magnitude up
// to 128 (every 997th with -short). With step 1 (every one of them, about 40 s) it
// passed when written.
func TestIQ4Index(t *testing.T) {
	check := func(x float32) {
		if a, b := iq4Index(x), iq4IndexRef(x); a != b {
			t.Fatalf("x = %v (%#08x): %d, best_index_int8 gives %d", x, math.Float32bits(x), a, b)
		}
	}
	for _, x := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), -1e30, 1e30, -127, 113, -128, 128} {
		check(x)
	}
	for i := range iq4nlValues[:15] {
		m := (float32(iq4nlValues[i]) + float32(iq4nlValues[i+1])) / 2
		b := math.Float32bits(m)
		for d := range uint32(2001) {
			check(math.Float32frombits(b + d - 1000))
		}
	}
	step := uint32(101)
	if testing.Short() {
		step = 997
	}
	// Every float32 of magnitude up to 128 (bits below 0x43000001), both signs.
	for b := uint32(0); b <= 0x43000000; b += step {
		check(math.Float32frombits(b))
		check(math.Float32frombits(b | 0x80000000))
	}
}
