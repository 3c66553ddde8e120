package llm

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// Projector is the code of one vision projector family: how the converter's --mmproj
// (convert_hf_to_gguf.py, conversion/base.py MmprojModel and the family's class)
// writes a multimodal checkpoint's vision tower and projector as the separate file
// llama.cpp's mtmd loads (general.architecture clip, general.type mmproj). One file
// per family, as Family is for the text models; pixtral.go is the first.
type Projector interface {
	// KVs returns the family's clip.* keys, written after the common ones.
	KVs(p *Projection) ([]gguf.KV, error)
	// Name maps a checkpoint tensor to its GGUF name; skip drops it (the text model's
	// tensors); an error names a vision tensor the family does not know.
	Name(p *Projection, hf string) (g string, skip bool, err error)
	// Permuted reports the heads over which a tensor's rows are permuted as Llama's
	// Q and K are (0: none).
	Permuted(p *Projection, hf string) int
	// Derived returns the tensors the family makes of checkpoint tensor hf, one it
	// otherwise drops (Pixtral's [IMG_BREAK] row of the text model's embeddings), in
	// llama.cpp's form, written in hf's place as the converter's modify_tensors yields
	// them.
	Derived(p *Projection, hf string) ([]Planned, error)
	// Needs lists the tensors llama.cpp's clip loader (or its encoder) requires of the
	// family.
	Needs(p *Projection) []Need
}

// Need is a tensor a projector needs, and what it is made of (for errors).
type Need struct{ Tensor, From string }

// projectors are the families apr writes a projector of, by config.json's architecture.
var projectors = map[string]Projector{
	"Mistral3ForConditionalGeneration": pixtral{},
}

// Projection is a multimodal checkpoint read for its projector file.
type Projection struct {
	// Top is config.json, Vision its vision_config, Text its text model's fields
	// (textConfig).
	Top, Vision, Text config
	files             map[string][]byte
	shapes            map[string]TensorShape
}

// clipArch is the architecture of a projector file.
var clipArch = &Arch{GGUF: "clip"}

// FromCheckpointProjector describes the projector file of a multimodal checkpoint
// (files and tensors as for FromCheckpoint): its tensors in llama.cpp's form and order
// (Plan) and its key-values. A checkpoint without a vision tower, of a family apr has
// no projector code for, or without a tensor the family needs is an error.
func FromCheckpointProjector(files map[string][]byte, dir string, tensors []TensorShape) (*Checkpoint, error) {
	raw, ok := files["config.json"]
	if !ok {
		return nil, fmt.Errorf("--mmproj: the checkpoint has no config.json")
	}
	m, err := parseJSON("config.json", raw)
	if err != nil {
		return nil, err
	}
	list, _ := m["architectures"].([]any)
	name := ""
	if len(list) > 0 {
		name, _ = list[0].(string)
	}
	vision, ok := m["vision_config"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("--mmproj: config.json has no vision_config object: %s has no vision tower to write a projector of", orNone(name))
	}
	fam, ok := projectors[name]
	if !ok {
		return nil, fmt.Errorf("--mmproj: apr writes no projector of %s (config.json architectures); it writes Mistral3ForConditionalGeneration's (Pixtral)", orNone(name))
	}
	p := &Projection{Top: m, Vision: vision, Text: textConfig(m), files: files, shapes: map[string]TensorShape{}}
	for _, t := range tensors {
		p.shapes[t.Name] = t
	}
	var plan []Planned
	for _, t := range tensors {
		derived, err := fam.Derived(p, t.Name)
		if err != nil {
			return nil, err
		}
		plan = append(plan, derived...)
		g, skip, err := fam.Name(p, t.Name)
		if err != nil {
			return nil, err
		}
		if !skip {
			plan = append(plan, projPlanned(t, g, fam.Permuted(p, t.Name)))
		}
	}
	have := map[string]bool{}
	var params int64
	for _, pl := range plan {
		if have[pl.Info.Name] {
			return nil, fmt.Errorf("--mmproj: the checkpoint gives %s twice", pl.Info.Name)
		}
		have[pl.Info.Name] = true
		n, _ := dtype.Elems(pl.Info.Shape)
		params += n
	}
	for _, need := range fam.Needs(p) {
		if !have[need.Tensor] {
			return nil, fmt.Errorf("--mmproj: the checkpoint gives no %s (%s), which llama.cpp needs of a %s projector", need.Tensor, need.From, name)
		}
	}
	kvs, err := p.commonKVs(dir, params, plan)
	if err != nil {
		return nil, err
	}
	own, err := fam.KVs(p)
	if err != nil {
		return nil, err
	}
	kvs = append(kvs, own...)
	kvs = append(kvs, gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32(2)})
	return &Checkpoint{Arch: clipArch, config: p.Text, files: files, shapes: p.shapes, plan: plan, KVs: dedupe(kvs)}, nil
}

func orNone(s string) string {
	if s == "" {
		return "the checkpoint (no architectures)"
	}
	return s
}

// commonKVs are MmprojModel's keys of a vision encoder (conversion/base.py,
// set_gguf_parameters), after general.*; the file type is the tensors' as imported.
func (p *Projection) commonKVs(dir string, params int64, plan []Planned) ([]gguf.KV, error) {
	kvs := []gguf.KV{{Key: "general.architecture", Value: gguf.String("clip")}, {Key: "general.type", Value: gguf.String("mmproj")}}
	if n := titleOf(dir); n != "" {
		kvs = append(kvs, gguf.KV{Key: "general.name", Value: gguf.String(n)})
	}
	if params > 0 {
		kvs = append(kvs, gguf.KV{Key: "general.size_label", Value: gguf.String(SizeLabel(params))})
	}
	kvs = append(kvs, gguf.KV{Key: "general.file_type", Value: gguf.Uint32(planFileType(plan))})
	hidden, _, err := p.Text.int("hidden_size", true)
	if err != nil {
		return nil, fmt.Errorf("%w (text_config: the projection's width)", err)
	}
	kvs = append(kvs, gguf.KV{Key: "clip.has_vision_encoder", Value: gguf.Bool(true)},
		gguf.KV{Key: "clip.vision.projection_dim", Value: gguf.Uint32(uint32(hidden))})
	for _, f := range []struct{ key, field string }{
		{"image_size", "image_size"}, {"patch_size", "patch_size"}, {"embedding_length", "hidden_size"},
		{"feed_forward_length", "intermediate_size"}, {"block_count", "num_hidden_layers"},
		{"attention.head_count", "num_attention_heads"},
	} {
		n, _, err := p.Vision.int(f.field, true)
		if err != nil {
			return nil, fmt.Errorf("%w (vision_config)", err)
		}
		kvs = append(kvs, gguf.KV{Key: "clip.vision." + f.key, Value: gguf.Uint32(uint32(n))})
	}
	pre, err := p.preprocessor()
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"image_mean", "image_std"} {
		v, ok := pre[k].([]any)
		if !ok || len(v) == 0 {
			return nil, fmt.Errorf("preprocessor_config.json: %q is %v, expected a list of numbers", k, pre[k])
		}
		fs := make([]float32, len(v))
		for i, x := range v {
			f, err := float32Field(fmt.Sprintf("preprocessor_config.json %q", k), x)
			if err != nil {
				return nil, err
			}
			fs[i] = float32(f)
		}
		kvs = append(kvs, gguf.KV{Key: "clip.vision." + k, Value: gguf.Array(fs)})
	}
	return kvs, nil
}

// preprocessor is preprocessor_config.json merged with processor_config.json's
// image_processor, as MmprojModel reads them.
func (p *Projection) preprocessor() (config, error) {
	out := config{}
	for _, f := range []string{"preprocessor_config.json", "processor_config.json"} {
		b, ok := p.files[f]
		if !ok {
			continue
		}
		m, err := parseJSON(f, b)
		if err != nil {
			return nil, err
		}
		for _, sub := range []string{"media_proc_cfg", "image_processor"} {
			if inner, ok := m[sub].(map[string]any); ok {
				for k, v := range inner {
					m[k] = v
				}
			}
		}
		for k, v := range m {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--mmproj: the checkpoint has no preprocessor_config.json (its image_mean and image_std are the projector's)")
	}
	return out, nil
}

// planFileType is llama.cpp's file type of the planned tensors of two or more
// dimensions as imported: F16 (1) or BF16 (32) when all are, else F32 (0).
func planFileType(plan []Planned) uint32 {
	types := map[dtype.DType]bool{}
	for _, p := range plan {
		if len(p.Info.Shape) >= 2 {
			types[p.Info.DType] = true
		}
	}
	switch {
	case len(types) == 1 && types[dtype.F16]:
		return 1
	case len(types) == 1 && types[dtype.BF16]:
		return 32
	}
	return 0
}

// forcedF32 are the projector tensors the converter keeps in F32 unless the output is
// F16 (MmprojModel.tensor_force_quant); the import widens them to F32, and lib/quant
// keeps them there for every other type.
func forcedF32(g string) bool {
	return strings.Contains(g, ".patch_embd.weight") || strings.Contains(g, ".patch_merger.weight")
}

// projPlanned is checkpoint tensor t written as g: its rows permuted over heads
// (when heads > 0), widened to F32 where the converter stores F32 whatever the output
// type (1-D tensors, biases, forcedF32).
func projPlanned(t TensorShape, g string, heads int) Planned {
	info := container.TensorInfo{Name: g, DType: t.DType, Shape: t.Shape}
	widen := widened(info) || (forcedF32(g) && info.DType.Info().Float && !info.DType.Info().Quantized())
	out := info
	if widen {
		out.DType = dtype.F32
	}
	return Planned{Info: out, Make: func(src Source) (io.Reader, error) {
		size, err := dtype.Size(t.DType, t.Shape)
		if err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		ra, err := src.Open(t.Name)
		if err != nil {
			return nil, err
		}
		var r io.Reader = &releasingReader{r: io.NewSectionReader(ra, 0, size), ra: ra, size: size}
		if heads > 0 {
			if r, err = permuteHeads(t.Name, info, heads, r, false); err != nil {
				return nil, err
			}
		}
		if !widen || t.DType == dtype.F32 {
			return r, nil
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, tensor.Wrap(t.Name, err)
		}
		w, err := stream.ToF32(tensor.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: data})
		if err != nil {
			return nil, err
		}
		return bytes.NewReader(w.Data), nil
	}}
}
