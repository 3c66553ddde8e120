package quant

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// mappedModel writes a model with converted and kept tensors (F32 and F16) to a file.
func mappedModel(t *testing.T, opts ...container.Option) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w, err := container.NewWriter(&b, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z"}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []tensor.Tensor{
		tensorF32("blk.0.attn_q.weight", []int64{40, 256}, randF32(21, 40*256)),
		tensorF32("blk.0.attn_norm.weight", []int64{256}, randF32(22, 256)),
		tensorAs(t, "blk.0.ffn_up.weight", dtype.F16, []int64{24, 512}, randF32(23, 24*512)),
		tensorF32("output.weight", []int64{3, 256}, randF32(24, 3*256)),
	} {
		if err := w.WriteTensorBytes(container.TensorInfo{Name: tt.Name, DType: tt.DType, Shape: tt.Shape}, tt.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.apr")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// The mapped file gives the bytes the stream reader gives, for any chunk size
// (chunks that end inside pages, many chunks per tensor) and worker count.
func TestMapFileMatchesStream(t *testing.T) {
	path, b := mappedModel(t)
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_1, dtype.Q6_K, dtype.NVFP4, dtype.Q1_0, dtype.Q2_0, dtype.F16} {
		for _, c := range []struct{ workers, chunk int }{{1, 0}, {2, 256}, {3, 768}, {2, 4096}} {
			o := Options{Type: typ, Workers: c.workers, ChunkElems: c.chunk, Stats: true}
			src, err := stream.Open(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if _, err := Quantize(&want, src, o); err != nil {
				t.Fatal(err)
			}
			m := MapFile(path)
			if m == nil {
				t.Skip("no memory mapping on this platform")
			}
			var got bytes.Buffer
			_, err = Quantize(&got, m, o)
			m.Close()
			if err != nil {
				t.Fatalf("%v %+v: %v", typ, c, err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%v %+v: the mapped file's output differs from the stream's", typ, c)
			}
		}
	}
}

// A flipped bit in a converted tensor, or in one passed through, is a checksum
// error naming the tensor; compressed files and other formats are left to the
// stream reader.
func TestMapFileChecksums(t *testing.T) {
	path, b := mappedModel(t)
	if MapFile(path) == nil {
		t.Skip("no memory mapping on this platform")
	}
	for _, name := range []string{"blk.0.attn_q.weight", "blk.0.attn_norm.weight", "output.weight"} {
		m := MapFile(path)
		var e container.Entry
		for _, x := range m.entries {
			if x.Name == name {
				e = x
			}
		}
		m.Close()
		bad := bytes.Clone(b)
		bad[e.DataOffset+e.StoredSize-3] ^= 0x01 // lowest mantissa bit of the last value: still finite
		p := filepath.Join(t.TempDir(), "bad.apr")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		m = MapFile(p)
		_, err := Quantize(&bytes.Buffer{}, m, Options{Type: dtype.Q8_0, Workers: 2, ChunkElems: 512})
		m.Close()
		var ce *container.ChecksumError
		if !errors.As(err, &ce) || ce.Tensor != name {
			t.Fatalf("%s damaged: %v", name, err)
		}
	}
	zpath, _ := mappedModel(t, container.WithCompression(container.CompressLZ4))
	if m := MapFile(zpath); m != nil {
		t.Fatal("compressed file mapped")
	}
	other := filepath.Join(t.TempDir(), "x.bin")
	os.WriteFile(other, bytes.Repeat([]byte{7}, 4096), 0o644)
	if m := MapFile(other); m != nil {
		t.Fatal("not an APR file, mapped")
	}
	if m := MapFile(filepath.Join(t.TempDir(), "missing.apr")); m != nil {
		t.Fatal("missing file mapped")
	}
}

// Next after a tensor left unread checks its checksum; Close ends the stream.
func TestMapFileUnreadTensor(t *testing.T) {
	path, _ := mappedModel(t)
	m := MapFile(path)
	if m == nil {
		t.Skip("no memory mapping on this platform")
	}
	n := 0
	for {
		_, _, err := m.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if n != 4 {
		t.Fatalf("%d tensors", n)
	}
	m.Close()
	if _, _, err := m.Next(); err == nil {
		t.Fatal("Next after Close: no error")
	}
}
