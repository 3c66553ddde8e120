// Package ggufdrop writes a GGUF file again without one of its tensors, for tests and
// test tools: apr's Pixtral projector without v.token_embd.img_break is the file
// llama.cpp's converter writes (docs/GGUF.md, "Vision projectors").
package ggufdrop

import (
	"bytes"
	"fmt"

	"github.com/apr-go/apr/lib/gguf"
)

// Without returns GGUF file b without tensor name: the same key-values, the other
// tensors' bytes laid out again in their order, as gguf-py's writer lays them out.
// An error when b is not GGUF or holds no tensor, or more than one, of that name.
func Without(b []byte, name string) ([]byte, error) {
	f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	h := &gguf.Header{Version: f.Version, KVs: f.KVs}
	var keep []int
	for i, t := range f.Tensors {
		if t.Name != name {
			h.Tensors = append(h.Tensors, gguf.TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type})
			keep = append(keep, i)
		}
	}
	if n := len(f.Tensors) - len(keep); n != 1 {
		return nil, fmt.Errorf("the file has %d tensors named %q, not one", n, name)
	}
	if err := h.Layout(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	w, err := gguf.NewWriter(&out, h)
	if err != nil {
		return nil, err
	}
	for _, i := range keep {
		data, err := f.TensorData(i)
		if err != nil {
			return nil, err
		}
		if err := w.WriteTensor(data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
