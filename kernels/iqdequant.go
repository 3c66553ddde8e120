package kernels

import "encoding/binary"

// Dequantizers for the grid-based IQ types (IQ3_XXS and IQ3_S are also
// written: iq3quant.go). Every type works on 256-value blocks split into eight sub-blocks of
// 32 values; each sub-block holds indices into a codebook (iqgrids.go), sign
// bits and a small scale. The arithmetic follows ggml's dequantize_row_iq*
// step by step in float32, so the values are ggml's bit for bit.

// Block sizes in bytes (lib/dtype has the same numbers).
const (
	iq2xxsBytes = 66  // d f16 | 32 × u16: per sub-block 4 grid bytes, then 4×7 sign bits and a 4-bit scale
	iq2xsBytes  = 74  // d f16 | 32 × u16 (9-bit index, 7 sign bits) | 8 scale bytes (two 4-bit scales)
	iq2sBytes   = 82  // d f16 | 32 index bytes | 32 sign bytes | 8 high-index bytes | 8 scale bytes
	iq3xxsBytes = 98  // d f16 | 64 index bytes | 8 × u32 (4×7 sign bits, 4-bit scale)
	iq3sBytes   = 110 // d f16 | 64 index bytes | 8 high-index bytes | 32 sign bytes | 4 scale bytes
	iq1sBytes   = 50  // d f16 | 32 index bytes | 8 × u16 (4×3 high-index bits, 3-bit scale, delta sign)
	iq1mBytes   = 56  // 32 index bytes | 16 high-index/delta bytes | 8 scale bytes (d f16 in their top nibbles)
)

// iq1Delta is the offset IQ1_S and IQ1_M add to every grid value, its sign
// chosen per group of 8.
const iq1Delta = 0.125

// signed returns v negated when bit j of signs is set.
func signed(v float32, signs uint8, j int) float32 {
	if signs>>j&1 != 0 {
		return -v
	}
	return v
}

// put8 writes the 8 values of one grid point times dl, with signs.
func put8(y []float32, dl float32, p *[8]int8, signs uint8) {
	for j := range 8 {
		y[j] = signed(dl*float32(p[j]), signs, j)
	}
}

func dequantIQ2_XXS(dst []float32, src []byte) {
	for ; len(src) >= iq2xxsBytes; src, dst = src[iq2xxsBytes:], dst[qkK:] {
		d := getF16(src)
		for ib := range 8 {
			q := src[2+8*ib : 2+8*ib+8]
			aux := binary.LittleEndian.Uint32(q[4:])
			db := d * (0.5 + float32(aux>>28)) * 0.25
			for l := range 4 {
				put8(dst[32*ib+8*l:], db, &iq2xxsGrid[q[l]], evenSigns[aux>>(7*l)&127])
			}
		}
	}
}

func dequantIQ2_XS(dst []float32, src []byte) {
	for ; len(src) >= iq2xsBytes; src, dst = src[iq2xsBytes:], dst[qkK:] {
		d := getF16(src)
		scales := src[66:74]
		for ib := range 8 {
			for l := range 4 {
				q := binary.LittleEndian.Uint16(src[2+8*ib+2*l:])
				db := d * (0.5 + float32(scales[ib]>>(4*(l/2))&0xf)) * 0.25
				put8(dst[32*ib+8*l:], db, &iq2xsGrid[q&511], evenSigns[q>>9])
			}
		}
	}
}

func dequantIQ2_S(dst []float32, src []byte) {
	for ; len(src) >= iq2sBytes; src, dst = src[iq2sBytes:], dst[qkK:] {
		d := getF16(src)
		qs, signs, qh, scales := src[2:34], src[34:66], src[66:74], src[74:82]
		for ib := range 8 {
			for l := range 4 {
				idx := int(qs[4*ib+l]) | int(qh[ib])>>(2*l)&3<<8
				db := d * (0.5 + float32(scales[ib]>>(4*(l/2))&0xf)) * 0.25
				put8(dst[32*ib+8*l:], db, &iq2sGrid[idx], signs[4*ib+l])
			}
		}
	}
}

func dequantIQ3_XXS(dst []float32, src []byte) {
	for ; len(src) >= iq3xxsBytes; src, dst = src[iq3xxsBytes:], dst[qkK:] {
		d := getF16(src)
		qs := src[2:66]
		for ib := range 8 {
			aux := binary.LittleEndian.Uint32(src[66+4*ib:])
			db := d * (0.5 + float32(aux>>28)) * 0.5
			for l := range 4 {
				signs := evenSigns[aux>>(7*l)&127]
				y := dst[32*ib+8*l:]
				lo, hi := &iq3xxsGrid[qs[8*ib+2*l]], &iq3xxsGrid[qs[8*ib+2*l+1]]
				for j := range 4 {
					y[j] = signed(db*float32(lo[j]), signs, j)
					y[j+4] = signed(db*float32(hi[j]), signs, j+4)
				}
			}
		}
	}
}

func dequantIQ3_S(dst []float32, src []byte) {
	for ; len(src) >= iq3sBytes; src, dst = src[iq3sBytes:], dst[qkK:] {
		d := getF16(src)
		qs, qh, signs, scales := src[2:66], src[66:74], src[74:106], src[106:110]
		for ib := range 8 {
			db := d * float32(1+2*int32(scales[ib/2]>>(4*(ib%2))&0xf))
			for l := range 4 {
				s := signs[4*ib+l]
				y := dst[32*ib+8*l:]
				lo := &iq3sGrid[int(qs[8*ib+2*l])|int(qh[ib])>>(2*l)&1<<8]
				hi := &iq3sGrid[int(qs[8*ib+2*l+1])|int(qh[ib])>>(2*l+1)&1<<8]
				for j := range 4 {
					y[j] = signed(db*float32(lo[j]), s, j)
					y[j+4] = signed(db*float32(hi[j]), s, j+4)
				}
			}
		}
	}
}

// iq1Put8 writes dl·(grid value + delta) for one grid point of IQ1_S or IQ1_M.
func iq1Put8(y []float32, dl float32, p *[8]int8, delta float32) {
	for j := range 8 {
		y[j] = dl * (float32(p[j]) + delta)
	}
}

func dequantIQ1_S(dst []float32, src []byte) {
	for ; len(src) >= iq1sBytes; src, dst = src[iq1sBytes:], dst[qkK:] {
		d := getF16(src)
		qs := src[2:34]
		for ib := range 8 {
			qh := binary.LittleEndian.Uint16(src[34+2*ib:])
			dl := d * float32(2*int32(qh>>12&7)+1)
			delta := float32(iq1Delta)
			if qh&0x8000 != 0 {
				delta = -iq1Delta
			}
			for l := range 4 {
				idx := int(qs[4*ib+l]) | int(qh>>(3*l)&7)<<8
				iq1Put8(dst[32*ib+8*l:], dl, &iq1sGrid[idx], delta)
			}
		}
	}
}

func dequantIQ1_M(dst []float32, src []byte) {
	for ; len(src) >= iq1mBytes; src, dst = src[iq1mBytes:], dst[qkK:] {
		qs, qh := src[0:32], src[32:48]
		var sc [4]uint16
		for i := range sc {
			sc[i] = binary.LittleEndian.Uint16(src[48+2*i:])
		}
		// The f16 super-block scale is spread over the top nibbles of the
		// four scale words, lowest nibble first.
		d := F16BitsToF32(sc[0]>>12 | sc[1]>>8&0x00f0 | sc[2]>>4&0x0f00 | sc[3]&0xf000)
		for ib := range 8 {
			// Two 3-bit scales per sub-block: one for each half of 16 values.
			s := sc[ib/2] >> (6 * (ib % 2))
			for l := range 4 {
				dl := d * float32(2*int32(s>>(3*(l/2))&7)+1)
				h := qh[2*ib+l/2] >> (4 * (l % 2)) // 3 high index bits, then the delta sign
				idx := int(qs[4*ib+l]) | int(h&7)<<8
				delta := float32(iq1Delta)
				if h&8 != 0 {
					delta = -iq1Delta
				}
				iq1Put8(dst[32*ib+8*l:], dl, &iq1sGrid[idx], delta)
			}
		}
	}
}
