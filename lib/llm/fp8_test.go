package llm_test

import (
	"io"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/stconv"
)

// tiny-qwen3-fp8 (testdata/hf/README.md) is tiny-qwen3's layout with every linear weight
// of its layers in F8_E4M3 with [128, 128] block scales, tiny-deepseek3-fp8 tiny-deepseek3's
// (its experts stacked and kv_b_proj split from FP8 weights); their references are today's
// converter's and llama-quantize's files of their exact BF16 twins (fp8ref.py, the
// converter's arithmetic in NumPy), and fp8ref.py's float32 values ("dequant/NAME").

// fp8Checkpoints are the FP8 test checkpoints, their class and how many FP8 weights
// each has (the MTP layer's left out by the converter).
var fp8Checkpoints = []struct {
	name, class string
	weights     int
}{
	{"tiny-qwen3-fp8", "Qwen3ForCausalLM", 14},
	{"tiny-deepseek3-fp8", "DeepseekV3ForCausalLM", 14},
}

// TestFP8ConverterBytes: the FP8 checkpoints convert, through every type and preset, to
// the very files the converter writes from their twins.
func TestFP8ConverterBytes(t *testing.T) {
	for _, c := range fp8Checkpoints {
		sums := refSums(t, c.name)
		for _, typ := range []string{"f32", "f16", "bf16", "q8_0", "Q4_K_M", "Q6_K", "Q2_K", "Q5_0"} {
			t.Run(c.name+"/"+typ, func(t *testing.T) {
				file := "ref/" + c.name + "." + typ + ".gguf"
				if sums[file] == "" {
					t.Fatalf("no reference sum for %s", file)
				}
				if got := sha256Hex(toGGUF(t, "../../testdata/hf/"+c.name, typ)); got != sums[file] {
					t.Errorf("SHA-256 of the export %s, the converter wrote %s from the twin", got, sums[file])
				}
			})
		}
	}
}

// TestFP8Dequant: the import gives each FP8 weight that is written alone as F32,
// fp8ref.py's values bit for bit, and no scale tensor.
func TestFP8Dequant(t *testing.T) {
	for _, c := range fp8Checkpoints {
		t.Run(c.name, func(t *testing.T) {
			sums := refSums(t, c.name)
			s, err := stconv.Open("../../testdata/hf/"+c.name, stconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			arch, _ := llm.LookupArch(c.class)
			n := 0
			for {
				info, r, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(info.Name, "scale") {
					t.Fatalf("tensor %q exported", info.Name)
				}
				hf, err := arch.HFName(info.Name)
				if err != nil {
					continue // stacked experts, kv_b_proj's halves: TestFP8ConverterBytes
				}
				if want, ok := sums["dequant/"+hf]; ok {
					n++
					if info.DType.String() != "F32" || sha256Hex(b) != want {
						t.Errorf("%s: %v, values differ from fp8ref.py's", info.Name, info.DType)
					}
				}
			}
			if n != c.weights {
				t.Fatalf("%d FP8 weights compared, want %d", n, c.weights)
			}
		})
	}
}

// TestFP8Bad: FP8 weights with no scale, a scale that does not cover its weight's blocks,
// and FP8 weights in a checkpoint that does not say "fp8" are errors naming the tensor.
func TestFP8Bad(t *testing.T) {
	src := "../../testdata/hf/tiny-qwen3-fp8"
	edit := func(t *testing.T, cfg func(string) string, ts func([]stTensor) []stTensor) error {
		dir := copyCheckpointWith(t, src, "tiny-qwen3-fp8", func(file string, b []byte) []byte {
			switch file {
			case "config.json":
				return []byte(cfg(string(b)))
			case "model.safetensors":
				tt, meta := readTensors(t, b)
				return writeTensors(t, ts(tt), meta)
			}
			return b
		})
		s, err := stconv.Open(dir, stconv.ImportOptions{})
		if err == nil {
			s.Close()
		}
		return err
	}
	same := func(s string) string { return s }
	keep := func(ts []stTensor) []stTensor { return ts }
	cases := []struct {
		name string
		cfg  func(string) string
		ts   func([]stTensor) []stTensor
		want []string
	}{
		{"no scale", same, func(ts []stTensor) []stTensor { return drop(ts, "model.layers.1.mlp.up_proj.weight_scale_inv") },
			[]string{`"model.layers.1.mlp.up_proj.weight"`, "F8_E4M3", "weight_scale_inv", "need their scale"}},
		{"scale short of a block", same, func(ts []stTensor) []stTensor {
			for i := range ts {
				if ts[i].name == "model.layers.0.mlp.gate_proj.weight_scale_inv" { // [3 2] for [320 256]
					ts[i].shape, ts[i].data = []int64{2, 2}, ts[i].data[:16]
				}
			}
			return ts
		}, []string{`"model.layers.0.mlp.gate_proj.weight_scale_inv"`, "[2 2]", "[3 2]", "[128 128]"}},
		{"not fp8", func(s string) string { return strings.Replace(s, `"quant_method": "fp8"`, `"quant_method": "none"`, 1) }, keep,
			[]string{"F8_E4M3", "quant_method"}},
		{"block size", func(s string) string { return strings.Replace(s, `[128, 128]`, `[128]`, 1) }, keep,
			[]string{"weight_block_size"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := edit(t, c.cfg, c.ts)
			if err == nil {
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
