package llm_test

import (
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
	qc := regexp.MustCompile(`(?m)^ *"quantization_config": .*\n`)
	dir := copyCheckpointWith(t, "../../testdata/hf/tiny-gptoss-mxfp4", "noqc", func(file string, b []byte) []byte {
		if file != "config.json" {
			return b
		}
		if !qc.Match(b) {
			t.Fatal("config.json has no quantization_config line")
		}
		return qc.ReplaceAll(b, nil)
	})
	for typ, want := range map[string]string{
		"f32": "92f11b268bb719549371243492518b3b4268825b166521b613cf28efc48d7129",
		"f16": "42cefabd553876e9d1704f8bc131263f5cb85741807c1b3c5cc625eee7202747",
	} {
		if got := sha256Hex(toGGUF(t, dir, typ)); got != want {
			t.Errorf("%s: SHA-256 %s; today's converter wrote %s", typ, got, want)
		}
	}
}
