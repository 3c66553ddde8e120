package quant

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apr-go/apr/kernels"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/imatrix"
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
	}{{dtype.F32, "f32 dequantizes"}, {dtype.NVFP4, "cannot weight NVFP4"}, {dtype.Q1_0, "cannot weight Q1_0"}} {
		o := Options{Type: c.typ, Imatrix: m}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.typ, err)
		}
	}
	for _, typ := range []dtype.DType{dtype.Q8_0, dtype.F16, dtype.BF16, dtype.Q4_0, dtype.Q6_K} {
		o := Options{Type: typ, Imatrix: m}
		if err := o.Validate(); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
}
