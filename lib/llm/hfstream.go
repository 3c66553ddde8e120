package llm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// FromMetadata returns the family and attention heads of a model held in llama.cpp's
// form: md's GGUF key-values name an architecture apr converts. ok is false for any
// other model.
func FromMetadata(md container.Metadata) (*Checkpoint, bool, error) {
	x, ok := md.Extra[gguf.MetadataKey]
	if !ok {
		return nil, false, nil
	}
	_, kvs, err := gguf.DecodeKVs(x)
	if err != nil {
		return nil, false, err
	}
	h := gguf.Header{KVs: kvs}
	v, ok := h.Get("general.architecture")
	name, isStr := v.AsString()
	if !ok || !isStr {
		return nil, false, nil
	}
	var arch *Arch
	for _, a := range archs {
		if a.GGUF == name {
			arch = a
		}
	}
	if arch == nil {
		return nil, false, nil
	}
	cp := &Checkpoint{Arch: arch, KVs: kvs}
	for key, dst := range map[string]*int{"attention.head_count": &cp.Hparams.Heads, "attention.head_count_kv": &cp.Hparams.KVHeads} {
		v, ok := h.Get(name + "." + key)
		if !ok && dst == &cp.Hparams.KVHeads {
			continue // llama.cpp's default: as many as the attention heads
		}
		n, isInt := v.AsUint64()
		if !ok || !isInt || n == 0 || n > 1<<20 {
			return nil, false, fmt.Errorf("metadata %s: %s.%s is missing or not a positive integer", gguf.MetadataKey, name, key)
		}
		*dst = int(n)
	}
	if cp.Hparams.KVHeads == 0 {
		cp.Hparams.KVHeads = cp.Hparams.Heads
	}
	return cp, true, nil
}

// HasVocab reports whether the description holds a tokenizer (tokenizer.ggml.model):
// a whole language model rather than a set of its tensors.
func (cp *Checkpoint) HasVocab() bool {
	h := gguf.Header{KVs: cp.KVs}
	_, ok := h.Get("tokenizer.ggml.model")
	return ok
}

// HFStream returns s, a model in llama.cpp's form, in the Hugging Face layout it was
// imported from: tensor names mapped back, the rows of Q and K permuted back, and 1-D
// F32 tensors narrowed to the dtype the checkpoint stored them in (the provenance's
// source_dtypes; exact, since the import widened them). The GGUF key-values leave the
// metadata: the checkpoint's own config files travel in it.
func (cp *Checkpoint) HFStream(s stream.Stream) stream.Stream {
	h := s.Header()
	src, _ := h.Metadata.Provenance["source_dtypes"].(map[string]any)
	extra := make(map[string]any, len(h.Metadata.Extra))
	for k, v := range h.Metadata.Extra {
		if k != gguf.MetadataKey {
			extra[k] = v
		}
	}
	h.Metadata.Extra = extra
	hs := &hfStream{Stream: s, cp: cp, h: h, source: src}
	if h.Table != nil {
		h.Table = make([]container.TensorInfo, 0, len(h.Table))
		for _, t := range s.Header().Table {
			hf, err := cp.Arch.HFName(t.Name)
			if err != nil {
				h.Table = nil // Next reports the name it cannot map
				break
			}
			t.Name, t.DType = hf, hs.narrow(hf, t)
			h.Table = append(h.Table, t)
		}
		hs.h.Table = h.Table
	}
	return hs
}

// narrow is the dtype tensor t (named hf in the checkpoint) had there: 1-D F32 tensors
// the import widened go back to BF16 or F16.
func (s *hfStream) narrow(hf string, t container.TensorInfo) dtype.DType {
	if name, _ := s.source[hf].(string); len(t.Shape) == 1 && t.DType == dtype.F32 {
		if d, ok := dtype.FromSafeTensors(name); ok && (d == dtype.BF16 || d == dtype.F16) {
			return d
		}
	}
	return t.DType
}

type hfStream struct {
	stream.Stream
	cp     *Checkpoint
	h      container.Header
	source map[string]any
}

func (s *hfStream) Header() container.Header { return s.h }

func (s *hfStream) Next() (container.TensorInfo, io.Reader, error) {
	info, r, err := s.Stream.Next()
	if err != nil {
		return info, r, err
	}
	hf, err := s.cp.Arch.HFName(info.Name)
	if err != nil {
		return info, nil, err
	}
	heads, perm := s.cp.Arch.permutedRows(info.Name, s.cp.Hparams)
	var narrow dtype.DType
	if d := s.narrow(hf, info); d != info.DType {
		narrow = d
	}
	info.Name = hf
	if perm {
		if r, err = permuteHeads(hf, info, heads, r, true); err != nil {
			return info, nil, err
		}
	}
	if narrow == dtype.Invalid {
		return info, r, nil
	}
	// A 1-D tensor, small: narrowed whole.
	size, err := dtype.Size(info.DType, info.Shape)
	if err != nil {
		return info, nil, tensor.Wrap(hf, err)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return info, nil, tensor.Wrap(hf, err)
	}
	info.DType = narrow
	return info, bytes.NewReader(narrowF32(data, narrow)), nil
}

// narrowF32 encodes little-endian F32 values as F16 or BF16.
func narrowF32(b []byte, to dtype.DType) []byte {
	n := len(b) / 4
	f := make([]float32, n)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	h := make([]uint16, n)
	if to == dtype.F16 {
		kernels.F32ToF16(h, f)
	} else {
		kernels.F32ToBF16(h, f)
	}
	out := make([]byte, 2*n)
	for i, v := range h {
		binary.LittleEndian.PutUint16(out[2*i:], v)
	}
	return out
}
