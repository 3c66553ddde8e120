package kernels

import (
	"fmt"

	"github.com/apr-go/apr/lib/dtype"
)

// Dot returns the dot product of a and b over min(len(a), len(b)) elements.
//
// The summation order is fixed (eight interleaved partial sums, combined
// pairwise, then the tail) so that every implementation, fast or plain, gives
// the same bits on every platform.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	return dotF32(a[:n], b[:n])
}

func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s [8]float32
	n := len(a) &^ 7
	for i := 0; i < n; i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		for j := range 8 {
			s[j] += float32(aa[j] * bb[j])
		}
	}
	return reduce8(&s) + dotTail(a[n:], b[n:])
}

// reduce8 combines eight lane sums in the order a SIMD horizontal add uses.
func reduce8(s *[8]float32) float32 {
	t0, t1, t2, t3 := s[0]+s[4], s[1]+s[5], s[2]+s[6], s[3]+s[7]
	return (t0 + t2) + (t1 + t3)
}

func dotTail(a, b []float32) float32 {
	var t float32
	for i := range a {
		t += float32(a[i] * b[i])
	}
	return t
}

// axpy computes y[i] += alpha*x[i] with the product rounded before the add.
func axpyGeneric(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(alpha * x[i])
	}
}

// Tile sizes for MatMul: a kTile×nTile panel of b (64 KiB) stays in L2 while
// every row of a sweeps over it.
const (
	kTile = 64
	nTile = 256
)

// MatMul computes dst = a·b for row-major a (m×k), b (k×n) and dst (m×n).
// Each dst element is summed over p = 0..k-1 in order, with every product
// rounded to float32 before it is added, whatever the tiling, so results are
// reproducible. It returns an error, and leaves dst unchanged, when a slice
// is shorter than its shape needs or a dimension is negative.
func MatMul(dst, a, b []float32, m, k, n int) error {
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("%w: negative matrix dimension %d×%d×%d", ErrLength, m, k, n)
	}
	if len(a)/max(k, 1) < m && k > 0 || len(b)/max(n, 1) < k && n > 0 || len(dst)/max(n, 1) < m && n > 0 {
		return fmt.Errorf("%w: matmul %d×%d·%d×%d: a has %d, b %d, dst %d elements", ErrLength, m, k, k, n, len(a), len(b), len(dst))
	}
	clear(dst[:m*n])
	for j0 := 0; j0 < n; j0 += nTile {
		j1 := min(n, j0+nTile)
		for p0 := 0; p0 < k; p0 += kTile {
			p1 := min(k, p0+kTile)
			matMulTile(dst, a, b, m, k, n, p0, p1, j0, j1)
		}
	}
	return nil
}

// matMulTileGeneric adds a[i, p0:p1]·b[p0:p1, j0:j1] to dst[i, j0:j1] for every
// row i, the products of each element in order of p. A fast path may handle the
// leading columns itself (in registers, in the same order) and leave the rest here.
func matMulTileGeneric(dst, a, b []float32, m, k, n, p0, p1, j0, j1 int) {
	for i := range m {
		row := dst[i*n+j0 : i*n+j1]
		ai := a[i*k : i*k+k]
		for p := p0; p < p1; p++ {
			axpy(row, ai[p], b[p*n+j0:p*n+j1])
		}
	}
}

// DotQ returns the dot product of a row stored as type t with x, decoding the
// row one block at a time (no full-row buffer). Block partial sums are added
// in block order.
func DotQ(t dtype.DType, row []byte, x []float32) (float32, error) {
	c, ok := codec(t)
	if !ok || c.dequant == nil {
		return 0, fmt.Errorf("%w: cannot dequantize %v", ErrUnsupported, t)
	}
	nb, err := sizes(t, len(x))
	if err != nil {
		return 0, err
	}
	if len(row) != nb {
		return 0, fmt.Errorf("%w: %d %v values need %d bytes, row has %d", ErrLength, len(x), t, nb, len(row))
	}
	info := t.Info()
	// Decode several small blocks at once so the dot runs on 256 values.
	per := max(1, qkK/info.BlockElems)
	step, stepBytes := per*info.BlockElems, per*info.BlockBytes
	var buf [qkK]float32
	var sum float32
	for len(x) > 0 {
		e, b := min(step, len(x)), min(stepBytes, len(row))
		c.dequant(buf[:e], row[:b])
		sum += dotF32(buf[:e], x[:e])
		x, row = x[e:], row[b:]
	}
	return sum, nil
}
