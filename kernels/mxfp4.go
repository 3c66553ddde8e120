package kernels

import (
	"math"
	"sync"
)

// A faster MXFP4 quantizer giving quantMXFP4Generic's bytes.
//
// A block's half scale d is a power of two, so ggml's errors |l·d − x| are d
// times |l − x/d| exactly (for d and the errors in float32's normal range), and
// y = x·(1/d) is exact. Its nearest level, lowest index on a tie, is then fixed by
// which of the midpoints between levels y lies past. The doubled E2M1 levels are
// 0, 1, 2, 3, 4, 6, 8, 12, so the midpoints 0.5, 1.5, 2.5, 3.5, 5, 7 and 10 all have
// float32 bits ending in 20 zeros: the top 12 bits of (bits of |y|) − 1 name a cell
// holding no midpoint inside and a midpoint at most at its upper end, where the
// lower level wins, as ggml's tie does. A table of those cells for either sign
// gives each code with one lookup. (Near a midpoint the two errors are exact,
// their operands being within a factor of two, so ggml's rounded errors never
// tie where the exact ones differ; TestMXFP4FastMatchesGeneric checks every float
// around every midpoint.)

// fp4Cells[sign<<12 | cell] is the code of the values of a cell; cell 0xFFF is ±0.
var fp4Cells = sync.OnceValue(func() *[8192]uint8 {
	var t [8192]uint8
	for cell := range 4096 {
		bits := uint32(cell)<<20 + 1             // the cell's smallest magnitude
		if cell == 0xFFF || bits >= 0x41800000 { // ±0, and 16 or more: NaN (code 0, as ggml's scan)
			continue
		}
		v := math.Float32frombits(bits)
		t[cell] = nearestFP4(v, 1)
		t[4096|cell] = nearestFP4(-v, 1)
	}
	return &t
})

// The fast path takes block maxima in [2^-96, 2^120): d from 2^-101 to 2^118,
// far from float32's subnormals, and 12·d finite (ggml's levels overflow to
// infinity above that, which changes its choice).
const mxfp4MinFast, mxfp4MaxFast = 0x0f800000, 0x7b800000 // float32 bits

func quantMXFP4(dst []byte, src []float32) { quantMaxMXFP4(dst, src) }

// quantMaxMXFP4 is quantMXFP4 that also returns the largest |x| of src as
// float32 bits (NaN above infinity above any finite value), for
// QuantizeChecked's test in the same pass.
func quantMaxMXFP4(dst []byte, src []float32) uint32 {
	var all uint32
	if mxfp4Codes != nil {
		var amaxes [mxfp4Run]uint32
		for len(src) >= qk {
			n := min(mxfp4Run, len(src)/qk)
			mxfp4Codes(dst[:17*n], src[:qk*n], &amaxes)
			for b, amax := range amaxes[:n] {
				all = max(all, amax)
				out, x := dst[17*b:17*b+17], src[qk*b:qk*b+qk]
				switch {
				case amax < mxfp4MinFast || amax >= mxfp4MaxFast:
					quantMXFP4Generic(out, x)
				case amax&0x7fffff >= 0x7f0000: // log2f may round up: the scale may be the next one
					mxfp4Block(out, x, amax)
				default:
					out[0] = uint8(amax>>23 - 2)
				}
			}
			src, dst = src[qk*n:], dst[17*n:]
		}
		return all
	}
	for ; len(src) >= qk; src, dst = src[qk:], dst[17:] {
		x := src[:qk:qk]
		// A NaN (above every magnitude) sends the block to the generic path,
		// which skips NaN as ggml's max does.
		amax := absMaxBits(x)
		all = max(all, amax)
		if amax < mxfp4MinFast || amax >= mxfp4MaxFast {
			quantMXFP4Generic(dst[:17], x)
			continue
		}
		mxfp4Block(dst[:17], x, amax)
	}
	return all
}

// mxfp4Run is how many blocks mxfp4Codes takes at a time.
const mxfp4Run = 64

// mxfp4Codes, where the build and CPU have it (mxfp4_simd_amd64.go), writes the
// 16 code bytes of each block of src (up to mxfp4Run) into dst (17 bytes a
// block, the exponent byte left to the caller) at the scale of the block
// maximum's exponent, and the maximum's |x| bits into amaxes; the caller redoes
// the blocks whose maximum asks for another scale or the reference.
var mxfp4Codes func(dst []byte, src []float32, amaxes *[mxfp4Run]uint32)

// mxfp4Block quantizes one block of 32 values with maximum |x| bits amax, in
// the fast path's range.
func mxfp4Block(out []byte, x []float32, amax uint32) {
	cells := fp4Cells()
	e := mxfp4ExponentFast(amax)
	inv := 1 / e8m0Half(e)
	out, x = out[:17:17], x[:qk:qk]
	out[0] = e
	for j := range qk / 2 {
		lo := math.Float32bits(x[j] * inv)
		hi := math.Float32bits(x[j+qk/2] * inv)
		out[1+j] = cells[lo>>31<<12|(lo&0x7fffffff-1)>>20&0xfff] | cells[hi>>31<<12|(hi&0x7fffffff-1)>>20&0xfff]<<4
	}
}

// mxfp4ExponentFast is mxfp4Exponent for a normal amax (its bits b):
// floor(log2 amax) is its exponent unless amax is so close below a power of
// two that log2f rounds up to it; those few take the logarithm.
func mxfp4ExponentFast(b uint32) uint8 {
	if b&0x7fffff >= 0x7f0000 {
		return mxfp4Exponent(math.Float32frombits(b))
	}
	return uint8(b>>23 - 2)
}
