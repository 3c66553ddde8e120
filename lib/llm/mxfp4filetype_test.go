package llm_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestMXFP4WithoutQuantizationConfig: a gpt-oss checkpoint with MXFP4 experts but no
// quantization_config in config.json converts as today's converter converts it: the
// experts repacked into MXFP4 all the same (generate_extra_tensors), general.file_type
// the outtype's (0 for f32, 1 for f16), not MOSTLY_MXFP4_MOE (38), which the converter
// writes only when quant_method says mxfp4 (conversion/base.py, prepare_tensors).
// The sums are those of convert_hf_to_gguf.py --outtype f32 and f16 (2026-09-28) on
// tiny-gptoss-mxfp4 without that line, in a directory named "noqc"
// (LLAMA_TOKPRE=qwen2, as for the fixture's references); apr wrote 38 before.
func TestMXFP4WithoutQuantizationConfig(t *testing.T) {
	src := "../../testdata/hf/tiny-gptoss-mxfp4"
	dir := filepath.Join(t.TempDir(), "noqc")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.json" {
			qc := regexp.MustCompile(`(?m)^ *"quantization_config": .*\n`)
			if !qc.Match(b) {
				t.Fatal("config.json has no quantization_config line")
			}
			b = qc.ReplaceAll(b, nil)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for typ, want := range map[string]string{
		"f32": "92f11b268bb719549371243492518b3b4268825b166521b613cf28efc48d7129",
		"f16": "42cefabd553876e9d1704f8bc131263f5cb85741807c1b3c5cc625eee7202747",
	} {
		if got := sha256Hex(toGGUF(t, dir, typ)); got != want {
			t.Errorf("%s: SHA-256 %s; today's converter wrote %s", typ, got, want)
		}
	}
}
