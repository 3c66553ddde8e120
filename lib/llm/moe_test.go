package llm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
)

// TestImatrixExperts: a mixture of experts quantized with llama-imatrix's matrix
// (tiny-qwen3moe's: one row of importances per expert of each stacked tensor) gives
// llama-quantize --imatrix's file byte for byte: each expert's rows weighted by its own
// row of the entry, K-quants (gate, up) and the fallback Q5_0 (down, rows of 128).
func TestImatrixExperts(t *testing.T) {
	sums := refSums(t, "tiny-qwen3moe")
	dir, err := filepath.Abs("../../testdata/hf")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // quantize.imatrix.file holds the path as given
	m, err := imatrix.Load("ref/tiny-qwen3moe.imatrix.dat")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"Q4_K_M", "Q3_K_M", "Q2_K", "Q5_0"} {
		t.Run(p, func(t *testing.T) {
			want := sums["ref/tiny-qwen3moe."+p+".imatrix.gguf"]
			if want == "" {
				t.Fatal("no reference sum")
			}
			s, err := stconv.Open("tiny-qwen3moe", stconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			target, _ := quant.ParseType(p)
			preset, _ := quant.Preset(p)
			q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset, Imatrix: m, ChunkElems: 4096})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if got := sha256Hex(out.Bytes()); got != want {
				t.Errorf("SHA-256 of the export %s, llama-quantize --imatrix wrote %s (%d bytes)", got, want, out.Len())
			}
		})
	}
}

// TestMoEBackRefused: Granite-MoE's experts, whose fused gate and up the converter
// splits, do not go back to Hugging Face's layout yet: the export says so, naming the
// tensor, and leaves nothing behind.
func TestMoEBackRefused(t *testing.T) {
	s, err := stconv.Open("../../testdata/hf/tiny-granitemoe", stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(t.TempDir(), "out")
	err = stconv.ExportDir(out, stconv.StreamSource(apr(t, s)), stconv.ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"blk.0.ffn_gate_exps.weight" has no Hugging Face name`) {
		t.Fatalf("export: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the failed export left %s behind (%v)", out, err)
	}
}
