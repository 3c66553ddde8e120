package llm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
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
	out, err := quantizeToGGUF(t, s, typ, pure, m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// quantizeToGGUF is `apr-quant TYPE [--pure] | apr-gguf export` of s, weighted by m;
// quant's and the export's errors are returned.
func quantizeToGGUF(t *testing.T, s stream.Stream, typ string, pure bool, m *imatrix.Matrix) ([]byte, error) {
	t.Helper()
	target, err := quant.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	preset, _ := quant.Preset(typ)
	q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset, Pure: pure, Imatrix: m, ChunkElems: 4096})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()})
	return out.Bytes(), err
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

// TestImatrixZeroBlocksBytes: importances that are zero over part of a row, where
// b4747's make_qp_quants divides 0 by 0 (a NaN block scale, which llama-quantize
// b4747 refuses) for q2_k, q4_k and q5_k, give later ggml's bytes (its scale is then
// 0). The matrix is the fixture's with blk.1.ffn_down.weight's first 256 of 512
// values zero (a whole super-block of every row) and blk.0.attn_q.weight's first 255
// of 256 (one column left); the sums are of those tensors' data in
// `llama-quantize --pure --imatrix MATRIX tiny-llama.f32.gguf OUT TYPE 2` (TYPE Q2_K,
// Q4_K, Q5_K) of a llama.cpp build of 2026-09-28 (0.5.0-dev, commit 0ad4a86, whose
// ggml has PR 15379's guard); its other 19 tensors equal apr's too.
func TestImatrixZeroBlocksBytes(t *testing.T) {
	m, err := imatrix.Load("../../testdata/hf/ref/tiny-llama.imatrix.dat")
	if err != nil {
		t.Fatal(err)
	}
	clear(m.Entries["blk.1.ffn_down.weight"][:256])
	clear(m.Entries["blk.0.attn_q.weight"][:255])
	file := filepath.Join(t.TempDir(), "zeros.dat")
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"Q2_K": {"blk.0.attn_q.weight": "9ffb3dbf65ebe5acee5e23f3f4374818c8fa2d34acbbd98de610b638b0a26e69",
			"blk.1.ffn_down.weight": "3de3c85991dcd5d2fa857e9164786bdbd4fe33fb156e37f1eb09c75c368f48d0"},
		"Q4_K_M": {"blk.0.attn_q.weight": "85a0ac057ecdba22645481f3b686b6f479f11e9f90d6ef35d383b1bae0df07fb",
			"blk.1.ffn_down.weight": "9e05dc79c322f0f45fd739fbeb239a776cebfc829a049f9e25064444e57a7c53"},
		"Q5_K_M": {"blk.0.attn_q.weight": "aa3588067268bd323213e26bffa017aef75ed93629bb73151894e67792d7f943",
			"blk.1.ffn_down.weight": "c303eac8771d95949d50747a14d5ae50de145d4b938033f4abeed6c460ef580a"},
	}
	for typ, sums := range want {
		t.Run(typ, func(t *testing.T) {
			tensorSums(t, imatrixGGUF(t, typ, file, true, false), sums)
		})
	}
}

// tensorSums checks the SHA-256 of the data of each named tensor of GGUF file out
// against llama-quantize's.
func tensorSums(t *testing.T, out []byte, sums map[string]string) {
	t.Helper()
	f, err := gguf.NewFile(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		t.Fatal(err)
	}
	for name, sum := range sums {
		i := f.Header.Tensor(name)
		if i < 0 {
			t.Fatalf("no tensor %s", name)
		}
		data, err := f.TensorData(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256Hex(data); got != sum {
			t.Errorf("%s: SHA-256 %s, llama-quantize's %s", name, got, sum)
		}
	}
}

// TestImatrixNegativeBytes: negative importances (which llama-imatrix never writes:
// its values are sums of squares) make IQ2_XXS's weighted sums of squares negative,
// where today's make_qp_quants returns 0 (ggml-quants.c:1146) and b4747 divided by
// them. The matrix is the fixture's with blk.0.attn_q.weight's values negated and
// blk.1.attn_q.weight's first 128 of 256; the sums are of those tensors' data in
// `llama-quantize --imatrix MATRIX tiny-llama.f32.gguf OUT IQ2_XXS 2` of today's
// llama.cpp (2026-09-28), printed by testdata/hf/mknegimatrix.py.
func TestImatrixNegativeBytes(t *testing.T) {
	m, err := imatrix.Load("../../testdata/hf/ref/tiny-llama.imatrix.dat")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range m.Entries["blk.0.attn_q.weight"] {
		m.Entries["blk.0.attn_q.weight"][i] = -v
	}
	for i, v := range m.Entries["blk.1.attn_q.weight"][:128] {
		m.Entries["blk.1.attn_q.weight"][i] = -v
	}
	file := filepath.Join(t.TempDir(), "negative.dat")
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tensorSums(t, imatrixGGUF(t, "IQ2_XXS", file, false, false), map[string]string{
		"blk.0.attn_q.weight": "f57511198cd295e9187ab5e6153bd837c4ee91d0217ea593d6b767ca37fa74c2",
		"blk.1.attn_q.weight": "f41337bb7cdc47a7fcf2e2bd2bf52c4ba3e3fa6489e60d3798d9b81d15b4f5d2",
	})
}
