package quant

import (
	"fmt"
	"slices"

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
	if to.Info().Quantized() && kernels.CanQuantize(to) && !kernels.CanQuantizeWeighted(to) && !ignoresWeights(to) {
		return nil, "", fmt.Errorf("tensor %q: an importance matrix cannot weight %v", t.Name, to)
	}
	if to.Info().Quantized() && !ignoresWeights(to) {
		if err := o.zeroImportances(t, w); err != nil {
			return nil, "", err
		}
	}
	return w, "; importance-weighted", nil
}

// zeroImportances refuses an entry whose weights for the whole tensor, or for one
// expert of a 3-D tensor, are all zero: no calibration token reached it (b4747's
// llama-imatrix writes zeros for an expert no token was routed to). Weighted by
// them, ggml's quantizers give every block of it NaN scales (Q2_K, Q4_K, Q5_K in
// b4747, which llama-quantize then refuses) or zeros (the others, and later ggml);
// later llama-imatrix versions leave such an entry out and store 1s for an expert
// without data. Zeros in part of a row are ggml's to handle, as it does.
func (o *Options) zeroImportances(t container.TensorInfo, w []float32) error {
	n, row := experts(t.Shape), int(rowLen(t.Shape))
	for e := range int(n) {
		if slices.ContainsFunc(w[e*row:(e+1)*row], func(v float32) bool { return v != 0 }) {
			continue
		}
		which := ""
		if len(t.Shape) == 3 {
			which = fmt.Sprintf(" for expert %d of %d", e, n)
		}
		return fmt.Errorf("tensor %q: its importance weights in %s are all zero%s (no calibration token reached it): weighted by them, "+
			"ggml's quantizers give its blocks NaN scales (q2_k, q4_k, q5_k; llama-quantize b4747 then stops) or zeros; "+
			"recompute the matrix (later llama-imatrix versions leave such an entry out, and store 1s for an expert without data)",
			t.Name, o.Imatrix.File, which)
	}
	return nil
}

// imatrixUnmatched is the error for an importance matrix whose entries name none of
// the converted tensors (first is one of them, "" when none is converted).
// llama-quantize then warns once per tensor ("did not find weights") and still
// records the matrix in quantize.imatrix.*, so the file claims an importance-weighted
// quantization that weighted nothing; apr refuses it.
func (o *Options) imatrixUnmatched(first string) error {
	m := o.Imatrix
	example := ""
	if len(m.Names) > 0 {
		example = fmt.Sprintf(" (its %d entries are named like %q)", len(m.Names), m.Names[0])
	}
	if first == "" {
		return fmt.Errorf("the importance matrix %s%s weights nothing: no tensor is converted", m.File, example)
	}
	return fmt.Errorf("the importance matrix %s%s has no entry for any tensor that is converted (such as %q): it was made for another model, "+
		"and the file would claim an importance-weighted quantization that weighted nothing", m.File, example, first)
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
	n := len(m.Entries)
	if o.imatrixEntries > 0 {
		n = o.imatrixEntries
	}
	r := map[string]any{"file": m.File, "entries_count": int64(n)}
	if m.Dataset != "" {
		r["dataset"] = m.Dataset
	}
	if m.Chunks > 0 {
		r["chunks_count"] = int64(m.Chunks)
	}
	return r
}
