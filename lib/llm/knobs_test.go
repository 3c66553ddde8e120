package llm_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/quant"
)

// TestKnobsBytes: the ternary presets (kernels has their quantizers) and the
// per-tensor flags give llama-quantize's files byte for byte, from the F32 GGUF of the
// checkpoint (apr's conversion, the converter's bytes): TQ1_0 and TQ2_0 (token
// embeddings Q4_K, and on small-mistral's rows of 192 the fallback to Q4_0), --pure,
// --output-tensor-type (on the tied small-mistral also its token embeddings),
// --token-embedding-type, --tensor-type (a regex; under --pure too) and
// --leave-output-tensor, and --override-kv (every TYPE, a key given twice, keys
// llama-quantize sets itself, with --imatrix, and hyperparameters the preset rules
// read: block_count moves ffn_down's layers but not attn_v's, head_count_kv the GQA
// rules), and --prune-layers (layers dropped and renumbered, block_count, the
// matrix's entries under the old names), and the Q1_0 and Q2_0 file types (the output
// Q6_K, Q2_0's token embeddings Q4_K, Q2_0's fallback Q4_0 on small-mistral; with a
// matrix, which their quantizers ignore, the file only gains the keys). The sums are in testdata/hf/knobs.sha256, made by testdata/hf/mkknobref.sh
// with the same flags (testdata/hf/README.md).
func TestKnobsBytes(t *testing.T) {
	sums := refSums(t, "knobs")
	for _, c := range []struct{ ckpt, file, args string }{
		{"tiny-llama", "tiny-llama.TQ1_0.gguf", "TQ1_0"},
		{"tiny-llama", "tiny-llama.TQ2_0.gguf", "TQ2_0"},
		{"tiny-llama", "tiny-llama.TQ1_0.pure.gguf", "--pure TQ1_0"},
		{"tiny-llama", "tiny-llama.Q4_K_M.overrides.gguf", "--tensor-type attn_v=q8_0 --output-tensor-type q5_k --token-embedding-type q8_0 Q4_K_M"},
		{"tiny-llama", "tiny-llama.Q4_K_M.leave-output.gguf", "--leave-output-tensor Q4_K_M"},
		{"tiny-llama", "tiny-llama.Q6_K.pure.tensor-type.gguf", `--pure --tensor-type blk\.1\.=tq2_0 --tensor-type ffn=q5_0 Q6_K`},
		{"small-mistral", "small-mistral.TQ2_0.gguf", "TQ2_0"},
		{"small-mistral", "small-mistral.Q3_K_M.overrides.gguf", "--output-tensor-type q8_0 --tensor-type attn_(q|k)=q5_1 Q3_K_M"},
		{"tiny-llama", "tiny-llama.Q4_K_M.override-kv.gguf", "--override-kv general.name=str:Renamed " +
			"--override-kv llama.context_length=int:4096 --override-kv llama.rope.freq_base=float:50000.5 " +
			"--override-kv tokenizer.ggml.add_bos_token=bool:false --override-kv general.file_type=int:99 " +
			"--override-kv llama.context_length=int:1024 --override-kv llama.block_count=int:16 Q4_K_M"},
		{"tiny-llama", "tiny-llama.IQ4_XS.override-kv.imatrix.gguf", "--imatrix ref/tiny-llama.imatrix.dat " +
			"--override-kv quantize.imatrix.file=str:other --override-kv llama.attention.head_count_kv=int:1 " +
			"--override-kv general.name=int:5 IQ4_XS"},
		{"small-mistral", "small-mistral.Q3_K_M.override-kv.gguf", "--override-kv llama.block_count=int:48 " +
			"--override-kv general.description=str:hello --override-kv tokenizer.ggml.add_eos_token=bool:false " +
			"--override-kv llama.expert_count=float:8 --override-kv general.quantization_version=str:two Q3_K_M"},
		{"tiny-llama", "tiny-llama.Q4_K_M.prune-layers.gguf", "--prune-layers 1 Q4_K_M"},
		{"tiny-llama", "tiny-llama.Q4_K_M.prune-layers.imatrix.gguf", "--prune-layers 0 --imatrix ref/tiny-llama.imatrix.dat " +
			"--override-kv general.name=str:x Q4_K_M"},
		{"small-mistral", "small-mistral.IQ4_XS.prune-layers.gguf", "--prune-layers 0,2,7 IQ4_XS"},
		{"tiny-llama", "tiny-llama.Q1_0.gguf", "Q1_0"},
		{"tiny-llama", "tiny-llama.Q2_0.gguf", "Q2_0"},
		{"tiny-llama", "tiny-llama.Q2_0.imatrix.gguf", "--imatrix ref/tiny-llama.imatrix.dat Q2_0"},
		{"small-mistral", "small-mistral.Q2_0.gguf", "Q2_0"},
	} {
		t.Run(c.file, func(t *testing.T) {
			want := sums[c.file]
			if want == "" {
				t.Fatal("no reference sum")
			}
			f32 := toGGUF(t, filepath.Join("../../testdata/hf", c.ckpt), "f32")
			s, err := ggufconv.NewStream(bytes.NewReader(f32), ggufconv.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o := dryRunOptions(t, c.args)
			if o.Imatrix != nil { // quantize.imatrix.file: the path as mkknobref.sh gives it
				o.Imatrix.File = strings.TrimPrefix(o.Imatrix.File, "../../testdata/hf/")
			}
			q, err := quant.New(apr(t, s), o)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			if got := sha256Hex(out.Bytes()); got != want {
				t.Errorf("SHA-256 of the export %s, llama-quantize %s wrote %s (%d bytes)", got, c.args, want, out.Len())
			}
		})
	}
}

// TestQ1_0RefusedLikeLlamaQuantize: Q1_0's 128-value blocks have no fallback in
// llama.cpp (tensor_type_fallback throws "no tensor type fallback is defined for type
// q1_0" on small-mistral's rows of 192 and 320); apr refuses the file too, naming a
// tensor, before anything is written.
func TestQ1_0RefusedLikeLlamaQuantize(t *testing.T) {
	f32 := toGGUF(t, "../../testdata/hf/small-mistral", "f32")
	s, err := ggufconv.NewStream(bytes.NewReader(f32), ggufconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = quant.New(s, dryRunOptions(t, "Q1_0"))
	if err == nil || !strings.Contains(err.Error(), "128-value Q1_0 blocks") {
		t.Errorf("small-mistral at Q1_0: %v", err)
	}
}
