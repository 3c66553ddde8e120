package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// e2m1 are the eight magnitudes of FP4 E2M1 (OCP MX spec).
var e2m1 = [8]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}

func TestDequantQ1_0Block(t *testing.T) {
	b := make([]byte, 2*18)
	putF16(b, 0.5)
	b[2] = 0x01  // value 0 positive, 1-7 negative
	b[3] = 0xF0  // values 12-15 positive
	b[17] = 0x80 // value 127 positive
	putF16(b[18:], -3)
	b[18+2] = 0xFF // second block: values 0-7 are +d = -3
	y := make([]float32, 256)
	if err := Dequantize(dtype.Q1_0, y, b); err != nil {
		t.Fatal(err)
	}
	for j := range 128 {
		want := float32(-0.5)
		if j == 0 || (j >= 12 && j < 16) || j == 127 {
			want = 0.5
		}
		if y[j] != want {
			t.Fatalf("block 0 value %d: %v want %v", j, y[j], want)
		}
		want = 3
		if j < 8 {
			want = -3
		}
		if y[128+j] != want {
			t.Fatalf("block 1 value %d: %v want %v", j, y[128+j], want)
		}
	}
}

func TestDequantQ2_0Block(t *testing.T) {
	b := make([]byte, 18)
	putF16(b, 2)
	b[2] = 0xE4  // codes 0,1,2,3 (lowest bits first): -2, 0, 2, 4
	b[17] = 0x1B // codes 3,2,1,0 for values 60-63
	for i := 3; i < 17; i++ {
		b[i] = 0x55 // code 1: zero
	}
	y := make([]float32, 64)
	if err := Dequantize(dtype.Q2_0, y, b); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 64)
	copy(want, []float32{-2, 0, 2, 4})
	copy(want[60:], []float32{4, 2, 0, -2})
	for j := range y {
		if y[j] != want[j] {
			t.Fatalf("value %d: %v want %v", j, y[j], want[j])
		}
	}
}

func TestDequantNVFP4Block(t *testing.T) {
	b := make([]byte, 36)
	b[0] = 0x38 // E4M3 1.0: exponent 7 (the bias), mantissa 0
	b[1] = 0x00 // zero
	b[2] = 0x7f // E4M3's NaN code, which ggml reads as zero
	b[3] = 0x01 // smallest subnormal, 2^-9
	for j := range 8 {
		b[4+j] = uint8(j) | uint8(j+8)<<4 // low nibble +e2m1[j], high nibble -e2m1[j]
		b[12+j] = 0x77                    // 6 under a zero scale
		b[20+j] = 0x77
		b[28+j] = 0xf7 // low 6, high -6
	}
	y := make([]float32, 64)
	if err := Dequantize(dtype.NVFP4, y, b); err != nil {
		t.Fatal(err)
	}
	for j := range 8 {
		check := func(i int, want float32) {
			t.Helper()
			if y[i] != want {
				t.Fatalf("value %d: %v want %v", i, y[i], want)
			}
		}
		check(j, e2m1[j])
		check(j+8, -e2m1[j])
		check(16+j, 0)
		check(24+j, 0)
		check(32+j, 0)
		check(40+j, 0)
		check(48+j, 6.0/512)
		check(56+j, -6.0/512)
	}
}

// TestUE4M3 checks the NVFP4 scale codec against the package's independent
// E4M3 decoder, and the encoder's rounding and saturation.
func TestUE4M3(t *testing.T) {
	for b := range 256 {
		got := 2 * ue4m3Half(uint8(b))
		want := F8E4M3ToF32Bits(uint8(b) & 0x7f) // ggml ignores the sign bit ...
		switch {
		case b == 0x7f:
			want = 0 // ... reads NaN's code 0x7F as zero ...
		case b == 0xff:
			want = 480 // ... but not 0xFF, which it decodes as 2^8·(1+7/8)
		}
		if got != want {
			t.Fatalf("scale byte %#02x: %v want %v", b, got, want)
		}
		// Every code below 0x78 encodes to itself; from 256 (0x78) up, the
		// encoder gives 448 (0x7E).
		want8 := uint8(b)
		if b >= 0x78 {
			want8 = 0x7e
		}
		if b < 0x7f && toUE4M3(got) != want8 {
			t.Fatalf("toUE4M3(%v) = %#02x, want %#02x", got, toUE4M3(got), want8)
		}
	}
	for _, c := range []struct {
		x    float32
		want uint8
	}{
		{1.0625, 0x39}, // halfway between 1 and 1.125: up
		{math.Nextafter32(1.0625, 0), 0x38},
		{1.96875, 0x40},          // halfway between 1.875 and 2: up, into the next exponent
		{1.5 / 512, 0x02},        // subnormal halfway: up
		{0.49 / 512, 0},          // below half the smallest subnormal
		{7.6 / 512, 0x07},        // largest subnormal
		{240, 0x77}, {248, 0x7e}, // rounding up into exponent 15 saturates
		{256, 0x7e}, {464, 0x7e}, {1e30, 0x7e}, // so does exponent 15 itself
		{float32(math.Inf(1)), 0x7e},
		{0, 0}, {-1, 0}, {float32(math.NaN()), 0},
	} {
		if got := toUE4M3(c.x); got != c.want {
			t.Errorf("toUE4M3(%v) = %#02x, want %#02x", c.x, got, c.want)
		}
	}
}

// TestNewTypesProperties: zero scales give zeros whatever the codes, lengths
// must be whole blocks, and a multi-block row decodes block by block.
func TestNewTypesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 42))
	for _, d := range []dtype.DType{dtype.NVFP4, dtype.Q1_0, dtype.Q2_0} {
		info := d.Info()
		if !CanDequantize(d) {
			t.Fatalf("%v: no dequantizer", d)
		}
		b := make([]byte, 3*info.BlockBytes)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for k := 0; k < len(b); k += info.BlockBytes {
			if d == dtype.NVFP4 {
				copy(b[k:k+4], []byte{0, 0x80, 0x7f, 0})
			} else {
				b[k], b[k+1] = 0, 0x80 // -0 as f16
			}
		}
		y := make([]float32, 3*info.BlockElems)
		if err := Dequantize(d, y, b); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%v: value %d is %v under a zero scale", d, i, v)
			}
		}

		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if d != dtype.NVFP4 {
			for k := 0; k < len(b); k += info.BlockBytes {
				putF16(b[k:], float32(r.NormFloat64()))
			}
		}
		if err := Dequantize(d, y, b); err != nil {
			t.Fatal(err)
		}
		for blk := range 3 {
			one := make([]float32, info.BlockElems)
			if err := Dequantize(d, one, b[blk*info.BlockBytes:(blk+1)*info.BlockBytes]); err != nil {
				t.Fatal(err)
			}
			for i, v := range one {
				if w := y[blk*info.BlockElems+i]; math.Float32bits(v) != math.Float32bits(w) {
					t.Fatalf("%v block %d value %d: %v alone, %v in the row", d, blk, i, v, w)
				}
			}
		}

		if err := Dequantize(d, y[:len(y)-1], b); !errors.Is(err, ErrLength) {
			t.Errorf("%v: %d values: %v, want ErrLength", d, len(y)-1, err)
		}
		if err := Dequantize(d, y, b[:len(b)-1]); !errors.Is(err, ErrLength) {
			t.Errorf("%v: %d bytes: %v, want ErrLength", d, len(b)-1, err)
		}
	}
}

// TestQuantNewTypesExact: values the formats represent exactly come back
// exactly, with the scale each quantizer is defined to choose.
func TestQuantNewTypesExact(t *testing.T) {
	// Q1_0: the scale is the mean magnitude; -0 counts as positive.
	x := make([]float32, 128)
	for i := range x {
		x[i] = 1.5
		if i%3 == 0 {
			x[i] = -1.5
		}
	}
	x[1] = float32(math.Copysign(0, -1))
	x[2] = 3 // mean magnitude: (126·1.5 + 3)/128 = 1.5
	q := make([]byte, 18)
	quantQ1_0Generic(q, x)
	if got := getF16(q); got != 1.5 {
		t.Fatalf("Q1_0 scale %v, want 1.5", got)
	}
	y := make([]float32, 128)
	dequantQ1_0(y, q)
	for i, v := range y {
		want := float32(1.5)
		if i%3 == 0 {
			want = -1.5
		}
		if v != want {
			t.Fatalf("Q1_0 value %d: %v want %v", i, v, want)
		}
	}

	// Q2_0: the scale is the block maximum, so only codes 0-2 occur; ties
	// round away from zero.
	x = make([]float32, 64)
	for i := range x {
		x[i] = float32(i%3-1) * 0.5
	}
	x[5] = 0.25  // exactly half the scale: away from zero, to +d
	x[6] = -0.25 // to -d
	q = q[:18]
	quantQ2_0Generic(q, x)
	if got := getF16(q); got != 0.5 {
		t.Fatalf("Q2_0 scale %v, want 0.5", got)
	}
	y = y[:64]
	dequantQ2_0(y, q)
	for i, v := range y {
		want := x[i]
		if i == 5 || i == 6 {
			want = 2 * x[i]
		}
		if v != want {
			t.Fatalf("Q2_0 value %d: %v want %v", i, v, want)
		}
	}

	// NVFP4: a sub-block of the E2M1 levels times s (its maximum is 6·s) comes
	// back exactly when s is a UE4M3 value: 1, 2^-2, 0 and the subnormal 3·2^-9.
	x = make([]float32, 64)
	for s, scale := range []float32{1, 0.25, 0, 3.0 / 512} {
		for j := range 16 {
			x[16*s+j] = e2m1[j%8] * scale
			if j >= 8 {
				x[16*s+j] = -x[16*s+j]
			}
		}
	}
	q = make([]byte, 36)
	// Without a tensor scale, a sub-block whose maximum is below 6·2^-10 has
	// scale 0 and comes back as zeros.
	small := make([]float32, 64)
	for i := range small {
		small[i] = float32(i%16-8) / 8 * 0.999 * 6 / 1024
	}
	quantNVFP4Generic(q, small)
	dequantNVFP4(y, q)
	for i := range small {
		if q[i%4] != 0 || y[i] != 0 {
			t.Fatalf("NVFP4 of maxima below 6·2^-10: scale %#02x, value %d is %v", q[i%4], i, y[i])
		}
	}
	quantNVFP4Generic(q, x)
	if q[0] != 0x38 || q[1] != 0x28 || q[2] != 0 || q[3] != 0x03 {
		t.Fatalf("NVFP4 scales % x, want 38 28 00 03", q[:4])
	}
	dequantNVFP4(y, q)
	for i, v := range y {
		if v != x[i] {
			t.Fatalf("NVFP4 value %d: %v want %v", i, v, x[i])
		}
	}
}

// TestQuantNewTypesRandom bounds the round-trip error by each format's
// resolution relative to the block (sub-block) maximum, over many scales.
func TestQuantNewTypesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 40))
	for _, c := range []struct {
		d     dtype.DType
		quant func([]byte, []float32)
		group int
		bound float64 // max error over group max
	}{
		// Q1_0 keeps signs and the mean magnitude: a value's error is at most
		// max(|x|, mean) <= the block maximum (plus the f16 rounding).
		{dtype.Q1_0, quantQ1_0Generic, 128, 1.001},
		// Q2_0 rounds x/max to -1, 0 or 1: error at most half the maximum.
		{dtype.Q2_0, quantQ2_0Generic, 64, 0.5 * 1.001},
		// NVFP4: the widest gap, 4 to 6 levels, is 2 of 6 units; the scale
		// max/6 is rounded to 3 mantissa bits (up to 1/16 off).
		{dtype.NVFP4, quantNVFP4Generic, 16, (1 + 1.0/16) / 6},
	} {
		info := c.d.Info()
		for trial := range 200 {
			n := info.BlockElems * (1 + trial%3)
			// Scales 2^-1..2^7 keep NVFP4's scale max/6 among normal UE4M3
			// values (2^-6..448), where the 1/16 bound holds.
			x := randRow(r, n, math.Pow(2, float64(trial%9-1)))
			q := make([]byte, n/info.BlockElems*info.BlockBytes)
			c.quant(q, x)
			y := make([]float32, n)
			if err := Dequantize(c.d, y, q); err != nil {
				t.Fatal(err)
			}
			for g := 0; g < n; g += c.group {
				var amax, emax float64
				for i := g; i < g+c.group; i++ {
					amax = math.Max(amax, math.Abs(float64(x[i])))
					emax = math.Max(emax, math.Abs(float64(x[i]-y[i])))
				}
				if emax > c.bound*amax {
					t.Fatalf("%v trial %d group %d: error %g > %g·%g", c.d, trial, g/c.group, emax, c.bound, amax)
				}
			}
		}
	}
}

// TestQuantNewTypesNonFinite: NaN and infinities give some bytes, never a panic.
func TestQuantNewTypesNonFinite(t *testing.T) {
	x := make([]float32, 128)
	x[0], x[3], x[70], x[127] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32
	quantQ1_0Generic(make([]byte, 18), x)
	quantQ2_0Generic(make([]byte, 36), x)
	quantNVFP4Generic(make([]byte, 72), x)
	// Subnormal maxima make 1/d overflow in Q2_0: ggml's codes are then 0.
	tiny := make([]float32, 64)
	tiny[9] = math.Float32frombits(3)
	q := make([]byte, 18)
	quantQ2_0Generic(q, tiny)
	for i, b := range q {
		if b != 0 {
			t.Fatalf("Q2_0 of a subnormal block: byte %d is %#02x, want 0", i, b)
		}
	}
}
