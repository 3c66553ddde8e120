package main

import (
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// TestOverrideKVBytes: --override-kv KEY=str:VALUE writes the bytes given, not UTF-8
// ones, as llama-quantize does (a byte 0xff stays 0xff; it became U+FFFD on the way
// through the command line's parser).
func TestOverrideKVBytes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.gguf")
	r := runCLI(nil, "copy", "../../testdata/gguf/split/tiny-llama.Q4_K_M-00001-of-00003.gguf", "-o", out, "--override-kv", "general.name=str:a\xffb")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, _ := f.Get("general.name")
	if s, _ := v.AsString(); s != "a\xffb" {
		t.Errorf("general.name %q, want %q", s, "a\xffb")
	}
}
