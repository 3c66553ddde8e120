//go:build goexperiment.simd && amd64 && !purego && !noasm

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

func init() {
	if archsimd.X86.AVX2() {
		matMulTile = matMulTileAVX2
	}
}

// matMulTileAVX2 keeps blocks of dst (4 rows × 16 columns, then single rows of
// 16 or 8 columns) in AVX2 registers for the whole p range of the tile, instead
// of loading and storing a row once per p as an axpy loop does; four rows share
// each load of b and give the adder independent chains. Each element still gets
// its products in order of p, each rounded before the add (Mul then Add, never a
// fused multiply-add), so the result is the reference's bit for bit. Columns
// left over (fewer than 8) go to the reference after the vector state is
// cleared.
func matMulTileAVX2(dst, a, b []float32, m, k, n, p0, p1, j0, j1 int) {
	jv := j0 + (j1-j0)&^7
	if jv > j0 && p1 > p0 {
		matMulColumnsAVX2(dst, a, b, m, k, n, p0, p1, j0, jv)
	}
	if jv < j1 {
		matMulTileGeneric(dst, a, b, m, k, n, p0, p1, jv, j1)
	}
}

// matMulColumnsAVX2 does the columns j0..j1 (a multiple of 8 of them).
//
//go:noinline
func matMulColumnsAVX2(dst, a, b []float32, m, k, n, p0, p1, j0, j1 int) {
	// a's values are read as bits: a float32 load would be a legacy-SSE
	// instruction here (see simd_amd64.go), an integer load is not.
	abits := unsafe.Slice((*uint32)(unsafe.Pointer(&a[0])), m*k)
	i := 0
	for ; i+4 <= m && j0+16 <= j1; i += 4 {
		j := j0
		for ; j+16 <= j1; j += 16 {
			matMul4x16(dst[i*n+j:], abits[i*k:], b[j:], k, n, p0, p1)
		}
		for r := i; r < i+4 && j < j1; r++ {
			matMul1xN(dst[r*n:r*n+n], abits[r*k+p0:r*k+p1], b, n, p0, j, j1)
		}
	}
	for ; i < m; i++ {
		matMul1xN(dst[i*n:i*n+n], abits[i*k+p0:i*k+p1], b, n, p0, j0, j1)
	}
	archsimd.ClearAVXUpperBits()
}

// matMul4x16 adds rows 0..3 of a (stride k), columns p0..p1, times b's rows
// p0..p1 (stride n, first 16 columns) into a 4×16 block of dst (stride n).
func matMul4x16(dst []float32, a []uint32, b []float32, k, n, p0, p1 int) {
	load := func(r, h int) archsimd.Float32x8 { return archsimd.LoadFloat32x8Slice(dst[r*n+8*h : r*n+8*h+8]) }
	c00, c01, c10, c11 := load(0, 0), load(0, 1), load(1, 0), load(1, 1)
	c20, c21, c30, c31 := load(2, 0), load(2, 1), load(3, 0), load(3, 1)
	for p := p0; p < p1; p++ {
		b0 := archsimd.LoadFloat32x8Slice(b[p*n : p*n+8])
		b1 := archsimd.LoadFloat32x8Slice(b[p*n+8 : p*n+16])
		x0 := archsimd.BroadcastUint32x8(a[p]).AsFloat32x8()
		x1 := archsimd.BroadcastUint32x8(a[k+p]).AsFloat32x8()
		x2 := archsimd.BroadcastUint32x8(a[2*k+p]).AsFloat32x8()
		x3 := archsimd.BroadcastUint32x8(a[3*k+p]).AsFloat32x8()
		c00, c01 = c00.Add(x0.Mul(b0)), c01.Add(x0.Mul(b1))
		c10, c11 = c10.Add(x1.Mul(b0)), c11.Add(x1.Mul(b1))
		c20, c21 = c20.Add(x2.Mul(b0)), c21.Add(x2.Mul(b1))
		c30, c31 = c30.Add(x3.Mul(b0)), c31.Add(x3.Mul(b1))
	}
	store := func(c archsimd.Float32x8, r, h int) { c.StoreSlice(dst[r*n+8*h : r*n+8*h+8]) }
	store(c00, 0, 0)
	store(c01, 0, 1)
	store(c10, 1, 0)
	store(c11, 1, 1)
	store(c20, 2, 0)
	store(c21, 2, 1)
	store(c30, 3, 0)
	store(c31, 3, 1)
}

// matMul1xN adds one row of a (its values p0..p1) times b's rows p0..p1 into
// the columns j..j1 of one dst row, 8 columns at a time.
func matMul1xN(row []float32, a []uint32, b []float32, n, p0, j, j1 int) {
	for ; j < j1; j += 8 {
		acc := archsimd.LoadFloat32x8Slice(row[j : j+8])
		for q, x := range a {
			p := p0 + q
			acc = acc.Add(archsimd.BroadcastUint32x8(x).AsFloat32x8().Mul(archsimd.LoadFloat32x8Slice(b[p*n+j : p*n+j+8])))
		}
		acc.StoreSlice(row[j : j+8])
	}
}
