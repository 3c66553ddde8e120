package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/apr-go/apr/lib/dtype"
)

// iq3SubBlock makes a sub-block's inputs to the IQ3 searches: magnitudes x
// (one negated for IQ3_XXS, as its sign parity can make one), weights w and
// their roots waux, and the largest magnitude. The kinds cover ordinary
// values, values on the levels and half-way between them at the trial
// scales (ties of nearest_int and of equal errors), repeated values, zero,
// tiny and huge weights, and NaN and infinities.
func iq3SubBlock(r *rand.Rand, xxs bool) (x, w, waux []float32, maxv float32) {
	x, w, waux = make([]float32, 32), make([]float32, 32), make([]float32, 32)
	kind := r.IntN(12)
	scale := math.Pow(10, float64(r.IntN(13)-6))
	for i := range x {
		var v float64
		switch kind {
		case 0, 1, 2:
			v = r.NormFloat64() * scale
		case 3: // odd multiples and even multiples (half-way) of a level step
			v = float64(r.IntN(16)) * scale
		case 4: // a few repeated values
			v = float64(1+r.IntN(3)) * scale
		case 5: // heavy tails
			v = r.NormFloat64() * scale / (0.05 + r.Float64())
		case 6: // one outlier
			v = r.NormFloat64() * scale
			if i == 7 {
				v = 1000 * scale
			}
		case 7: // on the levels of a trial scale
			is := r.IntN(31) - 15
			v = float64(2*r.IntN(8)+1) * 15 / (15 + 0.2*float64(is))
		default:
			v = r.NormFloat64() * scale
		}
		x[i] = float32(math.Abs(v))
	}
	if xxs && r.IntN(2) == 0 {
		x[r.IntN(32)] *= -1
	}
	for i, v := range x {
		switch r.IntN(10) {
		case 0:
			w[i] = 0
		case 1:
			w[i] = float32(r.ExpFloat64()) * 1e-30
		case 2, 3:
			w[i] = float32(r.ExpFloat64() * math.Sqrt(float64(v*v)+scale*scale))
		default:
			w[i] = v * v
		}
	}
	switch r.IntN(40) {
	case 0:
		clear(w)
	case 1:
		x[r.IntN(32)] = float32(math.NaN())
	case 2:
		x[r.IntN(32)] = float32(math.Inf(1))
	case 3:
		w[r.IntN(32)] = float32(math.Inf(1))
	case 4:
		w[r.IntN(32)] = float32(math.NaN())
	}
	for i, v := range w {
		waux[i] = sqrt32(v)
	}
	return x, w, waux, iqMaxOf(x)
}

// TestIQ3SearchLanes compares searchLanes (through the assembly where this
// build has it, else iq3LanesGeneric) with the reference search, levels and
// scale bits, on many sub-blocks of both types.
func TestIQ3SearchLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	n := 20000
	if testing.Short() {
		n = 3000
	}
	var b iq3Lanes
	for _, c := range []struct {
		name        string
		tb          *iq3Tables
		trials      int
		first, redo bool
	}{{"IQ3_XXS", iq3xxsTables(), 15, true, false}, {"IQ3_S", iq3sTables(), 9, false, true}} {
		for range n {
			x, w, waux, maxv := iq3SubBlock(r, c.first)
			var want, got [32]int8
			ws := c.tb.search(x, w, waux, maxv, c.trials, c.first, c.redo, &want)
			gs := c.tb.searchLanes(&b, x, w, waux, maxv, c.trials, c.first, c.redo, &got)
			if got != want || math.Float32bits(gs) != math.Float32bits(ws) {
				t.Fatalf("%s: x %v w %v: lanes %v scale %g, reference %v scale %g", c.name, x, w, got, gs, want, ws)
			}
		}
	}
}

// TestIQ3LanesLayout checks the offsets iq3quant_amd64.s uses, and nbr against
// the neighbour lists.
func TestIQ3LanesLayout(t *testing.T) {
	var b iq3Lanes
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"wa", unsafe.Offsetof(b.wa), 128}, {"w", unsafe.Offsetof(b.w), 256}, {"wx", unsafe.Offsetof(b.wx), 384},
		{"id", unsafe.Offsetof(b.id), 512}, {"s", unsafe.Offsetof(b.s), 544}, {"code", unsafe.Offsetof(b.code), 576},
		{"nn", unsafe.Offsetof(b.nn), 832}, {"sumqx", unsafe.Offsetof(b.sumqx), 1088}, {"sumq2", unsafe.Offsetof(b.sumq2), 1120},
		{"off", unsafe.Offsetof(b.off), 1152},
	} {
		if c.got != c.want {
			t.Errorf("iq3Lanes.%s at %d, the assembly reads %d", c.name, c.got, c.want)
		}
	}
	// The lists' offsets must fit nbr's 24 bits and their lengths its 8.
	for _, tb := range []*iq3Tables{iq3xxsTables(), iq3sTables()} {
		if len(tb.list) >= 1<<24 {
			t.Errorf("%d neighbours", len(tb.list))
		}
		for code, e := range tb.nbr {
			if n := int(e & 255); (n == 0) != (tb.index[code] >= 0) || (n > 0 && n != int(tb.neighbours[-tb.index[code]-1])) {
				t.Errorf("code %d: nbr count %d", code, n)
			}
		}
	}
}

func BenchmarkQuantizeIQ3_XXSWeighted(b *testing.B) { benchWeighted(b, dtype.IQ3_XXS) }
func BenchmarkQuantizeIQ3_SWeighted(b *testing.B)   { benchWeighted(b, dtype.IQ3_S) }
