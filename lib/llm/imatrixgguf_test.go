package llm_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
)

// TestImatrixGGUFBytes: with the importance matrix today's llama-imatrix wrote as GGUF
// (testdata/hf/ref/tiny-llama.imatrix.gguf), apr-quant gives llama-quantize --imatrix's
// file of it byte for byte: its per-tensor types, the weights as it normalizes a GGUF
// (sums over token counts), and its quantize.imatrix.* keys (the file as given, the
// first dataset, 14 entries, 20 chunks); also --pure. The .dat llama-imatrix wrote in
// the same run gives llama-quantize's file of that .dat. (The two files' Q4_K_M bytes
// differ in about 760 bytes in llama-quantize too: a .dat stores sums/count*ncall,
// which divided by ncall again is not always sums/count in float32.) The
// i-quant presets are checked once kernels writes their types; until then apr must
// refuse them. testdata/hf/README.md says how the references were made.
func TestImatrixGGUFBytes(t *testing.T) {
	sums := refSums(t, "tiny-llama.imatrix-gguf")
	for _, c := range []struct {
		typ, file string
		pure      bool
	}{
		{"Q4_K_M", "gguf", false}, {"Q3_K_M", "gguf", false}, {"Q2_K", "gguf", false},
		{"IQ4_XS", "gguf", false}, {"IQ3_XXS", "gguf", false}, {"IQ2_M", "gguf", false}, {"TQ2_0", "gguf", false},
		{"Q4_0", "gguf", true}, {"Q5_1", "gguf", true}, {"Q6_K", "gguf", true}, {"Q5_K_M", "gguf", true},
		{"Q4_K_M", "twin", false},
	} {
		name := "tiny-llama." + c.typ
		if c.pure {
			name += ".pure"
		}
		matrix := "ref/tiny-llama.imatrix.gguf"
		if c.file == "twin" {
			name += ".imatrix-twin.gguf"
			matrix = "ref/tiny-llama.imatrix-twin.dat"
		} else {
			name += ".imatrix-gguf.gguf"
		}
		t.Run(name, func(t *testing.T) {
			want := sums[name]
			if want == "" {
				t.Fatal("no reference sum")
			}
			out, err := imatrixGGUFErr(t, c.typ, matrix, c.pure, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sha256Hex(out); got != want {
				t.Errorf("SHA-256 of the export %s, llama-quantize --imatrix wrote %s (%d bytes)", got, want, len(out))
			}
		})
	}
}

// imatrixGGUFErr is imatrixGGUF from the F32 GGUF apr makes of the checkpoint (as
// llama-quantize's input), returning quant's error.
func imatrixGGUFErr(t *testing.T, typ, file string, pure bool, include, exclude []string) ([]byte, error) {
	t.Helper()
	f32 := toGGUF(t, checkpoint, "f32")
	dir, err := filepath.Abs("../../testdata/hf")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	m, err := imatrix.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	m = m.Filter(include, exclude)
	s, err := ggufconv.NewStream(bytes.NewReader(f32), ggufconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return quantizeToGGUF(t, s, typ, pure, m)
}

// TestImatrixIncludeExcludeBytes: --include-weights and --exclude-weights keep the
// matrix entries whose names hold (or do not hold) the strings, as llama-quantize's do:
// its files byte for byte, quantize.imatrix.entries_count counting what is left.
func TestImatrixIncludeExcludeBytes(t *testing.T) {
	sums := refSums(t, "tiny-llama.imatrix-gguf")
	for _, c := range []struct {
		typ, file        string
		include, exclude []string
	}{
		{"Q4_K_M", "tiny-llama.Q4_K_M.exclude-weights.gguf", nil, []string{"ffn_down", "attn_q"}},
		{"Q3_K_M", "tiny-llama.Q3_K_M.include-weights.gguf", []string{"blk.1."}, nil},
	} {
		out, err := imatrixGGUFErr(t, c.typ, "ref/tiny-llama.imatrix.gguf", false, c.include, c.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sha256Hex(out), sums[c.file]; got != want {
			t.Errorf("%s: SHA-256 %s, llama-quantize wrote %s", c.file, got, want)
		}
	}
}
