package quant

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
	"github.com/apr-go/apr/lib/version"
)

// DefaultChunkElems is the default number of values per work item: 1 MiB of F32.
const DefaultChunkElems = 1 << 18

func unsafeBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// plan is one tensor's conversion.
type plan struct {
	name     string
	shape    []int64
	from, to dtype.DType
	rowLen   int64
	elems    int64
	chunk    int // values per job, a multiple of both types' block sizes
	outBytes int64
	stats    bool
	limitExp uint32    // values of magnitude 2^exponent of this field and up are checked closely
	weights  []float32 // importance weights (one row per expert); chunks are then whole rows
}

// convert fills j.out (and j.acc) from j.in: decode to float32, refuse NaN and
// infinities, encode, refuse a scale or value that overflows its 16-bit float, and
// measure the error when asked.
func (p *plan) convert(j *job) error {
	j.acc = errAcc{}
	if p.from == dtype.BF16 && p.to == dtype.F16 && p.weights == nil && !p.stats {
		// A checkpoint's BF16 to F16 in one pass, when no value needs a close look.
		j.out = growBytes(j.out, elemBytes(p.to, j.n))
		if kernels.BF16ToF16Checked(j.out, j.in, p.limitExp) {
			return nil
		}
	}
	j.f32 = growF32(j.f32, j.n)
	x, err := decode(p.from, j.in, j.f32)
	if err != nil {
		return fmt.Errorf("tensor %q: decoding %v: %w", p.name, p.from, err)
	}
	j.out = growBytes(j.out, elemBytes(p.to, j.n))
	// One pass: quantize, and find whether a value needs a close look (NaN,
	// infinities, magnitudes near what the target holds).
	var big bool
	if p.weights != nil {
		if big = kernels.AnyAbsAtLeast(x, p.limitExp); !big {
			err = p.encodeWeighted(j.out, x, j.start)
		}
	} else {
		big, err = kernels.QuantizeChecked(p.to, j.out, x, p.limitExp)
	}
	if err == nil && big {
		if err := p.valueErr(x, j.start); err != nil {
			return err
		}
		if p.weights != nil { // large but within bounds
			err = p.encodeWeighted(j.out, x, j.start)
		} else {
			err = kernels.Quantize(p.to, j.out, x)
		}
	}
	if err != nil {
		return fmt.Errorf("tensor %q: encoding %v: %w", p.name, p.to, err)
	}
	if i := overflow(p.to, j.out); i >= 0 {
		return p.overflowErr(x, i, j.start)
	}
	if p.stats {
		j.deq = growF32(j.deq, j.n)
		if err := kernels.Dequantize(p.to, j.deq, j.out); err != nil {
			return fmt.Errorf("tensor %q: decoding %v for stats: %w", p.name, p.to, err)
		}
		j.acc.add(x, j.deq)
	}
	return nil
}

// valueErr looks at a chunk with large or non-finite values closely: NaN and
// infinities, then magnitudes beyond what the target holds.
func (p *plan) valueErr(x []float32, start int64) error {
	if i := firstNonFinite(x); i >= 0 {
		at := start + int64(i)
		what := "NaN"
		if !isNaN32(x[i]) {
			what = fmt.Sprint(x[i])
		}
		if p.from == dtype.F64 && what != "NaN" {
			what += " (after conversion from F64: beyond the F32 range, or infinite)"
		}
		return fmt.Errorf("tensor %q: %s at %s; NaN and infinite values cannot be quantized (the source model is damaged)",
			p.name, what, position(at, p.rowLen))
	}
	bound := maxMagnitude[p.to]
	if i := firstAbove(x, bound); i >= 0 {
		return fmt.Errorf("tensor %q: value %g at %s is beyond what %v holds (magnitudes up to %g: %s); not written",
			p.name, x[i], position(start+int64(i), p.rowLen), p.to, bound, limitWhy(p.to))
	}
	return nil
}

func limitWhy(t dtype.DType) string {
	switch t {
	case dtype.NVFP4:
		return "its E4M3 scales stop at 448, and ggml would write every larger value as ±2688"
	case dtype.Q1_0, dtype.Q2_0:
		return "its largest values are ± its F16 block scale, which stops at 65504"
	}
	if t.Info().Quantized() {
		return "its F16 block scale would overflow"
	}
	return "it would become infinite"
}

func isNaN32(v float32) bool { return v != v }

func (p *plan) overflowErr(x []float32, i int, start int64) error {
	bs := p.to.Info().BlockElems
	var amax float32
	for _, v := range x[i:min(i+bs, len(x))] {
		amax = max(amax, v, -v)
	}
	return fmt.Errorf("tensor %q: the %v block at %s (values up to %g in magnitude) needs a scale beyond the F16 range (65504); not written",
		p.name, p.to, position(start+int64(i), p.rowLen), amax)
}

// Stream converts the tensors of another stream as it reads them; it is itself an
// stream.Stream, so it can feed a container writer, another transform or an exporter.
// Converted tensors are processed in chunks by a pool of workers, in bounded memory
// (chunk size x 2 x workers); the bytes do not depend on the number of workers.
//
// Signatures and licenses of the input are dropped (they covered the old values).
type Stream struct {
	src     stream.Stream
	opts    Options
	hdr     container.Header
	workers int
	chunk   int
	free    chan *job
	planned []Decision // from Options.Plan, in order
	i       int        // tensors returned so far
	cur     *convertReader
	curPlan *plan
	report  Report
	err     error
	closed  bool

	// Whether the importance matrix names a converted tensor, and the first
	// converted tensor, for the error when it names none.
	imatrixMatched bool
	firstConverted string
}

// New returns a Stream that converts src as o says. With o.Plan set it decides every
// tensor first and returns the first error (a row length the type cannot hold, a
// quantized source) before anything is read.
func New(src stream.Stream, o Options) (*Stream, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Plan == nil && src.Header().Table != nil {
		// The input's tensor table (a stream written by a producer that knew its
		// tensors) is the plan a file's index would be: every decision up front, and
		// the output's own table known before its first tensor.
		o.Plan = src.Header().Table
	}
	s := &Stream{src: src, opts: o, workers: o.Workers, chunk: o.ChunkElems}
	if s.workers == 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	if s.chunk == 0 {
		s.chunk = DefaultChunkElems
	}
	s.chunk = (s.chunk + 255) / 256 * 256
	s.free = make(chan *job, 2*s.workers+1)
	for range cap(s.free) {
		s.free <- &job{}
	}
	if err := o.setModel(src.Header()); err != nil {
		return nil, err
	}
	// The output's header: the --override-kv keys, then --prune-layers' block_count,
	// as llama-quantize sets them.
	h := src.Header()
	if err := o.applyKVOverrides(&h); err != nil {
		return nil, err
	}
	pr, err := o.applyPrune(&h)
	if err != nil {
		return nil, err
	}
	if err := o.checkOverriddenHparams(h); err != nil {
		return nil, err
	}
	if pr != nil {
		s.src = &prunedStream{Stream: src, p: pr}
	}
	s.opts = o
	s.report = Report{Type: o.Type.String()}
	counts, sources := map[string]any{}, map[string]any{}
	fallbacks := 0
	for _, t := range o.Plan {
		d, err := o.Decide(t)
		if err != nil {
			return nil, err
		}
		s.matched(t.Name, d)
		s.planned = append(s.planned, d)
		counts[d.To.String()] = inc(counts[d.To.String()])
		sources[d.From.String()] = inc(sources[d.From.String()])
		if d.Fallback {
			fallbacks++
		}
	}
	h.Flags &^= container.FlagSigned | container.FlagLicensed
	if o.Type.Info().Quantized() {
		h.Flags |= container.FlagQuantized
	} else if o.Type == dtype.F32 {
		h.Flags &^= container.FlagQuantized
	}
	if o.Plan != nil && o.Imatrix != nil && !s.imatrixMatched {
		return nil, o.imatrixUnmatched(s.firstConverted)
	}
	if o.Plan != nil {
		h.Flags &^= container.FlagQuantized
		for _, d := range s.planned {
			if d.To.Info().Quantized() {
				h.Flags |= container.FlagQuantized
			}
		}
	}
	prov := map[string]any{}
	maps.Copy(prov, h.Metadata.Provenance)
	producer := o.Producer
	if producer == "" {
		producer = version.Producer
	}
	selection := "llama.cpp" // 2-D+ tensors named *weight, except norms and the tensors llama.cpp keeps
	switch {
	case o.Type == dtype.F32:
		selection = "every float tensor"
	case o.Pure:
		selection = "pure" // every 2-D+ float tensor
	}
	rules := map[string]any{"selection": selection, "pure": o.Pure, "allow_requantize": o.AllowRequantize,
		"method": "ggml reference quantizers, no importance matrix"}
	if o.Imatrix != nil {
		rules["method"] = "ggml quantizers weighted by an importance matrix (llama-quantize --imatrix)"
	}
	if len(o.Include) > 0 {
		rules["include"] = toAny(o.Include)
	}
	if len(o.Exclude) > 0 {
		rules["exclude"] = toAny(o.Exclude)
	}
	typ := o.Type.String()
	if o.Copy {
		typ = "COPY"
		rules["selection"] = "none (COPY)"
		if m := llmFromHeader(src.Header(), nil); m != nil && !m.fromCheckpoint {
			ft, err := copyFileType(src.Header(), o.KVOverrides)
			if err != nil {
				return nil, err
			}
			rules["preset"] = typ // laid out as llama-quantize writes COPY
			rules["file_type"] = int64(ft)
		}
	} else if o.llm != nil {
		typ = strings.ToUpper(o.Preset) // llama-quantize's file type, e.g. Q4_K_M
		if !o.Pure {
			rules["selection"] = "llama.cpp, with llama-quantize's per-tensor rules of " + typ
		}
	}
	if o.llm != nil || llamaQuantizeLayout(o.Type, src.Header()) {
		rules["preset"] = typ // the export is laid out as llama-quantize writes this file type
	}
	q := map[string]any{"type": typ, "producer": producer, "rules": rules}
	if o.Imatrix != nil {
		q["imatrix"] = o.imatrixProvenance()
	}
	if len(o.PruneLayers) > 0 {
		layers := make([]any, len(o.PruneLayers))
		for i, l := range o.PruneLayers {
			layers[i] = int64(l)
		}
		q["prune_layers"] = layers
	}
	if len(o.KVOverrides) > 0 {
		specs := make([]any, len(o.KVOverrides))
		for i, kv := range o.KVOverrides {
			specs[i] = kv.Spec
		}
		q["override_kv"] = specs
	}
	if o.Plan != nil {
		q["tensor_types"] = counts
		q["source_dtypes"] = sources
		q["fallbacks"] = int64(fallbacks)
	}
	prov["quantization"] = q
	h.Metadata.Provenance = prov
	h.Table = nil // the input's dtypes; the output's are known only with a plan
	if o.Plan != nil {
		h.Table = make([]container.TensorInfo, len(s.planned))
		for i, d := range s.planned {
			t := o.Plan[i]
			h.Table[i] = container.TensorInfo{Name: t.Name, DType: d.To, Shape: slices.Clone(t.Shape)}
		}
	}
	s.hdr = h
	return s, nil
}

// setModel finds the language model a preset's rules apply to (o.llm), and from the
// plan whether it has output.weight. A preset of a vision projector is refused:
// llama-quantize's rules for one are not apr's yet.
func (o *Options) setModel(h container.Header) error {
	_, o.ggufForm = h.Metadata.Extra[gguf.MetadataKey]
	o.lm = llmFromHeader(h, o.KVOverrides) != nil
	o.projector = ggufArchitecture(h) == "clip"
	if _, ok := lookupPreset(o.Preset); !ok {
		return nil
	}
	if o.projector {
		return fmt.Errorf("%s is a llama-quantize preset, which apr does not apply to a vision projector (general.architecture clip) yet: "+
			"use f32, f16, bf16 or q8_0, the types llama.cpp's converter writes of one", o.Preset)
	}
	if o.llm = llmFromHeader(h, o.KVOverrides); o.llm != nil {
		o.llm.imatrix = o.Imatrix != nil
	}
	if o.llm != nil && o.Plan != nil {
		o.llm.hasOutput, o.llm.outputKnown = false, true
		for _, t := range o.Plan {
			o.llm.hasOutput = o.llm.hasOutput || t.Name == "output.weight"
		}
	}
	return nil
}

func inc(v any) any {
	n, _ := v.(int64)
	return n + 1
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// Header is the input's header with the quantization provenance added, signature and
// license flags removed, and the quantized flag set as the output needs.
func (s *Stream) Header() container.Header { return s.hdr }

// Blocks returns nothing: the input's signatures and licenses do not cover the
// converted values.
func (s *Stream) Blocks() []container.Block { return nil }

// Report returns the per-tensor report so far (complete after Next returned io.EOF).
func (s *Stream) Report() *Report {
	r := s.report
	r.Tensors = slices.Clone(r.Tensors)
	r.total()
	return &r
}

// Next returns the next tensor, converted or as it is.
func (s *Stream) Next() (container.TensorInfo, io.Reader, error) {
	if s.err != nil {
		return container.TensorInfo{}, nil, s.err
	}
	if s.closed {
		return container.TensorInfo{}, nil, errors.New("quant: Next after Close")
	}
	if err := s.endTensor(); err != nil {
		s.err = err
		return container.TensorInfo{}, nil, err
	}
	t, r, err := s.src.Next()
	if err == io.EOF {
		if s.planned != nil && s.i != len(s.planned) {
			s.err = fmt.Errorf("the input has %d tensors, its index listed %d", s.i, len(s.planned))
			return container.TensorInfo{}, nil, s.err
		}
		if m := s.opts.llm; m != nil {
			if s.err = m.checkEnd(); s.err != nil {
				return container.TensorInfo{}, nil, s.err
			}
		}
		if s.opts.Imatrix != nil && !s.imatrixMatched { // decided tensor by tensor
			s.err = s.opts.imatrixUnmatched(s.firstConverted)
			return container.TensorInfo{}, nil, s.err
		}
		return t, r, err
	}
	if err != nil {
		s.err = err
		return t, r, err
	}
	d, err := s.decide(t)
	if err != nil {
		s.err = err
		return container.TensorInfo{}, nil, err
	}
	s.i++
	in, err := t.RawSize()
	if err != nil {
		s.err = tensor.Wrap(t.Name, err)
		return container.TensorInfo{}, nil, s.err
	}
	ts := TensorStats{Name: t.Name, Shape: slices.Clone(t.Shape), From: d.From.String(), To: d.To.String(),
		Converted: d.Converted(), Fallback: d.Fallback, Reason: d.Reason, BytesBefore: in, BytesAfter: in}
	ts.Elems, _ = dtype.Elems(t.Shape)
	ts.BitsPerWeight = bitsPerWeight(d.To)
	if !d.Converted() {
		if s.opts.Stats {
			ts.RMSError, ts.MaxError, ts.RelRMSError = new(float64), new(float64), new(float64)
		}
		s.report.Tensors = append(s.report.Tensors, ts)
		return t, r, nil
	}
	out := container.TensorInfo{Name: t.Name, DType: d.To, Shape: slices.Clone(t.Shape)}
	ob, err := out.RawSize()
	if err != nil {
		s.err = fmt.Errorf("tensor %q: as %v: %w", t.Name, d.To, err)
		return container.TensorInfo{}, nil, s.err
	}
	ts.BytesAfter = ob
	if d.Fallback && s.opts.Warn != nil {
		s.opts.Warn(fmt.Sprintf("tensor %q: %v instead of %v: %s", t.Name, d.To, s.opts.Type, d.Reason))
	}
	p := &plan{name: t.Name, shape: out.Shape, from: d.From, to: d.To, rowLen: rowLen(t.Shape),
		elems: ts.Elems, chunk: s.chunk, outBytes: ob, stats: s.opts.Stats, limitExp: limitExp(maxMagnitude[d.To])}
	if d.weights != nil && d.To.Info().Quantized() && !ignoresWeights(d.To) {
		p.weights, p.chunk = d.weights, wholeRows(s.chunk, p.rowLen)
	}
	s.report.Tensors = append(s.report.Tensors, ts)
	s.cur, s.curPlan = s.startConvert(p, r), p
	return out, s.cur, nil
}

// decide uses the plan when there is one, checking that the stream matches it.
func (s *Stream) decide(t container.TensorInfo) (Decision, error) {
	if s.planned == nil {
		d, err := s.opts.Decide(t)
		s.matched(t.Name, d)
		return d, err
	}
	if s.i >= len(s.planned) {
		return Decision{}, fmt.Errorf("tensor %q: not in the input's index (%d tensors)", t.Name, len(s.planned))
	}
	want := s.opts.Plan[s.i]
	if want.Name != t.Name || want.DType != t.DType || !slices.Equal(want.Shape, t.Shape) {
		return Decision{}, fmt.Errorf("tensor %d is %q %v %v, the input's index says %q %v %v",
			s.i, t.Name, t.DType, t.Shape, want.Name, want.DType, want.Shape)
	}
	return s.planned[s.i], nil
}

// matched notes whether the importance matrix has an entry for a converted tensor.
func (s *Stream) matched(name string, d Decision) {
	if s.opts.Imatrix == nil || !d.Converted() {
		return
	}
	if s.firstConverted == "" {
		s.firstConverted = name
	}
	if _, ok := s.opts.Imatrix.Entries[name]; ok {
		s.imatrixMatched = true
	}
}

// endTensor finishes the tensor being converted and records its error measures.
func (s *Stream) endTensor() error {
	if s.cur == nil {
		return nil
	}
	c := s.cur
	s.cur = nil
	if err := c.finish(); err != nil {
		return err
	}
	if s.opts.Stats && len(s.report.Tensors) > 0 {
		ts := &s.report.Tensors[len(s.report.Tensors)-1]
		ts.setError(c.acc)
	}
	return nil
}

// Close stops any conversion in progress and closes the input stream.
func (s *Stream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cur != nil {
		s.cur.abort()
		s.cur = nil
	}
	return s.src.Close()
}

// Quantize converts src to an APR v2 stream on dst (writer options such as
// compression go to the container writer) and returns the report. On error the
// output is incomplete; callers write to a temporary file.
func Quantize(dst io.Writer, src stream.Stream, o Options, wopts ...container.Option) (*Report, error) {
	s, err := New(src, o)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := stream.Write(dst, s, wopts...); err != nil {
		if s.cur != nil && s.cur.err != nil {
			return nil, s.cur.err // the conversion's error; names the tensor and the value
		}
		return nil, err
	}
	return s.Report(), nil
}
