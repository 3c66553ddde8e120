package container

import "hash/crc32"

// crcUpdate extends an IEEE CRC32 with p (crc32.Update takes the fast CLMUL path for
// the IEEE table).
func crcUpdate(crc uint32, p []byte) uint32 { return crc32.Update(crc, crc32.IEEETable, p) }

// crcCombine returns the CRC32 of a||b given crc(a), crc(b) and len(b), without
// touching the bytes. Tensor data is checksummed once, for its own CRC, and folded
// into the whole-file CRC with this, instead of being read twice.
//
// CRC32 is linear over GF(2): appending n zero bytes to a message multiplies its CRC
// state by a fixed 32x32 bit matrix (the operator of x^(8n) modulo the polynomial), so
// crc(a||b) = crc(a)·M^n xor crc(b). M^n is built by repeated squaring.
func crcCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var odd, even [32]uint32
	// The operator for one zero bit, in reflected form.
	odd[0] = 0xEDB88320
	for i, row := uint(1), uint32(1); i < 32; i, row = i+1, row<<1 {
		odd[i] = row
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	for {
		gf2Square(&even, &odd) // first pass: one zero byte; then 2, 4, ... bytes
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(dst, mat *[32]uint32) {
	for i := range dst {
		dst[i] = gf2Times(mat, mat[i])
	}
}

// crcShift combines CRCs of blocks of one common length with a cached operator: the
// chunk frames of a tensor are nearly all the same length, and a frame's payload CRC
// (computed by the worker that built or checked it) folds into the tensor CRC with
// 32 XORs instead of a pass over the bytes. Other lengths fall back to crcCombine.
type crcShift struct {
	n  int64
	op [32]uint32 // appends n zero bytes to a CRC state
}

// combine returns crcCombine(crcA, crcB, lenB); the first length it sees is cached.
func (s *crcShift) combine(crcA, crcB uint32, lenB int64) uint32 {
	if s.n == 0 && lenB > 0 {
		s.n, s.op = lenB, zerosOperator(lenB)
	}
	if lenB != s.n {
		return crcCombine(crcA, crcB, lenB)
	}
	return gf2Times(&s.op, crcA) ^ crcB
}

// zerosOperator returns the matrix that appends n > 0 zero bytes to a CRC state, as
// the product of the operators for 2^k bytes over the set bits k of n.
func zerosOperator(n int64) [32]uint32 {
	var pow, res, tmp [32]uint32
	// The operator for one zero bit, squared three times: one zero byte.
	pow[0] = 0xEDB88320
	for i, row := uint(1), uint32(1); i < 32; i, row = i+1, row<<1 {
		pow[i] = row
	}
	for range 3 {
		gf2Square(&tmp, &pow)
		pow = tmp
	}
	for i := range res {
		res[i] = 1 << i // identity
	}
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			for i := range res {
				tmp[i] = gf2Times(&pow, res[i])
			}
			res = tmp
		}
		if n > 1 {
			gf2Square(&tmp, &pow)
			pow = tmp
		}
	}
	return res
}
