package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/modeltype"
)

type tensor struct {
	name  string
	shape []int64
	vals  []float32
}

// writeModel writes an F32 model and returns its bytes.
func writeModel(t *testing.T, tensors ...tensor) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := container.NewWriter(&b, container.Header{Type: modeltype.Custom, Metadata: container.Metadata{Name: "m", CreatedAt: "2026-01-01T00:00:00Z"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		data := make([]byte, 4*len(tt.vals))
		for i, v := range tt.vals {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		if err := w.WriteTensorBytes(container.TensorInfo{Name: tt.name, DType: dtype.F32, Shape: tt.shape}, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func normal(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 9))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.02)
	}
	return v
}

func testModel(t *testing.T) []byte {
	return writeModel(t,
		tensor{"token_embd.weight", []int64{16, 256}, normal(1, 16*256)},
		tensor{"blk.0.attn_norm.weight", []int64{256}, normal(2, 256)},
		tensor{"blk.0.attn_q.weight", []int64{8, 256}, normal(3, 8*256)},
		tensor{"blk.0.attn_q.bias", []int64{8}, normal(4, 8)})
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(stdin []byte, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// dtypes reads a model and returns each tensor's dtype, verifying every checksum.
func dtypes(t *testing.T, b []byte) (map[string]dtype.DType, container.FileHeader) {
	t.Helper()
	r, err := container.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]dtype.DType{}
	for {
		tt, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, tt); err != nil {
			t.Fatal(err)
		}
		m[tt.Name] = tt.DType
	}
	return m, r.Header()
}

func TestFileToFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.apr")
	if err := os.WriteFile(in, testModel(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.apr")
	r := runCLI(nil, "q4_k", in, "-o", out)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, h := dtypes(t, b)
	want := map[string]dtype.DType{"token_embd.weight": dtype.Q4_K, "blk.0.attn_norm.weight": dtype.F32,
		"blk.0.attn_q.weight": dtype.Q4_K, "blk.0.attn_q.bias": dtype.F32}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s is %v, want %v", k, got[k], v)
		}
	}
	q, _ := h.Metadata.Provenance["quantization"].(map[string]any)
	if q["type"] != "Q4_K" || q["tensor_types"] == nil || h.Flags&container.FlagQuantized == 0 || h.Flags&container.FlagCompressed != 0 {
		t.Fatalf("provenance %v, flags %v", q, h.Flags)
	}
}

// stdin to stdout gives the same tensors; the output does not depend on --workers.
func TestPipeAndWorkers(t *testing.T) {
	in := testModel(t)
	var first string
	for _, j := range []string{"1", "2", "5"} {
		r := runCLI(in, "Q8_0", "--pure", "-j", j)
		if r.code != 0 {
			t.Fatalf("-j %s: exit %d: %s", j, r.code, r.stderr)
		}
		if first == "" {
			first = r.stdout
		} else if r.stdout != first {
			t.Fatalf("-j %s: output differs from -j 1", j)
		}
	}
	got, _ := dtypes(t, []byte(first))
	if got["token_embd.weight"] != dtype.Q8_0 || got["blk.0.attn_norm.weight"] != dtype.F32 {
		t.Fatalf("dtypes %v", got)
	}
	// And back to F32 through a second filter, compressed.
	r := runCLI([]byte(first), "f32", "-c", "zstd")
	if r.code != 0 {
		t.Fatalf("f32: %s", r.stderr)
	}
	back, h := dtypes(t, []byte(r.stdout))
	if back["token_embd.weight"] != dtype.F32 || h.Flags&container.FlagCompressed == 0 || h.Flags&container.FlagQuantized != 0 {
		t.Fatalf("dequantized: %v, flags %v", back, h.Flags)
	}
}

func TestUsageErrors(t *testing.T) {
	in := testModel(t)
	for _, args := range [][]string{
		{"q9_0"}, {"q8_1"}, {}, {"q8_0", "--include", "[x"}, {"q8_0", "-c", "gzip"}, {"q8_0", "--stats-file", "-"}, {"q8_0", "-j", "-2"},
	} {
		r := runCLI(in, args...)
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "apr-quant: ") {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q", args, r.code, len(r.stdout), r.stderr)
		}
	}
	if r := runCLI(in, "q9_0"); !strings.Contains(r.stderr, "q8_0, q4_0") {
		t.Errorf("bad type does not list the types: %q", r.stderr)
	}
	if r := runCLI(nil, "--help"); r.code != 0 || !strings.Contains(r.stdout, "--include") || !strings.Contains(r.stdout, "memory-mapped") {
		t.Errorf("--help: exit %d: %s", r.code, r.stdout)
	}
}

// A failed run exits 1, names the tensor and leaves no output file.
func TestFailuresLeaveNoOutput(t *testing.T) {
	bad := normal(5, 4*64)
	bad[2*64+9] = float32(math.NaN())
	big := normal(6, 4*64)
	big[70] = 1e30
	cases := []struct {
		name  string
		model []byte
		args  []string
		want  []string
	}{
		{"nan", writeModel(t, tensor{"a.weight", []int64{4, 64}, normal(7, 256)}, tensor{"blk.1.ffn_down.weight", []int64{4, 64}, bad}),
			[]string{"q8_0"}, []string{`tensor "blk.1.ffn_down.weight"`, "NaN", "row 2, column 9"}},
		{"overflow", writeModel(t, tensor{"blk.1.ffn_up.weight", []int64{4, 64}, big}),
			[]string{"q4_0"}, []string{`tensor "blk.1.ffn_up.weight"`, "row 1, column 6", "not written"}},
		{"row length", writeModel(t, tensor{"w.weight", []int64{2, 48}, normal(8, 96)}),
			[]string{"q8_0"}, []string{`tensor "w.weight"`, "rows of 48 values", "--exclude"}},
		{"requantize", nil, []string{"q4_0"}, []string{"--allow-requantize"}},
		{"nvfp4 row length", writeModel(t, tensor{"blk.0.attn_k.weight", []int64{2, 96}, normal(10, 192)}),
			[]string{"nvfp4"}, []string{`tensor "blk.0.attn_k.weight"`, "rows of 96 values", "64-value NVFP4 blocks", "--exclude blk.0.attn_k.weight"}},
		{"q1_0 row length", writeModel(t, tensor{"blk.0.attn_k.weight", []int64{2, 64}, normal(11, 128)}),
			[]string{"q1_0"}, []string{`tensor "blk.0.attn_k.weight"`, "rows of 64 values", "128-value Q1_0 blocks", "--exclude"}},
		{"nvfp4 range", writeModel(t, tensor{"blk.1.ffn_up.weight", []int64{4, 64}, big}),
			[]string{"nvfp4"}, []string{`tensor "blk.1.ffn_up.weight"`, "row 1, column 6", "beyond what NVFP4 holds", "not written"}},
	}
	// A quantized input for the requantize case.
	q := runCLI(testModel(t), "q8_0")
	cases[3].model = []byte(q.stdout)
	for _, c := range cases {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.apr")
		if err := os.WriteFile(in, c.model, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, fromStdin := range []bool{false, true} {
			out := filepath.Join(dir, "out.apr")
			args := append(append([]string(nil), c.args...), "-o", out)
			var stdin []byte
			if fromStdin {
				stdin = c.model
			} else {
				args = append(args, in)
			}
			r := runCLI(stdin, args...)
			if r.code != 1 {
				t.Fatalf("%s: exit %d, stderr %q", c.name, r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("%s (stdin %v): stderr %q lacks %q", c.name, fromStdin, r.stderr, w)
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("%s: files left behind: %v", c.name, entries)
			}
		}
	}
}

func TestStatsOutput(t *testing.T) {
	in := testModel(t)
	r := runCLI(in, "q4_0", "--stats")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, s := range []string{"token_embd.weight", "16x256", "Q4_0", "4.50", "16.0 KiB", "4 tensors, 2 converted"} {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stats table lacks %q:\n%s", s, r.stderr)
		}
	}
	dir := t.TempDir()
	out, js := filepath.Join(dir, "m.apr"), filepath.Join(dir, "stats.json")
	r = runCLI(in, "q4_1", "--json", "--stats-file", js, "-o", out)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Type    string
		Tensors []struct {
			Name        string
			To          string
			RMSError    *float64 `json:"rms_error"`
			MaxError    *float64 `json:"max_error"`
			BytesBefore int64    `json:"bytes_before"`
			BytesAfter  int64    `json:"bytes_after"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	e := rep.Tensors[0]
	if rep.Type != "Q4_1" || e.Name != "token_embd.weight" || e.To != "Q4_1" || e.RMSError == nil || *e.RMSError <= 0 ||
		*e.MaxError < *e.RMSError || e.BytesBefore != 16*256*4 || e.BytesAfter != 16*8*20 {
		t.Fatalf("report %s", b)
	}
}

func TestFallbackWarning(t *testing.T) {
	in := writeModel(t, tensor{"w.weight", []int64{2, 96}, normal(9, 192)})
	for _, c := range []struct {
		typ  string
		want dtype.DType
		msg  string
	}{{"q6_k", dtype.Q8_0, "Q8_0 instead of Q6_K"}, {"q2_0", dtype.Q4_0, "Q4_0 instead of Q2_0"}} {
		r := runCLI(in, c.typ)
		if r.code != 0 || !strings.Contains(r.stderr, "apr-quant: warning:") || !strings.Contains(r.stderr, c.msg) {
			t.Fatalf("%s: exit %d, stderr %q", c.typ, r.code, r.stderr)
		}
		got, _ := dtypes(t, []byte(r.stdout))
		if got["w.weight"] != c.want {
			t.Fatalf("%s: w.weight is %v", c.typ, got["w.weight"])
		}
		// -q silences the warnings (they flood a pipeline's stderr), not the result.
		if q := runCLI(in, c.typ, "-q"); q.code != 0 || q.stderr != "" || q.stdout != r.stdout {
			t.Fatalf("%s -q: exit %d, stderr %q", c.typ, q.code, q.stderr)
		}
	}
}
