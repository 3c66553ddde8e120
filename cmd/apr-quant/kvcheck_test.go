package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOverrideBrokenHparams: an --override-kv of the layer or expert counts that
// makes a file today's llama.cpp aborts on (load_hparams' asserts,
// src/llama-model.cpp:1260, 1293-1305; llama-quantize itself aborts with
// GGML_ASSERT(n_expert_used_max > 0) on an expert_count of a dense model) or
// refuses (experts without a router) is refused, exit 1, naming the override,
// nothing written. Valid overrides still pass.
func TestOverrideBrokenHparams(t *testing.T) {
	dir := t.TempDir()
	const mixtral = "../../testdata/hf/tiny-mixtral"
	for _, c := range []struct {
		in    string
		kvs   []string
		blame string // the override the error names; "" : it converts
	}{
		{tinyGGUF, []string{"llama.expert_count=int:4"}, "llama.expert_count=int:4"},
		{tinyGGUF, []string{"llama.expert_count=int:4", "llama.expert_used_count=int:2"}, "llama.expert_count=int:4"},
		{tinyGGUF, []string{"llama.expert_used_count=int:1"}, "llama.expert_used_count=int:1"},
		{tinyGGUF, []string{"llama.block_count=int:0"}, "llama.block_count=int:0"},
		{tinyGGUF, []string{"llama.block_count=int:513"}, "llama.block_count=int:513"},
		{tinyGGUF, []string{"llama.expert_group_count=int:2"}, "llama.expert_group_count=int:2"},
		{mixtral, []string{"llama.expert_count=int:0"}, "llama.expert_count=int:0"},
		{mixtral, []string{"llama.expert_used_count=int:9"}, "llama.expert_used_count=int:9"},
		{mixtral, []string{"llama.expert_used_count=int:0"}, "llama.expert_used_count=int:0"},
		{mixtral, []string{"llama.expert_group_count=int:3"}, "llama.expert_group_count=int:3"},
		{mixtral, []string{"llama.expert_group_count=int:2"}, "llama.expert_group_count=int:2"}, // no group used
		{mixtral, []string{"llama.expert_used_count=int:8"}, ""},
		{mixtral, []string{"llama.expert_group_count=int:2", "llama.expert_group_used_count=int:1"}, ""},
		{tinyGGUF, []string{"llama.block_count=int:2"}, ""},
		{tinyGGUF, []string{"llama.context_length=int:64"}, ""},
	} {
		out := filepath.Join(dir, "o.gguf")
		args := []string{"q8_0", c.in, "-o", out}
		for _, kv := range c.kvs {
			args = append(args, "--override-kv", kv)
		}
		r := runCLI(nil, args...)
		_, statErr := os.Stat(out)
		switch {
		case c.blame == "" && r.code != 0:
			t.Errorf("%v: exit %d: %s", c.kvs, r.code, r.stderr)
		case c.blame != "" && (r.code != 1 || !strings.Contains(r.stderr, `--override-kv "`+c.blame+`"`) || statErr == nil):
			t.Errorf("%v on %s: exit %d, output written %v, stderr %q; want exit 1 naming %s, nothing written",
				c.kvs, filepath.Base(c.in), r.code, statErr == nil, r.stderr, c.blame)
		}
		os.Remove(out)
	}
}
