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

func TestCRCShift(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 9000)
	for i := range buf {
		buf[i] = byte(r.IntN(256))
	}
	var s crcShift
	// The first length is cached; the others take crcCombine; all must agree.
	for _, n := range []int64{4096, 1, 4096, 7, 4095, 4096, 8999} {
		split := int64(len(buf)) - n
		a, b := buf[:split], buf[split:]
		want := crc32.ChecksumIEEE(buf)
		if got := s.combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), n); got != want {
			t.Errorf("len %d: got %08x want %08x", n, got, want)
		}
	}
}
