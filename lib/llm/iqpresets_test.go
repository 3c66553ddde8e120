package llm_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
)

// TestIQuantPresetBytes: every preset of today's llama-quantize beyond the K-quants
// (the i-quants, TQ1_0, TQ2_0, Q2_K_S; MXFP4_MOE on tiny-gptoss) gives its whole file
// byte for byte from the converter's F32 GGUF, without and with an importance matrix,
// on tiny-llama (rows of 256) and small-mistral (rows of 192: IQ4_NL and Q4_0..Q5_1
// fallbacks). The sums are testdata/hf/iquants.sha256, made by testdata/hf/mkiqref.sh
// (the files are NAME.PRESET[.imatrix].gguf; where llama-quantize refuses a preset
// without a matrix there is no file). The matrices: ref/tiny-llama.imatrix.dat and
// ref/small-mistral.imatrix.gguf, given by that path as the script does
// (quantize.imatrix.file).
func TestIQuantPresetBytes(t *testing.T) {
	sums := refSums(t, "iquants")
	var files []string
	for f := range sums {
		files = append(files, f)
	}
	slices.Sort(files)
	if len(files) < 50 {
		t.Fatalf("%d sums in iquants.sha256", len(files))
	}
	dir, err := filepath.Abs("../../testdata/hf")
	if err != nil {
		t.Fatal(err)
	}
	matrices := map[string]string{"tiny-llama": "ref/tiny-llama.imatrix.dat", "small-mistral": "ref/small-mistral.imatrix.gguf"}
	f32s := map[string][]byte{}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			f := strings.Split(strings.TrimSuffix(file, ".gguf"), ".")
			ckpt, preset := f[0], f[1]
			if testing.Short() && preset != "IQ4_XS" && preset != "IQ2_M" {
				t.Skip("-short: IQ4_XS and IQ2_M only")
			}
			if f32s[ckpt] == nil {
				f32s[ckpt] = toGGUF(t, filepath.Join(dir, ckpt), "f32")
			}
			t.Chdir(dir)
			o := quant.Options{ChunkElems: 4096}
			if o.Type, err = quant.ParseType(preset); err != nil {
				t.Fatal(err)
			}
			o.Preset, _ = quant.Preset(preset)
			if len(f) == 3 {
				if o.Imatrix, err = imatrix.Load(matrices[ckpt]); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ggufconv.NewStream(bytes.NewReader(f32s[ckpt]), ggufconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			q, err := quant.New(apr(t, s), o)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if got := sha256Hex(out.Bytes()); got != sums[file] {
				t.Errorf("SHA-256 of the export %s, llama-quantize wrote %s (%d bytes)", got, sums[file], out.Len())
			}
		})
	}
}
