package quant

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/printable"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// TensorStats is one tensor of a Report.
type TensorStats struct {
	Name          string  `json:"name"`
	Shape         []int64 `json:"shape"`
	Elems         int64   `json:"elements"`
	From          string  `json:"from"` // source dtype ("" when unknown, as in Describe)
	To            string  `json:"to"`   // output dtype
	Converted     bool    `json:"converted"`
	Fallback      bool    `json:"fallback,omitempty"`
	Reason        string  `json:"reason,omitempty"`
	BitsPerWeight float64 `json:"bits_per_weight"` // of the output dtype
	BytesBefore   int64   `json:"bytes_before"`    // raw bytes of the source tensor (Describe: as F32)
	BytesAfter    int64   `json:"bytes_after"`
	// Error of the output values against the source values: root mean square,
	// RMS relative to the RMS of the source, and largest absolute difference. Absent
	// when not measured.
	RMSError    *float64 `json:"rms_error,omitempty"`
	RelRMSError *float64 `json:"rel_rms_error,omitempty"`
	MaxError    *float64 `json:"max_error,omitempty"`
}

func (t *TensorStats) setError(a errAcc) {
	if !a.measured {
		return
	}
	var rms, rel float64
	if a.n > 0 {
		rms = math.Sqrt(a.sumSq / float64(a.n))
		if a.srcSq > 0 {
			rel = math.Sqrt(a.sumSq / a.srcSq)
		}
	}
	t.RMSError, t.RelRMSError, t.MaxError = &rms, &rel, &a.maxAbs
}

// Totals sums a Report.
type Totals struct {
	Tensors     int            `json:"tensors"`
	Converted   int            `json:"converted"`
	Fallbacks   int            `json:"fallbacks"`
	BytesBefore int64          `json:"bytes_before"`
	BytesAfter  int64          `json:"bytes_after"`
	Types       map[string]int `json:"types"` // output dtype -> tensor count
	// BitsPerWeight is the mean over every float value of the output.
	BitsPerWeight float64 `json:"bits_per_weight"`
}

// Report describes a quantization run (or a quantized file) tensor by tensor. It
// marshals to JSON as is; WriteTable prints it for people.
type Report struct {
	Type    string        `json:"type,omitempty"` // the requested target type
	Tensors []TensorStats `json:"tensors"`
	Totals  Totals        `json:"totals"`
}

func (r *Report) total() {
	t := Totals{Types: map[string]int{}}
	var bits float64
	var elems int64
	for _, ts := range r.Tensors {
		t.Tensors++
		if ts.Converted {
			t.Converted++
		}
		if ts.Fallback {
			t.Fallbacks++
		}
		t.BytesBefore += ts.BytesBefore
		t.BytesAfter += ts.BytesAfter
		t.Types[ts.To]++
		if d, err := dtype.Parse(ts.To); err == nil && d.Info().Float {
			bits += float64(ts.BytesAfter) * 8
			elems += ts.Elems
		}
	}
	if elems > 0 {
		t.BitsPerWeight = bits / float64(elems)
	}
	r.Totals = t
}

func bitsPerWeight(t dtype.DType) float64 {
	i := t.Info()
	if i.BlockElems == 0 {
		return 0
	}
	return float64(i.BlockBytes*8) / float64(i.BlockElems)
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as an aligned table with a summary line.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENSOR\tSHAPE\tFROM\tTO\tBPW\tBEFORE\tAFTER\tRMS ERR\tREL RMS\tMAX ERR")
	for _, t := range r.Tensors {
		to := t.To
		if t.Fallback {
			to += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\n", printable.String(t.Name), shapeString(t.Shape), dash(t.From), to,
			t.BitsPerWeight, size(t.BytesBefore), size(t.BytesAfter), num(t.RMSError), pct(t.RelRMSError), num(t.MaxError))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tt := r.Totals
	ratio := 0.0
	if tt.BytesAfter > 0 {
		ratio = float64(tt.BytesBefore) / float64(tt.BytesAfter)
	}
	var types []string
	for _, k := range slices.Sorted(mapKeys(tt.Types)) {
		types = append(types, fmt.Sprintf("%s %d", k, tt.Types[k]))
	}
	_, err := fmt.Fprintf(w, "%d tensors, %d converted (%s), %s -> %s (%.2fx), %.2f bits per weight\n",
		tt.Tensors, tt.Converted, strings.Join(types, ", "), size(tt.BytesBefore), size(tt.BytesAfter), ratio, tt.BitsPerWeight)
	if err == nil && tt.Fallbacks > 0 {
		_, err = fmt.Fprintf(w, "* %d of them use a fallback type: their rows are not a whole number of %s blocks\n", tt.Fallbacks, r.Type)
	}
	return err
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func shapeString(s []int64) string {
	if len(s) == 0 {
		return "scalar"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g", *p)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g%%", *p*100)
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Describe reports the tensors of a file from its index alone (for `apr-decode
// inspect --quantization`): output type, bits per weight, stored size and the size
// the float tensors would have as F32 (in BytesBefore). Source dtypes and errors
// are unknown without the source (see Compare); Type is taken from the file's
// quantization provenance when it has one.
func Describe(info *container.Info) *Report {
	r := &Report{}
	if info.Metadata != nil {
		if q, ok := info.Metadata.Provenance["quantization"].(map[string]any); ok {
			r.Type, _ = q["type"].(string)
		}
	}
	for _, e := range info.Tensors {
		n, _ := dtype.Elems(e.Shape)
		ts := TensorStats{Name: e.Name, Shape: slices.Clone(e.Shape), Elems: n, To: e.DType.String(),
			BitsPerWeight: bitsPerWeight(e.DType), BytesAfter: e.RawSize, BytesBefore: e.RawSize}
		if e.DType.Info().Float {
			ts.BytesBefore = 4 * n
			ts.Converted = e.DType != dtype.F32
		}
		r.Tensors = append(r.Tensors, ts)
	}
	r.total()
	return r
}

// Compare measures a converted model against its source, tensor by tensor, reading
// both streams in step in bounded memory (chunk of chunkElems values, 0 for the
// default). Both must hold the same tensor names and shapes in the same order.
func Compare(src, out stream.Stream, chunkElems int) (*Report, error) {
	if chunkElems <= 0 {
		chunkElems = DefaultChunkElems
	}
	chunkElems = (chunkElems + 255) / 256 * 256
	r := &Report{}
	if q, ok := out.Header().Metadata.Provenance["quantization"].(map[string]any); ok {
		r.Type, _ = q["type"].(string)
	}
	var bufA, bufB []byte
	var fa, fb []float32
	for {
		ta, ra, errA := src.Next()
		tb, rb, errB := out.Next()
		if errA == io.EOF && errB == io.EOF {
			break
		}
		if errA != nil && errA != io.EOF {
			return nil, fmt.Errorf("source: %w", errA)
		}
		if errB != nil && errB != io.EOF {
			return nil, fmt.Errorf("converted: %w", errB)
		}
		if errA == io.EOF || errB == io.EOF {
			return nil, errors.New("the two models have different numbers of tensors")
		}
		if ta.Name != tb.Name || !slices.Equal(ta.Shape, tb.Shape) {
			return nil, fmt.Errorf("tensor %q %v of the source does not match tensor %q %v", ta.Name, ta.Shape, tb.Name, tb.Shape)
		}
		n, err := dtype.Elems(ta.Shape)
		if err != nil {
			return nil, tensor.Wrap(ta.Name, err)
		}
		before, _ := ta.RawSize()
		after, _ := tb.RawSize()
		ts := TensorStats{Name: ta.Name, Shape: slices.Clone(ta.Shape), Elems: n, From: ta.DType.String(), To: tb.DType.String(),
			Converted: ta.DType != tb.DType, BitsPerWeight: bitsPerWeight(tb.DType), BytesBefore: before, BytesAfter: after}
		decodable := kernels.CanDequantize
		if ta.DType.Info().Float && tb.DType.Info().Float && decodable(ta.DType) && decodable(tb.DType) {
			var acc errAcc
			for start := int64(0); start < n; start += int64(chunkElems) {
				k := int(min(int64(chunkElems), n-start))
				bufA = growBytes(bufA, elemBytes(ta.DType, k))
				bufB = growBytes(bufB, elemBytes(tb.DType, k))
				if _, err := io.ReadFull(ra, bufA); err != nil {
					return nil, fmt.Errorf("source tensor %q: %w", ta.Name, eofErr(err))
				}
				if _, err := io.ReadFull(rb, bufB); err != nil {
					return nil, fmt.Errorf("converted tensor %q: %w", tb.Name, eofErr(err))
				}
				fa, fb = growF32(fa, k), growF32(fb, k)
				xa, err := decode(ta.DType, bufA, fa)
				if err != nil {
					return nil, fmt.Errorf("source tensor %q: %w", ta.Name, err)
				}
				xb, err := decode(tb.DType, bufB, fb)
				if err != nil {
					return nil, fmt.Errorf("converted tensor %q: %w", tb.Name, err)
				}
				acc.add(xa, xb)
			}
			ts.setError(acc)
		}
		// Drain both (the container reader verifies each tensor's checksum at its end).
		if _, err := io.Copy(io.Discard, ra); err != nil {
			return nil, fmt.Errorf("source tensor %q: %w", ta.Name, err)
		}
		if _, err := io.Copy(io.Discard, rb); err != nil {
			return nil, fmt.Errorf("converted tensor %q: %w", tb.Name, err)
		}
		r.Tensors = append(r.Tensors, ts)
	}
	r.total()
	return r, nil
}
