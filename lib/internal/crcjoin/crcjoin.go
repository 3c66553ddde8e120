// Package crcjoin joins IEEE CRC-32s of consecutive parts into the CRC-32 of the
// whole, without touching the bytes again. That lets the container fold each tensor's
// CRC into the whole-file CRC, and lets workers checksum their own chunks in parallel
// and have the results joined in order.
//
// CRC-32 is linear: crc(A‖B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B), with
// polynomials in the reflected bit order of hash/crc32 (bit 31 is x^0).
package crcjoin

const poly = 0xedb88320 // IEEE, reflected

// mul multiplies two polynomials modulo poly.
func mul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a ^= m
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// byteShifts[k] is x^(8·2^k) mod poly: the shift of a CRC by 2^k zero bytes.
var byteShifts = func() (t [64]uint32) {
	x := uint32(1) << (31 - 8) // x^8
	for k := range t {
		t[k] = x
		x = mul(x, x)
	}
	return t
}()

// Shift is the operator that appends n zero bytes to a CRC: x^(8n) mod poly. Build it
// once with Zeros for a length that recurs (the container's chunk size).
type Shift uint32

// Zeros returns the Shift of n zero bytes (n <= 0: the identity).
func Zeros(n int64) Shift {
	s := uint32(1) << 31 // x^0
	for k := 0; n > 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			s = mul(byteShifts[k], s)
		}
	}
	return Shift(s)
}

// Join returns crc(A‖B) from crcA, crcB and the length of B, where s is Zeros(len(B)).
func (s Shift) Join(crcA, crcB uint32) uint32 { return mul(uint32(s), crcA) ^ crcB }

// Join returns the CRC-32 of A‖B from crc(A), crc(B) and len(B).
func Join(crcA, crcB uint32, lenB int64) uint32 { return Zeros(lenB).Join(crcA, crcB) }
