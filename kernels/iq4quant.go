package kernels

import "encoding/binary"

// Quantizers for the non-linear 4-bit types, byte for byte as ggml's
// quantize_iq4_nl and quantize_iq4_xs (ggml-quants.c, quantize_row_iq4_nl_impl),
// which ggml_quantize_chunk calls with or without an importance matrix:
//
//	IQ4_NL  32 values in 18 bytes: an f16 scale d, then 16 bytes of 4-bit
//	        indices into iq4nlValues (byte j: value j low, value j+16 high).
//	IQ4_XS  256 values in 136 bytes: an f16 d, 8 six-bit sub-block scales
//	        (stored as l+32; low nibbles in 4 bytes, high 2 bits in a u16),
//	        then the 8 sub-blocks' indices as in IQ4_NL.
//
// Each 32-value sub-block is fitted as ggml does: levels at -max/-127, then 15
// trial scales (max/(t-127), t = -7..7), keeping the best weighted least-squares
// fit; the weights are x² without an importance matrix, else qw·sqrt(σ² + x²)
// with σ² twice the mean square of the block (32 or 256 values). IQ4_XS then
// quantizes the sub-block scales against d = -max/32 and picks every level again
// at its stored scale; IQ4_NL picks the levels again at its fitted scale.
//
// NaN and infinities give some bytes, never a panic (apr-quant refuses such input
// before it gets here); the arithmetic is float32 in ggml's order, as elsewhere.

const (
	iq4nlBytes = 18
	iq4xsBytes = 136
	iq4Trials  = 7 // ggml's ntry for quantize_iq4_nl and quantize_iq4_xs
)

// iq4IndexRef is ggml's best_index_int8 over iq4nlValues: the index of the level
// nearest x, the upper one on a tie (and 15 for NaN, as ggml's comparisons give).
// iq4Index is the same, faster.
func iq4IndexRef(x float32) uint8 {
	v := &iq4nlValues
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Cells holds iq4IndexRef for each half-unit cell [c/2 - 128, c/2 - 127.5). The
// midpoints between consecutive levels are multiples of 0.5, so a cell holds one
// index: near a midpoint ggml's two float32 differences are exact (x and the
// levels are multiples of x's ulp there), so its test is x < midpoint, and a
// value on a midpoint goes up, as the cell's first value does. TestIQ4Index
// checks every float32 from -128 to 128 against iq4IndexRef.
var iq4Cells = func() (t [512]uint8) {
	for c := range t {
		t[c] = iq4IndexRef(float32(c)/2 - 128)
	}
	return t
}()

// iq4Levels are iq4nlValues as float32.
var iq4Levels = func() (t [16]float32) {
	for i, v := range iq4nlValues {
		t[i] = float32(v)
	}
	return t
}()

// iq4Index is iq4IndexRef through iq4Cells.
func iq4Index(x float32) uint8 {
	if x <= -127 {
		return 0
	}
	if !(x < 113) { // 113 and up, and NaN
		return 15
	}
	// 2x + 256 is exact in float64 and positive here, so truncation is the floor.
	return iq4Cells[int32(float64(x)*2+256)&511]
}

// iq4Sigma2 is ggml's σ² for the block x: twice its mean square.
func iq4Sigma2(x []float32) float32 {
	return float32(sumSquares(x) * (2 / float32(len(x))))
}

// fitWeights fills w with the fit's weights for the sub-block x of IQ4_NL, IQ4_XS,
// IQ1_M (and, through iqWeights, IQ3 and IQ2_XXS/IQ2_XS): x² without importance
// weights qw, else qw·sqrt(σ² + x²).
func fitWeights(w, x, qw []float32, sigma2 float32) {
	if qw == nil {
		for j, v := range x {
			w[j] = float32(v * v)
		}
		return
	}
	for j, v := range x {
		w[j] = float32(qw[j] * sqrt32(sigma2+float32(v*v)))
	}
}

// weightsAt is qw[off:off+n], or nil without importance weights.
func weightsAt(qw []float32, off, n int) []float32 {
	if qw == nil {
		return nil
	}
	return qw[off : off+n]
}

// iq4Fit is the sub-block fit of quantize_row_iq4_nl_impl: the scale of the
// best of ggml's trial fits of x with weights w (0 for a block whose max |x| is
// below groupMaxEps). The 16 fits (ggml's first at -maxv/127, then its 15 trial
// scales) do not depend on each other, only the choice among them does: they
// are summed by iq4Trials16 (each sum in ggml's order), then compared in ggml's.
func iq4Fit(x, w []float32) float32 {
	maxv, amax := signedMax(x)
	if amax < groupMaxEps {
		return 0
	}
	var ids, sumqx, sumq2 [16]float32
	ids[0] = 1 / (-maxv / float32(iq4nlValues[0]))
	for i := range 2*iq4Trials + 1 {
		ids[i+1] = float32(int32(i)-iq4Trials+int32(iq4nlValues[0])) / maxv
	}
	iq4Trials16(x, w, &ids, &sumqx, &sumq2)
	var d float32
	if sumq2[0] > 0 {
		d = sumqx[0] / sumq2[0]
	}
	best := float32(d * sumqx[0])
	for i := 1; i < len(ids); i++ {
		if sumq2[i] > 0 && float32(sumqx[i]*sumqx[i]) > float32(best*sumq2[i]) {
			d = sumqx[i] / sumq2[i]
			best = float32(d * sumqx[i])
		}
	}
	return d
}

// iq4Trials16 sets sumqx[k] and sumq2[k] to ggml's Σ w·q·x and Σ w·q² over the
// 32 values x for the levels q of x at the inverse scales ids[k]. A vector
// kernel replaces it where the CPU has one (simd_amd64.go).
var iq4Trials16 = iq4Trials16Generic

func iq4Trials16Generic(x, w []float32, ids, sumqx, sumq2 *[16]float32) {
	for k, id := range ids {
		var sx, s2 float32
		for j, v := range x[:qk] {
			q := iq4Levels[iq4Index(float32(id*v))]
			wq := float32(w[j] * q)
			sx += float32(wq * v)
			s2 += float32(wq * q)
		}
		sumqx[k], sumq2[k] = sx, s2
	}
}

// iq4Pack writes the levels of 32 values x at inverse scale id into 16 bytes.
func iq4Pack(q []byte, x []float32, id float32) {
	for j := range 16 {
		q[j] = iq4Index(float32(id*x[j])) | iq4Index(float32(id*x[j+16]))<<4
	}
}

// quantIQ4_NL is ggml_quantize_chunk for IQ4_NL without an importance matrix.
func quantIQ4_NL(dst []byte, src []float32) { quantRowIQ4_NLW(dst, src, nil) }

// quantIQ4_XS is ggml_quantize_chunk for IQ4_XS without an importance matrix.
func quantIQ4_XS(dst []byte, src []float32) { quantRowIQ4_XSW(dst, src, nil) }

// quantRowIQ4_NLW quantizes whole IQ4_NL blocks of x with importance weights qw
// (one per value of x; nil: none).
func quantRowIQ4_NLW(y []byte, x, qw []float32) {
	var w [qk]float32
	for ib := 0; ib < len(x)/qk; ib++ {
		xb, b := x[qk*ib:qk*ib+qk], y[iq4nlBytes*ib:iq4nlBytes*ib+iq4nlBytes]
		fitWeights(w[:], xb, weightsAt(qw, qk*ib, qk), iq4Sigma2(xb))
		d := iq4Fit(xb, w[:])
		putF16(b, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		iq4Pack(b[2:], xb, id)
	}
}

// quantRowIQ4_XSW quantizes whole IQ4_XS blocks of x with importance weights qw
// (one per value of x; nil: none).
func quantRowIQ4_XSW(y []byte, x, qw []float32) {
	var w [qk]float32
	var scales [8]float32
	for ibl := 0; ibl < len(x)/qkK; ibl++ {
		xbl, b := x[qkK*ibl:qkK*ibl+qkK], y[iq4xsBytes*ibl:iq4xsBytes*ibl+iq4xsBytes]
		sigma2 := iq4Sigma2(xbl)
		var maxScale, amaxScale float32
		for ib := range 8 {
			xb := xbl[qk*ib : qk*ib+qk]
			fitWeights(w[:], xb, weightsAt(qw, qkK*ibl+qk*ib, qk), sigma2)
			scales[ib] = iq4Fit(xb, w[:])
			if a := abs32(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		putF16(b, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		sl := b[4:8]
		clear(sl)
		for ib := range 8 {
			l := max(-32, min(31, nearestInt(float32(id*scales[ib]))))
			dl := float32(d * float32(l))
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			iq4Pack(b[8+16*ib:], xbl[qk*ib:qk*ib+qk], idl)
			l += 32
			sl[ib/2] |= uint8(l&0xf) << (4 * (ib % 2))
			sh |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(b[2:], sh)
	}
}
