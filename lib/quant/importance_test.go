package quant

import (
	"bytes"
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

func importances(seed uint64, n int) []float32 {
	w := randF32(seed, n)
	for i := range w {
		w[i] = w[i] * w[i] * 1e4
	}
	return w
}

func matrix(entries map[string][]float32) *imatrix.Matrix {
	m := &imatrix.Matrix{File: "m.dat", Entries: entries}
	for n := range entries {
		m.Names = append(m.Names, n)
	}
	return m
}

// TestImportanceExperts: a 3-D expert tensor takes each expert's slice of its entry
// (llama.cpp quantizes expert by expert), in chunks of whole rows whatever
// ChunkElems and Workers say; the bytes are the kernel's on each expert's rows.
func TestImportanceExperts(t *testing.T) {
	const experts, rows, cols = 3, 5, 64
	x := randF32(31, experts*rows*cols)
	qw := importances(32, experts*cols)
	want := make([]byte, elemBytes(dtype.Q4_1, len(x)))
	eb := elemBytes(dtype.Q4_1, rows*cols)
	for e := range experts {
		if err := kernels.QuantizeWeighted(dtype.Q4_1, want[e*eb:(e+1)*eb], x[e*rows*cols:(e+1)*rows*cols], cols, qw[e*cols:(e+1)*cols]); err != nil {
			t.Fatal(err)
		}
	}
	var first []byte
	for _, chunk := range []int{1, 3 * cols, 7 * cols, 0} {
		for _, workers := range []int{1, 3} {
			out, rep, err := run(t, Options{Type: dtype.Q4_1, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up_exps.weight": qw}), ChunkElems: chunk, Workers: workers},
				tensorF32("blk.0.ffn_up_exps.weight", []int64{experts, rows, cols}, x))
			if err != nil {
				t.Fatal(err)
			}
			_, got := readAll(t, out)
			if !bytes.Equal(got["blk.0.ffn_up_exps.weight"].data, want) {
				t.Fatalf("chunk %d, workers %d: not the per-expert weighted bytes", chunk, workers)
			}
			if !strings.Contains(rep.Tensors[0].Reason, "importance-weighted") {
				t.Errorf("reason %q", rep.Tensors[0].Reason)
			}
			if first == nil {
				first = out
			} else if !bytes.Equal(first, out) {
				t.Fatalf("chunk %d, workers %d: the file differs", chunk, workers)
			}
		}
	}
	_, _, err := run(t, Options{Type: dtype.Q4_1, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up_exps.weight": qw[:cols]})},
		tensorF32("blk.0.ffn_up_exps.weight", []int64{experts, rows, cols}, x))
	if err == nil || !strings.Contains(err.Error(), "has 64 values for it, want 192 (one per column of each of 3 experts)") {
		t.Errorf("entry of one expert's size: %v", err)
	}
}

// TestImportanceMismatch: an entry of the wrong size is an error, except for
// token_embd.weight, which is quantized without it (llama.cpp's exception); a tensor
// without an entry is quantized as without a matrix.
func TestImportanceMismatch(t *testing.T) {
	x := randF32(33, 4*256)
	plain, _, err := run(t, Options{Type: dtype.Q4_K}, tensorF32("token_embd.weight", []int64{4, 256}, x), tensorF32("blk.0.attn_k.weight", []int64{4, 256}, x))
	if err != nil {
		t.Fatal(err)
	}
	m := matrix(map[string][]float32{"token_embd.weight": importances(1, 128)})
	out, rep, err := run(t, Options{Type: dtype.Q4_K, Imatrix: m}, tensorF32("token_embd.weight", []int64{4, 256}, x), tensorF32("blk.0.attn_k.weight", []int64{4, 256}, x))
	if err != nil {
		t.Fatal(err)
	}
	_, a := readAll(t, plain)
	_, b := readAll(t, out)
	for _, name := range []string{"token_embd.weight", "blk.0.attn_k.weight"} {
		if !bytes.Equal(a[name].data, b[name].data) {
			t.Errorf("%s: not the unweighted bytes", name)
		}
	}
	if !strings.Contains(rep.Tensors[0].Reason, "quantized without it") {
		t.Errorf("token_embd reason %q", rep.Tensors[0].Reason)
	}
	m = matrix(map[string][]float32{"blk.0.attn_k.weight": importances(1, 128)})
	if _, _, err := run(t, Options{Type: dtype.Q4_K, Imatrix: m}, tensorF32("blk.0.attn_k.weight", []int64{4, 256}, x)); err == nil ||
		!strings.Contains(err.Error(), `tensor "blk.0.attn_k.weight" (shape [4 256]): the importance matrix m.dat has 128 values for it, want 256`) {
		t.Errorf("wrong size: %v", err)
	}
}

// tableless hides a stream's tensor table, so the quantizer decides tensor by tensor.
type tableless struct{ stream.Stream }

func (s tableless) Header() container.Header {
	h := s.Stream.Header()
	h.Table = nil
	return h
}

// TestImportanceUnmatched: a matrix that names none of the converted tensors (made
// for another model) is an error naming the file, before any output when the input's
// tensors are known and at the end otherwise; nothing converted is the same error.
// One converted tensor with an entry is enough, even one whose entry llama.cpp skips
// (token_embd.weight of another size).
func TestImportanceUnmatched(t *testing.T) {
	x := randF32(34, 4*256)
	tensors := func() []tensor.Tensor {
		return []tensor.Tensor{tensorF32("blk.0.attn_k.weight", []int64{4, 256}, x), tensorF32("blk.0.attn_norm.weight", []int64{256}, x[:256])}
	}
	other := matrix(map[string][]float32{"blk.0.attn_q.weight": importances(1, 256), "blk.0.attn_norm.weight": importances(2, 256)})
	for _, table := range []bool{true, false} {
		src := stream.FromTensors(modeltype.Custom, container.Metadata{Name: "test", CreatedAt: "2026-01-01T00:00:00Z"}, tensors())
		if !table {
			src = tableless{src}
		}
		var out bytes.Buffer
		_, err := Quantize(&out, src, Options{Type: dtype.Q4_K, Imatrix: other})
		want := `the importance matrix m.dat (its 2 entries are named like "blk.0.`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `has no entry for any tensor that is converted (such as "blk.0.attn_k.weight")`) {
			t.Errorf("table %v: %v", table, err)
		}
		if table && out.Len() != 0 {
			t.Errorf("%d bytes written before the refusal", out.Len())
		}
	}
	_, _, err := run(t, Options{Type: dtype.Q4_K, Imatrix: other}, tensorF32("blk.0.attn_norm.weight", []int64{256}, x[:256]))
	if err == nil || !strings.Contains(err.Error(), "weights nothing: no tensor is converted") {
		t.Errorf("nothing converted: %v", err)
	}
	embd := matrix(map[string][]float32{"token_embd.weight": importances(1, 128)})
	if _, _, err := run(t, Options{Type: dtype.Q4_K, Imatrix: embd}, tensorF32("token_embd.weight", []int64{4, 256}, x)); err != nil {
		t.Errorf("a matching name whose entry llama.cpp skips: %v", err)
	}
}

// TestImportanceAllZero: an entry whose weights are all zero for the tensor, or for
// one expert of a 3-D tensor, is refused before any output, naming the tensor, the
// expert and the file, for every type that applies weights (Q8_0 ignores them); zeros
// in part of a row quantize (kernels: later ggml's bytes).
func TestImportanceAllZero(t *testing.T) {
	x := randF32(35, 3*4*256)
	dense := tensorF32("blk.0.attn_k.weight", []int64{4, 256}, x[:4*256])
	for _, typ := range []dtype.DType{dtype.Q4_K, dtype.Q2_K, dtype.Q6_K, dtype.Q4_0} {
		out, _, err := run(t, Options{Type: typ, Imatrix: matrix(map[string][]float32{"blk.0.attn_k.weight": make([]float32, 256)})}, dense)
		if err == nil || !strings.Contains(err.Error(), `tensor "blk.0.attn_k.weight": its importance weights in m.dat are all zero (no calibration token reached it)`) {
			t.Errorf("%v: %v", typ, err)
		}
		if len(out) != 0 {
			t.Errorf("%v: %d bytes written before the refusal", typ, len(out))
		}
	}
	if _, _, err := run(t, Options{Type: dtype.Q8_0, Imatrix: matrix(map[string][]float32{"blk.0.attn_k.weight": make([]float32, 256)})}, dense); err != nil {
		t.Errorf("q8_0 takes no weights: %v", err)
	}
	qw := importances(3, 3*256)
	clear(qw[256:512])
	experts := tensorF32("blk.0.ffn_up_exps.weight", []int64{3, 4, 256}, x)
	if _, _, err := run(t, Options{Type: dtype.Q4_K, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up_exps.weight": qw})}, experts); err == nil ||
		!strings.Contains(err.Error(), `tensor "blk.0.ffn_up_exps.weight": its importance weights in m.dat are all zero for expert 1 of 3`) {
		t.Errorf("an expert without data: %v", err)
	}
	qw = importances(3, 3*256)
	clear(qw[256 : 512-1])
	if _, _, err := run(t, Options{Type: dtype.Q4_K, Imatrix: matrix(map[string][]float32{"blk.0.ffn_up_exps.weight": qw})}, experts); err != nil {
		t.Errorf("an expert with one weight: %v", err)
	}
}

// TestImportancePresetRule: with an importance matrix, the Q4_0 and Q5_0 presets
// give the first eighth of the ffn_down layers Q4_1 and Q5_1 (llama.cpp's guard,
// only with a matrix).
func TestImportancePresetRule(t *testing.T) {
	for _, c := range []struct {
		preset  string
		imatrix bool
		layer   string
		want    dtype.DType
	}{
		{"q4_0", true, "blk.0.ffn_down.weight", dtype.Q4_1},
		{"q4_0", true, "blk.1.ffn_down.weight", dtype.Q4_0},
		{"q4_0", false, "blk.0.ffn_down.weight", dtype.Q4_0},
		{"q5_0", true, "blk.0.ffn_down.weight", dtype.Q5_1},
		{"q5_0", true, "blk.0.ffn_up.weight", dtype.Q5_0},
		{"q4_1", true, "blk.0.ffn_down.weight", dtype.Q4_1},
		{"q4_k_m", true, "blk.0.ffn_down.weight", dtype.Q6_K},
	} {
		p, _ := lookupPreset(c.preset)
		m := &llmModel{arch: "llama", layers: 8, heads: 4, kvHeads: 4, hasOutput: true, outputKnown: true, imatrix: c.imatrix}
		if got := m.presetType(p, c.layer, 256); got != c.want {
			t.Errorf("%s imatrix %v %s: %v, want %v", c.preset, c.imatrix, c.layer, got, c.want)
		}
	}
}

func TestImportanceValidate(t *testing.T) {
	m := matrix(map[string][]float32{"w": {1}})
	for _, c := range []struct {
		typ  dtype.DType
		want string
	}{{dtype.F32, "f32 dequantizes"}} {
		o := Options{Type: c.typ, Imatrix: m}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.typ, err)
		}
	}
	// MXFP4, NVFP4, Q1_0 and Q2_0 take a matrix and ignore it, as ggml's quantizers (and llama-quantize) do
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.F16, dtype.BF16, dtype.Q4_0, dtype.Q6_K, dtype.MXFP4, dtype.NVFP4, dtype.Q1_0, dtype.Q2_0} {
		o := Options{Type: typ, Imatrix: m}
		if err := o.Validate(); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
}
