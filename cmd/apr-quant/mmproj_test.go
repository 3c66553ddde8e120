package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

const tinyMistral3 = "../../testdata/hf/tiny-mistral3"

// TestMMProjOneCommand: apr-quant TYPE DIR --mmproj -o mmproj.gguf writes the bytes of
// the pipe apr-st import --mmproj DIR | apr-quant TYPE | apr-gguf export: a clip
// projector with v.token_embd.img_break (lib/llm's TestPixtralProjector compares it
// with the converter's).
func TestMMProjOneCommand(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	for _, typ := range []string{"f16", "q8_0"} {
		dir := t.TempDir()
		one, pipe := filepath.Join(dir, "mmproj-one.gguf"), filepath.Join(dir, "mmproj-pipe.gguf")
		if r := runCLI(nil, typ, tinyMistral3, "--mmproj", "-o", one); r.code != 0 {
			t.Fatalf("%s: exit %d: %s", typ, r.code, r.stderr)
		}
		a := stage(t, importST, nil, tinyMistral3, "--mmproj")
		stage(t, exportGGUF, stage(t, quantize, a, typ), "-o", pipe)
		sameFiles(t, one, pipe)
		f, err := gguf.Open(one)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := f.Get("general.architecture")
		arch, _ := v.AsString()
		v, _ = f.Get("general.type")
		kind, _ := v.AsString()
		var brk bool
		for _, ti := range f.Tensors {
			brk = brk || ti.Name == "v.token_embd.img_break"
		}
		f.Close()
		if arch != "clip" || kind != "mmproj" || !brk {
			t.Errorf("%s: architecture %q, type %q, img_break %v; want clip, mmproj, true", typ, arch, kind, brk)
		}
	}
}

// TestMMProjRefused: --mmproj of a checkpoint without a vision tower is an error (exit
// 1, nothing written), as is a llama-quantize preset of a projector (llama-quantize's
// rules for one are not apr's yet), and of a GGUF input a usage error, as apr-st
// import's other flags.
func TestMMProjRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mmproj.gguf")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"f16", tinyQwen3, "--mmproj"}, 1, "no vision_config"},
		{[]string{"f16", tinyMistral3, "--mmproj", "--hf-layout"}, 1, "--mmproj needs a checkpoint directory"},
		{[]string{"q8_0", tinyGGUF, "--mmproj"}, 2, "--mmproj: apr-st import's flags"},
		{[]string{"q4_k_m", tinyMistral3, "--mmproj"}, 1, "q4_k_m is a llama-quantize preset, which apr does not apply to a vision projector"},
	} {
		r := runCLI(nil, append(c.args, "-o", out)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q: an output was written", c.args)
		}
	}
}
