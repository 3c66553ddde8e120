package manifest

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkParallel hashes 24 MiB through Parallel.ReadTensor: 12 tensors of 2 MiB
// (each larger than a chunk, so hashed on a goroutine) between 200 small ones (hashed
// inline), read in 64 KiB pieces as from a pipe, with 2 workers.
func BenchmarkParallel(b *testing.B) {
	h, _ := sample()
	rng := rand.New(rand.NewPCG(3, 4))
	big := randomTensors(rng, 12, []int{2 << 20})
	small := randomTensors(rng, 200, []int{16, 1000, 4096})
	var ts []tensor
	for i, t := range small {
		ts = append(ts, t)
		if i%17 == 0 && len(big) > 0 {
			ts, big = append(ts, big[0]), big[1:]
		}
	}
	ts = append(ts, big...)
	var total int64
	for i := range ts {
		ts[i].info.Name = "t." + string(rune('a'+i%26)) + string(rune('a'+i/26))
		total += int64(len(ts[i].data))
	}
	b.SetBytes(total)
	for b.Loop() {
		bl, err := New(h.Type, &h.Metadata)
		if err != nil {
			b.Fatal(err)
		}
		p := NewParallel(bl, 2)
		for _, t := range ts {
			if _, err := p.ReadTensor(t.info, &chunkyReader{data: t.data, n: 64 << 10}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := p.Sum(); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
