package quant

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// randF32 returns n normal values (scale 0.02, like trained weights) from a fixed seed.
func randF32(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.02)
	}
	return v
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func tensorF32(name string, shape []int64, v []float32) tensor.Tensor {
	return tensor.Tensor{Name: name, DType: dtype.F32, Shape: shape, Data: f32Bytes(v)}
}

// encode turns any-dtype values (given as float32) into a tensor of dtype t.
func tensorAs(t *testing.T, name string, d dtype.DType, shape []int64, v []float32) tensor.Tensor {
	t.Helper()
	var b []byte
	if d == dtype.F64 {
		b = make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(float64(x)))
		}
	} else {
		b = make([]byte, elemBytes(d, len(v)))
		if err := kernels.Quantize(d, b, v); err != nil {
			t.Fatal(err)
		}
	}
	return tensor.Tensor{Name: name, DType: d, Shape: shape, Data: b}
}

// run quantizes tensors held in memory and returns the output file bytes.
func run(t *testing.T, o Options, tensors ...tensor.Tensor) ([]byte, *Report, error) {
	t.Helper()
	src := stream.FromTensors(modeltype.Custom, container.Metadata{Name: "test", CreatedAt: "2026-01-01T00:00:00Z"}, tensors)
	var out bytes.Buffer
	rep, err := Quantize(&out, src, o)
	return out.Bytes(), rep, err
}

type readTensor struct {
	container.TensorInfo
	data []byte
}

// readAll reads an APR v2 file back through the verifying stream reader.
func readAll(t *testing.T, b []byte) (container.FileHeader, map[string]readTensor) {
	t.Helper()
	r, err := container.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := map[string]readTensor{}
	for {
		tt, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tt)
		if err != nil {
			t.Fatal(err)
		}
		m[tt.Name] = readTensor{tt.TensorInfo, data}
	}
	return r.Header(), m
}

var allTargets = []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q5_1,
	dtype.Q2_K, dtype.Q3_K, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.NVFP4, dtype.Q1_0, dtype.Q2_0, dtype.F16, dtype.BF16}

// The converted bytes are exactly kernels.Quantize of the whole tensor (ggml's bytes),
// however the tensor is cut into chunks and whatever the number of workers.
func TestMatchesKernelsAndIsIndependentOfWorkers(t *testing.T) {
	rows, cols := 12, 512
	v := randF32(1, rows*cols)
	for _, target := range allTargets {
		want := make([]byte, elemBytes(target, len(v)))
		if err := kernels.Quantize(target, want, v); err != nil {
			t.Fatal(err)
		}
		var first []byte
		for _, cfg := range []struct{ workers, chunk int }{{1, 0}, {1, 256}, {2, 512}, {3, 768}, {8, 256}, {5, 1 << 20}} {
			out, _, err := run(t, Options{Type: target, Workers: cfg.workers, ChunkElems: cfg.chunk},
				tensorF32("blk.0.attn_q.weight", []int64{int64(rows), int64(cols)}, v))
			if err != nil {
				t.Fatalf("%v %+v: %v", target, cfg, err)
			}
			_, got := readAll(t, out)
			g := got["blk.0.attn_q.weight"]
			if g.DType != target || !bytes.Equal(g.data, want) {
				t.Fatalf("%v workers %d chunk %d: dtype %v, bytes differ from kernels.Quantize", target, cfg.workers, cfg.chunk, g.DType)
			}
			if first == nil {
				first = out
			} else if !bytes.Equal(first, out) {
				t.Fatalf("%v: output file differs with workers %d chunk %d", target, cfg.workers, cfg.chunk)
			}
		}
	}
}

func TestParseType(t *testing.T) {
	for _, name := range Types() {
		d, err := ParseType(strings.ToUpper(name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(d.String(), name) {
			t.Fatalf("%s parses to %v", name, d)
		}
		if d != dtype.F32 && !kernels.CanQuantize(d) && !kernels.NeedsWeights(d) {
			t.Fatalf("%v is a target but kernels cannot quantize it", d)
		}
	}
	for _, name := range []string{"mxfp4", "nvfp4", "q1_0", "q2_0", "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s"} {
		if !slices.Contains(Types(), name) {
			t.Fatalf("Types() %v lacks %s", Types(), name)
		}
	}
	for _, bad := range []string{"q8", "q8_1", "q8_k", "iq4_nl_4_4", "", "f64"} {
		if _, err := ParseType(bad); !errors.Is(err, ErrType) {
			t.Fatalf("ParseType(%q) = %v, want ErrType", bad, err)
		}
	}
}

// The scale offsets used to detect f16 overflow are inside each block and point at
// the d field: a block quantized from values of magnitude m has d close to m/range.
func TestHalfFieldsPointAtScales(t *testing.T) {
	for d, offs := range halfFields {
		info := d.Info()
		v := make([]float32, info.BlockElems)
		for i := range v {
			v[i] = float32(i%7) + 1 // positive values from 1 to 7
		}
		b := make([]byte, info.BlockBytes)
		var err error
		if kernels.NeedsWeights(d) {
			err = kernels.QuantizeWeighted(d, b, v, len(v), unitWeights(len(v)))
		} else {
			err = kernels.Quantize(d, b, v)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			if o+2 > info.BlockBytes {
				t.Fatalf("%v: offset %d outside the %d-byte block", d, o, info.BlockBytes)
			}
		}
		s := kernels.F16BitsToF32(binary.LittleEndian.Uint16(b[offs[0]:]))
		if !(s != 0 && math.Abs(float64(s)) < 8) {
			t.Fatalf("%v: half at offset %d is %v, not a scale for values 1..7", d, offs[0], s)
		}
	}
}

func TestRules(t *testing.T) {
	f := func(name string, shape ...int64) container.TensorInfo {
		return container.TensorInfo{Name: name, DType: dtype.F32, Shape: shape}
	}
	cases := []struct {
		o    Options
		t    container.TensorInfo
		want dtype.DType
		err  string
	}{
		{Options{Type: dtype.Q8_0}, f("blk.0.attn_q.weight", 64, 64), dtype.Q8_0, ""},
		{Options{Type: dtype.Q8_0}, f("blk.0.ffn_up_exps.weight", 4, 64, 64), dtype.Q8_0, ""},
		{Options{Type: dtype.Q8_0}, f("blk.0.attn_norm.weight", 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("blk.0.attn_q.bias", 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("output_norm.weight", 64, 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("blk.0.ffn_gate_inp.weight", 8, 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("position_embd.weight", 64, 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("blk.0.ssm_conv1d.weight", 64, 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("coefficients", 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, f("dense.0.kernel", 64, 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0, Pure: true}, f("dense.0.kernel", 64, 64), dtype.Q8_0, ""},
		{Options{Type: dtype.Q8_0, Pure: true}, f("coefficients", 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0, Include: []string{"coef*"}}, f("coefficients", 64), dtype.Q8_0, ""},
		{Options{Type: dtype.Q8_0, Include: []string{"*"}, Exclude: []string{"coef*"}}, f("coefficients", 64), dtype.F32, ""},
		{Options{Type: dtype.Q8_0, Exclude: []string{"blk.*.attn_*"}}, f("blk.0.attn_q.weight", 64, 64), dtype.F32, ""},
		{Options{Type: dtype.F16, Include: []string{"*"}}, f("intercept", 1), dtype.F16, ""},
		{Options{Type: dtype.F32}, container.TensorInfo{Name: "x", DType: dtype.Q4_0, Shape: []int64{32}}, dtype.F32, ""},
		{Options{Type: dtype.F32}, container.TensorInfo{Name: "x", DType: dtype.BF16, Shape: []int64{3}}, dtype.F32, ""},
		{Options{Type: dtype.F32, Exclude: []string{"x"}}, container.TensorInfo{Name: "x", DType: dtype.BF16, Shape: []int64{3}}, dtype.BF16, ""},
		{Options{Type: dtype.Q8_0, Pure: true}, container.TensorInfo{Name: "ids", DType: dtype.I32, Shape: []int64{64, 64}}, dtype.I32, ""},
		{Options{Type: dtype.Q8_0}, container.TensorInfo{Name: "a.weight", DType: dtype.Q8_0, Shape: []int64{4, 64}}, dtype.Q8_0, ""},
		// Row lengths.
		{Options{Type: dtype.Q8_0}, f("w.weight", 4, 100), 0, `tensor "w.weight": rows of 100 values`},
		{Options{Type: dtype.Q8_0, Include: []string{"*"}}, f("intercept", 1), 0, `tensor "intercept": rows of 1 values`},
		{Options{Type: dtype.Q4_K}, f("w.weight", 4, 96), dtype.Q5_0, ""},
		{Options{Type: dtype.Q5_K}, f("w.weight", 4, 96), dtype.Q5_1, ""},
		{Options{Type: dtype.Q6_K}, f("w.weight", 4, 96), dtype.Q8_0, ""},
		{Options{Type: dtype.Q2_K}, f("w.weight", 4, 96), dtype.Q4_0, ""},
		{Options{Type: dtype.Q3_K}, f("w.weight", 4, 100), dtype.F16, ""},
		{Options{Type: dtype.Q4_K}, f("w.weight", 4, 512), dtype.Q4_K, ""},
		{Options{Type: dtype.NVFP4}, f("w.weight", 4, 64), dtype.NVFP4, ""},
		{Options{Type: dtype.NVFP4}, f("w.weight", 4, 96), 0, `tensor "w.weight": rows of 96 values`},
		{Options{Type: dtype.Q1_0}, f("w.weight", 4, 384), dtype.Q1_0, ""},
		{Options{Type: dtype.Q1_0}, f("w.weight", 4, 64), 0, "128-value Q1_0 blocks"},
		{Options{Type: dtype.Q2_0}, f("w.weight", 4, 64), dtype.Q2_0, ""},
		{Options{Type: dtype.Q2_0}, f("w.weight", 4, 96), dtype.Q4_0, ""},
		{Options{Type: dtype.Q2_0}, f("w.weight", 4, 100), dtype.F16, ""},
		{Options{Type: dtype.Q1_0}, container.TensorInfo{Name: "a.weight", DType: dtype.Q2_0, Shape: []int64{4, 128}}, 0, "--allow-requantize"},
		{Options{Type: dtype.F32}, container.TensorInfo{Name: "a.weight", DType: dtype.NVFP4, Shape: []int64{4, 64}}, dtype.F32, ""},
		// Requantizing and undecodable sources.
		{Options{Type: dtype.Q8_0}, container.TensorInfo{Name: "a.weight", DType: dtype.Q4_0, Shape: []int64{4, 64}}, 0, "--allow-requantize"},
		{Options{Type: dtype.Q8_0, AllowRequantize: true}, container.TensorInfo{Name: "a.weight", DType: dtype.Q4_0, Shape: []int64{4, 64}}, dtype.Q8_0, ""},
		// f16 from a quantized tensor is refused too, as llama-quantize refuses it; f32 is apr's dequantization
		{Options{Type: dtype.F16}, container.TensorInfo{Name: "a.weight", DType: dtype.Q4_0, Shape: []int64{4, 64}}, 0, "requantizing from type q4_0 is disabled"},
		{Options{Type: dtype.F16, AllowRequantize: true}, container.TensorInfo{Name: "a.weight", DType: dtype.Q4_0, Shape: []int64{4, 64}}, dtype.F16, ""},
		{Options{Type: dtype.F32}, container.TensorInfo{Name: "a.weight", DType: dtype.Q4_0, Shape: []int64{4, 64}}, dtype.F32, ""},
		{Options{Type: dtype.Q8_0}, container.TensorInfo{Name: "a.weight", DType: dtype.F4, Shape: []int64{4, 64}}, 0, "cannot decode F4"},
	}
	for _, c := range cases {
		d, err := c.o.Decide(c.t)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %v with %+v: error %v, want %q", c.t.Name, c.t.Shape, c.o, err, c.err)
			}
			continue
		}
		if err != nil || d.To != c.want || d.Reason == "" {
			t.Errorf("%s %v %v with %+v: got %v (%s), %v; want %v", c.t.Name, c.t.DType, c.t.Shape, c.o, d.To, d.Reason, err, c.want)
		}
		if d.Fallback != (c.want != c.o.Type && c.want != c.t.DType && c.o.Type != dtype.F32 && c.want != dtype.F32) {
			t.Errorf("%s with %v: fallback %v", c.t.Name, c.o.Type, d.Fallback)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{{Type: dtype.Q8_1}, {Type: dtype.Q8_0, Include: []string{"["}}, {Type: dtype.Q8_0, Workers: -1}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestNonFiniteRefused(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, target := range []dtype.DType{dtype.Q8_0, dtype.Q4_K, dtype.F16, dtype.BF16} {
			v := randF32(2, 8*256)
			v[3*256+17] = bad
			_, _, err := run(t, Options{Type: target, Workers: 2, ChunkElems: 256},
				tensorF32("ok.weight", []int64{8, 256}, randF32(3, 8*256)),
				tensorF32("blk.3.ffn_down.weight", []int64{8, 256}, v))
			if err == nil || !strings.Contains(err.Error(), `tensor "blk.3.ffn_down.weight"`) || !strings.Contains(err.Error(), "row 3, column 17") {
				t.Fatalf("%v into %v: %v", bad, target, err)
			}
		}
	}
	// The check covers every position of a chunk, including an odd tail.
	v := randF32(4, 33*32)
	for _, i := range []int{0, 1, 2, 31, 1055} {
		w := slices.Clone(v)
		w[i] = float32(math.NaN())
		if got := firstNonFinite(w); got != i {
			t.Fatalf("NaN at %d found at %d", i, got)
		}
		if got := firstNonFinite(w[1:]); i > 0 && got != i-1 {
			t.Fatalf("misaligned: NaN at %d found at %d", i-1, got)
		}
	}
	for _, c := range []struct {
		v   float32
		exp uint32
		hit bool
	}{{1 << 18, limitExp(524032), true}, {262143, limitExp(524032), false}, {-1 << 19, limitExp(524032), true},
		{float32(math.MaxFloat32), 0x7F800000, false}, {float32(math.Inf(-1)), 0x7F800000, true}, {1e-30, 0x00800000, true}} {
		w := slices.Clone(v)
		w[77] = c.v
		if got := kernels.AnyAbsAtLeast(w[1:], c.exp); got != c.hit {
			t.Errorf("AnyAbsAtLeast(%g, %#x) = %v", c.v, c.exp, got)
		}
	}
	if got := firstNonFinite(v); got != -1 {
		t.Fatalf("finite values: %d", got)
	}
	// F64 values beyond the F32 range become infinite and are refused too.
	big := tensor.Tensor{Name: "wide.weight", DType: dtype.F64, Shape: []int64{1, 32}, Data: make([]byte, 8*32)}
	binary.LittleEndian.PutUint64(big.Data[8*5:], math.Float64bits(1e300))
	if _, _, err := run(t, Options{Type: dtype.Q8_0}, big); err == nil || !strings.Contains(err.Error(), "F64") || !strings.Contains(err.Error(), "column 5") {
		t.Fatalf("F64 1e300: %v", err)
	}
}

// unitWeights is n importance weights of 1.
func unitWeights(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

func TestScaleOverflowRefused(t *testing.T) {
	v := randF32(5, 4*256)
	v[2*256+40] = 3e38 // finite in F32, far beyond F16
	for _, target := range []dtype.DType{dtype.Q8_0, dtype.Q4_1, dtype.Q5_0, dtype.Q2_K, dtype.Q3_K, dtype.Q4_K, dtype.Q6_K,
		dtype.NVFP4, dtype.Q1_0, dtype.Q2_0, dtype.F16} {
		_, _, err := run(t, Options{Type: target}, tensorF32("big.weight", []int64{4, 256}, v))
		if err == nil || !strings.Contains(err.Error(), `tensor "big.weight"`) || !strings.Contains(err.Error(), "row 2") ||
			!strings.Contains(err.Error(), "not written") {
			t.Fatalf("%v: %v", target, err)
		}
	}
	// Near and beyond each type's largest magnitude: a value beyond it is refused; one
	// at it is either refused (its block's scale overflows: maxMagnitude is an upper
	// limit, not tight for every type) or written correctly, never written wrong.
	for target, bound := range maxMagnitude {
		if target == dtype.F32 || target == dtype.BF16 {
			continue
		}
		for _, c := range []struct {
			v      float32
			beyond bool
		}{{bound, false}, {-bound, false}, {math.Nextafter32(bound, float32(math.Inf(1))) * 1.0001, true}} {
			if c.beyond && bound == math.MaxFloat32 { // MXFP4: beyond is infinite, refused as such above
				continue
			}
			w := randF32(6, 256)
			w[100] = c.v
			name := "edge.weight"
			o := Options{Type: target}
			if o.needsImatrix(name, target, false) != nil {
				o.Imatrix = &imatrix.Matrix{File: "ones.dat", Entries: map[string][]float32{name: unitWeights(256)}, Names: []string{name}}
			}
			out, _, err := run(t, o, tensorF32(name, []int64{1, 256}, w))
			if err != nil {
				if !strings.Contains(err.Error(), "not written") || !strings.Contains(err.Error(), name) {
					t.Errorf("%v with %g: %v", target, c.v, err)
				}
				continue
			}
			if c.beyond {
				t.Errorf("%v with %g beyond %g: written", target, c.v, bound)
				continue
			}
			_, got := readAll(t, out)
			deq := make([]float32, 256)
			if err := kernels.Dequantize(target, deq, got[name].data); err != nil {
				t.Fatal(err)
			}
			want := c.v
			if target == dtype.Q1_0 { // every value becomes ± its block's mean magnitude
				var sum float32
				for _, x := range w[:128] {
					sum += float32(math.Abs(float64(x)))
				}
				want = float32(math.Copysign(float64(sum/128), float64(c.v)))
			}
			tol := 0.1
			if target == dtype.MXFP4 { // (1.5·2^e, 2^(e+1)) becomes 1.5·2^e, as in ggml
				tol = 0.25
			}
			if math.Abs(float64(deq[100]-want)) > tol*math.Abs(float64(want)) {
				t.Errorf("%v: %g written as %g, want %g", target, c.v, deq[100], want)
			}
		}
	}
	// 60000 fits F16; its Q8_0 scale (60000/127) fits too.
	w := randF32(6, 256)
	w[7] = 60000
	if _, _, err := run(t, Options{Type: dtype.F16}, tensorF32("ok.weight", []int64{1, 256}, w)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, Options{Type: dtype.Q8_0}, tensorF32("ok.weight", []int64{1, 256}, w)); err != nil {
		t.Fatal(err)
	}
}

// Source values of any float dtype are decoded to F32 before they are converted.
func TestSourceDtypes(t *testing.T) {
	v := randF32(7, 4*256)
	shape := []int64{4, 256}
	for _, src := range []dtype.DType{dtype.F64, dtype.F16, dtype.BF16, dtype.Q8_0, dtype.Q4_K} {
		in := tensorAs(t, "w.weight", src, shape, v)
		decoded := make([]float32, len(v))
		if src == dtype.F64 {
			copy(decoded, v)
		} else if err := kernels.Dequantize(src, decoded, in.Data); err != nil {
			t.Fatal(err)
		}
		for _, target := range []dtype.DType{dtype.F32, dtype.Q4_0, dtype.BF16} {
			if target == src {
				continue
			}
			out, _, err := run(t, Options{Type: target, AllowRequantize: true, ChunkElems: 256, Workers: 3}, in)
			if err != nil {
				t.Fatalf("%v -> %v: %v", src, target, err)
			}
			want := make([]byte, elemBytes(target, len(v)))
			if err := kernels.Quantize(target, want, decoded); err != nil {
				t.Fatal(err)
			}
			h, got := readAll(t, out)
			if g := got["w.weight"]; g.DType != target || !bytes.Equal(g.data, want) {
				t.Fatalf("%v -> %v: got %v, bytes equal %v", src, target, g.DType, bytes.Equal(g.data, want))
			}
			// Without a plan a quantized source keeps its flag (declaring a feature
			// the content does not use is allowed); quantized output needs it, and
			// F32 output dequantizes everything.
			q := h.Flags&container.FlagQuantized != 0
			if (target.Info().Quantized() && !q) || (target == dtype.F32 && q) {
				t.Fatalf("%v -> %v: quantized flag %v", src, target, q)
			}
		}
	}
}

func TestKeptTensorsAndMetadata(t *testing.T) {
	ids := tensor.Tensor{Name: "ids", DType: dtype.I32, Shape: []int64{3}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}}
	norm := tensorF32("blk.0.attn_norm.weight", []int64{64}, randF32(8, 64))
	w := tensorF32("blk.0.attn_k.weight", []int64{2, 64}, randF32(9, 128))
	tensors := []tensor.Tensor{ids, norm, w}
	var plan []container.TensorInfo
	for _, tt := range tensors {
		plan = append(plan, container.TensorInfo{Name: tt.Name, DType: tt.DType, Shape: tt.Shape})
	}
	out, rep, err := run(t, Options{Type: dtype.Q4_0, Plan: plan, Exclude: []string{"none"}, Producer: "apr-quant test"}, tensors...)
	if err != nil {
		t.Fatal(err)
	}
	h, got := readAll(t, out)
	if !bytes.Equal(got["ids"].data, ids.Data) || !bytes.Equal(got["blk.0.attn_norm.weight"].data, norm.Data) {
		t.Fatal("kept tensors changed")
	}
	if got["blk.0.attn_k.weight"].DType != dtype.Q4_0 {
		t.Fatalf("weight is %v", got["blk.0.attn_k.weight"].DType)
	}
	if h.Metadata.Name != "test" || h.Flags&container.FlagQuantized == 0 {
		t.Fatalf("metadata %q, flags %v", h.Metadata.Name, h.Flags)
	}
	q, ok := h.Metadata.Provenance["quantization"].(map[string]any)
	if !ok {
		t.Fatalf("provenance %v", h.Metadata.Provenance)
	}
	types, _ := q["tensor_types"].(map[string]any)
	sources, _ := q["source_dtypes"].(map[string]any)
	if q["type"] != "Q4_0" || q["producer"] != "apr-quant test" || toInt(types["Q4_0"]) != 1 || toInt(types["F32"]) != 1 ||
		toInt(types["I32"]) != 1 || toInt(sources["F32"]) != 2 {
		t.Fatalf("quantization provenance %v", q)
	}
	rules, _ := q["rules"].(map[string]any)
	if ex, _ := rules["exclude"].([]any); len(ex) != 1 || ex[0] != "none" {
		t.Fatalf("rules %v", rules)
	}
	if rep.Totals.Tensors != 3 || rep.Totals.Converted != 1 || rep.Totals.BytesAfter != 12+4*64+2*2*18 {
		t.Fatalf("totals %+v", rep.Totals)
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int8:
		return int64(x)
	case uint8:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}

// With a plan, errors come before any output; the stream must then match the plan.
func TestPlanFailsEarlyAndMustMatch(t *testing.T) {
	bad := container.TensorInfo{Name: "w.weight", DType: dtype.F32, Shape: []int64{2, 50}}
	src := stream.FromTensors(modeltype.Custom, container.Metadata{}, nil)
	if _, err := New(src, Options{Type: dtype.Q8_0, Plan: []container.TensorInfo{bad}}); err == nil || !strings.Contains(err.Error(), "w.weight") {
		t.Fatalf("plan error: %v", err)
	}
	plan := []container.TensorInfo{{Name: "other.weight", DType: dtype.F32, Shape: []int64{1, 32}}}
	_, _, err := run(t, Options{Type: dtype.Q8_0, Plan: plan}, tensorF32("w.weight", []int64{1, 32}, randF32(1, 32)))
	if err == nil || !strings.Contains(err.Error(), "index says") {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestStatsReport(t *testing.T) {
	w := randF32(10, 16*256)
	out, rep, err := run(t, Options{Type: dtype.Q4_0, Stats: true, Workers: 2, ChunkElems: 512},
		tensorF32("blk.0.ffn_up.weight", []int64{16, 256}, w), tensorF32("bias", []int64{4}, []float32{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	ts := rep.Tensors[0]
	if ts.RMSError == nil || ts.MaxError == nil || ts.RelRMSError == nil {
		t.Fatalf("no error measures: %+v", ts)
	}
	// Recompute the measures from the written bytes.
	_, got := readAll(t, out)
	deq := make([]float32, len(w))
	if err := kernels.Dequantize(dtype.Q4_0, deq, got["blk.0.ffn_up.weight"].data); err != nil {
		t.Fatal(err)
	}
	var ss, m float64
	for i := range w {
		d := float64(deq[i]) - float64(w[i])
		ss += d * d
		m = max(m, math.Abs(d))
	}
	if rms := math.Sqrt(ss / float64(len(w))); math.Abs(rms-*ts.RMSError) > 1e-12 || m != *ts.MaxError {
		t.Fatalf("rms %v max %v, report says %v %v", rms, m, *ts.RMSError, *ts.MaxError)
	}
	// Q4_0 of N(0, 0.02²) values: relative RMS error around 10%, never zero.
	if *ts.RelRMSError < 0.02 || *ts.RelRMSError > 0.2 {
		t.Fatalf("relative RMS error %v", *ts.RelRMSError)
	}
	if ts.BitsPerWeight != 4.5 || ts.BytesBefore != 16*256*4 || ts.BytesAfter != 16*8*18 || !ts.Converted {
		t.Fatalf("sizes %+v", ts)
	}
	if b := rep.Tensors[1]; b.Converted || *b.RMSError != 0 || b.To != "F32" {
		t.Fatalf("kept bias %+v", b)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != "Q4_0" || len(back.Tensors) != 2 || *back.Tensors[0].MaxError != *ts.MaxError || back.Totals.Types["Q4_0"] != 1 {
		t.Fatalf("JSON round trip: %s", js.String())
	}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"blk.0.ffn_up.weight", "16x256", "Q4_0", "4.50", "2 tensors, 1 converted"} {
		if !strings.Contains(tab.String(), s) {
			t.Fatalf("table lacks %q:\n%s", s, tab.String())
		}
	}
}

func TestCompareAndDescribe(t *testing.T) {
	w := randF32(11, 8*256)
	src := []tensor.Tensor{tensorF32("a.weight", []int64{8, 256}, w), tensorF32("b", []int64{3}, []float32{1, 2, 3})}
	out, rep, err := run(t, Options{Type: dtype.Q6_K, Stats: true}, src...)
	if err != nil {
		t.Fatal(err)
	}
	quantized, err := stream.Open(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(stream.FromTensors(modeltype.Custom, container.Metadata{}, src), quantized, 512)
	if err != nil {
		t.Fatal(err)
	}
	// Same values, summed in other groupings: equal up to rounding.
	if cmp.Type != "Q6_K" || math.Abs(*cmp.Tensors[0].RMSError-*rep.Tensors[0].RMSError) > 1e-12 || *cmp.Tensors[0].MaxError != *rep.Tensors[0].MaxError {
		t.Fatalf("Compare %+v, quantize report %+v", cmp.Tensors[0], rep.Tensors[0])
	}
	info, err := container.InspectStream(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	d := Describe(info)
	if d.Type != "Q6_K" || d.Tensors[0].To != "Q6_K" || d.Tensors[0].BitsPerWeight != 6.5625 || d.Tensors[0].BytesBefore != 8*256*4 ||
		d.Totals.BytesAfter != rep.Totals.BytesAfter {
		t.Fatalf("Describe %+v", d)
	}
	// Different tensor lists are an error.
	q2, _ := stream.Open(bytes.NewReader(out))
	if _, err := Compare(stream.FromTensors(modeltype.Custom, container.Metadata{}, src[:1]), q2, 0); err == nil {
		t.Fatal("Compare of different models: no error")
	}
}

func TestFallbackWarns(t *testing.T) {
	var warnings []string
	_, rep, err := run(t, Options{Type: dtype.Q6_K, Warn: func(s string) { warnings = append(warnings, s) }},
		tensorF32("w.weight", []int64{2, 96}, randF32(12, 192)))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"w.weight"`) || !strings.Contains(warnings[0], "Q8_0 instead of Q6_K") {
		t.Fatalf("warnings %q", warnings)
	}
	if rep.Tensors[0].To != "Q8_0" || !rep.Tensors[0].Fallback || rep.Totals.Fallbacks != 1 {
		t.Fatalf("report %+v", rep.Tensors[0])
	}
}

// A damaged input is an error, not a model: the source's checksum failure reaches
// the caller even though the converter read every value it needed.
func TestCorruptInput(t *testing.T) {
	var in bytes.Buffer
	w, _ := container.NewWriter(&in, container.Header{Type: modeltype.Custom})
	v := randF32(13, 4*64)
	if err := w.WriteTensorBytes(container.TensorInfo{Name: "w.weight", DType: dtype.F32, Shape: []int64{4, 64}}, f32Bytes(v)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := in.Bytes()
	i := bytes.Index(b, f32Bytes(v[:4]))
	b[i+100] ^= 0x01 // flips the lowest mantissa bit of one weight: still finite
	src, err := stream.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Quantize(&out, src, Options{Type: dtype.Q8_0, Workers: 2}); !errors.Is(err, container.ErrChecksum) {
		t.Fatalf("corrupt input: %v", err)
	}
	// A stream cut short is an error too.
	src, _ = stream.Open(bytes.NewReader(in.Bytes()[:i+300]))
	if _, err := Quantize(&out, src, Options{Type: dtype.Q8_0, Workers: 2}); err == nil {
		t.Fatal("truncated input: no error")
	}
}

// Close in the middle of a tensor stops the workers and returns.
func TestCloseMidTensor(t *testing.T) {
	v := randF32(14, 64*256)
	src := stream.FromTensors(modeltype.Custom, container.Metadata{}, []tensor.Tensor{tensorF32("w.weight", []int64{64, 256}, v)})
	s, err := New(src, Options{Type: dtype.Q8_0, Workers: 3, ChunkElems: 256})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Next(); err == nil {
		t.Fatal("Next after Close: no error")
	}
}
