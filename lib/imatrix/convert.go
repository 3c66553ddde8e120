package imatrix

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/gguf"
)

// DefaultChunkSize is llama-imatrix's tokens a chunk when not told otherwise (its
// default context of 512): the factor between a .dat's per-call means and a GGUF's
// raw sums and token counts.
const DefaultChunkSize = 512

// collected is llama-imatrix's in-memory matrix (IMatrixCollector's m_stats) after it
// loaded one file with --in-file: per entry the raw sums and per-expert counts.
type collected struct {
	names     []string // sorted, as llama-imatrix stores them
	values    map[string][]float32
	counts    map[string][]int64
	lastChunk int32
}

// collect is IMatrixCollector::load_imatrix on m with chunk size chunk: a .dat's sums
// times the chunk size, its call count times the chunk size as every count; a GGUF's
// sums and counts as they are. The chunk count is the largest count over the chunk
// size.
func (m *Matrix) collect(chunk int32) *collected {
	c := &collected{values: map[string][]float32{}, counts: map[string][]int64{}}
	var maxCount int64
	for _, name := range m.Names {
		r, ok := m.raw[name]
		if !ok { // built by hand: its values as a .dat of one call
			r = rawEntry{sums: m.Entries[name], counts: []int64{1}}
		}
		v := make([]float32, len(r.sums))
		var zero float32 // += onto 0, as the collector does (-0 becomes +0)
		counts := slices.Clone(r.counts)
		if m.GGUF {
			for j, s := range r.sums {
				v[j] = zero + s
			}
		} else {
			for j, s := range r.sums {
				v[j] = zero + s*float32(chunk)
			}
			counts = []int64{r.counts[0] * int64(chunk)}
		}
		for _, n := range counts {
			maxCount = max(maxCount, n)
		}
		c.values[name], c.counts[name] = v, counts
		c.names = append(c.names, name)
	}
	slices.Sort(c.names)
	c.lastChunk = int32(maxCount / int64(chunk))
	return c
}

func checkChunk(chunk int32) error {
	if chunk < 1 {
		return fmt.Errorf("chunk size %d: want 1 or more (llama-imatrix's -c)", chunk)
	}
	return nil
}

// WriteGGUF writes m as llama-imatrix --in-file FILE -c CHUNK -o OUT.gguf writes it
// (save_imatrix), byte for byte: the keys general.type, imatrix.datasets,
// imatrix.chunk_count and imatrix.chunk_size, then per entry in name order NAME.in_sum2
// (ne0 by experts) and NAME.counts (1 by experts), F32. chunk only matters for a
// .dat (see collect).
func (m *Matrix) WriteGGUF(w io.Writer, chunk int32) error {
	if err := checkChunk(chunk); err != nil {
		return err
	}
	c := m.collect(chunk)
	ds := m.Datasets
	if ds == nil {
		ds = []string{}
	}
	h := &gguf.Header{Version: 3, KVs: []gguf.KV{
		{Key: "general.type", Value: gguf.String("imatrix")},
		{Key: KeyDatasets, Value: gguf.Array(ds)},
		{Key: KeyChunkCount, Value: gguf.Uint32(uint32(c.lastChunk))},
		{Key: KeyChunkSize, Value: gguf.Uint32(uint32(chunk))},
	}}
	var data [][]float32
	for _, name := range c.names {
		v, n := c.values[name], c.counts[name]
		if len(v) == 0 || len(n) == 0 {
			continue
		}
		if len(name)+len(".in_sum2") > gguf.MaxNameLen {
			return fmt.Errorf("entry %q: %q is longer than ggml's %d-byte tensor names", name, name+".in_sum2", gguf.MaxNameLen)
		}
		fc := make([]float32, len(n))
		for j, x := range n {
			fc[j] = float32(x)
		}
		h.Tensors = append(h.Tensors,
			gguf.TensorInfo{Name: name + ".in_sum2", Dims: nDims(int64(len(v)/len(n)), int64(len(n)))},
			gguf.TensorInfo{Name: name + ".counts", Dims: nDims(1, int64(len(n)))})
		data = append(data, v, fc)
	}
	if err := h.Layout(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	gw, err := gguf.NewWriter(bw, h)
	if err != nil {
		return err
	}
	for _, d := range data {
		if err := gw.WriteTensor(f32Bytes(d)); err != nil {
			return err
		}
	}
	if err := gw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// nDims is a 2-D ggml tensor's dims as gguf stores them: ggml_n_dims leaves out
// trailing dimensions of 1.
func nDims(ne0, ne1 int64) []int64 {
	if ne1 == 1 {
		return []int64{ne0}
	}
	return []int64{ne0, ne1}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// WriteDat writes m as llama-imatrix --in-file FILE -c CHUNK --output-format dat
// writes it (save_imatrix_legacy), byte for byte: the entries with any data, in name
// order, each with its call count (its largest token count over the chunk size,
// rounded up) and its sums as per-token means times that count (1 for an expert no
// token reached); then the chunk count and the last dataset.
func (m *Matrix) WriteDat(w io.Writer, chunk int32) error {
	if err := checkChunk(chunk); err != nil {
		return err
	}
	c := m.collect(chunk)
	bw := bufio.NewWriter(w)
	var keep []string
	for _, name := range c.names {
		if slices.ContainsFunc(c.counts[name], func(n int64) bool { return n != 0 }) {
			keep = append(keep, name)
		}
	}
	putInt32(bw, int32(len(keep)))
	for _, name := range keep {
		v, n := c.values[name], c.counts[name]
		ncall := int32((slices.Max(n) + int64(chunk) - 1) / int64(chunk))
		per := len(v) / len(n)
		tmp := make([]float32, len(v))
		for i, value := range v {
			count := float32(n[i/per])
			if count == 0 {
				value, count = 1, 1
			}
			tmp[i] = value / count * float32(ncall)
		}
		putDatEntry(bw, name, ncall, tmp)
	}
	ds := ""
	if len(m.Datasets) > 0 {
		ds = m.Datasets[len(m.Datasets)-1]
	}
	putDatTrailer(bw, c.lastChunk, ds)
	return bw.Flush()
}

// Filter keeps the entries whose name holds one of include's strings (all when include
// is empty) and none of exclude's, as llama-quantize's --include-weights and
// --exclude-weights do (substrings, not patterns); nil when none is left (llama-quantize
// then quantizes without a matrix).
func (m *Matrix) Filter(include, exclude []string) *Matrix {
	keep := func(name string) bool {
		for _, x := range exclude {
			if strings.Contains(name, x) {
				return false
			}
		}
		if len(include) == 0 {
			return true
		}
		for _, x := range include {
			if strings.Contains(name, x) {
				return true
			}
		}
		return false
	}
	f := *m
	f.Entries, f.raw, f.Names = map[string][]float32{}, map[string]rawEntry{}, nil
	for _, name := range m.Names {
		if keep(name) {
			f.Entries[name] = m.Entries[name]
			if r, ok := m.raw[name]; ok {
				f.raw[name] = r
			}
			f.Names = append(f.Names, name)
		}
	}
	if len(f.Names) == 0 {
		return nil
	}
	return &f
}
