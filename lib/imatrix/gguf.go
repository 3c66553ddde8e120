package imatrix

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/apr-go/apr/lib/gguf"
)

// The keys of llama-imatrix's GGUF form (common/imatrix-loader.h).
const (
	KeyDatasets   = "imatrix.datasets"
	KeyChunkCount = "imatrix.chunk_count"
	KeyChunkSize  = "imatrix.chunk_size"
)

// ggufLimits bound the header of an imatrix GGUF: two tensors an entry, a few keys,
// dataset names of file-name size.
var ggufLimits = gguf.Limits{
	MaxTensors:     2 * MaxEntries,
	MaxKVs:         1 << 10,
	MaxStringLen:   MaxDatasetLen,
	MaxArrayLen:    1 << 12,
	MaxArrayDepth:  1,
	MaxHeaderBytes: 32 << 20,
}

// readGGUF reads llama-imatrix's GGUF form as today's llama-quantize loads it
// (common_imatrix_load, then load_imatrix in tools/quantize): the pairs NAME.in_sum2
// and NAME.counts (both F32; other tensors are ignored), each entry's values its sums
// divided by its expert's count (1 where the count is 0), and the three imatrix.*
// keys, without which llama-quantize refuses the file. Tensor data is read in offset
// order as it streams in, each size checked against the caps and the bytes left.
func readGGUF(r *reader) (*Matrix, error) {
	h, err := ggufLimits.ReadHeader(r.r)
	if err != nil {
		var ge *gguf.Error
		if errors.As(err, &ge) {
			ge.Path = r.name
			return nil, fmt.Errorf("%w (%w)", ge, ErrFormat)
		}
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	r.off = h.DataOffset
	m := &Matrix{Entries: map[string][]float32{}, raw: map[string]rawEntry{}, GGUF: true}
	if err := m.ggufKeys(r, h); err != nil {
		return nil, err
	}
	type pair struct{ sums, counts int }
	pairs := map[string]*pair{}
	for i, t := range h.Tensors {
		name, isSums := strings.CutSuffix(t.Name, ".in_sum2")
		if !isSums {
			var isCounts bool
			if name, isCounts = strings.CutSuffix(t.Name, ".counts"); !isCounts {
				continue
			}
		}
		if name == "" {
			continue
		}
		p := pairs[name]
		if p == nil {
			p = &pair{-1, -1}
			pairs[name] = p
		}
		if isSums {
			p.sums = i
		} else {
			p.counts = i
		}
	}
	if len(pairs) == 0 {
		return nil, r.headerErr("no entries (no NAME.in_sum2 and NAME.counts tensors)")
	}
	for _, name := range slices.Sorted(maps.Keys(pairs)) {
		if p := pairs[name]; p.sums < 0 || p.counts < 0 {
			return nil, r.headerErr("entry %q has only one of %q and %q", name, name+".in_sum2", name+".counts")
		}
	}
	// the data, in offset order
	order := make([]int, 0, 2*len(pairs))
	for _, p := range pairs {
		order = append(order, p.sums, p.counts)
	}
	slices.SortFunc(order, func(a, b int) int { return int(h.Tensors[a].Offset - h.Tensors[b].Offset) })
	data := make(map[int][]float32, len(order))
	for _, i := range order {
		t := &h.Tensors[i]
		at := h.DataOffset + t.Offset
		if t.Type != 0 { // GGML_TYPE_F32
			return nil, r.errf(at, "tensor %q is %v; llama-imatrix's sums and counts are F32", t.Name, t.Type)
		}
		n, err := t.Elems()
		if err != nil || n < 1 || n > MaxValues {
			return nil, r.errf(at, "tensor %q: dims %v (want 1 to %d values, MaxValues)", t.Name, t.Dims, MaxValues)
		}
		if at < r.off {
			return nil, r.errf(at, "tensor %q overlaps the tensor before it", t.Name)
		}
		if err := r.skip(at - r.off); err != nil {
			return nil, err
		}
		if data[i], err = r.values(t.Name, int(n)); err != nil {
			return nil, err
		}
	}
	if err := r.dataEnd(h.DataOffset + h.DataSize()); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(pairs)) {
		p := pairs[name]
		sums, fc := data[p.sums], data[p.counts]
		at := h.DataOffset + h.Tensors[p.counts].Offset
		if len(sums)%len(fc) != 0 {
			return nil, r.errf(at, "entry %q: %d sums are not a whole number of rows for its %d counts", name, len(sums), len(fc))
		}
		counts := make([]int64, len(fc))
		for j, c := range fc {
			if c < 0 || c > 1<<53 {
				return nil, r.errf(at+4*int64(j), "entry %q: count %d is %v (want 0 to 2^53)", name, j, c)
			}
			counts[j] = int64(math.Round(float64(c))) // std::lround
		}
		m.raw[name] = rawEntry{sums: sums, counts: counts}
		m.Entries[name] = normalize(sums, counts)
		m.Names = append(m.Names, name) // sorted, as llama.cpp's std::map keeps them
	}
	return m, nil
}

// dataEnd reads on to end, the end of the data section with the last tensor's padding:
// llama-quantize loads a matrix with the tensor data (gguf_init_from_file without
// no_alloc, ggml/src/gguf.cpp), which reads the whole section and refuses a file cut
// anywhere in it, its last padding bytes too.
func (r *reader) dataEnd(end int64) error {
	n, err := io.CopyN(io.Discard, r.r, end-r.off)
	r.off += n
	if err != nil && r.off < end {
		return r.errf(r.off, "the file ends inside its data section, which runs to offset %d with the last tensor's padding (llama-quantize reads it whole and refuses a shorter file)", end)
	}
	return err
}

// normalize is llama-quantize's load_imatrix for a GGUF: each expert's sums divided
// by its token count, in float32; 1 for an expert no token reached.
func normalize(sums []float32, counts []int64) []float32 {
	e := make([]float32, len(sums))
	ne0 := len(sums) / len(counts)
	for j, c := range counts {
		row, out := sums[j*ne0:(j+1)*ne0], e[j*ne0:(j+1)*ne0]
		if count := float32(c); count > 0 {
			for i, v := range row {
				out[i] = v / count
			}
		} else {
			for i := range out {
				out[i] = 1
			}
		}
	}
	return e
}

// ggufKeys reads the datasets and chunk counts; llama-quantize refuses a GGUF
// without all three keys ("missing imatrix metadata") and reads the counts as u32.
func (m *Matrix) ggufKeys(r *reader, h *gguf.Header) error {
	for _, key := range []string{KeyDatasets, KeyChunkCount, KeyChunkSize} {
		if _, ok := h.Get(key); !ok {
			return r.headerErr("no key %s: not llama-imatrix's metadata (llama-quantize refuses such a file)", key)
		}
	}
	v, _ := h.Get(KeyDatasets)
	ds, ok := v.Strings()
	if !ok {
		return r.headerErr("key %s is %s, want an array of strings", KeyDatasets, v.TypeName())
	}
	m.Datasets = ds
	if len(ds) > 0 {
		m.Dataset = ds[0]
	}
	for key, dst := range map[string]*int32{KeyChunkCount: &m.Chunks, KeyChunkSize: &m.ChunkSize} {
		v, _ := h.Get(key)
		n, _ := v.AsUint64()
		if v.Type() != gguf.TypeUint32 || n > math.MaxInt32 {
			return r.headerErr("key %s is %s %d, want a u32 up to 2^31-1", key, v.TypeName(), n)
		}
		*dst = int32(n)
	}
	return nil
}

// headerErr is an error about the GGUF header's keys or tensor list (gguf.Header
// keeps no offsets of its entries).
func (r *reader) headerErr(format string, a ...any) error {
	return fmt.Errorf("%s: GGUF header: %w: %s", r.name, ErrFormat, fmt.Sprintf(format, a...))
}

// skip discards n bytes (padding between tensors), checked against what is left.
func (r *reader) skip(n int64) error {
	if n == 0 {
		return nil
	}
	if err := r.need(n, "padding"); err != nil {
		return err
	}
	got, err := io.CopyN(io.Discard, r.r, n)
	r.off += got
	if err != nil {
		return r.errf(r.off, "the file ends inside padding (%d of %d bytes)", got, n)
	}
	return nil
}
