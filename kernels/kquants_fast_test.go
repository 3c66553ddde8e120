package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// kquantBlocks returns nb blocks of 256 finite values from many
// distributions: normal and heavy-tailed at scales over many decades, ±0
// with a few values, constant blocks, grids with exact ties, subnormals,
// one-signed uniform values, sparse outliers and values near the largest
// the K-quants accept.
func kquantBlocks(r *rand.Rand, nb int) []float32 {
	x := make([]float32, nb*qkK)
	for b := range nb {
		y := x[b*qkK : (b+1)*qkK]
		scale := math.Pow(10, float64(r.IntN(41)-20))
		c := float32(r.NormFloat64() * scale)
		kind := r.IntN(10)
		for i := range y {
			var v float64
			switch kind {
			case 0, 1:
				v = r.NormFloat64() * scale
			case 2: // heavy tails
				v = r.NormFloat64() / (r.Float64() + 1e-3) * scale
			case 3: // ±0 with a few values
				v = math.Copysign(0, float64(r.IntN(2)*2-1))
				if r.IntN(8) == 0 {
					v = r.NormFloat64() * scale
				}
			case 4: // constant
				y[i] = c
				continue
			case 5: // grid with ties
				v = float64(r.IntN(65)-32) / 4
			case 6: // subnormals
				v = float64(math.Float32frombits(uint32(r.IntN(1 << 23))))
				if r.IntN(2) == 0 {
					v = -v
				}
			case 7: // one sign
				v = (r.Float64()*3 + 0.5) * scale
				if b%2 == 0 {
					v = -v
				}
			case 8: // sparse outliers
				v = r.NormFloat64() * 1e-3
				if r.IntN(64) == 0 {
					v = r.NormFloat64() * 100
				}
			case 9: // large
				v = r.NormFloat64() * 1e4
			}
			y[i] = float32(v)
		}
	}
	return x
}

// TestKQuantFastMatchesReference compares the K-quant fast paths with the
// plain Go reference on many blocks. APR_KQUANT_BLOCKS sets how many
// (default 20000; 2000 with -short).
func TestKQuantFastMatchesReference(t *testing.T) {
	if FastPath() == "" {
		t.Skip("no fast path on this build")
	}
	nb := 20000
	if testing.Short() {
		nb = 2000
	}
	if s := os.Getenv("APR_KQUANT_BLOCKS"); s != "" {
		nb, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(16, 1))
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
		const chunk = 1024
		for done := 0; done < nb; done += chunk {
			n := min(chunk, nb-done)
			x := kquantBlocks(r, n)
			a, b := make([]byte, n*k.bs), make([]byte, n*k.bs)
			k.fast(a, x)
			k.ref(b, x)
			if !bytes.Equal(a, b) {
				j := firstDiff(a, b)
				t.Fatalf("%s block %d: byte %d: fast %#02x, reference %#02x (block %v)", k.name, done+j/k.bs, j%k.bs, a[j], b[j], x[j/k.bs*qkK:][:qkK])
			}
		}
	}
}

// TestGoldenKQuantBothPaths holds both the K-quant fast paths and their
// references to ggml's golden bytes (TestGoldenQuantize sees only the path
// Quantize dispatches to).
func TestGoldenKQuantBothPaths(t *testing.T) {
	x, _ := goldenInput(t)
	for _, k := range []struct {
		file      string
		fast, ref func([]byte, []float32)
		bs        int
	}{
		{"q2_K.bin", quantQ2_K, quantQ2_KGeneric, 84},
		{"q3_K.bin", quantQ3_K, quantQ3_KGeneric, 110},
		{"q4_K.bin", quantQ4_K, quantQ4_KGeneric, 144},
		{"q5_K.bin", quantQ5_K, quantQ5_KGeneric, 176},
		{"q6_K.bin", quantQ6_K, quantQ6_KGeneric, 210},
	} {
		want := readGolden(t, k.file)
		for name, f := range map[string]func([]byte, []float32){"fast": k.fast, "reference": k.ref} {
			got := make([]byte, len(x)/qkK*k.bs)
			f(got, x)
			if !bytes.Equal(got, want) {
				j := firstDiff(got, want)
				t.Errorf("%s %s: byte %d differs from ggml's (block %d)", k.file, name, j, j/k.bs)
			}
		}
	}
}
