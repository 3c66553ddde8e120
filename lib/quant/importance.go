package quant

import (
	"fmt"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
)

// importanceOf looks up the importance matrix's entry of a tensor that is converted
// to type to, as llama_model_quantize_impl does: by the tensor's name, one weight per
// column of each expert's rows (ne[0]·ne[2] in ggml's terms). A tensor without an
// entry is quantized without one. An entry of another size is an error, except for
// token_embd.weight, which llama.cpp then quantizes without it. The reason says
// what was used, for reports.
func (o *Options) importanceOf(t container.TensorInfo, to dtype.DType) ([]float32, string, error) {
	w, ok := o.Imatrix.Entries[t.Name]
	if !ok {
		return nil, "", nil
	}
	if len(t.Shape) > 3 {
		return nil, "", fmt.Errorf("tensor %q: the importance matrix has an entry for this %d-D tensor; apr applies entries to 2-D and 3-D (expert) tensors only",
			t.Name, len(t.Shape))
	}
	want := rowLen(t.Shape) * experts(t.Shape)
	if int64(len(w)) != want {
		if t.Name == "token_embd.weight" {
			return nil, fmt.Sprintf("; importance matrix entry of %d values, not %d: quantized without it, as llama.cpp does", len(w), want), nil
		}
		return nil, "", fmt.Errorf("tensor %q (shape %v): the importance matrix %s has %d values for it, want %d (one per column%s); "+
			"it was made for another model", t.Name, t.Shape, o.Imatrix.File, len(w), want, expertsNote(t.Shape))
	}
	if to.Info().Quantized() && !kernels.CanQuantizeWeighted(to) {
		return nil, "", fmt.Errorf("tensor %q: an importance matrix cannot weight %v", t.Name, to)
	}
	return w, "; importance-weighted", nil
}

// experts is the number of matrices a tensor stacks (ggml's ne[2]): 1 for 2-D.
func experts(shape []int64) int64 {
	if len(shape) == 3 {
		return shape[0]
	}
	return 1
}

func expertsNote(shape []int64) string {
	if len(shape) == 3 {
		return fmt.Sprintf(" of each of %d experts", shape[0])
	}
	return ""
}

// encodeWeighted quantizes the whole rows x (starting at value start of the tensor)
// into out with each row's expert's importance weights.
func (p *plan) encodeWeighted(out []byte, x []float32, start int64) error {
	rowBytes := elemBytes(p.to, int(p.rowLen))
	rowsPerExpert := p.elems / p.rowLen / int64(len(p.weights)/int(p.rowLen))
	for r := 0; r < len(x)/int(p.rowLen); r++ {
		e := (start/p.rowLen + int64(r)) / rowsPerExpert
		qw := p.weights[e*p.rowLen : (e+1)*p.rowLen]
		if err := kernels.QuantizeWeighted(p.to, out[r*rowBytes:(r+1)*rowBytes], x[int64(r)*p.rowLen:int64(r+1)*p.rowLen], int(p.rowLen), qw); err != nil {
			return err
		}
	}
	return nil
}

// wholeRows rounds a chunk of values to whole rows (at least one): the weighted
// legacy quantizers measure the whole row, and each row takes its expert's weights.
func wholeRows(chunk int, rowLen int64) int {
	return int(max(1, int64(chunk)/rowLen) * rowLen)
}

// imatrixProvenance is what the provenance records of the matrix: llama-quantize's
// quantize.imatrix.* values (file as given, dataset, entries, chunks).
func (o *Options) imatrixProvenance() map[string]any {
	m := o.Imatrix
	r := map[string]any{"file": m.File, "entries_count": int64(len(m.Entries))}
	if m.Dataset != "" {
		r["dataset"] = m.Dataset
	}
	if m.Chunks > 0 {
		r["chunks_count"] = int64(m.Chunks)
	}
	return r
}
