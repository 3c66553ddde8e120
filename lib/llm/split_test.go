package llm_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
)

// TestSplitFromCheckpoint: apr-st import DIR | apr-quant TYPE | apr-gguf export
// --split-max-... -o PREFIX gives llama-gguf-split's parts of the reference files
// (testdata/gguf/split), byte for byte, without a spool: for Q4_K_M the preset's
// tensors arrive in another order than llama-quantize's and are written at their
// offsets in their parts.
func TestSplitFromCheckpoint(t *testing.T) {
	for _, c := range []struct {
		typ   string
		parts int
		so    ggufconv.SplitOptions
	}{
		{"Q4_K_M", 3, ggufconv.SplitOptions{MaxTensors: 8}},
		{"f16", 4, ggufconv.SplitOptions{MaxSize: 1000 * 1000}},
	} {
		t.Run(c.typ, func(t *testing.T) {
			s, err := stconv.Open("../../testdata/hf/tiny-llama", stconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			target, err := quant.ParseType(c.typ)
			if err != nil {
				t.Fatal(err)
			}
			preset, _ := quant.Preset(c.typ)
			q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			o := ggufconv.ExportOptions{TempDir: t.TempDir(), Spooling: func(why string) { t.Errorf("spooled: %s", why) }}
			res, err := ggufconv.ExportSplit(filepath.Join(dir, "tiny-llama."+c.typ), apr(t, q), o, c.so)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Parts) != c.parts {
				t.Fatalf("%d parts, want %d", len(res.Parts), c.parts)
			}
			for i := 1; i <= c.parts; i++ {
				name := fmt.Sprintf("tiny-llama.%s-%05d-of-%05d.gguf", c.typ, i, c.parts)
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join("../../testdata/gguf/split", name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes, differs from llama-gguf-split's (%d bytes)", name, len(got), len(want))
				}
			}
		})
	}
}
