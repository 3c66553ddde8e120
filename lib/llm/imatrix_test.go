package llm_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
)

// imatrixGGUF is `apr-st import DIR | apr-quant TYPE [--pure] --imatrix FILE |
// apr-gguf export`, run from testdata/hf (where the references were made), so that
// quantize.imatrix.file holds the path as given, as llama-quantize records it. With
// viaGGUF the checkpoint is first converted to the converter's F32 GGUF and imported
// from it (`apr-gguf import tiny-llama.f32.gguf | apr-quant ...`), which is how q8_0
// gives llama-quantize's file rather than the converter's --outtype q8_0.
func imatrixGGUF(t *testing.T, typ, file string, pure, viaGGUF bool) []byte {
	t.Helper()
	var f32 []byte
	if viaGGUF {
		f32 = toGGUF(t, checkpoint, "f32")
	}
	dir, err := filepath.Abs("../../testdata/hf")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	m, err := imatrix.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var s stream.Stream
	if viaGGUF {
		s, err = ggufconv.NewStream(bytes.NewReader(f32), ggufconv.ImportOptions{})
	} else {
		s, err = stconv.Open("tiny-llama", stconv.ImportOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target, err := quant.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	preset, _ := quant.Preset(typ)
	q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset, Pure: pure, Imatrix: m, ChunkElems: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestImatrixPresetBytes: with llama-imatrix's matrix, apr-quant PRESET --imatrix
// gives llama-quantize --imatrix's file byte for byte (the fixtures' three: its
// per-tensor types, its importance-weighted quantizers, its quantize.imatrix.* keys).
func TestImatrixPresetBytes(t *testing.T) {
	sums := refSums(t, "tiny-llama")
	for _, p := range []string{"Q4_K_M", "Q3_K_M", "Q2_K"} {
		t.Run(p, func(t *testing.T) {
			want := sums["ref/tiny-llama."+p+".imatrix.gguf"]
			if want == "" {
				t.Fatal("no reference sum")
			}
			for _, viaGGUF := range []bool{false, true} {
				out := imatrixGGUF(t, p, "ref/tiny-llama.imatrix.dat", false, viaGGUF)
				if got := sha256Hex(out); got != want {
					t.Errorf("from the F32 GGUF %v: SHA-256 of the export %s, llama-quantize --imatrix wrote %s (%d bytes)", viaGGUF, got, want, len(out))
				}
			}
		})
	}
}

// TestImatrixPureBytes: every importance-weighted quantizer over whole tensors, against
// llama-quantize --pure --imatrix of the same F32 file (testdata/hf/README.md): every
// weight of the one type, the 2-D blocks' weights with their matrix entries (rows of
// 256 and 512 values), output.weight and token_embd.weight without (the matrix has
// no entry for them). Q8_0 takes no weights in ggml; the file still carries the keys.
func TestImatrixPureBytes(t *testing.T) {
	sums := refSums(t, "tiny-llama.imatrix")
	if len(sums) == 0 {
		t.Fatal("no references")
	}
	for _, p := range []string{"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K"} {
		t.Run(p, func(t *testing.T) {
			if testing.Short() && p != "Q4_1" && p != "Q6_K" {
				t.Skip("-short: two types")
			}
			want := sums["tiny-llama."+p+".pure.imatrix.gguf"]
			if want == "" {
				t.Fatal("no reference sum")
			}
			out := imatrixGGUF(t, p, "ref/tiny-llama.imatrix.dat", true, p == "Q8_0")
			if got := sha256Hex(out); got != want {
				t.Errorf("SHA-256 of the export %s, llama-quantize --pure --imatrix wrote %s (%d bytes)", got, want, len(out))
			}
		})
	}
}
