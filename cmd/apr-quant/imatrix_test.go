package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/imatrix"
)

// writeImatrix writes an importance matrix with the given entries (calls 1) and
// llama-imatrix's trailer, and returns its path.
func writeImatrix(t *testing.T, dir string, entries map[string][]float32) string {
	t.Helper()
	m := &imatrix.Matrix{Entries: entries, Chunks: 3, Dataset: "calib.txt"}
	for name := range entries {
		m.Names = append(m.Names, name)
	}
	var b bytes.Buffer
	if err := m.Encode(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "m.dat")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImatrixFlag: --imatrix changes the weights it has an entry for (and only those),
// the bytes do not depend on -j, the provenance records the matrix, and bad
// combinations are refused (exit 2 for a usage mistake, 1 for a file that does not
// fit the model), leaving no output. lib/llm tests the bytes against llama-quantize.
func TestImatrixFlag(t *testing.T) {
	in := testModel(t)
	dir := t.TempDir()
	w := normal(21, 256)
	for i := range w {
		w[i] *= w[i] * 1e4 // importances are non-negative
	}
	mat := writeImatrix(t, dir, map[string][]float32{"blk.0.attn_q.weight": w})
	plain := runCLI(in, "q4_k")
	one := runCLI(in, "q4_k", "--imatrix", mat, "-j", "1")
	two := runCLI(in, "q4_k", "--imatrix", mat, "-j", "2")
	if plain.code != 0 || one.code != 0 || two.code != 0 {
		t.Fatalf("exit %d %d %d: %s %s", plain.code, one.code, two.code, one.stderr, two.stderr)
	}
	if one.stdout != two.stdout {
		t.Error("the bytes depend on -j")
	}
	_, a := tensorBytes(t, []byte(plain.stdout), "blk.0.attn_q.weight")
	_, b := tensorBytes(t, []byte(one.stdout), "blk.0.attn_q.weight")
	if bytes.Equal(a, b) {
		t.Error("the weighted tensor has the unweighted bytes")
	}
	_, a = tensorBytes(t, []byte(plain.stdout), "token_embd.weight")
	_, b = tensorBytes(t, []byte(one.stdout), "token_embd.weight")
	if !bytes.Equal(a, b) {
		t.Error("a tensor without an entry changed")
	}
	r, err := container.NewReader(bytes.NewReader([]byte(one.stdout)))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := r.Header().Metadata.Provenance["quantization"].(map[string]any)
	m, _ := q["imatrix"].(map[string]any)
	if m["file"] != mat || m["dataset"] != "calib.txt" || m["entries_count"] != int64(1) || m["chunks_count"] != int64(3) {
		t.Errorf("provenance %v", q)
	}

	bad := writeImatrix(t, t.TempDir(), map[string][]float32{"blk.0.attn_q.weight": w[:128]})
	broken := filepath.Join(dir, "broken.dat")
	os.WriteFile(broken, []byte{1, 0, 0, 0, 200, 0, 0, 0}, 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"q4_k", "--imatrix", bad}, 1, `tensor "blk.0.attn_q.weight" (shape [8 256]): the importance matrix ` + bad + ` has 128 values for it, want 256`},
		{[]string{"q4_k", "--imatrix", broken}, 1, broken + ": offset 8: malformed importance matrix: entry 1: a name of 200 bytes"},
		{[]string{"q4_k", "--imatrix", filepath.Join(dir, "none.dat")}, 1, "none.dat"},
		{[]string{"f32", "--imatrix", mat}, 2, "f32 dequantizes"},
		{[]string{"q4_k", "--imatrix", ""}, 2, "--imatrix is empty"},
	} {
		out := filepath.Join(dir, "out.apr")
		r := runCLI(in, append(c.args, "-o", out)...)
		if r.code != c.code || !strings.HasPrefix(r.stderr, "apr-quant: ") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q left an output file", c.args)
		}
	}
}

// TestIQuantFlag: apr-quant iq2_xxs --imatrix F is a plain type; without --imatrix it
// exits 1 naming a tensor and the flag, writing nothing; token_embd.weight (no
// entry, as llama-imatrix leaves it) must be kept with --exclude for the types ggml
// quantizes only with weights.
func TestIQuantFlag(t *testing.T) {
	in := testModel(t)
	dir := t.TempDir()
	w := normal(23, 256)
	for i := range w {
		w[i] *= w[i] * 1e4
	}
	mat := writeImatrix(t, dir, map[string][]float32{"blk.0.attn_q.weight": w})
	for _, typ := range []string{"iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"} {
		r := runCLI(in, typ)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "--imatrix FILE") || !strings.Contains(r.stderr, `tensor "`) {
			t.Errorf("%s without --imatrix: exit %d, %d bytes out, %q", typ, r.code, len(r.stdout), r.stderr)
		}
		r = runCLI(in, typ, "--imatrix", mat, "--exclude", "token_embd.weight")
		if r.code != 0 {
			t.Fatalf("%s --imatrix: exit %d: %s", typ, r.code, r.stderr)
		}
		got, _ := dtypes(t, []byte(r.stdout))
		if got["blk.0.attn_q.weight"].String() != strings.ToUpper(typ) {
			t.Errorf("%s: attn_q is %v", typ, got["blk.0.attn_q.weight"])
		}
	}
}
