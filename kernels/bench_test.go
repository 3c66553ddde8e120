package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// Benchmarks run on one row of 4096 float32 values (the row size);
// SetBytes counts input bytes, so MB/s is input throughput.

const benchRow = 4096

func benchQuantize(b *testing.B, d dtype.DType) {
	x := randRow(rand.New(rand.NewPCG(1, 1)), benchRow, 1)
	nb, _ := sizes(d, benchRow)
	q := make([]byte, nb)
	b.SetBytes(4 * benchRow)
	for b.Loop() {
		if err := Quantize(d, q, x); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDequantize(b *testing.B, d dtype.DType) {
	x := randRow(rand.New(rand.NewPCG(1, 1)), benchRow, 1)
	nb, _ := sizes(d, benchRow)
	q := make([]byte, nb)
	if err := Quantize(d, q, x); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4 * benchRow)
	for b.Loop() {
		if err := Dequantize(d, x, q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuantizeQ8_0(b *testing.B)  { benchQuantize(b, dtype.Q8_0) }
func BenchmarkQuantizeQ4_0(b *testing.B)  { benchQuantize(b, dtype.Q4_0) }
func BenchmarkQuantizeQ4_1(b *testing.B)  { benchQuantize(b, dtype.Q4_1) }
func BenchmarkQuantizeQ5_0(b *testing.B)  { benchQuantize(b, dtype.Q5_0) }
func BenchmarkQuantizeQ5_1(b *testing.B)  { benchQuantize(b, dtype.Q5_1) }
func BenchmarkQuantizeQ2_K(b *testing.B)  { benchQuantize(b, dtype.Q2_K) }
func BenchmarkQuantizeQ3_K(b *testing.B)  { benchQuantize(b, dtype.Q3_K) }
func BenchmarkQuantizeQ4_K(b *testing.B)  { benchQuantize(b, dtype.Q4_K) }
func BenchmarkQuantizeQ5_K(b *testing.B)  { benchQuantize(b, dtype.Q5_K) }
func BenchmarkQuantizeQ6_K(b *testing.B)  { benchQuantize(b, dtype.Q6_K) }
func BenchmarkQuantizeMXFP4(b *testing.B) { benchQuantize(b, dtype.MXFP4) }
func BenchmarkQuantizeNVFP4(b *testing.B) { benchQuantize(b, dtype.NVFP4) }
func BenchmarkQuantizeTQ1_0(b *testing.B) { benchQuantize(b, dtype.TQ1_0) }
func BenchmarkQuantizeTQ2_0(b *testing.B) { benchQuantize(b, dtype.TQ2_0) }
func BenchmarkQuantizeF16(b *testing.B)   { benchQuantize(b, dtype.F16) }
func BenchmarkQuantizeBF16(b *testing.B)  { benchQuantize(b, dtype.BF16) }

// benchChecked runs QuantizeChecked on one chunk as apr-quant does (1 MiB of
// float32 values per call), which shows the kernels' loops without the
// per-call costs that a row of 4096 includes.
func benchChecked(b *testing.B, d dtype.DType) {
	const n = 1 << 18
	x := randRow(rand.New(rand.NewPCG(1, 1)), n, 1)
	nb, _ := sizes(d, n)
	q := make([]byte, nb)
	b.SetBytes(4 * n)
	for b.Loop() {
		if over, err := QuantizeChecked(d, q, x, 0x7f800000); err != nil || over {
			b.Fatal(over, err)
		}
	}
}

func BenchmarkQuantizeCheckedQ8_0(b *testing.B) { benchChecked(b, dtype.Q8_0) }
func BenchmarkQuantizeCheckedQ4_0(b *testing.B) { benchChecked(b, dtype.Q4_0) }
func BenchmarkQuantizeCheckedQ4_1(b *testing.B) { benchChecked(b, dtype.Q4_1) }

func BenchmarkDequantizeQ8_0(b *testing.B) { benchDequantize(b, dtype.Q8_0) }
func BenchmarkDequantizeQ4_0(b *testing.B) { benchDequantize(b, dtype.Q4_0) }
func BenchmarkDequantizeQ4_K(b *testing.B) { benchDequantize(b, dtype.Q4_K) }
func BenchmarkDequantizeQ6_K(b *testing.B) { benchDequantize(b, dtype.Q6_K) }
func BenchmarkDequantizeF16(b *testing.B)  { benchDequantize(b, dtype.F16) }
func BenchmarkDequantizeBF16(b *testing.B) { benchDequantize(b, dtype.BF16) }

func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	x, y := randRow(r, benchRow, 1), randRow(r, benchRow, 1)
	b.SetBytes(8 * benchRow)
	var s float32
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}

func BenchmarkDotQ4_K(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	x, w := randRow(r, benchRow, 1), randRow(r, benchRow, 1)
	nb, _ := sizes(dtype.Q4_K, benchRow)
	q := make([]byte, nb)
	if err := Quantize(dtype.Q4_K, q, w); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4 * benchRow)
	for b.Loop() {
		if _, err := DotQ(dtype.Q4_K, q, x); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatMul128(b *testing.B) {
	const n = 128
	r := rand.New(rand.NewPCG(3, 3))
	x, y, z := randRow(r, n*n, 1), randRow(r, n*n, 1), make([]float32, n*n)
	b.SetBytes(2 * n * n * n) // one "byte" per flop: MB/s reads as Mflop/s
	for b.Loop() {
		if err := MatMul(z, x, y, n, n, n); err != nil {
			b.Fatal(err)
		}
	}
}
