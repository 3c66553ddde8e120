package crcjoin

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 9000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 64, 2500, 4095, 4096, 8999, 9000} {
		for _, end := range []int{cut, cut + 1, cut + 4096, 9000} {
			if end > len(b) {
				continue
			}
			a, c := crc32.ChecksumIEEE(b[:cut]), crc32.ChecksumIEEE(b[cut:end])
			want := crc32.ChecksumIEEE(b[:end])
			if got := Join(a, c, int64(end-cut)); got != want {
				t.Fatalf("Join at %d..%d: %#08x, want %#08x", cut, end, got, want)
			}
			if got := Zeros(int64(end-cut)).Join(a, c); got != want {
				t.Fatalf("Zeros(%d).Join: %#08x, want %#08x", end-cut, got, want)
			}
		}
	}
}

// TestZerosLarge checks shifts by lengths beyond the buffer against appending the
// zeros for real, including the multi-gigabyte lengths of whole files.
func TestZerosLarge(t *testing.T) {
	zeros := make([]byte, 1<<20)
	for _, n := range []int64{1 << 20, 3<<20 + 5} {
		crc := uint32(0xdeadbeef)
		for left := n; left > 0; left -= int64(len(zeros)) {
			crc = crc32.Update(crc, crc32.IEEETable, zeros[:min(left, int64(len(zeros)))])
		}
		// Appending zeros to data with CRC c gives Zeros(n) applied to c, joined with
		// the CRC of the zeros alone.
		if got := Join(0xdeadbeef, crc32.Update(0, crc32.IEEETable, make([]byte, n)), n); got != crc {
			t.Errorf("n=%d: %#08x, want %#08x", n, got, crc)
		}
	}
	// Composition: shifting by m then n is shifting by m+n (here m+n > 4 GiB).
	m, n := int64(3)<<30, int64(2)<<30+12345
	for _, c := range []uint32{1, 0x80000000, 0xdeadbeef} {
		if a, b := Zeros(n).Join(Zeros(m).Join(c, 0), 0), Zeros(m+n).Join(c, 0); a != b {
			t.Errorf("shift %d then %d of %#08x: %#08x, in one step %#08x", m, n, c, a, b)
		}
	}
}
