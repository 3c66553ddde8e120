package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

func randRow(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// TestRoundTripRandom quantizes random rows with every quantizable type and
// checks the dequantized error against a per-type bound relative to the
// row's largest magnitude.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bounds := map[dtype.DType]float64{
		dtype.F32: 0, dtype.F16: 1.0 / 1024, dtype.BF16: 1.0 / 128,
		dtype.Q8_0: 1.0 / 127, dtype.Q8_1: 1.0 / 127, dtype.Q8_K: 1.0 / 127,
		dtype.Q4_0: 1.0 / 8, dtype.Q4_1: 1.0 / 15, dtype.Q5_0: 1.0 / 16, dtype.Q5_1: 1.0 / 31,
		dtype.Q2_K: 0.6, dtype.Q3_K: 0.35, dtype.Q4_K: 0.15, dtype.Q5_K: 0.08, dtype.Q6_K: 0.04,
		dtype.TQ1_0: 0.51, dtype.TQ2_0: 0.51,
		dtype.MXFP4: 0.25,                                      // levels 4 and 6 are 2^(e-1) apart; (1.5·2^e, 2^(e+1)) clips to 1.5·2^e
		dtype.Q1_0:  1.001, dtype.Q2_0: 0.5005, dtype.NVFP4: 1, // no tensor scale: a sub-block max below 6·2^-10 quantizes to zeros
	}
	for _, d := range dtype.All() {
		if !CanQuantize(d) {
			continue
		}
		bound, ok := bounds[d]
		if !ok {
			t.Errorf("%v: no error bound in the test table", d)
			continue
		}
		for trial := range 20 {
			n := 256 * (1 + trial%4)
			x := randRow(r, n, math.Pow(10, float64(trial%7-3)))
			nb, _ := sizes(d, n)
			q := make([]byte, nb)
			if err := Quantize(d, q, x); err != nil {
				t.Fatalf("%v: %v", d, err)
			}
			y := make([]float32, n)
			if err := Dequantize(d, y, q); err != nil {
				t.Fatalf("%v: %v", d, err)
			}
			var amax, emax float64
			for i := range x {
				amax = math.Max(amax, math.Abs(float64(x[i])))
				emax = math.Max(emax, math.Abs(float64(x[i]-y[i])))
			}
			if emax > bound*amax {
				t.Errorf("%v trial %d: max error %g > %g·%g", d, trial, emax, bound, amax)
			}
		}
	}
}

// TestTernaryExact checks that TQ1_0 and TQ2_0 reproduce rows of {-a, 0, a}
// exactly (a is an f16 value), which exercises every trit position.
func TestTernaryExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []dtype.DType{dtype.TQ1_0, dtype.TQ2_0} {
		x := make([]float32, 512)
		for i := range x {
			x[i] = float32(r.IntN(3)-1) * 0.75
		}
		x[0] = 0.75
		nb, _ := sizes(d, len(x))
		q := make([]byte, nb)
		y := make([]float32, len(x))
		if err := Quantize(d, q, x); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(d, y, q); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("%v element %d: %v -> %v", d, i, x[i], y[i])
			}
		}
	}
}

// TestDequantHandmade decodes blocks built by hand for the types apr only
// reads (their bytes come from the published layouts).
func TestDequantHandmade(t *testing.T) {
	one := []byte{0x00, 0x3c} // f16 1.0
	t.Run("IQ4_NL", func(t *testing.T) {
		b := append([]byte{0x00, 0x40}, make([]byte, 16)...) // d = 2
		for j := range 16 {
			b[2+j] = uint8(j) | uint8(15-j)<<4
		}
		y := make([]float32, 32)
		if err := Dequantize(dtype.IQ4_NL, y, b); err != nil {
			t.Fatal(err)
		}
		for j := range 16 {
			if y[j] != 2*float32(iq4nlValues[j]) || y[j+16] != 2*float32(iq4nlValues[15-j]) {
				t.Fatalf("IQ4_NL %d: %v %v", j, y[j], y[j+16])
			}
		}
	})
	t.Run("IQ4_XS", func(t *testing.T) {
		b := make([]byte, 136)
		copy(b, one)
		// sub-block ib gets scale ls = 32+ib+1 (6 bits: low 4 in scales_l, high 2 in scales_h).
		var sh uint16
		for ib := range 8 {
			ls := 33 + ib
			b[4+ib/2] |= uint8(ls&0xf) << (4 * (ib % 2))
			sh |= uint16(ls>>4) << (2 * ib)
		}
		b[2], b[3] = uint8(sh), uint8(sh>>8)
		for j := range 128 {
			b[8+j] = 0x9f // low nibble 15 (113), high nibble 9 (13)
		}
		y := make([]float32, 256)
		if err := Dequantize(dtype.IQ4_XS, y, b); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			ib, j := i/32, i%32
			want := float32(ib+1) * 113
			if j >= 16 {
				want = float32(ib+1) * 13
			}
			if v != want {
				t.Fatalf("IQ4_XS element %d: %v want %v", i, v, want)
			}
		}
	})
	t.Run("MXFP4", func(t *testing.T) {
		b := make([]byte, 17)
		b[0] = 128 // 2^1, stored as half scale 2^0 with doubled levels
		for j := range 16 {
			b[1+j] = uint8(j) | uint8(j)<<4
		}
		y := make([]float32, 32)
		if err := Dequantize(dtype.MXFP4, y, b); err != nil {
			t.Fatal(err)
		}
		e2m1 := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
		for j := range 16 {
			want := e2m1[j&7] * 2
			if j >= 8 {
				want = -want
			}
			if y[j] != want || y[j+16] != want {
				t.Fatalf("MXFP4 code %d: %v want %v", j, y[j], want)
			}
		}
		if e8m0Half(0) != float32(math.Ldexp(1, -128)) || e8m0Half(1) != float32(math.Ldexp(1, -127)) || e8m0Half(254) != float32(math.Ldexp(1, 126)) {
			t.Fatal("e8m0Half")
		}
	})
	t.Run("Q8_K", func(t *testing.T) {
		x := randRow(rand.New(rand.NewPCG(5, 6)), 256, 1)
		q := make([]byte, 292)
		if err := Quantize(dtype.Q8_K, q, x); err != nil {
			t.Fatal(err)
		}
		for j := range 16 {
			var s int
			for _, v := range q[4+16*j : 20+16*j] {
				s += int(int8(v))
			}
			if got := int(int16(uint16(q[260+2*j]) | uint16(q[261+2*j])<<8)); got != s {
				t.Fatalf("bsums[%d] = %d, want %d", j, got, s)
			}
		}
	})
}

func TestF8(t *testing.T) {
	cases := []struct {
		f    func(uint8) float32
		b    uint8
		want float64
	}{
		{F8E4M3ToF32Bits, 0x38, 1}, {F8E4M3ToF32Bits, 0x7e, 448}, {F8E4M3ToF32Bits, 0xfe, -448},
		{F8E4M3ToF32Bits, 0x01, math.Ldexp(1, -9)}, {F8E4M3ToF32Bits, 0x07, 7 * math.Ldexp(1, -9)},
		{F8E4M3ToF32Bits, 0x08, math.Ldexp(1, -6)}, {F8E4M3ToF32Bits, 0x80, math.Copysign(0, -1)},
		{F8E4M3ToF32Bits, 0x7f, math.NaN()}, {F8E4M3ToF32Bits, 0x78, 256},
		{F8E5M2ToF32Bits, 0x3c, 1}, {F8E5M2ToF32Bits, 0x7b, 57344}, {F8E5M2ToF32Bits, 0x7c, math.Inf(1)},
		{F8E5M2ToF32Bits, 0xfc, math.Inf(-1)}, {F8E5M2ToF32Bits, 0x7d, math.NaN()}, {F8E5M2ToF32Bits, 0x01, math.Ldexp(1, -16)},
		{F8E8M0ToF32Bits, 127, 1}, {F8E8M0ToF32Bits, 0, math.Ldexp(1, -127)}, {F8E8M0ToF32Bits, 254, math.Ldexp(1, 127)},
		{F8E8M0ToF32Bits, 255, math.NaN()},
	}
	for i, c := range cases {
		got := float64(c.f(c.b))
		if math.IsNaN(c.want) {
			if !math.IsNaN(got) {
				t.Errorf("case %d (%#02x): %v, want NaN", i, c.b, got)
			}
			continue
		}
		if got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("case %d (%#02x): %v, want %v", i, c.b, got, c.want)
		}
	}
	// Every finite E4M3 code: sign · 2^(e-7) · (1 + m/8), or m·2^-9 for e = 0.
	for c := range 256 {
		b := uint8(c)
		e, m := int(b>>3&15), float64(b&7)
		if e == 15 && m == 7 {
			continue
		}
		want := math.Ldexp(1+m/8, e-7)
		if e == 0 {
			want = math.Ldexp(m, -9)
		}
		if b&0x80 != 0 {
			want = -want
		}
		if got := float64(F8E4M3ToF32Bits(b)); got != want {
			t.Fatalf("E4M3 %#02x: %v want %v", b, got, want)
		}
	}
	var dst [4]float32
	F8E4M3ToF32(dst[:], []byte{0x38, 0x40})
	F8E5M2ToF32(dst[2:], []byte{0x3c})
	F8E8M0ToF32(dst[3:], []byte{128})
	if dst != [4]float32{1, 2, 1, 2} {
		t.Fatalf("slice F8 conversions: %v", dst)
	}
	y := make([]float32, 2)
	if err := Dequantize(dtype.F8E4M3, y, []byte{0x38, 0xb8}); err != nil || y[0] != 1 || y[1] != -1 {
		t.Fatalf("Dequantize F8E4M3: %v %v", y, err)
	}
}

// TestErrors checks that bad lengths and types give errors, never panics.
func TestErrors(t *testing.T) {
	if err := Quantize(dtype.Q4_0, make([]byte, 18), make([]float32, 31)); !errors.Is(err, ErrLength) {
		t.Errorf("partial block: %v", err)
	}
	if err := Quantize(dtype.Q4_0, make([]byte, 17), make([]float32, 32)); !errors.Is(err, ErrLength) {
		t.Errorf("short dst: %v", err)
	}
	if err := Quantize(dtype.Q4_0, make([]byte, 19), make([]float32, 32)); !errors.Is(err, ErrLength) {
		t.Errorf("long dst: %v", err)
	}
	if err := Dequantize(dtype.Q6_K, make([]float32, 256), make([]byte, 209)); !errors.Is(err, ErrLength) {
		t.Errorf("short src: %v", err)
	}
	if err := Dequantize(dtype.Q6_K, make([]float32, 100), make([]byte, 210)); !errors.Is(err, ErrLength) {
		t.Errorf("partial block dst: %v", err)
	}
	for _, d := range []dtype.DType{dtype.IQ2_XXS, dtype.I32, dtype.DType(0x7777), dtype.Invalid} {
		if err := Quantize(d, nil, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Quantize(%v): %v", d, err)
		}
	}
	if err := Dequantize(dtype.I32, make([]float32, 256), make([]byte, 1024)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Dequantize I32: %v", err)
	}
	if CanQuantize(dtype.IQ4_NL) || !CanDequantize(dtype.IQ4_NL) || !CanQuantize(dtype.Q3_K) || CanDequantize(dtype.I8) {
		t.Error("CanQuantize/CanDequantize table")
	}
	if _, err := DotQ(dtype.Q8_0, make([]byte, 33), make([]float32, 32)); !errors.Is(err, ErrLength) {
		t.Errorf("DotQ short row: %v", err)
	}
	if err := MatMul(make([]float32, 3), make([]float32, 4), make([]float32, 4), 2, 2, 2); !errors.Is(err, ErrLength) {
		t.Errorf("MatMul short dst: %v", err)
	}
	if err := MatMul(nil, nil, nil, -1, 2, 2); !errors.Is(err, ErrLength) {
		t.Errorf("MatMul negative: %v", err)
	}
	// Zero-length input is fine and writes nothing.
	if err := Quantize(dtype.Q8_0, nil, nil); err != nil {
		t.Errorf("empty: %v", err)
	}
	// Non-finite input must not panic (ggml refuses it upstream; we only
	// promise not to crash).
	x := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e38}
	x = append(x, make([]float32, 252)...)
	for _, d := range dtype.All() {
		if CanQuantize(d) {
			nb, _ := sizes(d, len(x))
			if err := Quantize(d, make([]byte, nb), x); err != nil {
				t.Errorf("%v: %v", d, err)
			}
		}
	}
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 256, 1000, 4099} {
		a, b := randRow(r, n, 1), randRow(r, n, 1)
		var want, mag float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		got := Dot(a, b)
		if math.Abs(float64(got)-want) > 1e-6*mag+1e-30 {
			t.Errorf("n=%d: Dot %v, float64 %v", n, got, want)
		}
		if ref := dotGeneric(a, b); math.Float32bits(ref) != math.Float32bits(got) {
			t.Errorf("n=%d: Dot %v != reference %v", n, got, ref)
		}
	}
	if Dot([]float32{1, 2, 3}, []float32{4, 5}) != 14 {
		t.Error("Dot must use the shorter length")
	}
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 70, 300}, {4, 129, 513}, {0, 3, 3}, {2, 0, 3},
		{5, 64, 16}, {33, 16, 10}, {8, 128, 128}, {3, 200, 24}, {2, 3, 8}, {6, 65, 263}} {
		m, k, n := s[0], s[1], s[2]
		a, b := randRow(r, m*k, 1), randRow(r, k*n, 1)
		dst := make([]float32, m*n)
		for i := range dst {
			dst[i] = 42 // must be overwritten
		}
		if err := MatMul(dst, a, b, m, k, n); err != nil {
			t.Fatal(err)
		}
		for i := range m {
			for j := range n {
				// The documented order: sequential over p, products rounded.
				var want float32
				for p := range k {
					want += float32(a[i*k+p] * b[p*n+j])
				}
				if got := dst[i*n+j]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v: dst[%d,%d] = %v want %v", s, i, j, got, want)
				}
			}
		}
	}
}

func TestDotQ(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x := randRow(r, 1024, 1)
	w := randRow(r, 1024, 1)
	for _, d := range dtype.All() {
		if !CanQuantize(d) {
			continue
		}
		nb, _ := sizes(d, len(w))
		q := make([]byte, nb)
		if err := Quantize(d, q, w); err != nil {
			t.Fatal(err)
		}
		deq := make([]float32, len(w))
		if err := Dequantize(d, deq, q); err != nil {
			t.Fatal(err)
		}
		var want, mag float64
		for i := range x {
			want += float64(deq[i]) * float64(x[i])
			mag += math.Abs(float64(deq[i]) * float64(x[i]))
		}
		got, err := DotQ(d, q, x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(got)-want) > 1e-5*mag {
			t.Errorf("%v: DotQ %v, dequantized dot %v", d, got, want)
		}
	}
}

// TestRoundingHelpers checks roundAway against math.Round and nearestInt
// against math.RoundToEven, including exact ties and their neighbours.
func TestRoundingHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var vals []float32
	for k := -300; k <= 300; k++ {
		h := float32(k) + 0.5
		vals = append(vals, h, math.Nextafter32(h, 1e9), math.Nextafter32(h, -1e9), float32(k))
	}
	for range 10000 {
		vals = append(vals, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(24)))))
	}
	for _, v := range vals {
		if got, want := roundAway(v), int32(math.Round(float64(v))); got != want {
			t.Fatalf("roundAway(%v) = %d, want %d", v, got, want)
		}
		if math.Abs(float64(v)) <= 4194303 {
			if got, want := nearestInt(v), int32(math.RoundToEven(float64(v))); got != want {
				t.Fatalf("nearestInt(%v) = %d, want %d", v, got, want)
			}
		}
	}
}
