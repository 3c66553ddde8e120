// Package argon2ref is a test-only Argon2id (version 0x13) written from the
// text of RFC 9106. It exists as a second implementation that accepts every
// RFC input, including the secret K and associated data X that
// golang.org/x/crypto/argon2 does not expose, so that the RFC 9106 test
// vector can be checked and the production path (x/crypto) can be compared
// with something that reproduces it. Production code must not use it: it is
// single-threaded and written for reading, not for speed.
package argon2ref

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"golang.org/x/crypto/blake2b"
)

// Version is the Argon2 version implemented (v in RFC 9106, section 3.1).
const Version = 0x13

// typeID is the Argon2 type y of Argon2id (RFC 9106, section 3.1).
const typeID = 2

// syncPoints is SL, the number of slices (segments per lane) of a pass.
const syncPoints = 4

// blockWords is the size of a 1024-byte memory block in 64-bit words.
const blockWords = 128

// block is one 1024-byte memory block, as little-endian 64-bit words.
type block [blockWords]uint64

// Params are the Argon2id inputs other than the password and the salt.
type Params struct {
	Time      uint32 // t, number of passes, >= 1
	MemoryKiB uint32 // m, memory size in KiB, >= 8*Lanes
	Lanes     uint32 // p, degree of parallelism, 1 .. 2^24-1
	TagLen    uint32 // T, tag length in bytes, >= 4
	Secret    []byte // K, optional secret value
	Data      []byte // X, optional associated data
}

func (p Params) check(salt []byte) error {
	switch {
	case p.Time < 1:
		return fmt.Errorf("argon2ref: time %d < 1", p.Time)
	case p.Lanes < 1 || p.Lanes > 1<<24-1:
		return fmt.Errorf("argon2ref: lanes %d outside 1..2^24-1", p.Lanes)
	case uint64(p.MemoryKiB) < 8*uint64(p.Lanes):
		return fmt.Errorf("argon2ref: memory %d KiB < 8 KiB per lane (%d lanes)", p.MemoryKiB, p.Lanes)
	case p.TagLen < 4:
		return fmt.Errorf("argon2ref: tag length %d < 4", p.TagLen)
	case len(salt) < 8:
		return fmt.Errorf("argon2ref: salt of %d bytes, RFC 9106 wants at least 8", len(salt))
	}
	return nil
}

// IDKey returns the Argon2id tag of password and salt under p.
func IDKey(password, salt []byte, p Params) ([]byte, error) {
	if err := p.check(salt); err != nil {
		return nil, err
	}
	h0 := initialHash(password, salt, p)

	// m' = 4*p*floor(m/(4p)) blocks, q = m'/p columns per lane.
	lanes := p.Lanes
	segLen := p.MemoryKiB / (syncPoints * lanes)
	laneLen := segLen * syncPoints
	mem := make([]block, laneLen*lanes)
	at := func(lane, col uint32) *block { return &mem[lane*laneLen+col] }

	// The first two columns of each lane come from H0 (section 3.2, steps 3-4).
	for l := range lanes {
		for c := range uint32(2) {
			in := binary.LittleEndian.AppendUint32(append([]byte{}, h0[:]...), c)
			in = binary.LittleEndian.AppendUint32(in, l)
			at(l, c).fromBytes(hashPrime(in, 1024))
		}
	}

	// Slice by slice, lane by lane: a segment only refers to blocks of other
	// lanes in finished slices, so doing the lanes one after another gives
	// the same memory as doing them in parallel.
	s := &state{p: p, mem: mem, laneLen: laneLen, segLen: segLen, totalBlocks: laneLen * lanes}
	for pass := range p.Time {
		for slice := range uint32(syncPoints) {
			for l := range lanes {
				s.fillSegment(pass, slice, l)
			}
		}
	}

	// C = XOR of the last column, tag = H'^T(C) (section 3.2, steps 7-8).
	var c block
	for l := range lanes {
		c.xor(at(l, laneLen-1))
	}
	return hashPrime(c.bytes(), p.TagLen), nil
}

// initialHash is H0 (section 3.2, step 1): BLAKE2b-512 over every input, the
// integers as LE32 and each byte string preceded by its LE32 length.
func initialHash(password, salt []byte, p Params) [64]byte {
	var b []byte
	for _, v := range []uint32{p.Lanes, p.TagLen, p.MemoryKiB, p.Time, Version, typeID} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	for _, s := range [][]byte{password, salt, p.Secret, p.Data} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return blake2b.Sum512(b)
}

// blake2bN is BLAKE2b with an n-byte digest (1 <= n <= 64), which is not a
// truncated BLAKE2b-512: the digest length is part of the parameter block.
func blake2bN(n int, msg []byte) []byte {
	h, err := blake2b.New(n, nil)
	if err != nil {
		panic(err) // n is always 1..64 here
	}
	h.Write(msg)
	return h.Sum(nil)
}

// hashPrime is the variable-length hash H'^T (section 3.3).
func hashPrime(msg []byte, outLen uint32) []byte {
	in := binary.LittleEndian.AppendUint32(nil, outLen)
	in = append(in, msg...)
	if outLen <= 64 {
		return blake2bN(int(outLen), in)
	}
	// r = ceil(T/32) - 2 full 64-byte hashes, of which the first halves are
	// output, then a last hash of the remaining T - 32r bytes.
	r := (outLen+31)/32 - 2
	out := make([]byte, 0, outLen)
	v := blake2bN(64, in)
	for range r - 1 {
		out = append(out, v[:32]...)
		v = blake2bN(64, v)
	}
	out = append(out, v[:32]...)
	return append(out, blake2bN(int(outLen-32*r), v)...)
}

// state is the memory matrix and what the indexing needs to know about it.
type state struct {
	p           Params
	mem         []block
	laneLen     uint32 // q, columns per lane
	segLen      uint32 // q/SL, columns per segment
	totalBlocks uint32 // m'
}

// fillSegment computes the blocks of one lane in one slice of one pass.
func (s *state) fillSegment(pass, slice, lane uint32) {
	// Argon2id uses data-independent addresses in the first half of the first
	// pass and data-dependent ones afterwards (section 3.4).
	independent := pass == 0 && slice < syncPoints/2
	var addresses block
	var counter uint64

	start := uint32(0)
	if pass == 0 && slice == 0 {
		start = 2 // columns 0 and 1 came from H0
	}
	for idx := start; idx < s.segLen; idx++ {
		col := slice*s.segLen + idx
		prevCol := col - 1
		if col == 0 {
			prevCol = s.laneLen - 1
		}
		prev := &s.mem[lane*s.laneLen+prevCol]

		var rand uint64
		if independent {
			if idx == start || idx%blockWords == 0 {
				counter++
				addresses = s.addressBlock(pass, lane, slice, counter)
			}
			rand = addresses[idx%blockWords]
		} else {
			rand = prev[0]
		}
		j1, j2 := uint32(rand), uint32(rand>>32)

		refLane := j2 % s.p.Lanes
		if pass == 0 && slice == 0 {
			refLane = lane
		}
		refCol := s.refColumn(pass, slice, idx, refLane == lane, j1)
		ref := &s.mem[refLane*s.laneLen+refCol]

		cur := &s.mem[lane*s.laneLen+col]
		next := compress(prev, ref)
		if pass > 0 {
			next.xor(cur) // version 0x13 XORs into the block it overwrites
		}
		*cur = next
	}
}

// addressBlock is the counter-th block of pseudo-random values of a segment
// for data-independent addressing: G(ZERO, G(ZERO, Z)) with
// Z = LE64(r) || LE64(l) || LE64(sl) || LE64(m') || LE64(t) || LE64(y) ||
// LE64(counter) || zeros (section 3.4.1.2).
func (s *state) addressBlock(pass, lane, slice uint32, counter uint64) block {
	var z, zero block
	z[0] = uint64(pass)
	z[1] = uint64(lane)
	z[2] = uint64(slice)
	z[3] = uint64(s.totalBlocks)
	z[4] = uint64(s.p.Time)
	z[5] = typeID
	z[6] = counter
	first := compress(&zero, &z)
	return compress(&zero, &first)
}

// refColumn maps J1 onto the reference set W of the block at index idx of the
// segment (section 3.4.2) and returns the column of the referenced block.
func (s *state) refColumn(pass, slice, idx uint32, sameLane bool, j1 uint32) uint32 {
	// W holds the blocks of the finished segments (all of them in the first
	// pass, the last SL-1 otherwise); in the same lane also the blocks of the
	// current segment but the previous one, in another lane minus the last
	// block of W when this is the first block of the segment.
	var size uint32
	switch {
	case pass == 0 && sameLane:
		size = slice*s.segLen + idx - 1
	case pass == 0:
		size = slice * s.segLen
	case sameLane:
		size = (syncPoints-1)*s.segLen + idx - 1
	default:
		size = (syncPoints - 1) * s.segLen
	}
	if !sameLane && idx == 0 {
		size--
	}

	// x = J1^2 / 2^32, y = (|W| * x) / 2^32, zz = |W| - 1 - y: a relative
	// position that favours recent blocks.
	x := uint64(j1) * uint64(j1) >> 32
	y := uint64(size) * x >> 32
	zz := uint64(size) - 1 - y

	// W starts at the first block of the lane in the first pass, and at the
	// segment after the current one otherwise.
	var first uint64
	if pass > 0 && slice != syncPoints-1 {
		first = uint64(slice+1) * uint64(s.segLen)
	}
	return uint32((first + zz) % uint64(s.laneLen))
}

// compress is G(X, Y) (section 3.5): R = X XOR Y, P over the eight rows and
// then the eight columns of R seen as an 8x8 matrix of 16-byte registers,
// result XOR R.
func compress(x, y *block) block {
	var r block
	for i := range r {
		r[i] = x[i] ^ y[i]
	}
	q := r
	// Row k is registers 8k..8k+7, i.e. words 16k..16k+15.
	for k := range 8 {
		var v [16]*uint64
		for i := range v {
			v[i] = &q[16*k+i]
		}
		permute(v)
	}
	// Column k is registers k, k+8, ..., k+56; register n is words 2n, 2n+1.
	for k := range 8 {
		var v [16]*uint64
		for i := range 8 {
			v[2*i] = &q[2*(k+8*i)]
			v[2*i+1] = &q[2*(k+8*i)+1]
		}
		permute(v)
	}
	for i := range q {
		q[i] ^= r[i]
	}
	return q
}

// permute is P (section 3.6) on 16 words v0..v15 (input register S_i holds
// v_2i and v_2i+1): GB on the columns, then on the diagonals of a 4x4 matrix.
func permute(v [16]*uint64) {
	gb(v[0], v[4], v[8], v[12])
	gb(v[1], v[5], v[9], v[13])
	gb(v[2], v[6], v[10], v[14])
	gb(v[3], v[7], v[11], v[15])
	gb(v[0], v[5], v[10], v[15])
	gb(v[1], v[6], v[11], v[12])
	gb(v[2], v[7], v[8], v[13])
	gb(v[3], v[4], v[9], v[14])
}

// gb is GB (section 3.6): BLAKE2b's G with each addition a+b replaced by the
// multiplication-hardened a + b + 2*trunc(a)*trunc(b) (BlaMka).
func gb(a, b, c, d *uint64) {
	*a = blamka(*a, *b)
	*d = bits.RotateLeft64(*d^*a, -32)
	*c = blamka(*c, *d)
	*b = bits.RotateLeft64(*b^*c, -24)
	*a = blamka(*a, *b)
	*d = bits.RotateLeft64(*d^*a, -16)
	*c = blamka(*c, *d)
	*b = bits.RotateLeft64(*b^*c, -63)
}

// blamka is a + b + 2*trunc(a)*trunc(b), trunc taking the low 32 bits, mod 2^64.
func blamka(a, b uint64) uint64 {
	return a + b + 2*uint64(uint32(a))*uint64(uint32(b))
}

func (b *block) xor(o *block) {
	for i := range b {
		b[i] ^= o[i]
	}
}

func (b *block) fromBytes(p []byte) {
	for i := range b {
		b[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
}

func (b *block) bytes() []byte {
	out := make([]byte, 0, 8*blockWords)
	for _, w := range b {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out
}
