package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
)

// TestPruneAfterOverride: with --override-kv ARCH.block_count and --prune-layers
// together, llama-quantize sets the overrides and then the pruned block_count, which
// wins (src/llama-quant.cpp: gguf_set_val_u32 of LLM_KV_BLOCK_COUNT after the
// kv_overrides loop). The export set the override once more after pruning had set the
// count, so the file said 7 layers where it has 2 (or 1). Found by the third
// adversarial pass against today's llama-quantize.
func TestPruneAfterOverride(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		prune string
		want  uint64
	}{{"5", 2}, {"1", 1}} {
		out := filepath.Join(dir, "p"+c.prune+".gguf")
		r := runCLI(nil, "q8_0", "--prune-layers", c.prune, "--override-kv", "llama.block_count=int:7", tinyGGUF, "-o", out)
		if r.code != 0 {
			t.Fatalf("--prune-layers %s: exit %d: %s", c.prune, r.code, r.stderr)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		h, err := gguf.ReadHeader(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := h.Get("llama.block_count")
		if n, _ := v.AsUint64(); n != c.want || h.KVs[len(h.KVs)-1].Key != "llama.block_count" {
			t.Errorf("--prune-layers %s --override-kv llama.block_count=int:7: block_count %v (last key %q); want %d, set last",
				c.prune, v, h.KVs[len(h.KVs)-1].Key, c.want)
		}
	}
}
