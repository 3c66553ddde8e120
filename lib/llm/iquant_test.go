package llm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
)

// TestIQuantPureTensors: `apr-st import tiny-llama | apr-quant TYPE --pure [--imatrix
// ref/tiny-llama.imatrix.dat] | apr-gguf export` writes llama-quantize's tensors for the
// i-quants. The sums are SHA-256 over every tensor's data, tensors sorted by name, of
// `llama-quantize --pure [--imatrix ref/tiny-llama.imatrix.dat] tiny-llama.f32.gguf OUT
// TYPE 2` by today's llama.cpp (llama-current.sh's build, 2026-09-28 sources), the F32 GGUF made by
// today's convert_hf_to_gguf.py (--outtype f32) from testdata/hf/tiny-llama.
// Without a matrix llama-quantize refuses IQ3_XXS ("this quantization requires an
// imatrix"), as apr does (lib/quant's TestIQuantTargets).
func TestIQuantPureTensors(t *testing.T) {
	cases := []struct{ typ, imatrix, sum string }{
		{"IQ4_NL", "", "5a5259d9958cd6613eff13a643320c845c71e98768d0f3a423bc08557bf67fd4"},
		{"IQ4_XS", "", "c8f9f30376609557a94820b4cdc941aec6a23b5a138328abd8feeb226878316a"},
		{"IQ3_S", "", "f86294f5c5d695f1245886edc6c6ee9a7d0931f775247dd52b388eaa5814da17"},
		{"IQ4_NL", "ref/tiny-llama.imatrix.dat", "6919fab0195972ddc61642b4f51947ffe1d18755c3b969398b09b0cba798f4c0"},
		{"IQ4_XS", "ref/tiny-llama.imatrix.dat", "728b228dca7afb464324bc80842af3e9b7272ae0e4926d3447a5ed11da6d27d0"},
		{"IQ3_XXS", "ref/tiny-llama.imatrix.dat", "f94d2153ad67683740ce8ecdf9b9a910ccc1a71b34f4e9da98e18af934c6dcc7"},
		{"IQ3_S", "ref/tiny-llama.imatrix.dat", "e7d232a6d25a2b325261a6ce8da2a737c2db27b02deb8449e03c7d54482293ef"},
	}
	dir, err := filepath.Abs("../../testdata/hf")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.typ+map[bool]string{true: "+imatrix"}[c.imatrix != ""], func(t *testing.T) {
			if testing.Short() && c.typ != "IQ4_XS" {
				t.Skip("-short: IQ4_XS only")
			}
			t.Chdir(dir)
			var m *imatrix.Matrix
			if c.imatrix != "" {
				if m, err = imatrix.Load(c.imatrix); err != nil {
					t.Fatal(err)
				}
			}
			s, err := stconv.Open("tiny-llama", stconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			target, err := quant.ParseType(c.typ)
			if err != nil {
				t.Fatal(err)
			}
			q, err := quant.New(apr(t, s), quant.Options{Type: target, Pure: true, Imatrix: m, ChunkElems: 4096})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.NewFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ti := range f.Header.Tensors {
				names = append(names, ti.Name)
			}
			slices.Sort(names)
			h := sha256.New()
			for _, n := range names {
				data, err := f.TensorData(f.Header.Tensor(n))
				if err != nil {
					t.Fatal(err)
				}
				h.Write(data)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != c.sum {
				t.Errorf("SHA-256 of the tensors %s, llama-quantize's %s", got, c.sum)
			}
		})
	}
}
