package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/apr-go/apr/lib/dtype"
)

// Importance-weighted quantization: what ggml_quantize_chunk does when it is given
// an importance matrix (llama-quantize --imatrix). The weights are one per column of
// a row (llama-imatrix's mean squared activations of the column's input); each
// quantizer weights its fit by them, scaled by sqrt(σ² + x²) as ggml's quantize_*_impl
// functions do (σ² over a 256-value super-block for Q2_K..Q5_K, over the whole row for
// Q4_0..Q5_1; Q6_K uses the weights as they are). Q8_0, F16, BF16 and F32 take no
// weights in ggml, so they quantize as without them.
//
// As everywhere in this package, the arithmetic is float32 in ggml's order, every
// product rounded before it is added.

// CanQuantizeWeighted reports whether QuantizeWeighted supports t (with weights, or
// as ggml does for the types that ignore them).
func CanQuantizeWeighted(t dtype.DType) bool {
	_, ok := weightedRows[t]
	return ok || IgnoresWeights(t)
}

// IgnoresWeights reports the types whose ggml quantizer takes no importance weights
// (Q8_0, F16, BF16, F32; MXFP4 and NVFP4, whose quantize_* leave them unused):
// QuantizeWeighted is Quantize for them.
func IgnoresWeights(t dtype.DType) bool {
	switch t {
	case dtype.Q8_0, dtype.F16, dtype.BF16, dtype.F32, dtype.MXFP4, dtype.NVFP4:
		return true
	}
	return false
}

// weightedRows quantize one row x (whole blocks) into y with weights qw (len(x)).
var weightedRows = map[dtype.DType]func(y []byte, x, qw []float32){
	dtype.Q4_0: quantRowQ4_0W,
	dtype.Q4_1: quantRowQ4_1W,
	dtype.Q5_0: quantRowQ5_0W,
	dtype.Q5_1: quantRowQ5_1W,
	dtype.Q2_K: quantRowQ2_KW,
	dtype.Q3_K: quantRowQ3_KW,
	dtype.Q4_K: quantRowQ4_KW,
	dtype.Q5_K: quantRowQ5_KW,
	dtype.Q6_K: quantRowQ6_KW,

	dtype.IQ4_NL:  quantRowIQ4_NLW,
	dtype.IQ4_XS:  quantRowIQ4_XSW,
	dtype.IQ3_XXS: quantRowIQ3_XXSW,
	dtype.IQ3_S:   quantRowIQ3_SW,
	// The grid types (iq2quant.go, iq1quant.go).
	dtype.IQ2_XXS: quantRowIQ2_XXSW,
	dtype.IQ2_XS:  quantRowIQ2_XSW,
	dtype.IQ2_S:   quantRowIQ2_SW,
	dtype.IQ1_S:   quantRowIQ1_SW,
	dtype.IQ1_M:   quantRowIQ1_MW,
}

// QuantizeWeighted encodes the rows of src (each rowLen values, whole blocks of t)
// as type t into dst with importance weights qw, one per column (len(qw) ==
// rowLen), byte for byte as ggml_quantize_chunk with that imatrix. A nil qw is
// Quantize.
func QuantizeWeighted(t dtype.DType, dst []byte, src []float32, rowLen int, qw []float32) error {
	if qw == nil || IgnoresWeights(t) {
		return Quantize(t, dst, src)
	}
	row, ok := weightedRows[t]
	if !ok {
		return fmt.Errorf("%w: no importance-weighted quantizer for %v", ErrUnsupported, t)
	}
	if rowLen <= 0 || len(qw) != rowLen || len(src)%rowLen != 0 {
		return fmt.Errorf("%w: %d weights for rows of %d values, %d values", ErrLength, len(qw), rowLen, len(src))
	}
	rowBytes, err := sizes(t, rowLen)
	if err != nil {
		return err
	}
	if len(dst) != len(src)/rowLen*rowBytes {
		return fmt.Errorf("%w: %v needs %d bytes for %d values, dst has %d", ErrLength, t, len(src)/rowLen*rowBytes, len(src), len(dst))
	}
	if err := checkFinite(t, src); err != nil {
		return err
	}
	for ; len(src) > 0; src, dst = src[rowLen:], dst[rowBytes:] {
		row(dst[:rowBytes], src[:rowLen], qw)
	}
	return nil
}

// importance fills w with ggml's weights for the values x of a sub-block:
// qw[i]·sqrt(σ² + x[i]²), and returns their sum.
func importance(w, x, qw []float32, sigma2 float32) float32 {
	var sum float32
	for i, v := range x {
		w[i] = float32(qw[i] * sqrt32(sigma2+float32(v*v)))
	}
	for _, v := range w[:len(x)] {
		sum += v
	}
	return sum
}

// sumSquares is Σ x², added in order.
func sumSquares(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s
}

// makeQXQuantsW is ggml's make_qx_quants with importance weights qw (rmse_type 1): a
// symmetric fit at nmax/max and 18 scales around it, keeping the best weighted one.
// L gets 0..2·nmax-1.
func makeQXQuantsW(nmax int32, x []float32, L []int8, qw []float32) float32 {
	maxv, amax := signedMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := float32(-nmax) / maxv
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
		L[i] = int8(l + nmax)
		w, fl := qw[i], float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / maxv
		sumlx, suml2 = 0, 0
		for i, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
			w, fl := qw[i], float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				L[i] = int8(nmax + max(-nmax, min(nmax-1, nearestInt(float32(iscale*v)))))
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQPQuants is ggml's make_qp_quants: a fit of non-negative x (sub-block scales
// or mins) to levels 0..nmax with weights qw, then single levels moved while the fit
// improves. L is uint8 as in ggml, which matters only for the (unexpected) negative x.
// It follows today's ggml (ggml-quants.c:1076-1146): all x below GROUP_MAX_EPS gives
// 0, and so does a weighted sum of squares that is not positive (b4747 divided by it).
func makeQPQuants(nmax int32, x []float32, L []uint8, qw []float32) float32 {
	var maxv float32
	for _, v := range x {
		if !(maxv > v) {
			maxv = v
		}
	}
	if maxv < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := float32(nmax) / maxv
	for i, v := range x {
		L[i] = uint8(nearestInt(float32(iscale * v)))
	}
	scale := 1 / iscale
	var bestMSE float32
	for i, v := range x {
		diff := v - float32(scale*float32(L[i]))
		bestMSE += float32(float32(qw[i]*diff) * diff)
	}
	for is := int32(-4); is <= 4; is++ {
		if is == 0 {
			continue
		}
		iscaleIs := (float32(0.1*float32(is)) + float32(nmax)) / maxv
		scaleIs := 1 / iscaleIs
		var mse float32
		for i, v := range x {
			l := min(nmax, nearestInt(float32(iscaleIs*v)))
			diff := v - float32(scaleIs*float32(l))
			mse += float32(float32(qw[i]*diff) * diff)
		}
		if mse < bestMSE {
			bestMSE, iscale = mse, iscaleIs
		}
	}
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(nmax, nearestInt(float32(iscale*v)))
		L[i] = uint8(l)
		w, fl := qw[i], float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w, li := qw[i], float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			sl2 := suml2 - float32(float32(w*li)*li)
			if slx > 0 && sl2 > 0 {
				nl := min(nmax, nearestInt(float32(v*sl2)/slx))
				if nl != int32(L[i]) {
					fn := float32(nl)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = uint8(nl)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	if !(suml2 > 0) {
		// The weights vanish wherever a level is not 0 (a super-block whose
		// importances are all zero), or negative importances (which llama-imatrix
		// never writes) outweigh the rest: b4747 divided by the sum; today's ggml
		// returns 0 (ggml-quants.c:1146), so the block's scales are 0.
		return 0
	}
	return sumlx / suml2
}

// makeQKX3Quants is ggml's make_qkx3_quants with weights: the same search as
// make_qkx2_quants (its max <= min test is max == min for finite values), here with
// rdelta 0.05 and 36 steps from rmin -0.9, squared error.
func makeQKX3Quants(nmax int32, x, weights []float32, L, Laux []uint8) (scale, theMin float32) {
	return makeQKX2Quants(nmax, x, weights, L, Laux, -0.9, 0.05, 36, false)
}

// kx3Group is kx3GroupGeneric, or its assembly where weightedAsm says so.
func kx3Group(x, qw []float32, sigma2 float32, n int, nmax int32, L []uint8, scales, mins, sw []float32) {
	if weightedAsm {
		kx3GroupAsm(x, qw, sigma2, n, nmax, L, scales, mins, sw)
		return
	}
	kx3GroupGeneric(x, qw, sigma2, n, nmax, L, scales, mins, sw)
}

// qxwGroup is qxwGroupGeneric, or its assembly where weightedAsm says so.
func qxwGroup(x, qw []float32, sigma2 float32, imp bool, n int, nmax int32, L []int8, scales, sw []float32) {
	if weightedAsm {
		qxwGroupAsm(x, qw, sigma2, imp, n, nmax, L, scales, sw)
		return
	}
	qxwGroupGeneric(x, qw, sigma2, imp, n, nmax, L, scales, sw)
}

// levelsAt sets L to the levels of x at the stored scale d and min dm,
// clamp(nearest_int((x + dm)/d), 0, nmax), as ggml's K-quants do last; by
// levelsAsm (len(x) a multiple of 8) where weightedAsm says so.
func levelsAt(L []uint8, x []float32, d, dm float32, nmax int32) {
	if weightedAsm {
		levelsAsm(L, x, d, dm, nmax)
		return
	}
	for i, v := range x {
		l := nearestInt((v + dm) / d)
		L[i] = uint8(max(0, min(nmax, l)))
	}
}

// kx3GroupGeneric weights and fits 8 sub-blocks of n values (n 16 or 32):
// sub-block j is x[n·j:n·j+n] with importance qw[n·j:] (weights by
// importance with sigma2, their sum to sw[j]), fitted by makeQKX3Quants:
// its levels go to L[n·j:], its scale and -min to scales[j] and mins[j].
// kx3GroupAsm (amd64, arm64) has the same results.
func kx3GroupGeneric(x, qw []float32, sigma2 float32, n int, nmax int32, L []uint8, scales, mins, sw []float32) {
	var w [32]float32
	var Laux [32]uint8
	for j := range 8 {
		o := n * j
		sw[j] = importance(w[:n], x[o:o+n], qw[o:o+n], sigma2)
		scales[j], mins[j] = makeQKX3Quants(nmax, x[o:o+n], w[:n], L[o:o+n], Laux[:n])
	}
}

// qxwGroupGeneric is kx3GroupGeneric for makeQXQuantsW: with imp the
// weights are importance's (sums to sw unless it is nil), else qw itself
// (Q6_K). qxwGroupAsm (amd64, arm64) has the same results.
func qxwGroupGeneric(x, qw []float32, sigma2 float32, imp bool, n int, nmax int32, L []int8, scales, sw []float32) {
	var w [32]float32
	for j := range 8 {
		o := n * j
		wj := qw[o : o+n]
		if imp {
			s := importance(w[:n], x[o:o+n], wj, sigma2)
			if sw != nil {
				sw[j] = s
			}
			wj = w[:n]
		}
		scales[j] = makeQXQuantsW(nmax, x[o:o+n], L[o:o+n], wj)
	}
}

// qxBlocks fits the blocks of 32 values of x (Q4_0, Q5_0; at most 8) into
// L and scales: all 8 at once by qxwGroup.
func qxBlocks(x, qw []float32, sigma2 float32, nmax int32, L *[qkK]int8, scales *[8]float32) {
	nb := len(x) / qk
	if nb == 8 {
		qxwGroup(x, qw, sigma2, true, qk, nmax, L[:], scales[:], nil)
		return
	}
	var w [qk]float32
	for ib := range nb {
		o := qk * ib
		importance(w[:], x[o:o+qk], qw[o:], sigma2)
		scales[ib] = makeQXQuantsW(nmax, x[o:o+qk], L[o:o+qk], w[:])
	}
}

// kx3Blocks fits the blocks of 32 values of x (Q4_1, Q5_1; at most 8)
// into L, scales and mins: all 8 at once by kx3Group.
func kx3Blocks(x, qw []float32, sigma2 float32, nmax int32, L *[qkK]uint8, scales, mins *[8]float32) {
	nb := len(x) / qk
	if nb == 8 {
		var sw [8]float32
		kx3Group(x, qw, sigma2, qk, nmax, L[:], scales[:], mins[:], sw[:])
		return
	}
	var w [qk]float32
	var Laux [qk]uint8
	for ib := range nb {
		o := qk * ib
		importance(w[:], x[o:o+qk], qw[o:], sigma2)
		scales[ib], mins[ib] = makeQKX3Quants(nmax, x[o:o+qk], w[:], L[o:o+qk], Laux[:])
	}
}

// ---- legacy types: σ² is the mean square of the whole row

func rowSigma2(x []float32) float32 { return sumSquares(x) / float32(len(x)) }

func quantRowQ4_0W(y []byte, x, qw []float32) {
	sigma2 := rowSigma2(x)
	var L [qkK]int8
	var scales [8]float32
	for g := 0; g < len(x); g += qkK {
		e := min(len(x), g+qkK)
		qxBlocks(x[g:e], qw[g:e], sigma2, 8, &L, &scales)
		for ib := range (e - g) / qk {
			b, Lb := y[18*(g/qk+ib):][:18], L[qk*ib:qk*ib+qk]
			putF16(b, scales[ib])
			for j := range 16 {
				b[2+j] = uint8(Lb[j]) | uint8(Lb[j+16])<<4
			}
		}
	}
}

func quantRowQ5_0W(y []byte, x, qw []float32) {
	sigma2 := rowSigma2(x)
	var L [qkK]int8
	var scales [8]float32
	for g := 0; g < len(x); g += qkK {
		e := min(len(x), g+qkK)
		qxBlocks(x[g:e], qw[g:e], sigma2, 16, &L, &scales)
		for ib := range (e - g) / qk {
			b, Lb := y[22*(g/qk+ib):][:22], L[qk*ib:qk*ib+qk]
			putF16(b, scales[ib])
			var qh uint32
			for j := range 16 {
				x0, x1 := uint8(Lb[j]), uint8(Lb[j+16])
				b[6+j] = x0&0xf | (x1&0xf)<<4
				qh |= uint32(x0&0x10)>>4<<j | uint32(x1&0x10)>>4<<(j+16)
			}
			binary.LittleEndian.PutUint32(b[2:], qh)
		}
	}
}

func quantRowQ4_1W(y []byte, x, qw []float32) {
	sigma2 := rowSigma2(x)
	var L [qkK]uint8
	var scales, mins [8]float32
	for g := 0; g < len(x); g += qkK {
		e := min(len(x), g+qkK)
		kx3Blocks(x[g:e], qw[g:e], sigma2, 15, &L, &scales, &mins)
		for ib := range (e - g) / qk {
			b, Lb := y[20*(g/qk+ib):][:20], L[qk*ib:qk*ib+qk]
			putF16(b, scales[ib])
			putF16(b[2:], -mins[ib])
			for j := range 16 {
				b[4+j] = Lb[j] | Lb[j+16]<<4
			}
		}
	}
}

func quantRowQ5_1W(y []byte, x, qw []float32) {
	sigma2 := rowSigma2(x)
	var L [qkK]uint8
	var scales, mins [8]float32
	for g := 0; g < len(x); g += qkK {
		e := min(len(x), g+qkK)
		kx3Blocks(x[g:e], qw[g:e], sigma2, 31, &L, &scales, &mins)
		for ib := range (e - g) / qk {
			b, Lb := y[24*(g/qk+ib):][:24], L[qk*ib:qk*ib+qk]
			putF16(b, scales[ib])
			putF16(b[2:], -mins[ib])
			var qh uint32
			for j := range 16 {
				x0, x1 := Lb[j], Lb[j+16]
				b[8+j] = x0&0xf | (x1&0xf)<<4
				qh |= uint32(x0&0x10)>>4<<j | uint32(x1&0x10)>>4<<(j+16)
			}
			binary.LittleEndian.PutUint32(b[4:], qh)
		}
	}
}

// ---- K-quants: σ² is the mean square of the 256-value super-block (twice it for
// Q3_K, Q4_K, Q5_K)

func quantRowQ2_KW(y []byte, x, qw []float32) {
	var L [qkK]uint8
	var scales, mins, sw [16]float32
	var Ls, Lm [16]uint8
	for i := 0; i < len(x)/qkK; i++ {
		xb, b, q := x[qkK*i:qkK*i+qkK], y[84*i:84*i+84], qw[qkK*i:]
		sigma2 := sumSquares(xb) / qkK
		kx3Group(xb[:128], q[:128], sigma2, 16, 3, L[:128], scales[:8], mins[:8], sw[:8])
		kx3Group(xb[128:], q[128:256], sigma2, 16, 3, L[128:], scales[8:], mins[8:], sw[8:])
		dm := makeQPQuants(15, scales[:], Ls[:], sw[:])
		mm := makeQPQuants(15, mins[:], Lm[:], sw[:])
		putF16(b[80:], dm)
		putF16(b[82:], mm)
		dm, mm = getF16(b[80:]), getF16(b[82:])
		sc := b[0:16]
		for j := range 16 {
			sc[j] = Ls[j] | Lm[j]<<4
		}
		for j := range 16 {
			d := float32(dm * float32(sc[j]&0xf))
			if d == 0 {
				continue
			}
			m := float32(mm * float32(sc[j]>>4))
			levelsAt(L[16*j:16*j+16], xb[16*j:16*j+16], d, m, 3)
		}
		packCrumbs(b[16:80], L[:])
	}
}

func quantRowQ3_KW(y []byte, x, qw []float32) {
	dj, lt := new([16]float32), new([qkK]int32)
	var L [qkK]int8
	var scales, sw [16]float32
	var Ls [16]int8
	for i := 0; i < len(x)/qkK; i++ {
		xb, b, q := x[qkK*i:qkK*i+qkK], y[110*i:110*i+110], qw[qkK*i:]
		sigma2 := float32(2*sumSquares(xb)) / qkK
		qxwGroup(xb[:128], q[:128], sigma2, true, 16, 4, L[:128], scales[:8], sw[:8])
		qxwGroup(xb[128:], q[128:256], sigma2, true, 16, 4, L[128:], scales[8:], sw[8:])
		sc := b[96:108]
		clear(sc)
		dBlock := makeQXQuantsW(32, scales[:], Ls[:], sw[:])
		for j := range 16 {
			l := uint8(Ls[j])
			if j < 8 {
				sc[j] = l & 0xf
			} else {
				sc[j-8] |= (l & 0xf) << 4
			}
			l >>= 4
			sc[j%4+8] |= l << (2 * (j / 4))
		}
		putF16(b[108:], dBlock)
		dAll := getF16(b[108:])
		for j := range 16 {
			dj[j] = float32(dAll * float32(q3Scale(sc, j)))
		}
		requantize16(xb, dj, lt, L[:], 4, nil)
		packQ3K(b, &L)
	}
}

// quantKX3 is the shared first half of Q4_K and Q5_K with weights: per 32-value
// sub-block fits, scales and mins fitted by make_qp_quants and packed in 6 bits
// (clamped to 63 for Q5_K only, as ggml does), d and dmin, then the final levels
// against the stored scales.
func quantKX3(b []byte, x, qw []float32, L []uint8, nmax int32, clamp63 bool) {
	var scales, mins, sw [8]float32
	var Ls, Lm [8]uint8
	sigma2 := float32(2*sumSquares(x)) / qkK
	kx3Group(x, qw[:qkK], sigma2, 32, nmax, L, scales[:], mins[:], sw[:])
	dBlock := makeQPQuants(63, scales[:], Ls[:], sw[:])
	mBlock := makeQPQuants(63, mins[:], Lm[:], sw[:])
	sc := b[4:16]
	for j := range 8 {
		ls, lm := Ls[j], Lm[j]
		if clamp63 {
			ls, lm = min(63, ls), min(63, lm)
		}
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(b[0:], dBlock)
	putF16(b[2:], mBlock)
	dAll, mAll := getF16(b[0:]), getF16(b[2:])
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		d := float32(dAll * float32(s))
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(m))
		levelsAt(L[32*j:32*j+32], x[32*j:32*j+32], d, dm, nmax)
	}
}

func quantRowQ4_KW(y []byte, x, qw []float32) {
	var L [qkK]uint8
	for i := 0; i < len(x)/qkK; i++ {
		b := y[144*i : 144*i+144]
		quantKX3(b, x[qkK*i:qkK*i+qkK], qw[qkK*i:], L[:], 15, false)
		q := b[16:144]
		for j := 0; j < qkK; j += 64 {
			for l := range 32 {
				q[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

func quantRowQ5_KW(y []byte, x, qw []float32) {
	var L [qkK]uint8
	for i := 0; i < len(x)/qkK; i++ {
		b := y[176*i : 176*i+176]
		quantKX3(b, x[qkK*i:qkK*i+qkK], qw[qkK*i:], L[:], 31, true)
		packQ5K(b, &L)
	}
}

// quantRowQ6_KW: ggml's Q6_K fits each sub-block of 16 with make_qx_quants weighted
// by the importance weights themselves (no σ² term); the rest is the reference's.
func quantRowQ6_KW(y []byte, x, qw []float32) {
	i := 0
	fits := func(xb []float32, L []int8, scales *[16]float32) {
		q := qw[qkK*i:]
		qxwGroup(xb[:128], q[:128], 0, false, 16, 32, L[:128], scales[:8], nil)
		qxwGroup(xb[128:], q[128:256], 0, false, 16, 32, L[128:], scales[8:], nil)
		i++
	}
	quantQ6_KWith(y, x, fits, nil)
}
