package llm

import (
	"fmt"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/tensor"
)

// Source reads the checkpoint's tensors by name, at any offset from each tensor's
// first byte (the shards, mapped or read in place), for a Planned tensor made of more
// than one of them or of parts of one.
type Source interface {
	Open(name string) (io.ReaderAt, error)
}

// releaser is a Source's reader that can let go of what it has read (a mapped
// shard's pages, dropped from the resident set), so memory does not grow with the
// experts read: planned tensors release each expert's bytes when they leave it.
type releaser interface {
	Release(off, n int64)
}

// release lets ra go of n bytes at off when it can.
func release(ra io.ReaderAt, off, n int64) {
	if r, ok := ra.(releaser); ok {
		r.Release(off, n)
	}
}

// Planned is one tensor of llama.cpp's form that a family makes from the checkpoint's
// tensors when they do not map one to one (gpt-oss: two checkpoint tensors, an MXFP4
// block table and its scales, give one; one fused expert tensor gives two), in the
// converter's order. Info is the tensor as it is written (1-D tensors and biases
// already F32); Make returns its bytes, read from src a piece at a time.
type Planned struct {
	Info container.TensorInfo
	Make func(src Source) (io.Reader, error)
}

// planner is a Family whose tensors are planned (Plan) rather than converted one by one.
type planner interface {
	plan(cp *Checkpoint, tensors []TensorShape) ([]Planned, error)
}

// Plan returns the tensors in llama.cpp's form and order for a family whose tensors do
// not map one to one (gpt-oss); ok is false for the others, whose tensors Info and
// Convert serve one at a time in the checkpoint's order.
func (cp *Checkpoint) Plan() ([]Planned, bool) {
	if cp == nil {
		return nil, false
	}
	return cp.plan, cp.plan != nil
}

// planEach is the plan of a family that does not plan its tensors (for an FP8
// checkpoint): each tensor as Convert converts it, in the checkpoint's order, and the
// tensors made of several (stacked experts, DeepSeek's kv_b_proj in two: Walk) where
// the Walk places them.
func planEach(cp *Checkpoint, tensors []TensorShape) ([]Planned, error) {
	var plan []Planned
	walk := cp.Walk()
	for _, t := range tensors {
		parts, handled, err := walk.Place(t.Name)
		if err != nil {
			return nil, err
		}
		if handled {
			for _, p := range parts {
				plan = append(plan, cp.partPlanned(p))
			}
			continue
		}
		p, skip, err := cp.planOne(t)
		if err != nil {
			return nil, err
		}
		if !skip {
			plan = append(plan, p)
		}
	}
	return plan, walk.Done()
}

// partPlanned is the Planned form of a Part: its sources read one after another as
// the part asks for them, an FP8 weight dequantized to F32 first (the part's dtype,
// from the tensors fp8Plan gives).
func (cp *Checkpoint) partPlanned(p Part) Planned {
	return Planned{Info: p.Info, Make: func(src Source) (io.Reader, error) {
		return p.Open(func(name string) (io.Reader, error) {
			if w, ok := cp.fp8[name]; ok {
				return w.reader(src)
			}
			t, ok := cp.shapes[name]
			if !ok {
				return nil, fmt.Errorf("tensor %q is not in the checkpoint's list", name)
			}
			size, err := dtype.Size(t.DType, t.Shape)
			if err != nil {
				return nil, tensor.Wrap(name, err)
			}
			ra, err := src.Open(name)
			if err != nil {
				return nil, err
			}
			return &releasingReader{r: io.NewSectionReader(ra, 0, size), ra: ra, size: size}, nil
		})
	}}
}

// planOne is the Planned form of one checkpoint tensor converted as Convert converts
// it (an FP8 weight dequantized first).
func (cp *Checkpoint) planOne(t TensorShape) (Planned, bool, error) {
	if w, ok := cp.fp8[t.Name]; ok {
		return cp.fp8Planned(w)
	}
	info := container.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	out, skip, err := cp.Info(info)
	if err != nil || skip {
		return Planned{}, skip, err
	}
	size, err := dtype.Size(t.DType, t.Shape)
	if err != nil {
		return Planned{}, false, tensor.Wrap(t.Name, err)
	}
	return Planned{Info: out, Make: func(src Source) (io.Reader, error) {
		ra, err := src.Open(t.Name)
		if err != nil {
			return nil, err
		}
		_, r, _, err := cp.Convert(info, &releasingReader{r: io.NewSectionReader(ra, 0, size), ra: ra, size: size})
		return r, err
	}}, false, nil
}

// releasingReader reads a tensor in order and releases what it has read every 8 MiB
// and at the end.
type releasingReader struct {
	r             io.Reader
	ra            io.ReaderAt
	pos, released int64
	size          int64
}

func (r *releasingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.pos += int64(n)
	if r.pos-r.released >= 8<<20 || r.pos == r.size || err == io.EOF {
		release(r.ra, r.released, r.pos-r.released)
		r.released = r.pos
	}
	return n, err
}

// planSizeLabel is general.size_label of the planned tensors as gguf-py counts them
// (GGUFWriter.get_total_parameter_count, utility.size_label): a tensor whose name
// holds "_exps." and that has three or more dimensions counts once per expert (its
// outermost dimension), the others in full, and a model with experts is labelled
// "Nx" and the count of one expert's share plus the shared parameters.
func planSizeLabel(plan []Planned) string {
	var total, shared, expert, expertSum, nExpert int64
	for _, p := range plan {
		n, _ := dtype.Elems(p.Info.Shape)
		total += n
		if containsExps(p.Info.Name) && len(p.Info.Shape) >= 3 {
			e := p.Info.Shape[len(p.Info.Shape)-3]
			expert += n / e
			expertSum += e
			nExpert++
			continue
		}
		shared += n
	}
	if nExpert == 0 {
		return SizeLabel(total)
	}
	return fmt.Sprintf("%dx%s", expertSum/nExpert, SizeLabel(shared+expert))
}

func containsExps(name string) bool {
	for i := 0; i+6 <= len(name); i++ {
		if name[i:i+6] == "_exps." {
			return true
		}
	}
	return false
}
