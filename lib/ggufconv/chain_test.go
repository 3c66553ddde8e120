package ggufconv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stream"
)

// TestQuantChain runs import | quantize | export in process on tiny-llama.f32.gguf and
// compares the result with llama-quantize's file of the same type: every tensor has
// the same ggml type, dims and bytes, and the KVs are the same set with the same types
// and values (llama-quantize moves general.file_type to the end; apr keeps the order and
// sorts no tensors, so the files differ only in order).
func TestQuantChain(t *testing.T) {
	for _, c := range []struct {
		typ  dtype.DType
		want string
		pure bool
	}{
		{dtype.Q8_0, "tiny-llama.Q8_0.gguf", false},
		{dtype.Q4_0, "tiny-llama.Q4_0.pure.gguf", true},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			src, err := OpenFile(filepath.Join(testdata, "tiny-llama.f32.gguf"), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			var a bytes.Buffer
			if err := Import(&a, src); err != nil {
				t.Fatal(err)
			}
			in, err := stream.Open(&a)
			if err != nil {
				t.Fatal(err)
			}
			var q bytes.Buffer
			if _, err := quant.Quantize(&q, in, quant.Options{Type: c.typ, Pure: c.pure}); err != nil {
				t.Fatal(err)
			}
			qs, err := stream.Open(&q)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Export(&out, qs, ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			got, err := gguf.NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			wantB, err := os.ReadFile(filepath.Join(testdata, c.want))
			if err != nil {
				t.Fatal(err)
			}
			want, err := gguf.NewFile(bytes.NewReader(wantB), int64(len(wantB)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.KVs) != len(want.KVs) || len(got.Tensors) != len(want.Tensors) || out.Len() != len(wantB) {
				t.Fatalf("%d KVs, %d tensors, %d bytes; llama-quantize: %d, %d, %d", len(got.KVs), len(got.Tensors), out.Len(),
					len(want.KVs), len(want.Tensors), len(wantB))
			}
			for _, kv := range want.KVs {
				if v, ok := got.Get(kv.Key); !ok || !v.Equal(kv.Value) {
					t.Errorf("KV %s = %v, llama-quantize has %s %v", kv.Key, v, kv.Value.TypeName(), kv.Value)
				}
			}
			for i, wt := range want.Tensors {
				j := got.Tensor(wt.Name)
				if j < 0 {
					t.Errorf("tensor %q missing", wt.Name)
					continue
				}
				gt := got.Tensors[j]
				gd, _ := got.TensorData(j)
				wd, _ := want.TensorData(i)
				if gt.Type != wt.Type || !slices.Equal(gt.Dims, wt.Dims) || !bytes.Equal(gd, wd) {
					t.Errorf("tensor %q: %v %v, llama-quantize %v %v, same bytes %v", wt.Name, gt.Type, gt.Dims, wt.Type, wt.Dims, bytes.Equal(gd, wd))
				}
			}
		})
	}
}
