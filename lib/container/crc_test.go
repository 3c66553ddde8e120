package container

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRCCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 5000)
	for i := range buf {
		buf[i] = byte(r.IntN(256))
	}
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000, 5000} {
		for _, split := range []int{0, 1, n / 3, n} {
			if split > n {
				continue
			}
			a, b := buf[:split], buf[split:n]
			want := crc32.ChecksumIEEE(buf[:n])
			if got := crcCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
				t.Errorf("n=%d split=%d: got %08x want %08x", n, split, got, want)
			}
		}
	}
}
