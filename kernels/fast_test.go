package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// fastRows builds finite rows that stress the fast paths: random magnitudes
// over many decades, ±0 mixtures, exact ties on half-integers and grids,
// and f32 subnormals.
func fastRows(r *rand.Rand) [][]float32 {
	var rows [][]float32
	for trial := range 400 {
		x := make([]float32, 256)
		scale := math.Pow(10, float64(r.IntN(61)-30))
		for i := range x {
			switch trial % 5 {
			case 0:
				x[i] = float32(r.NormFloat64() * scale)
			case 1: // ±0 with a few values
				x[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
				if r.IntN(8) == 0 {
					x[i] = float32(r.NormFloat64())
				}
			case 2: // half-integers and integers on a unit grid
				x[i] = float32(r.IntN(33)-16) / 2
			case 3: // subnormals and tiny values
				x[i] = math.Float32frombits(uint32(r.IntN(1 << 23)))
				if r.IntN(2) == 0 {
					x[i] = -x[i]
				}
			case 4: // uniform, all of one sign
				x[i] = float32(r.Float64()*3 + 0.5)
			}
		}
		rows = append(rows, x)
	}
	return rows
}

// longRows joins fastRows' rows of 8 blocks into rows of 9 to 64 blocks and
// puts a block copied from a random row at one position in 8, so kernels that
// take 16 blocks at a time see whole groups, tails, and blocks they hand back
// to the reference anywhere in a group.
func longRows(r *rand.Rand, rows [][]float32) [][]float32 {
	var long [][]float32
	for i := range rows {
		nb := 9 + r.IntN(56)
		x := make([]float32, 0, nb*qk)
		for j := i; len(x) < nb*qk; j = (j + 1) % len(rows) {
			x = append(x, rows[j]...)
		}
		x = x[:nb*qk]
		for b := range nb {
			if r.IntN(8) == 0 {
				y := rows[r.IntN(len(rows))]
				k := r.IntN(len(y) / qk)
				copy(x[b*qk:(b+1)*qk], y[k*qk:])
			}
		}
		long = append(long, x)
	}
	return long
}

// TestFastMatchesReference compares every accelerated kernel with its plain
// Go reference, byte for byte (bit for bit for floats).
func TestFastMatchesReference(t *testing.T) {
	if FastPath() == "" {
		t.Skip("no fast path on this build (purego, noasm, no GOEXPERIMENT=simd, or CPU)")
	}
	t.Logf("fast path: %s", FastPath())
	r := rand.New(rand.NewPCG(21, 22))
	rows := fastRows(r)
	kernels := []struct {
		name      string
		fast, ref func([]byte, []float32)
		bs        int
	}{
		{"Q8_0", quantQ8_0, quantQ8_0Generic, 34},
		{"Q4_0", quantQ4_0, quantQ4_0Generic, 18},
		{"Q4_1", quantQ4_1, quantQ4_1Generic, 20},
	}
	for _, k := range kernels {
		for i, x := range append(rows, longRows(r, rows)...) {
			a, b := make([]byte, len(x)/qk*k.bs), make([]byte, len(x)/qk*k.bs)
			k.fast(a, x)
			k.ref(b, x)
			if !bytes.Equal(a, b) {
				j := firstDiff(a, b)
				t.Fatalf("%s row %d: byte %d: fast %#02x, reference %#02x (block %v)", k.name, i, j, a[j], b[j], x[j/k.bs*32:][:32])
			}
		}
	}
	// Half conversions: every row (plus NaN/inf/overflow sprinkled in) and
	// every one of the 65536 half codes.
	for i, x := range rows {
		x = append([]float32(nil), x...)
		if i%3 == 0 {
			x[r.IntN(len(x))] = float32(math.NaN())
			x[r.IntN(len(x))] = float32(math.Inf(-1))
			x[r.IntN(len(x))] = 65520
			x[r.IntN(len(x))] = 1e-6
		}
		a, b := make([]uint16, len(x)), make([]uint16, len(x))
		f32ToF16(a, x)
		f32ToF16Generic(b, x)
		for j := range a {
			if a[j] != b[j] {
				t.Fatalf("f32->f16 row %d element %d (%v): fast %#04x reference %#04x", i, j, x[j], a[j], b[j])
			}
		}
	}
	codes := make([]uint16, 1<<16)
	for c := range codes {
		codes[c] = uint16(c)
	}
	fa, fb := make([]float32, len(codes)), make([]float32, len(codes))
	f16ToF32(fa, codes)
	f16ToF32Generic(fb, codes)
	for c := range codes {
		if math.Float32bits(fa[c]) != math.Float32bits(fb[c]) {
			t.Fatalf("f16->f32 %#04x: fast %v reference %v", c, fa[c], fb[c])
		}
	}
	for i := 0; i+1 < len(rows); i += 2 {
		n := r.IntN(257)
		x, y := rows[i][:n], rows[i+1][:n]
		if f, g := dotF32(x, y), dotGeneric(x, y); math.Float32bits(f) != math.Float32bits(g) && !(f != f && g != g) {
			t.Fatalf("dot row %d n=%d: fast %v reference %v", i, n, f, g)
		}
		ya, yb := append([]float32(nil), y...), append([]float32(nil), y...)
		alpha := float32(r.NormFloat64())
		axpy(ya, alpha, x)
		axpyGeneric(yb, alpha, x)
		for j := range ya {
			if math.Float32bits(ya[j]) != math.Float32bits(yb[j]) {
				t.Fatalf("axpy row %d element %d: fast %v reference %v", i, j, ya[j], yb[j])
			}
		}
	}
}

// TestQuantizeCheckedLong repeats TestQuantizeChecked's tests on rows long
// enough for the 16-block kernels: bytes equal Quantize's below the limit,
// and a value at or above it is reported wherever it sits.
func TestQuantizeCheckedLong(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rows := longRows(r, fastRows(r))
	for _, d := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_1} {
		for i, x := range rows {
			n, _ := sizes(d, len(x))
			got, want := make([]byte, n), make([]byte, n)
			if err := Quantize(d, want, x); err != nil {
				t.Fatal(err)
			}
			limit := absMaxBits(x) + 1
			if over, err := QuantizeChecked(d, got, x, limit); err != nil || over {
				t.Fatalf("%v row %d: over %v, err %v", d, i, over, err)
			}
			if !bytes.Equal(got, want) {
				j := firstDiff(got, want)
				t.Fatalf("%v row %d: byte %d differs from Quantize: %#02x, want %#02x", d, i, j, got[j], want[j])
			}
			if i%4 != 0 {
				continue
			}
			for _, v := range []float32{float32(math.NaN()), float32(math.Inf(-1)), math.Float32frombits(limit)} {
				y := append([]float32(nil), x...)
				at := r.IntN(len(y))
				y[at] = v
				if over, err := QuantizeChecked(d, got, y, limit); err != nil || !over {
					t.Fatalf("%v row %d: %v at %d not reported (over %v, err %v)", d, i, v, at, over, err)
				}
			}
		}
	}
}

// TestF32ToF16Sweep compares the fast f32 -> f16 conversion (which the 16-block
// kernels use for their scales) with the reference on every combination of
// sign, exponent and top 10 mantissa bits, each with low bits at and around
// the rounding ties of normal halves (ties of subnormal halves sit in the
// enumerated bits), and on random bit patterns.
func TestF32ToF16Sweep(t *testing.T) {
	if FastPath() == "" {
		t.Skip("no fast path on this build")
	}
	lows := []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff}
	r := rand.New(rand.NewPCG(9, 10))
	x := make([]float32, 0, 1<<16)
	a, b := make([]uint16, 1<<16), make([]uint16, 1<<16)
	check := func() {
		f32ToF16(a[:len(x)], x)
		f32ToF16Generic(b[:len(x)], x)
		for i := range x {
			if a[i] != b[i] {
				t.Fatalf("f32 %#08x: fast %#04x, reference %#04x", math.Float32bits(x[i]), a[i], b[i])
			}
		}
		x = x[:0]
	}
	for top := uint32(0); top < 1<<19; top++ {
		for _, low := range append(lows, r.Uint32()&0x1fff) {
			x = append(x, math.Float32frombits(top<<13|low))
			if len(x) == cap(x) {
				check()
			}
		}
	}
	for range 1 << 20 {
		x = append(x, math.Float32frombits(r.Uint32()))
		if len(x) == cap(x) {
			check()
		}
	}
	check()
}
