package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
)

// TestKeepSplitBytes: --keep-split writes the parts llama-quantize --keep-split writes
// from the same input, byte for byte (testdata/hf/knobs.sha256, made by
// testdata/hf/mkknobref.sh): tiny-llama's F32 GGUF split into parts of 8 tensors as
// llama-gguf-split splits it (apr's split export, which writes its bytes), Q4_K_M;
// the whole file, which gives one part named -00001-of-00001 without split keys; the
// F16 split set of testdata/gguf/split with an i-quant preset and --override-kv; both
// sets with --prune-layers (the tensors left in each part; the first set's last part is
// left empty, so there are two).
func TestKeepSplitBytes(t *testing.T) {
	sums := knobSums(t)
	dir := t.TempDir()
	in, err := os.Open(tinyGGUF)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ggufconv.NewStream(bufio.NewReader(in), ggufconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ggufconv.ExportSplit(filepath.Join(dir, "tl8"), s, ggufconv.ExportOptions{TempDir: dir}, ggufconv.SplitOptions{MaxTensors: 8}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	in.Close()

	for _, c := range []struct {
		in, out string
		parts   int
		args    []string
	}{
		{filepath.Join(dir, "tl8-00001-of-00003.gguf"), "tiny-llama.Q4_K_M.keep-split.gguf", 3, []string{"q4_k_m"}},
		{tinyGGUF, "tiny-llama.Q6_K.keep-split.gguf", 1, []string{"q6_k"}},
		{splitGGUF, "tiny-llama.f16.IQ4_XS.keep-split.gguf", 4, []string{"iq4_xs", "--override-kv", "general.name=str:x"}},
		{filepath.Join(dir, "tl8-00001-of-00003.gguf"), "tiny-llama.Q4_K_M.keep-split.prune-layers.gguf", 2, []string{"q4_k_m", "--prune-layers", "1"}},
		{splitGGUF, "tiny-llama.f16.Q4_0.keep-split.prune-layers.gguf", 4, []string{"q4_0", "--prune-layers", "0"}},
	} {
		t.Run(c.out, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), c.out)
			r := runCLI(nil, append([]string{c.args[0], "--keep-split", c.in, "-o", out}, c.args[1:]...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			for i := 1; i <= c.parts; i++ {
				name := strings.TrimSuffix(c.out, ".gguf") + partName(i, c.parts)
				b, err := os.ReadFile(filepath.Join(filepath.Dir(out), name))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				if got := hex.EncodeToString(sum[:]); sums[name] == "" || got != sums[name] {
					t.Errorf("%s: SHA-256 %s, llama-quantize --keep-split wrote %q", name, got, sums[name])
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written beside the parts", out)
			}
		})
	}

	// usage errors: a split flag beside it, an input that is not GGUF, no -o
	for _, args := range [][]string{
		{"q4_0", "--keep-split", "--split-max-tensors", "4", tinyGGUF, "-o", filepath.Join(dir, "x.gguf")},
		{"q4_0", "--keep-split", tinyCkpt, "-o", filepath.Join(dir, "x.gguf")},
		{"q4_0", "--keep-split", tinyGGUF},
		{"q4_0", "--keep-split", "--to", "apr", tinyGGUF, "-o", filepath.Join(dir, "x.apr")},
	} {
		if r := runCLI(nil, args...); r.code != 2 || !strings.Contains(r.stderr, "--keep-split") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	// a part left empty in the middle (llama-quantize crashes there)
	if r := runCLI(nil, "q4_0", "--keep-split", "--prune-layers", "1", splitGGUF, "-o", filepath.Join(dir, "x.gguf")); r.code != 1 ||
		!strings.Contains(r.stderr, "leaves no tensor in part 3 of 4") {
		t.Errorf("an empty part: exit %d, stderr %q", r.code, r.stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "x*")); len(m) != 0 {
		t.Errorf("outputs left: %v", m)
	}
}

// knobSums reads testdata/hf/knobs.sha256: file name -> SHA-256.
func knobSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../../testdata/hf/knobs.sha256")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[name] = sum
		}
	}
	return sums
}

// TestRequantizeBytes: from an already quantized GGUF, a tensor that changes type
// needs --allow-requantize, as in llama-quantize (the same words in the error, exit 1,
// no output); with it the file is llama-quantize --allow-requantize's, byte for byte
// (testdata/hf/knobs.sha256, by testdata/hf/mkknobref.sh); a preset whose every type
// is the input's (after the fallback) copies them without the flag, as llama-quantize;
// and llama-quantize's COPY, which changes no tensor.
func TestRequantizeBytes(t *testing.T) {
	sums := knobSums(t)
	const q8, q4 = "../../testdata/gguf/tiny-llama.Q8_0.gguf", "../../testdata/gguf/tiny-llama.Q4_0.gguf"
	for _, c := range []struct {
		in, out string
		args    []string
	}{
		{q8, "tiny-llama.Q8_0.Q4_K_M.requant.gguf", []string{"q4_k_m", "--allow-requantize"}},
		{q4, "tiny-llama.Q4_0.Q8_0.requant.gguf", []string{"q8_0", "--allow-requantize"}},
		{q8, "tiny-llama.Q8_0.F16.requant.gguf", []string{"f16", "--allow-requantize"}},
		{q4, "tiny-llama.Q4_0.Q4_0.gguf", []string{"q4_0"}},
		// COPY (any case): nothing converted, the input's file type, llama-quantize's layout and edits
		{q8, "tiny-llama.Q8_0.COPY.override-kv.gguf", []string{"copy", "--override-kv", "general.name=str:x"}},
		{"../../testdata/gguf/tiny-llama.f32.gguf", "tiny-llama.f32.COPY.gguf", []string{"COPY"}},
		{q4, "tiny-llama.Q4_0.COPY.prune-layers.gguf", []string{"copy", "--prune-layers", "0", "--override-kv", "general.file_type=int:3"}},
	} {
		t.Run(c.out, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), c.out)
			r := runCLI(nil, append([]string{c.args[0], c.in, "-o", out}, c.args[1:]...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got := hex.EncodeToString(sum[:]); sums[c.out] == "" || got != sums[c.out] {
				t.Errorf("SHA-256 %s, llama-quantize wrote %q", got, sums[c.out])
			}
		})
	}
	for _, args := range [][]string{{"q4_k_m", q8}, {"f16", q8}, {"q4_1", q4}} {
		out := filepath.Join(t.TempDir(), "x.gguf")
		r := runCLI(nil, append(args, "-o", out)...)
		if r.code != 1 || !strings.Contains(r.stderr, "(llama-quantize: requantizing from type q") ||
			!strings.Contains(r.stderr, "--allow-requantize") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: an output was written", args)
		}
	}
}

func partName(i, n int) string { return fmt.Sprintf("-%05d-of-%05d.gguf", i, n) }
