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

// Generated returns the tensors the converter computes from the config (Llama 3's
// rope_freqs.weight), in llama.cpp's form: they come first in the stream, before the
// checkpoint's own.
func (cp *Checkpoint) Generated() []tensor.Tensor { return cp.generated }

// Info returns the table entry of a checkpoint tensor in llama.cpp's form (see
// Convert) without its data; skip reports a tensor the converter drops.
func (cp *Checkpoint) Info(info container.TensorInfo) (container.TensorInfo, bool, error) {
	info, skip, err := cp.rename(info)
	if err != nil || skip {
		return info, skip, err
	}
	info, _, err = cp.Arch.family().Transform(cp, info, nil)
	return info, false, err
}

// rename gives tensor info its GGUF name, and F32 for a 1-D float tensor (norms,
// biases), which the converter stores in F32 whatever the output type.
func (cp *Checkpoint) rename(info container.TensorInfo) (container.TensorInfo, bool, error) {
	g, _, skip, err := cp.Arch.GGUFName(info.Name)
	if err != nil || skip {
		return info, skip, err
	}
	info.Name = g
	if widened(info) {
		info.DType = dtype.F32
	}
	return info, false, nil
}

func widened(info container.TensorInfo) bool {
	return len(info.Shape) == 1 && info.DType.Info().Float && info.DType != dtype.F32
}

// Convert turns one tensor of the checkpoint into llama.cpp's form: its GGUF name,
// the rows of Q and K permuted (one head at a time), 1-D float tensors (norms, biases)
// widened to F32, then the family's own transform (Family.Transform). skip reports a
// tensor the converter drops; its data is consumed.
func (cp *Checkpoint) Convert(info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, bool, error) {
	out, skip, err := cp.rename(info)
	if err != nil {
		return info, nil, false, err
	}
	if skip {
		_, err := io.Copy(io.Discard, r)
		return info, nil, true, err
	}
	if heads, perm := cp.Arch.permutedRows(out.Name, cp.Hparams); perm {
		if r, err = permuteHeads(info.Name, info, heads, r, false); err != nil {
			return info, nil, false, err
		}
	}
	if widened(info) {
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
		r = bytes.NewReader(t.Data)
	}
	out, r, err = cp.Arch.family().Transform(cp, out, r)
	return out, r, false, err
}
