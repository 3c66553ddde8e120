package quant

// CRC-32 (IEEE) of a concatenation from the CRCs of its parts, so that workers can
// checksum their own chunks and the results be joined in order: crc(A‖B) is crc(A)
// times x^(8·len(B)) modulo the CRC polynomial, plus crc(B). Polynomials are in the
// reflected bit order of hash/crc32 (bit 31 is x^0).

const crcPoly = 0xedb88320 // IEEE, reflected

// crcMul multiplies two polynomials modulo crcPoly.
func crcMul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a ^= m
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// crcX2 holds x^(8·2^k) modulo crcPoly: one byte of zeros shifts a CRC by x^8.
var crcX2 = func() (t [64]uint32) {
	x := uint32(1) << (31 - 8) // x^8
	for k := range t {
		t[k] = x
		x = crcMul(x, x)
	}
	return t
}()

// crcJoin returns the CRC-32 of A‖B from crcA, crcB and the length of B.
func crcJoin(crcA, crcB uint32, lenB int64) uint32 {
	for k := 0; lenB != 0; k, lenB = k+1, lenB>>1 {
		if lenB&1 != 0 {
			crcA = crcMul(crcX2[k], crcA)
		}
	}
	return crcA ^ crcB
}
