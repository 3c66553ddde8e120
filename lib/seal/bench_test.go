package seal

import "testing"

// 1 MiB chunks, as the container uses.
func BenchmarkSealChunk1MiB(b *testing.B) {
	key := testKey(b, "bench")
	e, err := NewEncryptor(key, nil)
	if err != nil {
		b.Fatal(err)
	}
	pt := testData(1 << 20)
	dst := make([]byte, 0, len(pt)+TagSize)
	b.SetBytes(int64(len(pt)))
	for i := 0; b.Loop(); i++ {
		if _, err := e.SealChunk(dst[:0], uint64(i), pt, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenChunk1MiB(b *testing.B) {
	key := testKey(b, "bench")
	e, _ := NewEncryptor(key, nil)
	pt := testData(1 << 20)
	ct, _ := e.SealChunk(nil, 7, pt, false)
	d, err := NewDecryptor(key, e.Header(), nil)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, len(pt))
	b.SetBytes(int64(len(pt)))
	for b.Loop() {
		if _, err := d.OpenChunk(dst[:0], 7, ct, false); err != nil {
			b.Fatal(err)
		}
	}
}
