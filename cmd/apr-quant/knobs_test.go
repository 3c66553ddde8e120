package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/dtype"
)

// TestKnobFlags: --tensor-type (regex, first match wins, also under --pure) and
// --token-embedding-type set the types; --dry-run from a pipe prints the plan and
// writes no model; bad flags are usage errors.
func TestKnobFlags(t *testing.T) {
	in := testModel(t)
	r := runCLI(in, "q4_k", "--pure", "--tensor-type", `ATTN_Q\.=q8_0`, "--tensor-type", "attn=q5_0", "--token-embedding-type", "q6_k")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got, _ := dtypes(t, []byte(r.stdout))
	if got["blk.0.attn_q.weight"] != dtype.Q8_0 || got["token_embd.weight"] != dtype.Q6_K || got["blk.0.attn_norm.weight"] != dtype.F32 {
		t.Errorf("types %v", got)
	}
	r = runCLI(in, "q4_k", "--dry-run", "--tensor-type", "attn_q=q5_1")
	if r.code != 0 || !strings.Contains(r.stdout, "--tensor-type attn_q=q5_1") || !strings.Contains(r.stdout, "quant size = ") {
		t.Errorf("dry run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	tt := filepath.Join(t.TempDir(), "types.txt")
	if err := os.WriteFile(tt, []byte("token_embd=q8_0\n  attn_q=q5_1 "), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(in, "q4_k", "--tensor-type", "attn=q4_1", "--tensor-type-file", tt)
	got, _ = dtypes(t, []byte(r.stdout))
	if r.code != 0 || got["blk.0.attn_q.weight"] != dtype.Q4_1 || got["token_embd.weight"] != dtype.Q8_0 {
		t.Errorf("--tensor-type-file: exit %d, %v, %s", r.code, got, r.stderr)
	}
	mat := writeImatrix(t, t.TempDir(), map[string][]float32{"blk.0.attn_q.weight": normal(5, 256)})
	for _, args := range [][]string{
		{"q4_k", "--imatrix", mat, "--include-weights", "a", "--exclude-weights", "b"},
		{"q4_k", "--include-weights", "attn"},
		{"q4_k", "--tensor-type", "attn_q"},
		{"q4_k", "--tensor-type", "(=q8_0"},
		{"q4_k", "--token-embedding-type", "q8_1"},
		{"q4_k", "--dry-run", "--stats"},
		{"q4_k", "--override-kv", "general.name"},
		{"q4_k", "--override-kv", "a=int:-1"},
		{"q4_k", "--override-kv", "a=bool:1"},
		{"q4_k", "--prune-layers", "1,x"},
		{"copy", "--imatrix", mat},
		{"q4_k", "--tensor-type-file", ""},
		{"q4_k", "--prune-layers", ""},
		{"q4_k", "--output-tensor-type", ""},
		{"q4_k", "--split-max-tensors", "0", "-o", filepath.Join(t.TempDir(), "x")},
	} {
		if r := runCLI(in, args...); r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	// a model with no GGUF key-values has nothing to override
	if r := runCLI(in, "q4_k", "--override-kv", "general.name=str:x"); r.code != 1 || r.stdout != "" ||
		!strings.Contains(r.stderr, `--override-kv "general.name=str:x": the model has no GGUF key-values`) {
		t.Errorf("--override-kv on a model without GGUF key-values: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestImatrixConvert: apr-quant imatrix convert gives llama-imatrix's conversion (the
// GGUF with its run's chunk size gives back the .dat of the same run); a file that
// is no matrix leaves no output and exits 1; a bad chunk size is a usage error.
func TestImatrixConvert(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "twin.dat")
	r := runCLI(nil, "imatrix", "convert", "--chunk-size", "128", "../../testdata/hf/ref/tiny-llama.imatrix.gguf", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile("../../testdata/hf/ref/tiny-llama.imatrix-twin.dat")
	if len(want) == 0 || string(got) != string(want) {
		t.Errorf("%d bytes, want the twin's %d", len(got), len(want))
	}
	bad := filepath.Join(dir, "bad.gguf")
	if r := runCLI(nil, "imatrix", "convert", "../../testdata/hf/tiny-llama/config.json", bad); r.code != 1 ||
		!strings.HasPrefix(r.stderr, "apr-quant imatrix: ../../testdata/hf/tiny-llama/config.json: offset 0: malformed importance matrix") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("an output was left")
	}
	if r := runCLI(nil, "imatrix", "convert", "--chunk-size", "0", out, bad); r.code != 2 {
		t.Errorf("chunk size 0: exit %d: %s", r.code, r.stderr)
	}
}
