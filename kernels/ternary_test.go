package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTernaryFastMatchesGeneric compares the TQ1_0 and TQ2_0 quantizers with
// the references (checked against ggml's bytes in the goldens) on blocks whose
// values sit on and a few ulps around ±0.5 of the block maximum (lroundf's
// ties), random blocks at scales from 2^-140 to 2^100, zeros, subnormal maxima,
// NaN and infinities; and the largest |x| bits they report.
func TestTernaryFastMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var x []float32
	special := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, 0x1p-127, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for blk := range 6000 {
		amax := float32(math.Ldexp(1+r.Float64(), r.IntN(240)-140))
		b := make([]float32, qkK)
		for i := range b {
			switch blk % 4 {
			case 0: // around ±amax/2, where id·x meets 0.5
				h := math.Float32bits(amax / 2)
				b[i] = math.Float32frombits(uint32(int32(h) + int32(r.IntN(9)-4)))
				if r.IntN(2) == 0 {
					b[i] = -b[i]
				}
			case 1:
				b[i] = special[r.IntN(len(special))]
			default:
				b[i] = float32(r.NormFloat64()) * amax / 3
			}
		}
		if blk%4 != 1 {
			b[r.IntN(qkK)] = amax
		}
		x = append(x, b...)
	}
	var wantMax uint32
	for _, v := range x {
		wantMax = max(wantMax, math.Float32bits(v)&0x7fffffff)
	}
	for _, c := range []struct {
		name string
		bs   int
		ref  func([]byte, []float32)
		fast func([]byte, []float32) uint32
	}{{"TQ1_0", 54, quantTQ1_0Generic, quantMaxTQ1_0}, {"TQ2_0", 66, quantTQ2_0Generic, quantMaxTQ2_0}} {
		want, got := make([]byte, len(x)/qkK*c.bs), make([]byte, len(x)/qkK*c.bs)
		c.ref(want, x)
		if m := c.fast(got, x); m != wantMax {
			t.Errorf("%s: largest |x| bits %#x, want %#x", c.name, m, wantMax)
		}
		if i := firstDiff(got, want); !bytes.Equal(got, want) {
			t.Fatalf("%s: byte %d (block %d): %#02x, want %#02x", c.name, i, i/c.bs, got[i], want[i])
		}
	}
}
