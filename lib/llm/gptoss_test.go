package llm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
)

// The gpt-oss checkpoints (testdata/hf/README.md): tiny-gptoss has BF16 experts,
// tiny-gptoss-mxfp4 the same layout with MXFP4 experts (U8 blocks and scales), as
// OpenAI ships gpt-oss. Their references are today's converter's and llama-quantize's.
var gptossCheckpoints = []string{"tiny-gptoss", "tiny-gptoss-mxfp4"}

// TestGptOssConverterBytes: apr-st import | apr-quant TYPE | apr-gguf export writes
// the converter's file for both forms of the experts: MXFP4 repacked into ggml's
// blocks (kept for every type, general.file_type 38 beside f32/f16/bf16), BF16 ones
// transposed and cast, gate_up split into gate and up with their biases.
func TestGptOssConverterBytes(t *testing.T) {
	for _, name := range gptossCheckpoints {
		for _, typ := range []string{"f32", "f16", "bf16", "q8_0"} {
			t.Run(name+"/"+typ, func(t *testing.T) { converterBytes(t, name, typ) })
		}
	}
}

// TestGptOssPresetBytes: the presets from the BF16 experts give llama-quantize's file;
// from MXFP4 experts llama-quantize refuses ("requantizing from type mxfp4 is
// disabled"), and so does apr, naming the tensor.
func TestGptOssPresetBytes(t *testing.T) {
	sums := refSums(t, "tiny-gptoss")
	n := 0
	for _, p := range []string{"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q2_K", "Q6_K", "Q4_0", "Q4_1", "Q5_0", "Q5_1"} {
		want, ok := sums["ref/tiny-gptoss."+p+".gguf"]
		if !ok {
			continue
		}
		n++
		t.Run(p, func(t *testing.T) {
			if got := sha256Hex(toGGUF(t, "../../testdata/hf/tiny-gptoss", p)); got != want {
				t.Errorf("SHA-256 of the export %s, llama-quantize wrote %s", got, want)
			}
		})
	}
	if n == 0 {
		t.Fatal("no preset references for tiny-gptoss")
	}
	if _, ok := refSums(t, "tiny-gptoss-mxfp4")["ref/tiny-gptoss-mxfp4.Q4_K_M.gguf"]; ok {
		t.Fatal("a Q4_K_M reference of MXFP4 experts: llama-quantize refused it when the references were made")
	}
	s, err := stconv.Open("../../testdata/hf/tiny-gptoss-mxfp4", stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	preset, _ := quant.Preset("Q4_K_M")
	target, _ := quant.ParseType("Q4_K_M")
	q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset})
	if err == nil {
		var out bytes.Buffer
		err = ggufconv.Export(&out, q, ggufconv.ExportOptions{TempDir: t.TempDir()})
	}
	if err == nil || !strings.Contains(err.Error(), "blk.0.ffn_down_exps.weight") || !strings.Contains(err.Error(), "already MXFP4") {
		t.Fatalf("Q4_K_M of MXFP4 experts: %v", err)
	}
}

// TestGptOssBadExperts: a checkpoint whose experts do not fit the config or each other
// is an error naming the tensor and what was expected; nothing is converted.
func TestGptOssBadExperts(t *testing.T) {
	src := "../../testdata/hf/tiny-gptoss-mxfp4"
	cases := []struct {
		name string
		edit func([]stTensor) []stTensor
		want []string
	}{
		{"no scales", func(ts []stTensor) []stTensor {
			return drop(ts, "model.layers.1.mlp.experts.down_proj_scales")
		}, []string{`"model.layers.1.mlp.experts.down_proj_scales"`, "every layer"}},
		{"no blocks", func(ts []stTensor) []stTensor {
			return drop(ts, "model.layers.0.mlp.experts.gate_up_proj_blocks")
		}, []string{`"model.layers.0.mlp.experts.gate_up_proj_blocks"`, "every layer"}},
		{"no experts", func(ts []stTensor) []stTensor {
			return drop(drop(ts, "model.layers.1.mlp.experts.down_proj_scales"), "model.layers.1.mlp.experts.down_proj_blocks")
		}, []string{`"model.layers.1.mlp.experts.down_proj_blocks"`, "every layer"}},
		{"one layer's experts only", func(ts []stTensor) []stTensor {
			for _, l := range []string{"0", "1"} {
				ts = drop(drop(ts, "model.layers."+l+".mlp.experts.down_proj_scales"), "model.layers."+l+".mlp.experts.down_proj_blocks")
			}
			return ts
		}, []string{`"model.layers.0.mlp.experts.down_proj"`, "down_proj_blocks", "every layer of a gpt-oss model"}},
		{"block count", func(ts []stTensor) []stTensor {
			for i := range ts {
				if ts[i].name == "model.layers.0.mlp.experts.down_proj_blocks" { // 8 blocks a row read as 4 of 32 bytes
					ts[i].shape = []int64{4, 256, 4, 32}
				}
			}
			return ts
		}, []string{`"model.layers.0.mlp.experts.down_proj_blocks"`, "[4 256 4 32]", "[4 256 8 16]"}},
		{"expert count", func(ts []stTensor) []stTensor {
			for i := range ts {
				if ts[i].name == "model.layers.0.mlp.experts.down_proj_scales" {
					ts[i].shape = []int64{2, 512, 8}
				}
			}
			return ts
		}, []string{`"model.layers.0.mlp.experts.down_proj_scales"`, "[2 512 8]", "[4 256 8]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyCheckpointWith(t, src, "tiny-gptoss-mxfp4", func(file string, b []byte) []byte {
				if file != "model.safetensors" {
					return b
				}
				ts, meta := readTensors(t, b)
				return writeTensors(t, c.edit(ts), meta)
			})
			s, err := stconv.Open(dir, stconv.ImportOptions{})
			if err == nil {
				s.Close()
				t.Fatal("imported")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %s", err, w)
				}
			}
		})
	}
}

func drop(ts []stTensor, name string) []stTensor {
	for i := range ts {
		if ts[i].name == name {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	panic("no tensor " + name)
}

// TestGptOssToFile: the export onto a file (its tensor table known up front, no spool)
// equals the spooled one, for MXFP4 experts too.
func TestGptOssToFile(t *testing.T) {
	for _, name := range gptossCheckpoints {
		dir := "../../testdata/hf/" + name
		if a, b := toGGUF(t, dir, "q8_0"), toGGUFFile(t, dir, "q8_0"); !bytes.Equal(a, b) {
			t.Errorf("%s: the export to a file differs from the spooled export", name)
		}
	}
}

// TestGptOssNoWayBack: Hugging Face's layout from a gpt-oss model in llama.cpp's form
// is not written yet; the export says so, naming the first tensor it cannot place.
func TestGptOssNoWayBack(t *testing.T) {
	s, err := stconv.Open("../../testdata/hf/tiny-gptoss", stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = stconv.ExportDir(t.TempDir()+"/out", stconv.StreamSource(apr(t, s)), stconv.ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"blk.0.ffn_gate_exps.weight" has no Hugging Face name`) {
		t.Fatalf("export back: %v", err)
	}
}

// TestGptOssBlocksAcrossShards: a layer's MXFP4 blocks in one shard and its scales in the
// next convert as in one file, each scale with its own blocks. (Today's converter pairs
// the scales with the blocks it met last, another projection's, in that case: see
// docs/GGUF.md.)
func TestGptOssBlocksAcrossShards(t *testing.T) {
	src := "../../testdata/hf/tiny-gptoss-mxfp4"
	b, err := os.ReadFile(src + "/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ts, meta := readTensors(t, b)
	slices.SortFunc(ts, func(a, b stTensor) int { return strings.Compare(a.name, b.name) })
	const last = "model.layers.0.mlp.experts.down_proj_blocks" // its scales go to the second shard
	var one, two []stTensor
	weights := map[string]string{}
	for _, x := range ts {
		file := "model-00002-of-00002.safetensors"
		if x.name <= last {
			one, file = append(one, x), "model-00001-of-00002.safetensors"
		} else {
			two = append(two, x)
		}
		weights[x.name] = file
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": len(b)}, "weight_map": weights})
	dir := copyCheckpointWith(t, src, "tiny-gptoss-mxfp4", func(file string, b []byte) []byte { return b })
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"model-00001-of-00002.safetensors": writeTensors(t, one, meta),
		"model-00002-of-00002.safetensors": writeTensors(t, two, meta), "model.safetensors.index.json": index} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := refSums(t, "tiny-gptoss-mxfp4")["ref/tiny-gptoss-mxfp4.f32.gguf"]
	if got := sha256Hex(toGGUF(t, dir, "f32")); got != want {
		t.Errorf("two shards: SHA-256 %s, the one file's conversion is %s", got, want)
	}
}
