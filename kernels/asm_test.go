package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// Tests of the assembly kernels (asm_amd64.s, asm_arm64.s) that the shared
// fast-path tests do not reach: the block kernels called directly (a kernel
// that stopped at once would pass every comparison through the drivers,
// which hand what is left to the reference), blocks with NaN and infinities,
// the bf16 conversions and the byte-level F16/BF16 dtype kernels. In builds
// without them (purego, noasm, other GOARCH, CPU without the features) the
// kernels under test are the reference, and the comparisons still run.

// specialRow mixes every kind of value the conversions treat apart: ±0,
// f32 subnormals, values at the f16 overflow and subnormal boundaries and
// at rounding ties, infinities, quiet and signalling NaNs with payloads.
func specialRow(r *rand.Rand, n int) []float32 {
	special := []uint32{
		0, 0x80000000, 1, 0x807fffff, 0x00400000, // zeros, f32 subnormals
		0x7f800000, 0xff800000, // infinities
		0x7fc00000, 0xffc00000, 0x7f800001, 0xff80ffff, 0x7fa5a5a5, 0x7fffffff, // NaNs
		0x477ff000, 0x477fefff, 0x477fe000, 0xc77ff000, // around 65520 (f16 overflow)
		0x33000000, 0x33000001, 0x32ffffff, 0x33800000, 0x387fe000, 0x38800000, // around f16 subnormals
		0x3f808000, 0x3f818000, 0x3f817fff, 0x3f800fff, 0x3f801000, 0x3f803000, // bf16 and f16 ties
		0x7f7f8000, 0x7f7fffff, 0xff7f8000, // bf16 overflow to inf
	}
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(3) {
		case 0:
			x[i] = math.Float32frombits(special[r.IntN(len(special))])
		case 1:
			x[i] = math.Float32frombits(r.Uint32())
		default:
			x[i] = float32(r.NormFloat64())
		}
	}
	return x
}

func TestConvertSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4099} {
		x := specialRow(r, n)
		a, b := make([]uint16, n), make([]uint16, n)
		for _, k := range []struct {
			name      string
			fast, ref func([]uint16, []float32)
		}{{"f32->f16", f32ToF16, f32ToF16Generic}, {"f32->bf16", f32ToBF16, f32ToBF16Generic}} {
			k.fast(a, x)
			k.ref(b, x)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s n=%d [%d] %#08x: fast %#04x, reference %#04x", k.name, n, i, math.Float32bits(x[i]), a[i], b[i])
				}
			}
		}
		// Through the dtype's byte kernels, and back.
		for _, d := range []dtype.DType{dtype.F16, dtype.BF16} {
			got := make([]byte, 2*n)
			if err := Quantize(d, got, x); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 2*n)
			conv := f32ToF16Generic
			if d == dtype.BF16 {
				conv = f32ToBF16Generic
			}
			conv(b, x)
			for i, h := range b {
				want[2*i], want[2*i+1] = byte(h), byte(h>>8)
			}
			if !bytes.Equal(got, want) {
				i := firstDiff(got, want)
				t.Fatalf("Quantize %v n=%d: byte %d: %#02x, want %#02x", d, n, i, got[i], want[i])
			}
			y := make([]float32, n)
			if err := Dequantize(d, y, got); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				h := uint16(got[2*i]) | uint16(got[2*i+1])<<8
				w := F16BitsToF32(h)
				if d == dtype.BF16 {
					w = BF16BitsToF32(h)
				}
				if math.Float32bits(y[i]) != math.Float32bits(w) {
					t.Fatalf("Dequantize %v n=%d [%d] %#04x: %#08x, want %#08x", d, n, i, h, math.Float32bits(y[i]), math.Float32bits(w))
				}
			}
		}
	}
}

// TestBF16AllCodes widens every bf16 code and compares with the reference,
// then narrows every f32 whose top half is any code, with low halves at
// and around the rounding tie.
func TestBF16AllCodes(t *testing.T) {
	codes := make([]uint16, 1<<16)
	for c := range codes {
		codes[c] = uint16(c)
	}
	a, b := make([]float32, len(codes)), make([]float32, len(codes))
	BF16ToF32(a, codes)
	bf16ToF32Generic(b, codes)
	for c := range codes {
		if math.Float32bits(a[c]) != math.Float32bits(b[c]) {
			t.Fatalf("bf16 %#04x: fast %#08x, reference %#08x", c, math.Float32bits(a[c]), math.Float32bits(b[c]))
		}
	}
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff}
	x := make([]float32, len(codes))
	h, g := make([]uint16, len(codes)), make([]uint16, len(codes))
	for _, low := range lows {
		for c := range codes {
			x[c] = math.Float32frombits(uint32(c)<<16 | low)
		}
		F32ToBF16(h, x)
		f32ToBF16Generic(g, x)
		for c := range codes {
			if h[c] != g[c] {
				t.Fatalf("f32 %#08x: fast %#04x, reference %#04x", math.Float32bits(x[c]), h[c], g[c])
			}
		}
	}
}

// TestQuantNonFinite puts NaNs and infinities into some blocks of long
// rows: the bytes of every block (those the reference quantizes for the
// kernel included) must be the reference's, and QuantizeChecked's answer
// must not depend on where the value sits.
func TestQuantNonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	bad := []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001}
	for _, k := range []struct {
		d    dtype.DType
		ref  func([]byte, []float32)
		bs   int
		fast func([]byte, []float32)
	}{
		{dtype.Q8_0, quantQ8_0Generic, 34, quantQ8_0},
		{dtype.Q4_0, quantQ4_0Generic, 18, quantQ4_0},
		{dtype.Q4_1, quantQ4_1Generic, 20, quantQ4_1},
		{dtype.MXFP4, quantMXFP4Generic, 17, quantMXFP4},
	} {
		for trial := range 200 {
			nb := 1 + r.IntN(40)
			x := make([]float32, nb*qk)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for range 1 + r.IntN(3) {
				x[r.IntN(len(x))] = math.Float32frombits(bad[r.IntN(len(bad))])
			}
			got, want := make([]byte, nb*k.bs), make([]byte, nb*k.bs)
			k.fast(got, x)
			k.ref(want, x)
			// The GOEXPERIMENT=simd AVX-512 quantizers do not promise the
			// reference's bytes for such input (simd_amd64.go); apr-quant
			// refuses it anyway, and QuantizeChecked must still say so.
			if !bytes.Equal(got, want) && fastName != "avx512" {
				i := firstDiff(got, want)
				t.Fatalf("%v trial %d: byte %d (block %d): %#02x, want %#02x", k.d, trial, i, i/k.bs, got[i], want[i])
			}
			if over, err := QuantizeChecked(k.d, got, x, 0x7f800000); err != nil || !over {
				t.Fatalf("%v trial %d: non-finite value not reported (over %v, err %v)", k.d, trial, over, err)
			}
		}
	}
}

// TestAsmBlockKernels calls the assembly block kernels themselves: on
// finite rows they must do every block, with the reference's bytes and the
// largest |x| bits; before a block with a NaN or infinity they must stop.
func TestAsmBlockKernels(t *testing.T) {
	ks := asmBlockKernels()
	if len(ks) == 0 {
		t.Skip("no assembly block kernels in this build or on this CPU")
	}
	r := rand.New(rand.NewPCG(51, 52))
	rows := fastRows(r)
	rows = append(rows, longRows(r, rows)...)
	for _, k := range ks {
		for i, x := range rows {
			nb := len(x) / qk
			got, want := make([]byte, nb*k.bs), make([]byte, nb*k.bs)
			done, m := k.run(&got[0], &x[0], nb)
			k.ref(want, x)
			if done != nb {
				t.Fatalf("%s row %d: did %d of %d finite blocks", k.name, i, done, nb)
			}
			if !bytes.Equal(got, want) {
				j := firstDiff(got, want)
				t.Fatalf("%s row %d: byte %d: %#02x, want %#02x (block %v)", k.name, i, j, got[j], want[j], x[j/k.bs*qk:][:qk])
			}
			if w := absMaxBits(x); m != w {
				t.Fatalf("%s row %d: largest |x| bits %#08x, want %#08x", k.name, i, m, w)
			}
			if i%8 == 0 {
				y := append([]float32(nil), x...)
				b := r.IntN(nb)
				y[b*qk+r.IntN(qk)] = float32(math.Inf(1 - 2*r.IntN(2)))
				if done, _ := k.run(&got[0], &y[0], nb); done != b {
					t.Fatalf("%s row %d: infinity in block %d, kernel did %d blocks", k.name, i, b, done)
				}
			}
		}
	}
}

// asmKernel is one assembly block kernel, for TestAsmBlockKernels.
type asmKernel struct {
	name string
	run  func(dst *byte, src *float32, nb int) (int, uint32)
	ref  func([]byte, []float32)
	bs   int
}

// edgeBlocks returns nb K-quant blocks whose sub-blocks (of 16) sit at the
// edges of the searches: largest |x| at, just below and just above Q6_K's
// flat threshold (groupMaxEps as float32), ±0 sub-blocks, one value among
// zeros, ties of ±max (the first is Q6_K's scale's sign), f32 subnormals,
// constant runs (max == min), one-signed values, and NaNs and infinities
// (which callers refuse; the results still follow the reference).
func edgeBlocks(r *rand.Rand, nb int) []float32 {
	eps := math.Float32bits(groupMaxEps)
	x := make([]float32, nb*qkK)
	for sb := range nb * 16 {
		y := x[16*sb : 16*sb+16]
		for i := range y {
			y[i] = float32(r.NormFloat64())
		}
		switch r.IntN(12) {
		case 0, 1, 2:
			m := math.Float32frombits(eps + uint32(r.IntN(3)) - 1)
			for i := range y {
				y[i] = m * float32(r.Float64())
			}
			y[r.IntN(16)] = m * float32(1-2*r.IntN(2))
		case 3:
			for i := range y {
				y[i] = float32(math.Copysign(0, float64(1-2*r.IntN(2))))
			}
			if r.IntN(2) == 0 {
				y[r.IntN(16)] = float32(r.NormFloat64())
			}
		case 4:
			a := float32(r.NormFloat64())
			y[r.IntN(16)], y[r.IntN(16)] = a, -a
		case 5:
			for i := range y {
				y[i] = math.Float32frombits(uint32(r.IntN(1 << 23)))
			}
		case 6:
			bad := []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xff800001}
			y[r.IntN(16)] = math.Float32frombits(bad[r.IntN(len(bad))])
		case 7:
			c := float32(r.NormFloat64())
			for i := range y {
				y[i] = c
			}
		case 8:
			for i := range y {
				y[i] = float32(math.Abs(r.NormFloat64()))
			}
		}
	}
	return x
}

// TestKQuantEdges compares the K-quant fast paths with the reference on
// edgeBlocks.
func TestKQuantEdges(t *testing.T) {
	const nb = 400
	x := edgeBlocks(rand.New(rand.NewPCG(61, 62)), nb)
	for _, k := range []struct {
		name      string
		fast, ref func([]byte, []float32)
		bs        int
	}{
		{"Q2_K", quantQ2_K, quantQ2_KGeneric, 84},
		{"Q3_K", quantQ3_K, quantQ3_KGeneric, 110},
		{"Q4_K", quantQ4_K, quantQ4_KGeneric, 144},
		{"Q5_K", quantQ5_K, quantQ5_KGeneric, 176},
		{"Q6_K", quantQ6_K, quantQ6_KGeneric, 210},
	} {
		got, want := make([]byte, nb*k.bs), make([]byte, nb*k.bs)
		k.fast(got, x)
		k.ref(want, x)
		if !bytes.Equal(got, want) {
			i := firstDiff(got, want)
			t.Errorf("%s block %d byte %d: %#02x, want %#02x (block %v)", k.name, i/k.bs, i%k.bs, got[i], want[i], x[i/k.bs*qkK:][:qkK])
		}
	}
}
