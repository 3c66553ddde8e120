package quant

import (
	"io"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// BenchmarkQuantize converts 32 MiB of F32 weights (8 tensors of 256 rows of 4096
// values) held in memory to io.Discard with 2 workers: the transform alone, without
// file I/O (.ci/bench-quant measures whole processes on 1 GiB files).
func BenchmarkQuantize(b *testing.B) {
	var tensors []tensor.Tensor
	for i := range 8 {
		tensors = append(tensors, tensorF32("blk."+string(rune('0'+i))+".ffn_up.weight", []int64{256, 4096}, randF32(uint64(i), 256*4096)))
	}
	for _, target := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_1, dtype.Q4_K, dtype.F16} {
		b.Run(target.String(), func(b *testing.B) {
			b.SetBytes(int64(8 * 256 * 4096 * 4))
			for b.Loop() {
				src := stream.FromTensors(modeltype.Custom, container.Metadata{}, tensors)
				if _, err := Quantize(io.Discard, src, Options{Type: target, Workers: 2}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
