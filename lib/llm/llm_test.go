package llm_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
)

const checkpoint = "../../testdata/hf/tiny-llama"

// checkpoints are the test checkpoints (testdata/hf/README.md): the fixtures'
// tiny-llama (LlamaForCausalLM, BF16, grouped-query attention, untied, one file), and
// apr's small-mistral (MistralForCausalLM, F16, multi-head attention, head_dim, tied,
// three shards, vocab padded), tiny-qwen3 (Qwen3ForCausalLM, q/k norms, head_dim
// unlike hidden/heads, BPE tokenizer.json, tied) and tiny-llama3 (Llama 3.1's rope
// scaling, tied, as Llama 3.2's small models), tiny-gemma (BF16), tiny-gemma2 (F16,
// soft-capping) and tiny-gemma3 (BF16, q/k norms, linear rope scaling, a sliding
// window's rotary base), with the sizes of the shards to export each back in.
var checkpoints = []struct {
	name  string
	shard int64
}{{"tiny-llama", 0}, {"small-mistral", 1096512}, {"tiny-qwen3", 0}, {"tiny-llama3", 0},
	{"tiny-gemma", 0}, {"tiny-gemma2", 0}, {"tiny-gemma3", 0}, {"tiny-phi3", 0},
	{"tiny-smollm3", 0}, {"tiny-olmo2", 0}, {"tiny-granite", 0}, {"tiny-starcoder2", 0},
	{"tiny-glm4", 0}}

// moeCheckpoints are the mixtures of experts (testdata/hf/README.md): tiny-qwen3moe,
// tiny-qwen2moe (shared expert, three shards), tiny-mixtral (8 experts, the
// expert-count rules of the presets), tiny-deepseek3 and tiny-deepseek2 (latent
// attention, leading dense block; DeepSeek-V3's MTP layer left out), tiny-olmoe and
// tiny-granitemoe (experts stacked already, gate and up fused: split). Granite-MoE's
// split gate and up do not go back to Hugging Face's layout yet (TestMoEBackRefused).
var moeCheckpoints = []string{"tiny-qwen3moe", "tiny-qwen2moe", "tiny-mixtral", "tiny-deepseek3", "tiny-deepseek2", "tiny-olmoe", "tiny-granitemoe"}

// moeBack are the mixtures of experts whose imports go back to their checkpoints,
// the experts unstacked (TestHFRoundTrip), with the sizes of the shards to export
// each back in.
var moeBack = []struct {
	name  string
	shard int64
}{{"tiny-qwen3moe", 0}, {"tiny-qwen2moe", 2757888}, {"tiny-mixtral", 0}, {"tiny-olmoe", 0}, {"tiny-deepseek2", 0}}

// moeGGUFBack are those that also come back from a GGUF file alone, their config.json
// generated (TestGGUFBack): all but DeepSeek's, whose yarn rope scaling is not written
// back into config.json yet.
var moeGGUFBack = moeBack[:4]

// converted are the checkpoints whose conversions are compared with llama.cpp's.
func converted() []string {
	var names []string
	for _, c := range checkpoints {
		names = append(names, c.name)
	}
	return append(names, moeCheckpoints...)
}

// refSums reads a checkpoint's checksum list: path -> SHA-256.
func refSums(t *testing.T, name string) map[string]string {
	f, err := os.Open("../../testdata/hf/" + name + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, path, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[path] = sum
		}
	}
	return sums
}

// apr runs s through an APR v2 encoding and back, as a pipe between programs does.
func apr(t *testing.T, s stream.Stream) stream.Stream {
	var buf bytes.Buffer
	if err := stream.Reencode(&buf, s, nil, false); err != nil {
		t.Fatal(err)
	}
	out, err := stream.Open(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConverterBytes: apr-st import DIR | apr-quant TYPE | apr-gguf export gives the
// very file llama.cpp's convert_hf_to_gguf.py --outtype TYPE writes.
func TestConverterBytes(t *testing.T) {
	for _, name := range converted() {
		for _, typ := range []string{"f32", "f16", "bf16", "q8_0"} {
			t.Run(name+"/"+typ, func(t *testing.T) { converterBytes(t, name, typ) })
		}
	}
}

func converterBytes(t *testing.T, name, typ string) {
	want := refSums(t, name)["ref/"+name+"."+typ+".gguf"]
	if want == "" {
		t.Fatalf("no reference sum for %s %s", name, typ)
	}
	out := toGGUF(t, "../../testdata/hf/"+name, typ)
	if got := sha256Hex(out); got != want {
		t.Errorf("SHA-256 of the export %s, llama.cpp's converter wrote %s (%d bytes)", got, want, len(out))
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestPresetBytes: apr-st import DIR | apr-quant PRESET | apr-gguf export gives the
// file llama-quantize writes from the converter's F32 GGUF with that preset (per-tensor
// types by llama.cpp's rules, ggml's quantizers, llama-quantize's key and tensor order).
//
// The references are today's llama-quantize's (2026-09-28), which falls back from
// Q2_K and Q3_K to Q4_0 for rows that are not whole 256-value blocks, as apr does
// (b4747 fell back to IQ4_NL): small-mistral's rows of 192 values exercise it.
func TestPresetBytes(t *testing.T) {
	for _, name := range converted() {
		c := struct{ name string }{name}
		sums := refSums(t, c.name)
		n := 0
		presets := []string{"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q2_K", "Q6_K", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}
		if testing.Short() { // the wasm legs: every checkpoint, its Q4_K_M (the native leg runs them all)
			presets = presets[:1]
		}
		for _, p := range presets {
			want, ok := sums["ref/"+c.name+"."+p+".gguf"]
			if !ok {
				continue
			}
			n++
			t.Run(c.name+"/"+p, func(t *testing.T) {
				if _, ok := quant.Preset(p); !ok {
					t.Fatalf("%s is not a preset", p)
				}
				out := toGGUF(t, "../../testdata/hf/"+c.name, p)
				got := sha256Hex(out)
				if inPlace := toGGUFFile(t, "../../testdata/hf/"+c.name, p); !bytes.Equal(inPlace, out) {
					t.Errorf("the export to a file (%d bytes, without a spool) differs from the spooled export (%d bytes)", len(inPlace), len(out))
				}
				if got != want {
					t.Errorf("SHA-256 of the export %s, llama-quantize wrote %s (%d bytes)", got, want, len(out))
				}
			})
		}
		if n == 0 {
			t.Errorf("%s: no preset references", c.name)
		}
	}
}

// TestHFRoundTrip: a checkpoint imported in llama.cpp's form exports back to the same
// files, byte for byte (shards and index included); a Gemma checkpoint's weights to
// the same values but where the converter's +1 on a norm rounded (sameValues).
func TestHFRoundTrip(t *testing.T) {
	for _, c := range append(checkpoints, moeBack...) {
		dir := "../../testdata/hf/" + c.name
		s, err := stconv.Open(dir, stconv.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := apr(t, s)
		s.Close()
		if _, ok := in.Header().Metadata.Extra["gguf"]; !ok {
			t.Fatalf("%s: no GGUF description in the import's metadata", c.name)
		}
		out := filepath.Join(t.TempDir(), "out")
		if err := stconv.ExportDir(out, stconv.StreamSource(in), stconv.ExportOptions{TempDir: t.TempDir(), ShardSize: c.shard}); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			want, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			got, err := os.ReadFile(filepath.Join(out, e.Name()))
			if strings.HasPrefix(c.name, "tiny-gemma") && strings.HasSuffix(e.Name(), ".safetensors") && err == nil {
				continue // compared value by value below
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs after the round trip (%d bytes, want %d; %v)", c.name, e.Name(), len(got), len(want), err)
			}
		}
		if strings.HasPrefix(c.name, "tiny-gemma") {
			want, wtypes := hfTensors(t, dir)
			got, gtypes := hfTensors(t, out)
			for name, w := range want {
				if !sameValues(c.name, name, got[name], w) || gtypes[name] != wtypes[name] {
					t.Errorf("%s: tensor %q differs after the round trip (%v, want %v)", c.name, name, gtypes[name], wtypes[name])
				}
			}
		}
	}
	s, err := stconv.Open(checkpoint, stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _, err := s.Next()
	if err != nil || first.Name != "output.weight" || first.DType.String() != "BF16" {
		t.Fatalf("first tensor %q %v, %v; want llama.cpp's output.weight, BF16 as in the checkpoint", first.Name, first.DType, err)
	}
}

// TestExportRefusesHFLayout: a language model apr cannot put into llama.cpp's form
// (an unknown architecture, a config.json that names none, or imported with HFLayout)
// imports as it is, and GGUF export refuses it, naming the architecture, unless asked
// for a generic GGUF.
func TestExportRefusesHFLayout(t *testing.T) {
	unknown := copyCheckpoint(t, func(s string) string {
		return strings.Replace(s, `"LlamaForCausalLM"`, `"GPT2LMHeadModel"`, 1)
	})
	cases := []struct {
		dir  string
		opts stconv.ImportOptions
		want string
	}{
		{unknown, stconv.ImportOptions{}, `architecture "GPT2LMHeadModel" (config.json) is not one apr converts for llama.cpp (supported: ` + strings.Join(llm.Supported(), ", ") + ")"},
		{checkpoint, stconv.ImportOptions{HFLayout: true}, "this LlamaForCausalLM checkpoint was imported in its Hugging Face layout"},
	}
	for _, arch := range []string{`[]`, `[5]`, `"LlamaForCausalLM"`} {
		dir := copyCheckpoint(t, func(s string) string {
			return strings.Replace(s, `[
    "LlamaForCausalLM"
  ]`, arch, 1)
		})
		cases = append(cases, struct {
			dir  string
			opts stconv.ImportOptions
			want string
		}{dir, stconv.ImportOptions{}, "config.json names no architecture"})
	}
	for _, c := range cases {
		for _, generic := range []bool{false, true} {
			s, err := stconv.Open(c.dir, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = ggufconv.Export(&out, apr(t, s), ggufconv.ExportOptions{TempDir: t.TempDir(), Generic: generic})
			s.Close()
			if generic && err != nil {
				t.Errorf("%s, generic: %v", c.dir, err)
			}
			if !generic && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%s: error %v, want %q", c.dir, err, c.want)
			}
		}
	}
}

// TestHFLayout: with HFLayout the checkpoint keeps its own names.
func TestHFLayout(t *testing.T) {
	s, err := stconv.Open(checkpoint, stconv.ImportOptions{HFLayout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, _, err := s.Next()
	if err != nil || info.Name != "lm_head.weight" {
		t.Fatalf("first tensor %q, %v", info.Name, err)
	}
	if _, ok := s.Header().Metadata.Extra["gguf"]; ok {
		t.Error("HFLayout import carries a GGUF description")
	}
}

// copyCheckpoint copies the checkpoint to a temporary directory with config.json
// edited by edit.
func copyCheckpoint(t *testing.T, edit func(string) string) string {
	return copyCheckpointOf(t, checkpoint, edit)
}

// copyCheckpointOf copies checkpoint src to a temporary directory with config.json
// edited by edit.
func copyCheckpointOf(t *testing.T, src string, edit func(string) string) string {
	return copyCheckpointWith(t, src, "ckpt", func(file string, b []byte) []byte {
		if file == "config.json" {
			return []byte(edit(string(b)))
		}
		return b
	})
}

// TestFamilyErrors: a config.json that lacks what a family's converter needs, or
// contradicts its tensors, or asks for a rope scaling apr does not convert, is an
// error naming config.json's field, as the import starts (nothing is written).
func TestFamilyErrors(t *testing.T) {
	for _, c := range []struct{ ckpt, old, new, want string }{
		{"tiny-gemma2", `"attn_logit_softcapping": 50.0,`, ``, `"attn_logit_softcapping" is missing`},
		{"tiny-gemma3", `"sliding_window": 512,`, ``, `"sliding_window" is missing`},
		{"tiny-phi3", `"original_max_position_embeddings": 256,`, ``, `original_max_position_embeddings is missing`},
		{"tiny-phi3", `"long_factor": [1.0, 1.05,`, `"long_factor": [1.05,`, `rope_scaling.long_factor must be a list of 24 numbers`},
		{"tiny-phi3", `"type": "longrope"`, `"type": "dynamic"`, `rope_scaling.rope_type "dynamic" is not a Phi-3 rope scaling`},
		{"tiny-llama3", `"rope_type": "llama3"`, `"rope_type": "llama4"`, `rope_scaling.rope_type "llama4" is not a rope scaling apr converts`},
		{"tiny-llama3", `"high_freq_factor": 4.0`, `"high_freq_factor": 1.0`, `high_freq_factor and low_freq_factor are both 1`},
		{"tiny-qwen3", `"head_dim": 96`, `"head_dim": 64`, `head_dim give tensor "model.layers.0.self_attn.k_norm.weight" the shape [64], but it has [96]`},
		{"tiny-olmo2", `"sliding_window": 4096`, `"sliding_window": "x"`, `"sliding_window" is x, expected a non-negative integer`},
		{"tiny-gemma", `"head_dim": 64,`, ``, `"head_dim" is missing`},
	} {
		t.Run(c.ckpt+"/"+c.want, func(t *testing.T) {
			importFails(t, "../../testdata/hf/"+c.ckpt, c.old, c.new, c.want, "config.json")
		})
	}
}

// importFails checks that checkpoint src with old replaced by new in its config.json is
// refused as it is imported, with an error holding each of want.
func importFails(t *testing.T, src, old, new string, want ...string) {
	t.Helper()
	dir := copyCheckpointOf(t, src, func(s string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("config.json has no %s", old)
		}
		return strings.Replace(s, old, new, 1)
	})
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err == nil {
		s.Close()
		t.Fatal("imported")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

func TestCheckpointErrors(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"kv heads contradict k_proj", `"num_key_value_heads": 2`, `"num_key_value_heads": 4`, "num_key_value_heads/head_dim give tensor \"model.layers.0.self_attn.k_proj.weight\" the shape [256 256], but it has [128 256]"},
		{"layers contradict", `"num_hidden_layers": 2`, `"num_hidden_layers": 3`, "num_hidden_layers is 3, but the checkpoint has 2 layers"},
		{"vocab contradicts", `"vocab_size": 512`, `"vocab_size": 500`, "vocab_size"},
		{"heads not a divisor", `"num_attention_heads": 4`, `"num_attention_heads": 3`, "num_attention_heads 3"},
		{"missing field", `"hidden_size": 256,`, ``, `"hidden_size" is missing`},
		{"rope scaling", `"rope_theta": 10000.0,`, `"rope_theta": 10000.0, "rope_scaling": {"type": "yarn", "factor": 4},`, "rope_scaling"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { importFails(t, checkpoint, c.old, c.new, c.want) })
	}
	// Without "architectures" a checkpoint imports as it is, with no description.
	dir := copyCheckpoint(t, func(s string) string {
		return strings.Replace(s, `"architectures": [
    "LlamaForCausalLM"
  ],`, "", 1)
	})
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Header().Metadata.Extra["gguf"]; ok {
		t.Error("a checkpoint without architectures got a GGUF description")
	}
}

// fromGGUF is `apr-gguf import | apr-quant PRESET | apr-gguf export` on GGUF bytes;
// with plan the quantizer knows the tensor list first, as for a file with an index.
func fromGGUF(t *testing.T, in []byte, preset string, plan bool, pure ...bool) ([]byte, error) {
	t.Helper()
	return fromGGUFTable(t, in, preset, plan, false, pure...)
}

// noTable is a stream without its tensor table, as a 2.0 writer sends it.
type noTable struct{ stream.Stream }

func (s noTable) Header() container.Header {
	h := s.Stream.Header()
	h.Table = nil
	return h
}

// fromGGUFTable is fromGGUF whose piped APR stream keeps its tensor table when table
// is set (quant then plans from it, as from a file's index).
func fromGGUFTable(t *testing.T, in []byte, preset string, plan, table bool, pure ...bool) ([]byte, error) {
	t.Helper()
	imp := func() stream.Stream {
		s, err := ggufconv.NewStream(bytes.NewReader(in), ggufconv.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if table {
			return apr(t, s)
		}
		return noTable{apr(t, s)}
	}
	o := quant.Options{Preset: preset, Pure: len(pure) > 0 && pure[0]}
	o.Type, _ = quant.ParseType(preset)
	if plan {
		s := imp()
		for {
			info, r, err := s.Next()
			if err != nil {
				break
			}
			io.Copy(io.Discard, r)
			o.Plan = append(o.Plan, info)
		}
	}
	q, err := quant.New(imp(), o)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = ggufconv.Export(&out, q, ggufconv.ExportOptions{TempDir: t.TempDir()})
	return out.Bytes(), err
}

// TestPresetFromGGUF: a target for a model imported from a GGUF (a preset, or q8_0,
// f16, bf16) gives llama-quantize's file of the same F32 GGUF byte for byte, through a
// pipe and from a file. A tied model (no output.weight) through a pipe without a tensor
// table (a 2.0 stream) that lists token_embd first is refused at the end rather than
// given the wrong type; with the tensor list first (a plan, or the stream's table) it
// gives llama-quantize's bytes.
func TestPresetFromGGUF(t *testing.T) {
	// testdata/gguf: llama-quantize's files of gguf-py's F32 files (its README); Q4_K
	// is llama-quantize's alias of Q4_K_M.
	for src, types := range map[string][]string{
		"tiny-llama": {"Q8_0", "Q4_0"},
		"small":      {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q6_K", "F16", "BF16"},
	} {
		f32, err := os.ReadFile("../../testdata/gguf/" + src + ".f32.gguf")
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			want, err := os.ReadFile("../../testdata/gguf/" + src + "." + typ + ".gguf")
			if err != nil {
				t.Fatal(err)
			}
			target := strings.ToLower(typ)
			if target == "q4_k" {
				target = "q4_k_m"
			}
			for _, plan := range []bool{false, true} {
				got, err := fromGGUF(t, f32, target, plan)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s %s (plan %v): %d bytes, %v; want llama-quantize's %d bytes", src, typ, plan, len(got), err, len(want))
				}
			}
		}
	}
	// llama-quantize --pure: every weight Q4_0, its layout still.
	f32, _ := os.ReadFile("../../testdata/gguf/tiny-llama.f32.gguf")
	want, _ := os.ReadFile("../../testdata/gguf/tiny-llama.Q4_0.pure.gguf")
	if got, err := fromGGUF(t, f32, "q4_0", false, true); err != nil || !bytes.Equal(got, want) {
		t.Errorf("q4_0 --pure: %d bytes, %v; want llama-quantize's %d bytes", len(got), err, len(want))
	}
	tied := toGGUF(t, "../../testdata/hf/small-mistral", "f32")
	if _, err := fromGGUF(t, tied, "q4_k_m", false); err == nil || !strings.Contains(err.Error(), "tied embeddings") {
		t.Errorf("tied model through a pipe: %v", err)
	}
	got, err := fromGGUF(t, tied, "q4_k_m", true)
	if sum := sha256Hex(got); err != nil || sum != refSums(t, "small-mistral")["ref/small-mistral.Q4_K_M.gguf"] {
		t.Errorf("tied model with its tensor list: %v, SHA-256 %s", err, sum)
	}
	got, err = fromGGUFTable(t, tied, "q4_k_m", false, true)
	if sum := sha256Hex(got); err != nil || sum != refSums(t, "small-mistral")["ref/small-mistral.Q4_K_M.gguf"] {
		t.Errorf("tied model through a pipe with its tensor table: %v, SHA-256 %s", err, sum)
	}
}
