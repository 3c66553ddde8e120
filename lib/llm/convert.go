package llm

import (
	"bytes"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// SetMetadata records the checkpoint's description in md: the GGUF key-values under
// gguf.MetadataKey, where an imported GGUF keeps its own, so that both roads into apr
// give one form and apr-gguf export writes it as it is.
func (cp *Checkpoint) SetMetadata(md *container.Metadata) {
	if md.Extra == nil {
		md.Extra = map[string]any{}
	}
	md.Extra[gguf.MetadataKey] = gguf.EncodeKVs(3, cp.KVs)
}

// Convert turns one tensor of the checkpoint into llama.cpp's form: its GGUF name,
// the rows of Q and K permuted (one head at a time), and 1-D float
// tensors (norms, biases) widened to F32, as the converter stores them whatever the
// output type. skip reports a tensor the converter drops; its data is consumed.
func (cp *Checkpoint) Convert(info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, bool, error) {
	g, _, skip, err := cp.Arch.GGUFName(info.Name)
	if err != nil {
		return info, nil, false, err
	}
	if skip {
		_, err := io.Copy(io.Discard, r)
		return info, nil, true, err
	}
	heads, perm := cp.Arch.permutedRows(g, cp.Hparams)
	widen := len(info.Shape) == 1 && info.DType.Info().Float && info.DType != dtype.F32
	if perm {
		if r, err = permuteHeads(info.Name, info, heads, r, false); err != nil {
			return info, nil, false, err
		}
	}
	if !widen {
		info.Name = g
		return info, r, false, nil
	}
	// A 1-D tensor, small: widened whole.
	size, err := dtype.Size(info.DType, info.Shape)
	if err != nil {
		return info, nil, false, tensor.Wrap(info.Name, err)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return info, nil, false, tensor.Wrap(info.Name, err)
	}
	t, err := stream.ToF32(tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
	if err != nil {
		return info, nil, false, err
	}
	info.DType, data = dtype.F32, t.Data
	info.Name = g
	return info, bytes.NewReader(data), false, nil
}
