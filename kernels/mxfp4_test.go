package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMXFP4FastMatchesGeneric compares quantMXFP4 with ggml's scan
// (quantMXFP4Generic, itself checked against ggml's bytes in the goldens) on
// every float32 within 2^13 ulps of each level and midpoint, both signs, at
// block maxima from 2^-96 to float32's largest (amax just below a power of two included),
// and on random blocks with zeros, subnormals, NaN, infinities and maxima below
// the fast path's range; and the largest |x| bits it reports for QuantizeChecked.
func TestMXFP4FastMatchesGeneric(t *testing.T) {
	var x []float32
	edges := []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12}
	for _, amax := range []float32{0x1p-96, 1.5 * 0x1p-60, 1, 0x1.fffffep0, 11.9, 0x1.8p100, 0x1.fffffep119, 0x1p120, 0x1.8p126, math.MaxFloat32} {
		d := e8m0Half(mxfp4Exponent(amax))
		var blk []float32
		flush := func() {
			for len(blk) > 0 {
				n := min(31, len(blk))
				x = append(append(x, amax), blk[:n]...)
				blk = blk[n:]
			}
		}
		for _, m := range edges {
			c := math.Float32bits(m * d)
			for k := int32(-1 << 13); k <= 1<<13; k++ {
				b := uint32(int32(c) + k)
				if m == 0 && k < 0 {
					continue
				}
				v := math.Float32frombits(b)
				if abs32(v) <= amax {
					blk = append(blk, v, -v)
				}
			}
		}
		flush()
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, -0x1p-130, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-100, 0x1.fffffep-97}
	for range 20000 {
		scale := math.Ldexp(1, r.IntN(250)-140)
		for range qk {
			v := float32(r.NormFloat64() * scale)
			if r.IntN(16) == 0 {
				v = special[r.IntN(len(special))]
			}
			x = append(x, v)
		}
	}
	want := make([]byte, len(x)/qk*17)
	got := make([]byte, len(want))
	quantMXFP4Generic(want, x)
	var wantMax uint32
	for _, v := range x {
		wantMax = max(wantMax, math.Float32bits(v)&0x7fffffff)
	}
	if m := quantMaxMXFP4(got, x); m != wantMax {
		t.Errorf("largest |x| bits %#x, want %#x", m, wantMax)
	}
	for i := 0; i < len(want); i += 17 {
		if !bytes.Equal(got[i:i+17], want[i:i+17]) {
			t.Fatalf("block %d (%v): got % x, want % x", i/17, x[i/17*qk:(i/17+1)*qk], got[i:i+17], want[i:i+17])
		}
	}
}
