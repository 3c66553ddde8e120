//go:build amd64 && !purego && !noasm

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestIQAsmRows quantizes rows with the assembly searches (iqAsm) and with
// the plain Go ones, IQ2_XXS through IQ1_M, weighted and (where ggml takes
// it) not: the bytes must be equal. The rows: Gaussian, small integers
// (equal values and scores), a few large values among small ones, all
// equal, zeros with one value, tiny and huge magnitudes; the weights:
// random, some zero, all equal.
func TestIQAsmRows(t *testing.T) {
	if !iqAsm {
		t.Skip("no AVX2")
	}
	const n = 4 * qkK
	r := rand.New(rand.NewPCG(28, 7))
	rows := map[string]func(i int) float32{
		"gauss":    func(int) float32 { return float32(r.NormFloat64()) },
		"ints":     func(int) float32 { return float32(r.IntN(7) - 3) },
		"outliers": func(i int) float32 { return float32(r.NormFloat64() * []float64{1e-3, 50}[b2i(r.IntN(40) == 0)]) },
		"equal":    func(int) float32 { return 0.75 },
		"spike":    func(i int) float32 { return float32(b2i(i%97 == 5)) * -3 },
		"tiny":     func(int) float32 { return float32(r.NormFloat64() * 1e-30) },
		"huge":     func(int) float32 { return float32(r.NormFloat64() * 1e15) },
	}
	weights := map[string]func(i int) float32{
		"exp":   func(int) float32 { return float32(r.ExpFloat64()) },
		"zeros": func(i int) float32 { return float32(b2i(r.IntN(3) != 0)) * r.Float32() },
		"ones":  func(int) float32 { return 1 },
	}
	// The tables keep their transposed lists only when built with iqAsm.
	iq2xxsSearch()
	iq2xsSearch()
	iq2sSearch()
	iq1sSearch()
	defer func() { iqAsm = true }()
	for rn, row := range rows {
		x := make([]float32, n)
		for i := range x {
			x[i] = row(i)
		}
		for wn, wf := range weights {
			qw := make([]float32, n)
			for i := range qw {
				qw[i] = wf(i)
			}
			for _, d := range iqAll {
				for _, weighted := range []bool{true, false} {
					if !weighted && NeedsWeights(d) {
						continue
					}
					nb, _ := sizes(d, n)
					var out [2][]byte
					for k, asm := range []bool{false, true} {
						iqAsm = asm
						out[k] = make([]byte, nb)
						var err error
						if weighted {
							err = QuantizeWeighted(d, out[k], x, n, qw)
						} else {
							err = Quantize(d, out[k], x)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(out[0], out[1]) {
						t.Errorf("%v rows %s weights %s (weighted %v): the assembly's bytes differ", d, rn, wn, weighted)
					}
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
