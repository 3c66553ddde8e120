package quant

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/stream"
)

// ggml's goldens for the newest types (testdata/quant/README.md, "The newest types"):
// rows.f32 (106 rows of 256 values) quantized by ggml's from_float_ref, and those bytes
// decoded by ggml's to_float. The sums are the README's; a changed file fails first.
var goldenNew = []struct {
	t         dtype.DType
	file, deq string
	bpw       float64
}{
	{dtype.NVFP4, "nvfp4.bin", "nvfp4.dequant.f32", 4.5},
	{dtype.Q1_0, "q1_0.bin", "q1_0.dequant.f32", 1.125},
	{dtype.Q2_0, "q2_0.bin", "q2_0.dequant.f32", 2.25},
	{dtype.MXFP4, "mxfp4.bin", "mxfp4.dequant.f32", 4.25},
}

var goldenSHA = map[string]string{
	"rows.f32":          "6b942ed1aa6f16685667cc787117c38a5e3ea5d5803550340f910008904a7eeb",
	"nvfp4.bin":         "c822b101babaa220532197ad368c5d028455fc65c276230f46005f183a030dd0",
	"q1_0.bin":          "9fd0744227d22cf9f5452c956d76df4edd973020cca03a5d41f42c3498d125ad",
	"q2_0.bin":          "dd5085c1364e009763a8e3d56b73a62e17562a9a846d861acf07e28bb572e0bb",
	"nvfp4.dequant.f32": "f4ea2cfb16d148be001b4c2687e731b9a73b4cc867190a99d82495b7f0b4c2b6",
	"q1_0.dequant.f32":  "bf99e2205cc2cbf195f86d5b8c8c0adad73cd15bd45817678f9bfa2bd96a0080",
	"q2_0.dequant.f32":  "51a899eab6be2ec7c2f82c9c9a9d15a2b68e3bf8ad9fced28e51dbd7759a9f89",
	"mxfp4.bin":         "ef5074b53ecba352c113d6efe8c62430b7f55f5b9e4f3e707cf55413dd5e33a8",
	"mxfp4.dequant.f32": "f651bd0fb70f21658d135850e3adb6b0a3ca4207b94d403575ec6754190197e1",
}

const goldenCols = 256

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "quant", name))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != goldenSHA[name] {
		t.Fatalf("%s: sha256 %x, testdata/quant/README.md records %s", name, sum, goldenSHA[name])
	}
	return b
}

func floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return v
}

// goldenRows returns the rows of rows.f32 whose values t holds (all of them, except for
// NVFP4 the two rows with values beyond 2688, which apr refuses and ggml clamps), the
// golden bytes and ggml's decoded values of those rows, and the first value refused.
func goldenRows(t *testing.T, d dtype.DType, file, deq string) (x []float32, q []byte, back []float32, refused int) {
	t.Helper()
	all := floats(readGolden(t, "rows.f32"))
	qAll, deqAll := readGolden(t, file), floats(readGolden(t, deq))
	rowBytes := elemBytes(d, goldenCols)
	if len(qAll) != len(all)/goldenCols*rowBytes || len(deqAll) != len(all) {
		t.Fatalf("%v: golden sizes %d and %d values for %d values", d, len(qAll), len(deqAll), len(all))
	}
	refused = -1
	for r := range len(all) / goldenCols {
		row := all[r*goldenCols : (r+1)*goldenCols]
		if i := firstAbove(row, maxMagnitude[d]); i >= 0 {
			if refused < 0 {
				refused = r*goldenCols + i
			}
			continue
		}
		x = append(x, row...)
		q = append(q, qAll[r*rowBytes:(r+1)*rowBytes]...)
		back = append(back, deqAll[r*goldenCols:(r+1)*goldenCols]...)
	}
	return x, q, back, refused
}

// NVFP4, Q1_0 and Q2_0 through the converter: its bytes are ggml's (the goldens), for
// any chunk size and worker count; --stats measures exactly the error of ggml's values;
// the F32 target decodes them to ggml's values, bit for bit.
func TestGoldenNewTypes(t *testing.T) {
	for _, g := range goldenNew {
		x, want, back, _ := goldenRows(t, g.t, g.file, g.deq)
		rows := int64(len(x) / goldenCols)
		if g.t != dtype.NVFP4 && rows != 106 || g.t == dtype.NVFP4 && rows != 104 {
			t.Fatalf("%v: %d golden rows usable", g.t, rows)
		}
		shape := []int64{rows, goldenCols}
		var out []byte
		var rep *Report
		for _, c := range []struct{ workers, chunk int }{{1, 0}, {2, 256}, {3, 768}, {2, 1280}} {
			o, r, err := run(t, Options{Type: g.t, Workers: c.workers, ChunkElems: c.chunk, Stats: true},
				tensorF32("blk.0.ffn_up.weight", shape, x))
			if err != nil {
				t.Fatalf("%v %+v: %v", g.t, c, err)
			}
			_, got := readAll(t, o)
			if tt := got["blk.0.ffn_up.weight"]; tt.DType != g.t || !bytes.Equal(tt.data, want) {
				t.Fatalf("%v %+v: dtype %v, bytes differ from ggml's (%s)", g.t, c, tt.DType, g.file)
			}
			if out != nil && !bytes.Equal(o, out) {
				t.Fatalf("%v: output differs with %+v", g.t, c)
			}
			out, rep = o, r
		}

		// The error figures are those of ggml's decoded values against the source.
		var ss, src2, m float64
		for i, v := range x {
			d := float64(back[i]) - float64(v)
			ss += d * d
			src2 += float64(v) * float64(v)
			m = max(m, math.Abs(d))
		}
		ts := rep.Tensors[0]
		rms, rel := math.Sqrt(ss/float64(len(x))), math.Sqrt(ss/src2)
		if ts.RMSError == nil || math.Abs(*ts.RMSError-rms) > 1e-12*rms || math.Abs(*ts.RelRMSError-rel) > 1e-12*rel || *ts.MaxError != m {
			t.Fatalf("%v: report %+v; ggml's values give rms %v, rel %v, max %v", g.t, ts, rms, rel, m)
		}
		if ts.To != g.t.String() || ts.BitsPerWeight != g.bpw || ts.BytesBefore != 4*int64(len(x)) || ts.BytesAfter != int64(len(want)) ||
			rep.Totals.BitsPerWeight != g.bpw || rep.Totals.Types[g.t.String()] != 1 {
			t.Fatalf("%v: report %+v, totals %+v", g.t, ts, rep.Totals)
		}
		var tab bytes.Buffer
		if err := rep.WriteTable(&tab); err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprintf("%.2f bits per weight", g.bpw); !strings.Contains(tab.String(), s) || !strings.Contains(tab.String(), g.t.String()) {
			t.Fatalf("%v: table lacks %q:\n%s", g.t, s, tab.String())
		}

		// And back: apr-quant f32 of the quantized model gives ggml's decoded values.
		src, err := stream.Open(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		var f32 bytes.Buffer
		if _, err := Quantize(&f32, src, Options{Type: dtype.F32, Workers: 2, ChunkElems: 512}); err != nil {
			t.Fatalf("%v -> F32: %v", g.t, err)
		}
		_, got := readAll(t, f32.Bytes())
		if tt := got["blk.0.ffn_up.weight"]; tt.DType != dtype.F32 || !bytes.Equal(tt.data, f32Bytes(back)) {
			t.Fatalf("%v -> F32: dtype %v, values differ from ggml's (%s)", g.t, tt.DType, g.deq)
		}
	}
}

// NVFP4 holds magnitudes up to 6 x 448: ggml writes larger values as ±2688 (rows 83
// and 86 of the goldens); apr refuses them, naming the first one.
func TestNVFP4RefusesWhatGGMLClamps(t *testing.T) {
	all := floats(readGolden(t, "rows.f32"))
	_, _, _, first := goldenRows(t, dtype.NVFP4, "nvfp4.bin", "nvfp4.dequant.f32")
	if first < 0 {
		t.Fatal("no golden value beyond NVFP4's range")
	}
	_, _, err := run(t, Options{Type: dtype.NVFP4, Workers: 2, ChunkElems: 4096},
		tensorF32("blk.0.ffn_up.weight", []int64{int64(len(all) / goldenCols), goldenCols}, all))
	want := fmt.Sprintf("value %g at %s is beyond what NVFP4 holds (magnitudes up to 2688", all[first], position(int64(first), goldenCols))
	if err == nil || !strings.Contains(err.Error(), `tensor "blk.0.ffn_up.weight"`) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "±2688") {
		t.Fatalf("error %v, want %q", err, want)
	}
	// At the bound the value is written exactly (scale 448, level 6).
	v := randF32(30, 64)
	v[5] = -2688
	out, _, err := run(t, Options{Type: dtype.NVFP4}, tensorF32("w.weight", []int64{1, 64}, v))
	if err != nil {
		t.Fatal(err)
	}
	_, got := readAll(t, out)
	if b := got["w.weight"].data; b[0] != 0x7e || b[4+5]&0xf != 15 { // scale byte 448, code 15 = -6
		t.Fatalf("-2688 written as scale %#x, code %d", b[0], b[4+5]&0xf)
	}
}

// Rows that are not whole blocks: NVFP4 (64) and Q1_0 (128) have no fallback in
// llama.cpp, so the tensor is an error naming it; Q2_0 (64) falls back to Q4_0, then
// F16, with a warning.
func TestNewTypesRowLengths(t *testing.T) {
	for _, c := range []struct {
		t    dtype.DType
		cols int64
		err  string
	}{
		{dtype.NVFP4, 96, "rows of 96 values (shape [3 96]) are not a whole number of 64-value NVFP4 blocks"},
		{dtype.NVFP4, 32, "64-value NVFP4 blocks"},
		{dtype.Q1_0, 64, "rows of 64 values (shape [3 64]) are not a whole number of 128-value Q1_0 blocks"},
		{dtype.Q1_0, 192, "128-value Q1_0 blocks"},
	} {
		for _, plan := range []bool{false, true} {
			tt := tensorF32("blk.2.attn_v.weight", []int64{3, c.cols}, randF32(31, 3*int(c.cols)))
			o := Options{Type: c.t}
			if plan {
				o.Plan = []container.TensorInfo{{Name: tt.Name, DType: tt.DType, Shape: tt.Shape}}
			}
			_, _, err := run(t, o, tt)
			if err == nil || !strings.Contains(err.Error(), `tensor "blk.2.attn_v.weight"`) || !strings.Contains(err.Error(), c.err) ||
				!strings.Contains(err.Error(), "--exclude blk.2.attn_v.weight") {
				t.Errorf("%v, rows of %d (plan %v): %v", c.t, c.cols, plan, err)
			}
		}
	}
	for _, c := range []struct {
		cols int64
		want dtype.DType
	}{{96, dtype.Q4_0}, {32, dtype.Q4_0}, {100, dtype.F16}, {128, dtype.Q2_0}} {
		var warnings []string
		v := randF32(32, 2*int(c.cols))
		out, rep, err := run(t, Options{Type: dtype.Q2_0, Warn: func(s string) { warnings = append(warnings, s) }},
			tensorF32("w.weight", []int64{2, c.cols}, v))
		if err != nil {
			t.Fatalf("q2_0, rows of %d: %v", c.cols, err)
		}
		_, got := readAll(t, out)
		fallback := c.want != dtype.Q2_0
		if got["w.weight"].DType != c.want || rep.Tensors[0].Fallback != fallback || len(warnings) != map[bool]int{true: 1}[fallback] {
			t.Fatalf("q2_0, rows of %d: %v, report %+v, warnings %q", c.cols, got["w.weight"].DType, rep.Tensors[0], warnings)
		}
		if fallback && !strings.Contains(warnings[0], c.want.String()+" instead of Q2_0") {
			t.Fatalf("warning %q", warnings[0])
		}
		want := tensorAs(t, "w.weight", c.want, []int64{2, c.cols}, v)
		if !bytes.Equal(got["w.weight"].data, want.Data) {
			t.Fatalf("q2_0, rows of %d: bytes differ from kernels.Quantize(%v)", c.cols, c.want)
		}
	}
}
