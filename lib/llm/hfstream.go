package llm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

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
	_, moe := h.Get(name + ".expert_count")
	for _, a := range archs {
		// the first of the name, a mixture of experts' for one (Mixtral's "llama")
		if a.GGUF == name && arch == nil && (a.Experts != nil) == moe {
			arch = a
		}
	}
	if files, ok := md.Extra["hf_files"].(map[string]any); ok { // the checkpoint's own class
		var b []byte
		switch v := files["config.json"].(type) { // bytes as written, a string as read back
		case []byte:
			b = v
		case string:
			b = []byte(v)
		}
		if b != nil {
			if a, ok := LookupArch(Architecture(map[string][]byte{"config.json": b})); ok && a.GGUF == name {
				arch = a
			}
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

// computed are the GGUF tensors the converter computes from config.json (Llama 3's
// rope scaling factors) rather than reads from the checkpoint: on the way back they
// are left out, and the config that makes them again must travel with the model.
var computed = map[string]string{
	"rope_freqs.weight":         "Llama 3's rope scaling factors",
	"rope_factors_long.weight":  "Phi-3's LongRoPE factors",
	"rope_factors_short.weight": "Phi-3's LongRoPE factors",
}

// HFStream returns s, a model in llama.cpp's form, in the Hugging Face layout it was
// imported from: tensor names mapped back, the rows of Q and K permuted back, 1-D
// F32 tensors narrowed to the dtype the checkpoint stored them in (the provenance's
// source_dtypes), the family's transforms undone first (Family.Untransform) and the
// tensors the converter computes left out. The
// GGUF key-values leave the metadata. withConfig says the checkpoint's own config
// files travel in the metadata; without them (a model from a GGUF file) a computed
// tensor is an error, since the config written back could not make it again.
func (cp *Checkpoint) HFStream(s stream.Stream, withConfig bool) stream.Stream {
	h := s.Header()
	src, _ := h.Metadata.Provenance["source_dtypes"].(map[string]any)
	extra := make(map[string]any, len(h.Metadata.Extra))
	for k, v := range h.Metadata.Extra {
		if k != gguf.MetadataKey {
			extra[k] = v
		}
	}
	h.Metadata.Extra = extra
	hs := &hfStream{Stream: s, cp: cp, h: h, source: src, withConfig: withConfig}
	if !withConfig {
		hs.peekComputed()
	}
	if h.Table != nil {
		h.Table = make([]container.TensorInfo, 0, len(h.Table))
		var keys container.TensorInfo
		for _, t := range s.Header().Table {
			if _, ok := computed[t.Name]; ok && (withConfig || cp.computedData[t.Name] != nil) {
				continue
			}
			if strings.HasSuffix(t.Name, ".attn_k_b.weight") {
				keys = t // joined with the next, attn_v_b (joinKVB)
				continue
			}
			if strings.HasSuffix(t.Name, ".attn_v_b.weight") && keys.Name != "" {
				var err error
				if t, err = kvbInfo(keys, t); err != nil {
					h.Table = nil // Next reports the error
					break
				}
				keys = container.TensorInfo{}
			}
			if names, shape, ok := cp.Arch.Experts.unstacked(t); ok {
				for _, n := range names {
					h.Table = append(h.Table, container.TensorInfo{Name: n, DType: t.DType, Shape: shape})
				}
				continue
			}
			hf, err := hs.hfName(t.Name)
			if err == nil {
				t, _, err = cp.Arch.family().Untransform(cp, t, nil)
			}
			if err != nil {
				h.Table = nil // Next reports the error
				break
			}
			t.Name, t.DType = hf, hs.narrow(hf, t)
			h.Table = append(h.Table, t)
		}
		hs.h.Table = h.Table
	}
	return hs
}

// hfName is the Hugging Face name of GGUF tensor g.
func (s *hfStream) hfName(g string) (string, error) {
	if what, ok := computed[g]; ok {
		return "", fmt.Errorf("tensor %q holds %s, which the converter computes from config.json; a model from a GGUF file has no config.json to write them back into (apr-st export writes a checkpoint only where it can make the same GGUF again)", g, what)
	}
	if strings.HasSuffix(g, ".attn_k_b.weight") || strings.HasSuffix(g, ".attn_v_b.weight") {
		return "", fmt.Errorf("tensor %q is one half of a latent attention's kv_b_proj, which the converter splits, without the other half after it", g)
	}
	return s.cp.Arch.HFName(g)
}

// narrow is the dtype tensor t (named hf in the checkpoint) had there: 1-D F32 tensors
// and routers the import widened (widened) go back to BF16 or F16.
func (s *hfStream) narrow(hf string, t container.TensorInfo) dtype.DType {
	if name, _ := s.source[hf].(string); widened(container.TensorInfo{Name: t.Name, DType: dtype.BF16, Shape: t.Shape}) && t.DType == dtype.F32 {
		if d, ok := dtype.FromSafeTensors(name); ok && (d == dtype.BF16 || d == dtype.F16) {
			return d
		}
	}
	return t.DType
}

type hfStream struct {
	stream.Stream
	cp         *Checkpoint
	h          container.Header
	source     map[string]any
	withConfig bool
	peeked     *peeked // a tensor read ahead, given out first
	// experts are the per-expert tensors of a stacked one still to give out, read one
	// after another from its reader (prev, the last one given, is drained first).
	experts     []string
	expertShape []int64
	expertDType dtype.DType
	stacked     io.Reader
	prev        io.Reader
}

type peeked struct {
	info container.TensorInfo
	r    io.Reader
	err  error
}

// maxRopeFactors bounds a computed tensor read ahead: head_dim/2 values, and the
// largest head dimension of a published model is 512.
const maxRopeFactors = 4096

// peekComputed reads the tensors the converter computes (it writes them first) at
// the head of the stream and keeps their values in the description, so that HFFiles
// can write the config that makes them again; the first other tensor is given out
// first by Next.
func (s *hfStream) peekComputed() {
	for {
		info, r, err := s.Stream.Next()
		if err != nil || computed[info.Name] == "" || info.DType != dtype.F32 || len(info.Shape) != 1 || info.Shape[0] > maxRopeFactors {
			s.peeked = &peeked{info, r, err}
			return
		}
		data := make([]byte, 4*info.Shape[0])
		if _, err := io.ReadFull(r, data); err != nil {
			s.peeked = &peeked{info, nil, tensor.Wrap(info.Name, err)}
			return
		}
		v := make([]float32, info.Shape[0])
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		if s.cp.computedData == nil {
			s.cp.computedData = map[string][]float32{}
		}
		s.cp.computedData[info.Name] = v
	}
}

// next is the stream's next tensor, the one read ahead first.
func (s *hfStream) next() (container.TensorInfo, io.Reader, error) {
	if p := s.peeked; p != nil {
		s.peeked = nil
		return p.info, p.r, p.err
	}
	return s.Stream.Next()
}

func (s *hfStream) Header() container.Header { return s.h }

func (s *hfStream) Next() (container.TensorInfo, io.Reader, error) {
	if len(s.experts) > 0 {
		return s.nextExpert()
	}
	info, r, err := s.next()
	for err == nil && (s.withConfig || s.cp.computedData[info.Name] != nil) && computed[info.Name] != "" {
		if _, err = io.Copy(io.Discard, r); err == nil {
			info, r, err = s.next()
		}
	}
	if err != nil {
		return info, r, err
	}
	if names, shape, ok := s.cp.Arch.Experts.unstacked(info); ok {
		s.experts, s.expertShape, s.expertDType, s.stacked, s.prev = names, shape, info.DType, r, nil
		return s.nextExpert()
	}
	if strings.HasSuffix(info.Name, ".attn_k_b.weight") {
		if info, r, err = s.joinKVB(info, r); err != nil {
			return info, nil, err
		}
	}
	hf, err := s.hfName(info.Name)
	if err != nil {
		return info, nil, err
	}
	if heads, perm := s.cp.Arch.permutedRows(info.Name, s.cp.Hparams); perm {
		if r, err = permuteHeads(hf, info, heads, r, true); err != nil {
			return info, nil, err
		}
	}
	if info, r, err = s.cp.Arch.family().Untransform(s.cp, info, r); err != nil {
		return info, nil, err
	}
	var narrow dtype.DType
	if d := s.narrow(hf, info); d != info.DType {
		narrow = d
	}
	info.Name = hf
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

// nextExpert gives out the next expert of the stacked tensor being read, as the
// checkpoint held it: experts are the slowest axis, so each is the next stretch of the
// stacked tensor's bytes.
func (s *hfStream) nextExpert() (container.TensorInfo, io.Reader, error) {
	info := container.TensorInfo{Name: s.experts[0], DType: s.expertDType, Shape: s.expertShape}
	if s.prev != nil {
		if _, err := io.Copy(io.Discard, s.prev); err != nil {
			return info, nil, err
		}
	}
	size, err := dtype.Size(info.DType, info.Shape)
	if err != nil {
		return info, nil, tensor.Wrap(info.Name, err)
	}
	s.experts = s.experts[1:]
	s.prev = io.LimitReader(s.stacked, size)
	return info, s.prev, nil
}
