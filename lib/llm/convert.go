package llm

import (
	"bytes"
	"io"
	"strings"

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
	g, _, skip, err := cp.ggufName(info.Name)
	if err != nil || skip {
		return info, skip, err
	}
	if cast, err := intToF32(info); err != nil {
		return info, false, err
	} else if cast {
		info.DType = dtype.F32
	}
	info.Name = g
	if info, _, err = cp.Arch.family().Transform(cp, info, nil); err != nil {
		return info, false, err
	}
	if widened(info) {
		info.DType = dtype.F32
	}
	return info, false, nil
}

// widened reports a float tensor other than F32 that the converter stores in F32
// whatever the output type: 1-D tensors (norms, biases), any whose name does not end
// in ".weight" (gpt-oss's expert biases), and the mixture-of-experts routers
// (ffn_gate_inp, ffn_gate_inp_shexp).
func widened(info container.TensorInfo) bool {
	if !info.DType.Info().Float || info.DType == dtype.F32 || info.DType.Info().Quantized() {
		return false
	}
	router := strings.HasSuffix(info.Name, ".ffn_gate_inp.weight") || strings.HasSuffix(info.Name, ".ffn_gate_inp_shexp.weight")
	return len(info.Shape) <= 1 || !strings.HasSuffix(info.Name, ".weight") || router
}

// Convert turns one tensor of the checkpoint into llama.cpp's form: its GGUF name,
// an integer tensor cast to F32 (intweights.go), the rows of Q and K permuted (one head at a time), the family's own transform
// (Family.Transform, in the source dtype, as the converter's modify_tensors), then 1-D
// float tensors (norms, biases) widened to F32. skip reports a tensor the converter
// drops; its data is consumed.
func (cp *Checkpoint) Convert(info container.TensorInfo, r io.Reader) (container.TensorInfo, io.Reader, bool, error) {
	g, _, skip, err := cp.ggufName(info.Name)
	if err != nil {
		return info, nil, false, err
	}
	if skip {
		_, err := io.Copy(io.Discard, r)
		return info, nil, true, err
	}
	if cast, err := intToF32(info); err != nil {
		return info, nil, false, err
	} else if cast { // the converter's first step (intweights.go)
		if r, err = castInts(info, r); err != nil {
			return info, nil, false, err
		}
		info.DType = dtype.F32
	}
	if heads, perm := cp.Arch.permutedRows(g, cp.Hparams); perm {
		if r, err = permuteHeads(info.Name, info, heads, r, false); err != nil {
			return info, nil, false, err
		}
	}
	hf := info.Name
	info.Name = g
	if info, r, err = cp.Arch.family().Transform(cp, info, r); err != nil {
		return info, nil, false, err
	}
	if widened(info) {
		// A 1-D tensor or a router, small: widened whole.
		size, err := dtype.Size(info.DType, info.Shape)
		if err != nil {
			return info, nil, false, tensor.Wrap(hf, err)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return info, nil, false, tensor.Wrap(hf, err)
		}
		t, err := stream.ToF32(tensor.Tensor{Name: hf, DType: info.DType, Shape: info.Shape, Data: data})
		if err != nil {
			return info, nil, false, err
		}
		info.DType, r = dtype.F32, bytes.NewReader(t.Data)
	}
	return info, r, false, nil
}
