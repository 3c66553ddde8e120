package kernels

import (
	"encoding/binary"

	"github.com/apr-go/apr/lib/dtype"
)

// slowDecode decodes element e of one block, element by element, straight
// from the block layouts in testdata/quant/README.md and with ggml's float32
// operation order. It is a second, independent reading of the formats used
// to check the row dequantizers.
func slowDecode(t dtype.DType, b []byte, e int) (float32, bool) {
	f16 := func(off int) float32 { return F16BitsToF32(binary.LittleEndian.Uint16(b[off:])) }
	nib := func(qs []byte, e int) int32 { // legacy packing: byte j = q[j] | q[j+16]<<4
		if e < 16 {
			return int32(qs[e] & 0xf)
		}
		return int32(qs[e-16] >> 4)
	}
	switch t {
	case dtype.F16:
		return f16(0), true
	case dtype.BF16:
		return BF16BitsToF32(binary.LittleEndian.Uint16(b)), true
	case dtype.Q8_0:
		return float32(int8(b[2+e])) * f16(0), true
	case dtype.Q4_0:
		return float32(nib(b[2:], e)-8) * f16(0), true
	case dtype.Q4_1:
		return float32(float32(nib(b[4:], e))*f16(0)) + f16(2), true
	case dtype.Q5_0:
		qh := binary.LittleEndian.Uint32(b[2:])
		return float32(nib(b[6:], e)|int32(qh>>e&1)<<4-16) * f16(0), true
	case dtype.Q5_1:
		qh := binary.LittleEndian.Uint32(b[4:])
		return float32(float32(nib(b[8:], e)|int32(qh>>e&1)<<4)*f16(0)) + f16(2), true
	case dtype.Q2_K:
		n, r := e/128, e%128
		q := b[16+32*n+r%32] >> (2 * (r / 32)) & 3
		sc := b[e/16]
		dl := float32(f16(80) * float32(sc&0xf))
		ml := float32(f16(82) * float32(sc>>4))
		return float32(dl*float32(q)) - ml, true
	case dtype.Q3_K:
		n, r := e/128, e%128
		q := int32(b[32+32*n+r%32] >> (2 * (r / 32)) & 3)
		if b[e%32]>>(e/32)&1 == 0 {
			q -= 4
		}
		dl := float32(f16(108) * float32(q3Scale(b[96:108], e/16)))
		return dl * float32(q), true
	case dtype.Q4_K, dtype.Q5_K:
		j := e / 32
		sc, m := scaleMinK4(j, b[4:16])
		qsOff := 16
		if t == dtype.Q5_K {
			qsOff = 48
		}
		q := b[qsOff+32*(e/64)+e%32]
		if j%2 == 1 {
			q >>= 4
		}
		q &= 0xf
		if t == dtype.Q5_K && b[16+e%32]>>j&1 != 0 {
			q += 16
		}
		return float32(float32(f16(0)*float32(sc))*float32(q)) - float32(f16(2)*float32(m)), true
	case dtype.Q6_K:
		n, r := e/128, e%128
		g, l := r/32, r%32
		lb := b[64*n+l+32*(g%2)]
		if g >= 2 {
			lb >>= 4
		}
		q := int32(lb&0xf|(b[128+32*n+l]>>(2*g)&3)<<4) - 32
		return float32(f16(208)*float32(int8(b[192+e/16]))) * float32(q), true
	}
	return 0, false
}
