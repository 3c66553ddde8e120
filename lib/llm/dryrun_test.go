package llm_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/imatrix"
	"github.com/apr-go/apr/lib/quant"
)

// TestDryRunLikeLlamaQuantize: for each tiny checkpoint, apr's F32 GGUF of it (the
// converter's bytes) planned by quant.DryRun with llama-quantize's flags gives every
// tensor the type today's llama-quantize --dry-run gave it on the same file and
// flags, and the same "quant size" line: the i-quant, ternary, MXFP4_MOE and Q2_K_S
// presets, the K-quant and legacy ones, --output-tensor-type, --token-embedding-type,
// --tensor-type (also under --pure), --leave-output-tensor and --imatrix's effect on
// the rules, Q1_0 and Q2_0, --prune-layers and --override-kv of the hyperparameters
// the rules read. testdata/quant/dryrun/README.md says how the goldens were made.
func TestDryRunLikeLlamaQuantize(t *testing.T) {
	for _, name := range []string{"tiny-llama", "small-mistral", "tiny-qwen3", "tiny-phi3"} {
		t.Run(name, func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join("../../testdata/quant/dryrun", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			f32 := toGGUF(t, filepath.Join("../../testdata/hf", name), "f32")
			s, err := ggufconv.NewStream(bytes.NewReader(f32), ggufconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s = apr(t, s)
			h := s.Header()
			var tensors []container.TensorInfo
			for {
				info, r, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, r)
				tensors = append(tensors, info)
			}
			s.Close()
			cases := parseDryRunGolden(t, golden)
			if len(cases) < 40 {
				t.Fatalf("%d cases in the golden", len(cases))
			}
			for _, c := range cases {
				o := dryRunOptions(t, c.args)
				rep, err := quant.DryRun(h, tensors, o)
				if err != nil {
					// A type flag's type whose blocks do not fit a tensor's rows: llama-quantize's
					// dry run lists it, its quantization then aborts (GGML_ASSERT in gguf.cpp);
					// apr refuses it up front.
					if !strings.Contains(err.Error(), "take no fallback") {
						t.Errorf("%s: %v", c.args, err)
					}
					continue
				}
				if len(rep.Tensors) != len(c.types) {
					t.Errorf("%s: %d tensors, llama-quantize %d", c.args, len(rep.Tensors), len(c.types))
				}
				for _, ts := range rep.Tensors {
					if want, ok := c.types[ts.Name]; !ok || !strings.EqualFold(want, ts.To) {
						t.Errorf("%s: %s is %s (%s), llama-quantize: %q", c.args, ts.Name, ts.To, ts.Reason, want)
					}
				}
				tt := rep.Totals
				got := fmt.Sprintf("quant size  = %8.2f MiB (%.2f BPW)", float64(tt.BytesAfter)/1024/1024, float64(tt.BytesAfter)*8/float64(rep.Elems))
				if got != c.size {
					t.Errorf("%s: %q, llama-quantize %q", c.args, got, c.size)
				}
			}
		})
	}
}

type dryRunCase struct {
	args  string            // llama-quantize's flags and file type
	types map[string]string // tensor -> ggml type name
	size  string            // its "quant size" line
}

func parseDryRunGolden(t *testing.T, b []byte) []dryRunCase {
	var cases []dryRunCase
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "== "):
			cases = append(cases, dryRunCase{args: line[3:], types: map[string]string{}})
		case len(cases) == 0:
			t.Fatalf("golden: %q before a case", line)
		case strings.HasPrefix(line, "quant size"):
			cases[len(cases)-1].size = line
		default:
			name, typ, ok := strings.Cut(line, " ")
			if !ok {
				t.Fatalf("golden: %q", line)
			}
			cases[len(cases)-1].types[name] = typ
		}
	}
	return cases
}

// dryRunOptions reads llama-quantize's flags and file type as apr-quant does.
func dryRunOptions(t *testing.T, args string) quant.Options {
	t.Helper()
	f := strings.Fields(args)
	ftype := f[len(f)-1]
	var o quant.Options
	var err error
	if o.Type, err = quant.ParseType(ftype); err != nil {
		t.Fatal(err)
	}
	o.Preset, _ = quant.Preset(ftype)
	for i := 0; i < len(f)-1; i++ {
		switch f[i] {
		case "--pure":
			o.Pure = true
		case "--leave-output-tensor":
			o.LeaveOutput = true
		case "--output-tensor-type":
			i++
			o.OutputTensorType, err = quant.ParseGGMLType(f[i])
		case "--token-embedding-type":
			i++
			o.TokenEmbeddingType, err = quant.ParseGGMLType(f[i])
		case "--tensor-type":
			i++
			var tt quant.TensorType
			tt, err = quant.ParseTensorType(f[i])
			o.TensorTypes = append(o.TensorTypes, tt)
		case "--prune-layers":
			i++
			o.PruneLayers, err = quant.ParsePruneLayers(f[i])
		case "--override-kv":
			i++
			var kv quant.KVOverride
			kv, err = quant.ParseKVOverride(f[i])
			o.KVOverrides = append(o.KVOverrides, kv)
		case "--imatrix":
			i++
			o.Imatrix, err = imatrix.Load(filepath.Join("../../testdata/hf", f[i]))
		default:
			t.Fatalf("flag %q", f[i])
		}
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
	}
	return o
}

// TestDryRunMoE: the same comparison on a mixture of experts, Qwen3-MoE's layout
// small (8 layers, 8 experts: llama.cpp's n_expert == 8 rules, and MXFP4_MOE's 3-D
// expert tensors), whose F32 GGUF testdata/quant/dryrun/mkmoe.py writes with gguf-py;
// a dry run reads no data, so the test builds the same keys and tensor list.
func TestDryRunMoE(t *testing.T) {
	golden, err := os.ReadFile("../../testdata/quant/dryrun/tiny-moe.txt")
	if err != nil {
		t.Fatal(err)
	}
	const L, E, D, H, KV, HD, FF, V = 8, 8, 256, 4, 2, 64, 256, 512
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("qwen3moe")},
		{Key: "qwen3moe.block_count", Value: gguf.Uint32(L)},
		{Key: "qwen3moe.attention.head_count", Value: gguf.Uint32(H)},
		{Key: "qwen3moe.attention.head_count_kv", Value: gguf.Uint32(KV)},
		{Key: "qwen3moe.expert_count", Value: gguf.Uint32(E)},
	}
	h := container.Header{Metadata: container.Metadata{Extra: map[string]any{gguf.MetadataKey: gguf.EncodeKVs(3, kvs)}}}
	var tensors []container.TensorInfo
	add := func(name string, shape ...int64) {
		tensors = append(tensors, container.TensorInfo{Name: name, DType: dtype.F32, Shape: shape})
	}
	add("token_embd.weight", V, D)
	add("output_norm.weight", D)
	add("output.weight", V, D)
	for i := range L {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", D)
		add(p+"attn_q.weight", H*HD, D)
		add(p+"attn_k.weight", KV*HD, D)
		add(p+"attn_v.weight", KV*HD, D)
		add(p+"attn_output.weight", D, H*HD)
		add(p+"attn_q_norm.weight", HD)
		add(p+"attn_k_norm.weight", HD)
		add(p+"ffn_norm.weight", D)
		add(p+"ffn_gate_inp.weight", E, D)
		add(p+"ffn_gate_exps.weight", E, FF, D)
		add(p+"ffn_up_exps.weight", E, FF, D)
		add(p+"ffn_down_exps.weight", E, D, FF)
	}
	cases := parseDryRunGolden(t, golden)
	if len(cases) != 47 {
		t.Fatalf("%d cases in the golden", len(cases))
	}
	for _, c := range cases {
		rep, err := quant.DryRun(h, tensors, dryRunOptions(t, c.args))
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		for _, ts := range rep.Tensors {
			if want, ok := c.types[ts.Name]; !ok || !strings.EqualFold(want, ts.To) {
				t.Errorf("%s: %s is %s (%s), llama-quantize: %q", c.args, ts.Name, ts.To, ts.Reason, want)
			}
		}
		tt := rep.Totals
		got := fmt.Sprintf("quant size  = %8.2f MiB (%.2f BPW)", float64(tt.BytesAfter)/1024/1024, float64(tt.BytesAfter)*8/float64(rep.Elems))
		if len(rep.Tensors) != len(c.types) || got != c.size {
			t.Errorf("%s: %d tensors, %q; llama-quantize %d, %q", c.args, len(rep.Tensors), got, len(c.types), c.size)
		}
	}
}
