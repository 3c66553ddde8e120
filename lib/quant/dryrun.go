package quant

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/printable"
)

// DryRunReport is what a quantization would do, decided from the tensor list alone
// (llama-quantize --dry-run): each tensor's type, size and reason, and the totals.
type DryRunReport struct {
	Report
	// NeedsImatrix counts the tensors whose type needs an importance matrix that was
	// not given: the quantization itself would be refused.
	NeedsImatrix int `json:"needs_imatrix"`
	// Elems counts every value of the model (llama-quantize's bits per weight are
	// over all of them).
	Elems int64 `json:"elements"`
}

// DryRun decides every tensor of a model from its header and tensor list (o.Plan is
// set to it), as New would, without reading any data: the errors New would return
// are returned, except that a missing importance matrix is noted in the reasons (and
// counted) instead.
func DryRun(h container.Header, tensors []container.TensorInfo, o Options) (*DryRunReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Plan = tensors
	if err := o.setModel(h); err != nil { // the input's hyperparameters, with the overrides llama.cpp's loader takes
		return nil, err
	}
	if err := o.applyKVOverrides(&h); err != nil {
		return nil, err
	}
	r := &DryRunReport{Report: Report{Type: o.Type.String()}}
	for _, t := range tensors { // bits per weight are over the whole input, pruned layers too, as llama-quantize's
		elems, _ := dtype.Elems(t.Shape)
		r.Elems += elems
	}
	if _, err := o.applyPrune(&h); err != nil {
		return nil, err
	}
	tensors = o.Plan
	matched := o.Imatrix == nil
	first := ""
	for _, t := range tensors {
		d, err := o.decide(t, true)
		if err != nil {
			return nil, err
		}
		before, err := t.RawSize()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		after := before
		if d.Converted() {
			out := container.TensorInfo{Name: t.Name, DType: d.To, Shape: t.Shape}
			if after, err = out.RawSize(); err != nil {
				return nil, fmt.Errorf("tensor %q: as %v: %w", t.Name, d.To, err)
			}
			if first == "" {
				first = t.Name
			}
			if o.Imatrix != nil && o.Imatrix.Entries[t.Name] != nil {
				matched = true
			}
		}
		elems, _ := dtype.Elems(t.Shape)
		if d.NeedsImatrix {
			r.NeedsImatrix++
		}
		r.Tensors = append(r.Tensors, TensorStats{Name: t.Name, Shape: slices.Clone(t.Shape), Elems: elems, From: d.From.String(),
			To: d.To.String(), Converted: d.Converted(), Fallback: d.Fallback, Reason: d.Reason,
			BitsPerWeight: bitsPerWeight(d.To), BytesBefore: before, BytesAfter: after})
	}
	if !matched {
		return nil, o.imatrixUnmatched(first)
	}
	r.total()
	return r, nil
}

// WriteTable prints the plan: one line per tensor (name, shape, type before and
// after, sizes, reason), then the sizes of the model's tensor data before and after
// with their bits per weight, as llama-quantize's summary gives them.
func (r *DryRunReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tSHAPE\tFROM\tTO\tBEFORE\tAFTER\tREASON")
	for _, t := range r.Tensors {
		to := t.To
		if !t.Converted {
			to = "="
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable.String(t.Name), shapeString(t.Shape), t.From, to,
			size(t.BytesBefore), size(t.BytesAfter), printable.String(t.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tt := r.Totals
	bpw := func(n int64) float64 {
		if r.Elems == 0 {
			return 0
		}
		return float64(n) * 8 / float64(r.Elems)
	}
	_, err := fmt.Fprintf(w, "model size = %8.2f MiB (%.2f BPW)\nquant size = %8.2f MiB (%.2f BPW)\n%d tensors, %d converted, %d fallbacks; %d bytes of tensor data\n",
		float64(tt.BytesBefore)/(1<<20), bpw(tt.BytesBefore), float64(tt.BytesAfter)/(1<<20), bpw(tt.BytesAfter),
		tt.Tensors, tt.Converted, tt.Fallbacks, tt.BytesAfter)
	if err == nil && r.NeedsImatrix > 0 {
		_, err = fmt.Fprintf(w, "warning: %d tensors need an importance matrix: the quantization itself will be refused without --imatrix FILE\n", r.NeedsImatrix)
	}
	return err
}

// WriteJSON writes the plan as one indented JSON document.
func (r *DryRunReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
