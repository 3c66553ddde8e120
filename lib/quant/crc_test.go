package quant

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRCJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 5000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 64, 2500, 4999, 5000} {
		for _, end := range []int{cut, cut + 1, 5000} {
			if end > len(b) {
				continue
			}
			a, c := crc32.ChecksumIEEE(b[:cut]), crc32.ChecksumIEEE(b[cut:end])
			if got, want := crcJoin(a, c, int64(end-cut)), crc32.ChecksumIEEE(b[:end]); got != want {
				t.Fatalf("join at %d..%d: %#08x, want %#08x", cut, end, got, want)
			}
		}
	}
}
