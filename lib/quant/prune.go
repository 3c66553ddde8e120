package quant

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/stream"
)

// ParsePruneLayers reads llama-quantize's --prune-layers L0,L1,...: layer numbers,
// sorted and without repeats. Stricter than its std::stoi, which reads "3x" as 3: each
// must be a whole decimal number from 0.
func ParsePruneLayers(s string) ([]int, error) {
	var layers []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 1<<20 {
			return nil, fmt.Errorf("--prune-layers %q: layer %q is not a whole number from 0", s, f)
		}
		layers = append(layers, n)
	}
	slices.Sort(layers)
	return slices.Compact(layers), nil
}

// blkPattern is the block number of a tensor name, as llama.cpp's remap_layer finds it.
var blkPattern = regexp.MustCompile(`blk\.(\d+)\.`)

// pruning is llama-quantize's --prune-layers over a model's tensors: the layers
// pruned are dropped and the others renumbered (remap_layer in src/llama-quant.cpp,
// applied to the layers in ascending order, as its model loader lists them).
type pruning struct {
	to     map[int]int // kept layer -> its new number
	blocks int         // the new block_count (remap_layer's next id)
}

func newPruning(prune []int, tensors []container.TensorInfo) *pruning {
	var layers []int
	for _, t := range tensors {
		if b, ok := blockOf(t.Name); ok {
			layers = append(layers, b)
		}
	}
	slices.Sort(layers)
	p := &pruning{to: map[int]int{}}
	for _, b := range slices.Compact(layers) {
		switch {
		case slices.Contains(prune, b):
			continue
		case b < prune[0]:
			p.to[b], p.blocks = b, b+1
		default:
			p.to[b] = p.blocks
			p.blocks++
		}
	}
	return p
}

func blockOf(name string) (int, bool) {
	m := blkPattern.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// rename returns a tensor's name after pruning, and false when it is pruned.
func (p *pruning) rename(name string) (string, bool) {
	loc := blkPattern.FindStringSubmatchIndex(name)
	if loc == nil {
		return name, true
	}
	b, _ := strconv.Atoi(name[loc[2]:loc[3]])
	n, ok := p.to[b]
	if !ok {
		return "", false
	}
	return name[:loc[2]] + strconv.Itoa(n) + name[loc[3]:], true
}

// table is the tensor list after pruning.
func (p *pruning) table(tensors []container.TensorInfo) []container.TensorInfo {
	var out []container.TensorInfo
	for _, t := range tensors {
		if n, ok := p.rename(t.Name); ok {
			t.Name = n
			out = append(out, t)
		}
	}
	return out
}

// matrix gives the importance matrix's entries the new names, as llama-quantize looks
// a renamed tensor's entry up under its old name (remap_imatrix); the entries of
// pruned layers go.
func (p *pruning) matrix(m *imatrix.Matrix) *imatrix.Matrix {
	c := *m
	c.Entries = map[string][]float32{}
	c.Names = nil
	for _, name := range m.Names {
		if n, ok := p.rename(name); ok {
			c.Entries[n] = m.Entries[name]
			c.Names = append(c.Names, n)
		}
	}
	return &c
}

// prunedStream drops the pruned tensors of a stream and renames the others.
type prunedStream struct {
	stream.Stream
	p *pruning
}

func (s *prunedStream) Next() (container.TensorInfo, io.Reader, error) {
	for {
		t, r, err := s.Stream.Next()
		if err != nil {
			return t, r, err
		}
		n, ok := s.p.rename(t.Name)
		if ok {
			t.Name = n
			return t, r, nil
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return t, nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
}

// applyPrune sets up o.PruneLayers over the tensor list o.Plan: the plan renamed,
// the importance matrix's entries renamed, block_count in the header's GGUF
// key-values (after the --override-kv keys, as llama-quantize sets it), and attn_v's
// rules counting the layers left (llama.cpp counts the attn_v tensors). It returns
// the pruning, nil when there is none.
func (o *Options) applyPrune(h *container.Header) (*pruning, error) {
	if len(o.PruneLayers) == 0 {
		return nil, nil
	}
	if o.Plan == nil {
		return nil, fmt.Errorf("--prune-layers renumbers the layers from the model's tensor list, and this stream has none up front " +
			"(an APR stream of format 2.0): quantize the file instead")
	}
	missing := fmt.Errorf("--prune-layers: the model has no GGUF key-values (it is not a language model imported from a GGUF file " +
		"or a Hugging Face checkpoint), so no block_count to set")
	var p *pruning
	err := editGGUFKVs(h, missing, func(_ *container.Metadata, kvs []gguf.KV) []gguf.KV {
		gh := gguf.Header{KVs: kvs}
		v, _ := gh.Get("general.architecture")
		arch, _ := v.AsString()
		p = newPruning(o.PruneLayers, o.Plan)
		o.Plan = p.table(o.Plan)
		if o.Imatrix != nil {
			o.imatrixEntries = len(o.Imatrix.Entries)
			o.Imatrix = p.matrix(o.Imatrix)
		}
		if o.llm != nil {
			o.llm.vLayers = p.blocks
		}
		return SetKV(kvs, arch+".block_count", gguf.Uint32(uint32(p.blocks)))
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// PrunedNames is what --prune-layers does to a model's tensor names (all of them, in
// any order): each one's new name, "" where it is pruned.
func PrunedNames(prune []int, names []string) []string {
	tensors := make([]container.TensorInfo, len(names))
	for i, n := range names {
		tensors[i].Name = n
	}
	p := newPruning(prune, tensors)
	out := make([]string, len(names))
	for i, n := range names {
		out[i], _ = p.rename(n)
	}
	return out
}
