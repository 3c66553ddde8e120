package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// TestQuantizeChecked checks both halves of QuantizeChecked, fused or not:
// below the limit its bytes are Quantize's; any value at or above the limit
// (NaN, infinities, a large finite value), wherever it sits in the row
// (vector blocks, blocks the fast path hands to the reference), is reported.
func TestQuantizeChecked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rows := fastRows(r)
	for _, d := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q4_K, dtype.F16} {
		n, _ := sizes(d, 256)
		got, want := make([]byte, n), make([]byte, n)
		for i, x := range rows {
			if err := Quantize(d, want, x); err != nil {
				t.Fatal(err)
			}
			over, err := QuantizeChecked(d, got, x, absMaxBits(x)+1) // the row's largest value passes
			if err != nil || over {
				t.Fatalf("%v row %d: over %v, err %v", d, i, over, err)
			}
			if !bytes.Equal(got, want) {
				j := firstDiff(got, want)
				t.Fatalf("%v row %d: byte %d differs from Quantize: %#02x, want %#02x", d, i, j, got[j], want[j])
			}
		}
		for i, x := range rows[:50] {
			limit := absMaxBits(x) + 1
			bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(limit), -math.Float32frombits(limit + 1)}
			for k, v := range bad {
				y := append([]float32(nil), x...)
				at := r.IntN(len(y))
				if i%5 == 1 && k == 0 {
					at = 0 // a row of ±0 with a few values: blocks with a zero extreme go to the reference
				}
				y[at] = v
				if over, err := QuantizeChecked(d, got, y, limit); err != nil || !over {
					t.Fatalf("%v row %d: %v at %d not reported (over %v, err %v)", d, i, v, at, over, err)
				}
			}
			// Just below the limit is fine.
			y := append([]float32(nil), x...)
			y[r.IntN(len(y))] = -math.Float32frombits(limit - 1)
			if over, err := QuantizeChecked(d, got, y, limit); err != nil || over {
				t.Fatalf("%v row %d: value below the limit reported (over %v, err %v)", d, i, over, err)
			}
		}
	}
	if _, err := QuantizeChecked(dtype.Q4_0, make([]byte, 17), make([]float32, 32), 0x7F800000); err == nil {
		t.Fatal("short dst: no error")
	}
}

func TestAnyAbsAtLeast(t *testing.T) {
	x := make([]float32, 37)
	for off := range 3 { // odd and even starts, both alignments
		for i := off; i < len(x); i++ {
			y := x[off:]
			for j := range y {
				y[j] = -1.5
			}
			if AnyAbsAtLeast(y, math.Float32bits(2)) {
				t.Fatalf("offset %d: no value reaches 2", off)
			}
			y[i-off] = -2
			if !AnyAbsAtLeast(y, math.Float32bits(2)) {
				t.Fatalf("offset %d: -2 at %d not found", off, i-off)
			}
		}
	}
}

// BF16ToF16Checked gives the reference's bytes (BF16 -> float32 -> F16) for every
// finite BF16 code, in vectors and in a tail, and declines a chunk holding a value at
// its limit or a NaN.
func TestBF16ToF16Checked(t *testing.T) {
	var src []byte
	for c := range 1 << 16 {
		if c&0x7f80 != 0x7f80 { // not NaN or infinite
			src = append(src, byte(c), byte(c>>8))
		}
	}
	src = src[:len(src)-6] // a tail of 5 values after the vectors
	want := make([]byte, len(src))
	f := make([]float32, len(src)/2)
	if err := Dequantize(dtype.BF16, f, src); err != nil {
		t.Fatal(err)
	}
	if err := Quantize(dtype.F16, want, f); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if !BF16ToF16Checked(got, src, 0x7f800000) {
		if bf16ToF16Max != nil {
			t.Fatal("declined finite values")
		}
		t.Skip("no BF16 -> F16 kernel in this build")
	}
	if !bytes.Equal(got, want) {
		for i := 0; i < len(got); i += 2 {
			if got[i] != want[i] || got[i+1] != want[i+1] {
				t.Fatalf("bf16 %02x%02x: got f16 %02x%02x, want %02x%02x", src[i+1], src[i], got[i+1], got[i], want[i+1], want[i])
			}
		}
	}
	for _, code := range []uint16{0x4700, 0xc700, 0x7fc0, 0xff81} { // 32768, -32768, NaNs
		row := make([]byte, 2*19)
		row[2*11], row[2*11+1] = byte(code), byte(code>>8)
		if BF16ToF16Checked(make([]byte, len(row)), row, 0x47000000) {
			t.Errorf("bf16 %04x at limit 32768 was not declined", code)
		}
	}
}
