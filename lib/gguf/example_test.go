package gguf_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/gguf"
)

func ExampleValue_Text() {
	fmt.Println(gguf.Float32(0.1), gguf.Array([]int32{1, -2}), gguf.Array(make([]string, 32000)))
	fmt.Println(gguf.String("tab\there"), gguf.Array([]uint8{1, 2, 3}).Text(2))
	// Output:
	// 0.1 [1, -2] [array of 32000 string]
	// "tab\there" [array of 3 u8]
}

// Write a small GGUF, then stream it back.
func ExampleNewWriter() {
	h := &gguf.Header{
		KVs: []gguf.KV{
			{Key: "general.architecture", Value: gguf.String("demo")},
			{Key: "demo.scores", Value: gguf.Array([]float32{0.5, -1})},
		},
		Tensors: []gguf.TensorInfo{
			{Name: "w", Dims: []int64{2, 3}, Type: 0}, // F32, ne0 = 2: NumPy shape (3, 2)
		},
	}
	if err := h.Layout(); err != nil { // offsets, alignment, data offset
		panic(err)
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, h)
	if err != nil {
		panic(err)
	}
	if err := w.WriteTensor(make([]byte, 24)); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	r := bytes.NewReader(buf.Bytes())
	got, err := gguf.ReadHeader(r)
	if err != nil {
		panic(err)
	}
	for _, kv := range got.KVs {
		fmt.Println(kv.Key, kv.Value.TypeName(), kv.Value)
	}
	dr, _ := gguf.NewDataReader(r, got)
	i, data, _ := dr.Next()
	n, _ := io.Copy(io.Discard, data)
	t := got.Tensors[i]
	fmt.Println(t.Name, t.Type, t.Dims, t.Shape(), n, "bytes; file", buf.Len(), "bytes, data at", got.DataOffset)
	// Output:
	// general.architecture string "demo"
	// demo.scores array[f32] [0.5, -1]
	// w F32 [2 3] [3 2] 24 bytes; file 192 bytes, data at 160
}
