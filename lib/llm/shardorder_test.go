package llm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/safetensors"
)

// TestShardOrder: a checkpoint whose shards hold their tensors, and whose index lists
// them, in another order than by name converts as today's converter converts it: the
// shards in file name order, each shard's tensors by name (conversion/base.py reads the
// sorted part names; gguf-py's SafetensorsLocal sorts a part's tensors by name),
// whatever the order of the data or of the weight_map.
//
// The checkpoint is tiny-llama's tensors in two shards (layer 1 and lm_head in
// model-00001-of-00002, the rest in model-00002-of-00002), each written, and listed
// in the weight_map, in reverse name order, in a directory named "sharded". want is
// the SHA-256 of what today's convert_hf_to_gguf.py --outtype f32 wrote from it
// (2026-09-28); apr wrote the shards' data order before (blk.1.attn_v first).
func TestShardOrder(t *testing.T) {
	const want = "85023f8292946635c61e4875f1a1851c10145a7b8c866ddd9cda3ad333ee195c"
	src := "../../testdata/hf/tiny-llama"
	dir := filepath.Join(t.TempDir(), "sharded")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "generation_config.json", "special_tokens_map.json", "tokenizer.model", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shards := map[string][]safetensors.TensorInfo{}
	for _, ti := range f.Header().Tensors {
		shard := "model-00002-of-00002.safetensors"
		if strings.Contains(ti.Name, ".layers.1.") || strings.HasPrefix(ti.Name, "lm_head") {
			shard = "model-00001-of-00002.safetensors"
		}
		shards[shard] = append(shards[shard], ti)
	}
	var weightMap []string
	for _, shard := range []string{"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors"} {
		ts := shards[shard]
		slices.SortFunc(ts, func(a, b safetensors.TensorInfo) int { return strings.Compare(b.Name, a.Name) })
		var hdr, data []byte
		for _, ti := range ts {
			d, err := f.TensorData(ti)
			if err != nil {
				t.Fatal(err)
			}
			hdr = fmt.Appendf(hdr, `,"%s":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, ti.Name, ti.DTypeName,
				strings.ReplaceAll(fmt.Sprint(ti.Shape), " ", ","), len(data), len(data)+len(d))
			data = append(data, d...)
			weightMap = append(weightMap, fmt.Sprintf(`"%s":"%s"`, ti.Name, shard))
		}
		hdr[0] = '{'
		hdr = append(hdr, '}')
		for len(hdr)%8 != 0 {
			hdr = append(hdr, ' ')
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
		if err := os.WriteFile(filepath.Join(dir, shard), append(append(b, hdr...), data...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index := `{"metadata":{"total_size":0},"weight_map":{` + strings.Join(weightMap, ",") + "}}"
	if err := os.WriteFile(filepath.Join(dir, safetensors.IndexFileName), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := sha256Hex(toGGUF(t, dir, "f32")); got != want {
		t.Errorf("SHA-256 %s; today's converter wrote %s", got, want)
	}
}
