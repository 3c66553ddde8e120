package sign

import (
	"bytes"
	"testing"
)

func BenchmarkSignMinisign64MiB(b *testing.B) {
	k, _ := GenerateKey(nil)
	data := make([]byte, 64<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := SignMinisign(bytes.NewReader(data), k, "bench", ""); err != nil {
			b.Fatal(err)
		}
	}
}
