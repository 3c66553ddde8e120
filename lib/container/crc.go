package container

import (
	"hash/crc32"

	"github.com/apr-go/apr/lib/internal/crcjoin"
)

// crcUpdate extends an IEEE CRC32 with p (crc32.Update takes the fast CLMUL path for
// the IEEE table).
func crcUpdate(crc uint32, p []byte) uint32 { return crc32.Update(crc, crc32.IEEETable, p) }

// crcCombine returns the CRC32 of a||b given crc(a), crc(b) and len(b), without
// touching the bytes. Tensor data is checksummed once, for its own CRC, and folded
// into the whole-file CRC with this, instead of being read twice.
func crcCombine(crcA, crcB uint32, lenB int64) uint32 { return crcjoin.Join(crcA, crcB, lenB) }

// crcShift combines CRCs of blocks of one common length with a cached operator: the
// chunk frames of a tensor are nearly all the same length, and a frame's payload CRC
// (computed by the worker that built or checked it) folds into the tensor CRC with
// one polynomial product instead of a pass over the bytes. Other lengths fall back to
// crcCombine.
type crcShift struct {
	n     int64
	zeros crcjoin.Shift // appends n zero bytes to a CRC
}

// combine returns crcCombine(crcA, crcB, lenB); the first length it sees is cached.
func (s *crcShift) combine(crcA, crcB uint32, lenB int64) uint32 {
	if s.n == 0 && lenB > 0 {
		s.n, s.zeros = lenB, crcjoin.Zeros(lenB)
	}
	if lenB != s.n {
		return crcCombine(crcA, crcB, lenB)
	}
	return s.zeros.Join(crcA, crcB)
}
