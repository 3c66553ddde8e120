package kernels

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// The weighted quantizers are held to ggml's bytes by lib/llm's TestImatrixPureBytes
// and TestImatrixPresetBytes (llama-quantize --imatrix, every type, whole tensors).
// These tests hold the package's contract.

func TestQuantizeWeightedContract(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const rowLen, rows = 512, 3
	x := make([]float32, rows*rowLen)
	qw := make([]float32, rowLen)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	for _, typ := range []dtype.DType{dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q5_1, dtype.Q2_K, dtype.Q3_K, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q8_0, dtype.F16} {
		if !CanQuantizeWeighted(typ) {
			t.Fatalf("%v: not supported", typ)
		}
		checkWeighted(t, typ, x, qw)
	}
	for _, c := range []struct {
		typ    dtype.DType
		dst    int
		src    int
		rowLen int
		qw     int
		want   error
	}{
		{dtype.Q8_K, 292, 256, 256, 256, ErrUnsupported},
		{dtype.Q4_K, 144, 256, 256, 128, ErrLength},
		{dtype.Q4_K, 144, 256, 128, 128, ErrLength}, // rows not whole blocks
		{dtype.Q4_0, 18, 48, 32, 32, ErrLength},     // not whole rows
		{dtype.Q4_0, 17, 32, 32, 32, ErrLength},
	} {
		err := QuantizeWeighted(c.typ, make([]byte, c.dst), make([]float32, c.src), c.rowLen, make([]float32, c.qw))
		if !errors.Is(err, c.want) {
			t.Errorf("%v dst %d src %d row %d qw %d: %v, want %v", c.typ, c.dst, c.src, c.rowLen, c.qw, err, c.want)
		}
	}
}

// TestQuantizeWeightedZeroSuperBlock: where a super-block's weights are all zero,
// Q2_K, Q4_K and Q5_K write scales d and dmin of 0 (later ggml's make_qp_quants;
// b4747's divides 0 by 0: NaN), the block decodes to zeros, and the row's other
// super-block is what it is alone (lib/llm's TestImatrixZeroBlocksBytes holds the
// bytes to llama-quantize's).
func TestQuantizeWeightedZeroSuperBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const rowLen = 512
	x := make([]float32, rowLen)
	qw := make([]float32, rowLen)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := 256; i < rowLen; i++ {
		qw[i] = float32(r.ExpFloat64())
	}
	for _, c := range []struct {
		typ      dtype.DType
		dAt, mAt int // the f16 d and dmin in a block
	}{{dtype.Q2_K, 80, 82}, {dtype.Q4_K, 0, 2}, {dtype.Q5_K, 0, 2}} {
		n, _ := sizes(c.typ, rowLen)
		q := make([]byte, n)
		if err := QuantizeWeighted(c.typ, q, x, rowLen, qw); err != nil {
			t.Fatal(err)
		}
		bs := n / 2
		if d, m := q[c.dAt:c.dAt+2], q[c.mAt:c.mAt+2]; !bytes.Equal(d, []byte{0, 0}) || !bytes.Equal(m, []byte{0, 0}) {
			t.Errorf("%v: d % x, dmin % x in the zero-weighted super-block, want 0", c.typ, d, m)
		}
		back := make([]float32, rowLen)
		if err := Dequantize(c.typ, back, q); err != nil {
			t.Fatal(err)
		}
		for i, v := range back[:256] {
			if v != 0 {
				t.Fatalf("%v: value %d decodes to %v, want 0", c.typ, i, v)
			}
		}
		alone := make([]byte, bs)
		if err := QuantizeWeighted(c.typ, alone, x[256:], 256, qw[256:]); err != nil || !bytes.Equal(alone, q[bs:]) {
			t.Errorf("%v: the weighted super-block differs from itself alone (%v)", c.typ, err)
		}
	}
}

// benchWeighted quantizes one row of 4096 values with importance weights, as
// benchQuantize does without (MB/s of float32 input on one core); tables a type
// builds on first use (the i-quants' search tables) are built before the timer.
func benchWeighted(b *testing.B, d dtype.DType) {
	r := rand.New(rand.NewPCG(1, 1))
	x := randRow(r, benchRow, 1)
	qw := make([]float32, benchRow)
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	nb, _ := sizes(d, benchRow)
	q := make([]byte, nb)
	if err := QuantizeWeighted(d, q, x, benchRow, qw); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4 * benchRow)
	for b.Loop() {
		if err := QuantizeWeighted(d, q, x, benchRow, qw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWeightedQ4_0(b *testing.B) { benchWeighted(b, dtype.Q4_0) }
func BenchmarkWeightedQ4_1(b *testing.B) { benchWeighted(b, dtype.Q4_1) }
func BenchmarkWeightedQ5_0(b *testing.B) { benchWeighted(b, dtype.Q5_0) }
func BenchmarkWeightedQ5_1(b *testing.B) { benchWeighted(b, dtype.Q5_1) }
func BenchmarkWeightedQ2_K(b *testing.B) { benchWeighted(b, dtype.Q2_K) }
func BenchmarkWeightedQ3_K(b *testing.B) { benchWeighted(b, dtype.Q3_K) }
func BenchmarkWeightedQ4_K(b *testing.B) { benchWeighted(b, dtype.Q4_K) }
func BenchmarkWeightedQ5_K(b *testing.B) { benchWeighted(b, dtype.Q5_K) }
func BenchmarkWeightedQ6_K(b *testing.B) { benchWeighted(b, dtype.Q6_K) }

// checkWeighted holds QuantizeWeighted's contract for typ on the rows of x (qw: one
// weight per column): nil weights are Quantize; the weights change the fit (unless
// ggml's quantizer ignores them, as Q8_0's and F16's) and lower the weighted error;
// a row alone is quantized as among the others. It returns the weighted bytes.
func checkWeighted(t *testing.T, typ dtype.DType, x, qw []float32) []byte {
	t.Helper()
	rowLen, rows := len(qw), len(x)/len(qw)
	n, _ := sizes(typ, len(x))
	plain, w, again := make([]byte, n), make([]byte, n), make([]byte, n)
	if err := Quantize(typ, plain, x); err != nil {
		t.Fatal(err)
	}
	if err := QuantizeWeighted(typ, w, x, rowLen, qw); err != nil {
		t.Fatal(err)
	}
	if err := QuantizeWeighted(typ, again, x, rowLen, nil); err != nil || !bytes.Equal(again, plain) {
		t.Errorf("%v: nil weights are not Quantize (%v)", typ, err)
	}
	if same := bytes.Equal(w, plain); same != IgnoresWeights(typ) {
		t.Errorf("%v: weighted bytes equal to unweighted: %v", typ, same)
	}
	rb := n / rows
	for i := range rows {
		one := make([]byte, rb)
		if err := QuantizeWeighted(typ, one, x[i*rowLen:(i+1)*rowLen], rowLen, qw); err != nil || !bytes.Equal(one, w[i*rb:(i+1)*rb]) {
			t.Errorf("%v: row %d alone differs (%v)", typ, i, err)
		}
	}
	if !IgnoresWeights(typ) {
		if a, b := weightedErr(t, typ, w, x, qw), weightedErr(t, typ, plain, x, qw); a >= b {
			t.Errorf("%v: weighted error %g, unweighted %g", typ, a, b)
		}
	}
	return w
}

// weightedErr is Σ qw·(dequantized − x)² over the rows of x quantized as q to typ
// (qw: one weight per column).
func weightedErr(t *testing.T, typ dtype.DType, q []byte, x, qw []float32) float64 {
	t.Helper()
	back := make([]float32, len(x))
	if err := Dequantize(typ, back, q); err != nil {
		t.Fatal(err)
	}
	var s float64
	for i, v := range x {
		d := float64(back[i] - v)
		s += float64(qw[i%len(qw)]) * d * d
	}
	return s
}

// weightKinds returns importance weights for rows of n values in several
// shapes: llama-imatrix-like (exponential), all zero, mostly zero, all equal
// (ties between candidates), and spread over many decades.
func weightKinds(r *rand.Rand, n int) map[string][]float32 {
	k := map[string][]float32{}
	for _, name := range []string{"exp", "zero", "sparse", "equal", "decades"} {
		w := make([]float32, n)
		for i := range w {
			switch name {
			case "exp":
				w[i] = float32(r.ExpFloat64())
			case "sparse":
				if r.IntN(8) == 0 {
					w[i] = float32(r.ExpFloat64())
				}
			case "equal":
				w[i] = 0.25
			case "decades":
				w[i] = float32(math.Pow(10, float64(r.IntN(25)-12)) * r.Float64())
			}
		}
		k[name] = w
	}
	return k
}

// TestWeightedFastMatchesReference holds the weighted quantizers with their
// fast searches (weightedAsm) to the same quantizers with the plain Go
// reference's, byte for byte, on kquantBlocks' rows (normal, heavy-tailed,
// ±0, constant, ties, subnormals, one-signed, outliers, large) and all-zero
// rows, under each kind of weights, in rows of 4096, 256 and 352 values (the
// last leaves Q4_1 and Q5_1 a group of fewer than 8 blocks). Non-finite
// values never reach these quantizers: apr-quant refuses tensors with them
// (QuantizeChecked) and lib/imatrix refuses such matrices.
func TestWeightedFastMatchesReference(t *testing.T) {
	if !weightedAsm {
		t.Skip("no fast path for the weighted quantizers on this build")
	}
	r := rand.New(rand.NewPCG(16, 16))
	nb := 64
	if testing.Short() {
		nb = 16
	}
	x := kquantBlocks(r, nb)
	clear(x[3*qkK : 4*qkK]) // a zero row among them
	types := []dtype.DType{dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q5_1, dtype.Q2_K, dtype.Q3_K, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K}
	for _, rowLen := range []int{4096, 256, 352} {
		xs := x[:len(x)/rowLen*rowLen]
		for wk, qw := range weightKinds(r, rowLen) {
			for _, typ := range types {
				if _, err := sizes(typ, rowLen); err != nil {
					continue // rows of 352 are not whole K-quant blocks
				}
				n, _ := sizes(typ, len(xs))
				got, want := make([]byte, n), make([]byte, n)
				if err := QuantizeWeighted(typ, got, xs, rowLen, qw); err != nil {
					t.Fatal(err)
				}
				weightedAsm = false
				err := QuantizeWeighted(typ, want, xs, rowLen, qw)
				weightedAsm = true
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					j := firstDiff(got, want)
					t.Errorf("%v rows of %d, %s weights: byte %d: fast %#02x, reference %#02x", typ, rowLen, wk, j, got[j], want[j])
				}
			}
		}
	}
}

// groupSigma2 is σ² for a group at o in the tests below: as the K-quants
// have it, or 0 (every other group).
func groupSigma2(x []float32, o, n int) float32 {
	if o/(8*n)%2 == 1 {
		return 0
	}
	return float32(2*sumSquares(x[o:o+8*n])) / float32(8*n)
}

// TestKX3GroupMatchesReference compares kx3Group with kx3GroupGeneric
// directly on sub-blocks of 16 and 32 (every output: levels, scales, mins
// and the weights' sums).
func TestKX3GroupMatchesReference(t *testing.T) {
	if !weightedAsm {
		t.Skip("no fast path for the weighted quantizers on this build")
	}
	r := rand.New(rand.NewPCG(3, 16))
	x := kquantBlocks(r, 200)
	clear(x[:qkK])
	for _, n := range []int{16, 32} {
		for wk, w := range weightKinds(r, len(x)) {
			for o := 0; o+8*n <= len(x); o += 8 * n {
				sigma2 := groupSigma2(x, o, n)
				for _, nmax := range []int32{3, 15, 31} {
					var La, Lb [256]uint8
					var sa, ma, wa, sb, mb, wb [8]float32
					kx3Group(x[o:], w[o:], sigma2, n, nmax, La[:], sa[:], ma[:], wa[:])
					kx3GroupGeneric(x[o:], w[o:], sigma2, n, nmax, Lb[:], sb[:], mb[:], wb[:])
					for j := range 8 {
						if math.Float32bits(sa[j]) != math.Float32bits(sb[j]) || math.Float32bits(ma[j]) != math.Float32bits(mb[j]) || math.Float32bits(wa[j]) != math.Float32bits(wb[j]) {
							t.Fatalf("n %d nmax %d %s weights at %d, sub-block %d: scale/min/sum %v/%v/%v, reference %v/%v/%v", n, nmax, wk, o, j, sa[j], ma[j], wa[j], sb[j], mb[j], wb[j])
						}
					}
					if La != Lb {
						t.Fatalf("n %d nmax %d %s weights at %d: levels %v, reference %v", n, nmax, wk, o, La[:8*n], Lb[:8*n])
					}
				}
			}
		}
	}
}

// TestQXWGroupMatchesReference compares qxwGroup with qxwGroupGeneric
// directly (makeQXQuantsW with importance weights or the weights as given:
// levels, scales, sums) for every nmax the weighted quantizers use, on
// sub-blocks of 16 and 32.
func TestQXWGroupMatchesReference(t *testing.T) {
	if !weightedAsm {
		t.Skip("no fast path for the weighted quantizers on this build")
	}
	r := rand.New(rand.NewPCG(4, 16))
	x := kquantBlocks(r, 200)
	clear(x[:qkK])
	for _, n := range []int{16, 32} {
		for wk, w := range weightKinds(r, len(x)) {
			for o := 0; o+8*n <= len(x); o += 8 * n {
				sigma2 := groupSigma2(x, o, n)
				for _, nmax := range []int32{4, 8, 16, 32} {
					for _, imp := range []bool{true, false} {
						var La, Lb [256]int8
						var sa, wa, sb, wb [8]float32
						qxwGroup(x[o:], w[o:], sigma2, imp, n, nmax, La[:], sa[:], wa[:])
						qxwGroupGeneric(x[o:], w[o:], sigma2, imp, n, nmax, Lb[:], sb[:], wb[:])
						for j := range 8 {
							if math.Float32bits(sa[j]) != math.Float32bits(sb[j]) || math.Float32bits(wa[j]) != math.Float32bits(wb[j]) {
								t.Fatalf("n %d nmax %d imp %v %s weights at %d, sub-block %d: scale/sum %v/%v, reference %v/%v", n, nmax, imp, wk, o, j, sa[j], wa[j], sb[j], wb[j])
							}
						}
						if La != Lb {
							t.Fatalf("n %d nmax %d imp %v %s weights at %d: levels %v, reference %v", n, nmax, imp, wk, o, La[:8*n], Lb[:8*n])
						}
					}
				}
			}
		}
	}
}

// TestLevelsAtMatchesReference compares levelsAt's assembly with its Go loop
// on kquantBlocks' values at scales from their own range, tiny ones (the
// quotient overflows) and exact halves (ties of nearest_int).
func TestLevelsAtMatchesReference(t *testing.T) {
	if !weightedAsm {
		t.Skip("no fast path for the weighted quantizers on this build")
	}
	r := rand.New(rand.NewPCG(5, 16))
	x := kquantBlocks(r, 64)
	for i := range 32 {
		x[i] = float32(i) / 2 // ties at d 1, dm 0
	}
	for o := 0; o+32 <= len(x); o += 32 {
		_, amax := signedMax(x[o : o+32])
		for _, c := range []struct{ d, dm float32 }{{1, 0}, {amax / 15, amax / 3}, {amax / 3, 0}, {1e-38, amax}, {float32(r.ExpFloat64()), float32(r.NormFloat64())}} {
			if c.d == 0 {
				continue
			}
			for _, n := range []int{16, 32} {
				for _, nmax := range []int32{3, 15, 31} {
					var a, b [32]uint8
					levelsAt(a[:n], x[o:o+n], c.d, c.dm, nmax)
					weightedAsm = false
					levelsAt(b[:n], x[o:o+n], c.d, c.dm, nmax)
					weightedAsm = true
					if a != b {
						t.Fatalf("at %d, d %v dm %v n %d nmax %d: %v, reference %v", o, c.d, c.dm, n, nmax, a[:n], b[:n])
					}
				}
			}
		}
	}
}
