package llm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/dtype"
	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/internal/peertest"
	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
	"github.com/apr-go/apr/lib/stream"
	"github.com/apr-go/apr/lib/tensor"
)

// toGGUF is `apr-st import DIR | apr-quant TYPE | apr-gguf export`; TYPE may be a
// llama-quantize preset.
func toGGUF(t *testing.T, dir, typ string) []byte {
	t.Helper()
	return toGGUFOn(t, dir, typ, nil)
}

// toGGUFFile is toGGUF onto a regular file, after a few bytes already written to it:
// a stream with a tensor table is exported without a spool (in place, at each tensor's
// offset, where the preset's order differs from the stream's).
func toGGUFFile(t *testing.T, dir, typ string) []byte {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("pre"); err != nil {
		t.Fatal(err)
	}
	toGGUFOn(t, dir, typ, f)
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:3]) != "pre" {
		t.Fatalf("the bytes before the export were overwritten: %q", b[:3])
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(b)) {
		t.Errorf("file offset %d after the export, want its end %d", off, len(b))
	}
	return b[3:]
}

func toGGUFOn(t *testing.T, dir, typ string, f *os.File) []byte {
	t.Helper()
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target, err := quant.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	preset, _ := quant.Preset(typ)
	q, err := quant.New(apr(t, s), quant.Options{Type: target, Preset: preset})
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		spooled := func(why string) {
			if _, ok := container.Patchable(f); ok { // not where pwrite's use cannot be told safe (wasm)
				t.Errorf("export to a file spooled: %s", why)
			}
		}
		if err := ggufconv.Export(f, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir(), Spooling: spooled}); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	var out bytes.Buffer
	if err := ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// back is `apr-gguf import - | apr-st export -o OUT/`: it writes the checkpoint of a
// GGUF file into a new directory named name and returns it.
func back(t *testing.T, gguf io.Reader, name string) string {
	s, err := ggufconv.NewStream(gguf, ggufconv.ImportOptions{Name: "stdin"})
	if err != nil {
		t.Fatal(err)
	}
	in := apr(t, s)
	s.Close()
	out := filepath.Join(t.TempDir(), name)
	if err := stconv.ExportDir(out, stconv.StreamSource(in), stconv.ExportOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return out
}

// hfTensors reads a checkpoint's tensors in its own layout, as F32 (exact for F16 and
// BF16), with each tensor's stored dtype.
func hfTensors(t *testing.T, dir string) (map[string][]byte, map[string]dtype.DType) {
	s, err := stconv.Open(dir, stconv.ImportOptions{HFLayout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vals, types := map[string][]byte{}, map[string]dtype.DType{}
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			return vals, types
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		f, err := stream.ToF32(tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		vals[info.Name], types[info.Name] = f.Data, info.DType
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestGGUFBack: HF -> GGUF F32 -> HF. The checkpoint apr writes from the GGUF has the
// original's tensors (names, values bit for bit; dtype F32, which holds BF16 and F16
// exactly), its config fields, special tokens, tokenizer settings and tokenizer pieces;
// and converted again it gives llama.cpp's own F32 GGUF of the original, byte for byte.
func TestGGUFBack(t *testing.T) {
	for _, c := range append(checkpoints, moeGGUFBack...) {
		t.Run(c.name, func(t *testing.T) {
			orig := "../../testdata/hf/" + c.name
			out := back(t, bytes.NewReader(toGGUF(t, orig, "f32")), c.name)

			want, _ := hfTensors(t, orig)
			got, types := hfTensors(t, out)
			if !reflect.DeepEqual(slices.Sorted(mapsKeys(got)), slices.Sorted(mapsKeys(want))) {
				t.Fatalf("tensors %v, want %v", slices.Sorted(mapsKeys(got)), slices.Sorted(mapsKeys(want)))
			}
			for name, w := range want {
				if !sameValues(c.name, name, got[name], w) {
					t.Errorf("tensor %q: values differ", name)
				}
				if types[name] != dtype.F32 {
					t.Errorf("tensor %q is %v, want F32 (the GGUF's)", name, types[name])
				}
			}

			wc, gc := readJSON(t, orig+"/config.json"), readJSON(t, out+"/config.json")
			for _, k := range []string{"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
				"num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps",
				"rope_theta", "rope_scaling", "tie_word_embeddings", "bos_token_id", "eos_token_id", "hidden_act"} {
				if !reflect.DeepEqual(gc[k], wc[k]) {
					t.Errorf("config.json %s: %v, want %v", k, gc[k], wc[k])
				}
			}
			// What GGUF does not record: Mistral comes back as Llama (the family's
			// class), the dtype is the GGUF's.
			arch, _ := llm.LookupArch(wc["architectures"].([]any)[0].(string))
			if !reflect.DeepEqual(gc["architectures"], []any{arch.Back[0]}) || gc["model_type"] != arch.Back[1] || gc["torch_dtype"] != "float32" {
				t.Errorf("config.json: architectures %v, model_type %v, torch_dtype %v; want %s, %s, float32",
					gc["architectures"], gc["model_type"], gc["torch_dtype"], arch.Back[0], arch.Back[1])
			}
			wg, gg := readJSON(t, orig+"/generation_config.json"), readJSON(t, out+"/generation_config.json")
			for _, k := range []string{"bos_token_id", "eos_token_id"} {
				if gg[k] != wg[k] {
					t.Errorf("generation_config.json %s: %v, want %v", k, gg[k], wg[k])
				}
			}
			// A SentencePiece tokenizer comes back whole; a BPE one as a
			// PreTrainedTokenizerFast with the special tokens the GGUF records (the
			// key-values of the second conversion below compare the rest).
			_, err := os.Stat(orig + "/tokenizer.model")
			spm := err == nil
			keys := []string{"eos_token", "chat_template"}
			if spm {
				keys = append(keys, "add_bos_token", "add_eos_token", "bos_token", "unk_token", "tokenizer_class")
			}
			wt, gt := readJSON(t, orig+"/tokenizer_config.json"), readJSON(t, out+"/tokenizer_config.json")
			for _, k := range keys {
				if gt[k] != wt[k] {
					t.Errorf("tokenizer_config.json %s: %v, want %v", k, gt[k], wt[k])
				}
			}
			if spm {
				if ws, gs := readJSON(t, orig+"/special_tokens_map.json"), readJSON(t, out+"/special_tokens_map.json"); !reflect.DeepEqual(gs, ws) {
					t.Errorf("special_tokens_map.json %v, want %v", gs, ws)
				}
				wp, gp := pieces(t, orig), pieces(t, out)
				if !reflect.DeepEqual(gp, wp) {
					t.Errorf("tokenizer.model: %d pieces, want the original's %d (scores and types included)", len(gp), len(wp))
				}
			}

			// Once more to GGUF: llama.cpp's converter's own file of the original (the
			// same key-values and tensors; for a sharded original, whose shards give the
			// converter its tensor order, in another order).
			ref, again := toGGUF(t, orig, "f32"), toGGUF(t, out, "f32")
			if !slices.Equal(ggufKVs(t, again), ggufKVs(t, ref)) {
				t.Errorf("HF -> GGUF -> HF -> GGUF: key-values differ from the converter's")
			}
			if !reflect.DeepEqual(ggufTensors(t, bytes.NewReader(again)), ggufTensors(t, bytes.NewReader(ref))) {
				t.Errorf("HF -> GGUF -> HF -> GGUF: tensors differ from the converter's")
			}
			sum := sha256.Sum256(again)
			if got, want := hex.EncodeToString(sum[:]), refSums(t, c.name)["ref/"+c.name+".f32.gguf"]; c.shard == 0 && got != want {
				t.Errorf("HF -> GGUF -> HF -> GGUF: SHA-256 %s, llama.cpp's converter wrote %s", got, want)
			}
		})
	}
}

// gemmaShift is the largest difference a Gemma norm may come back with: the converter
// adds 1 to it in the checkpoint's precision (F16's is 2^-10 at 1), and the sum's
// rounding cannot be undone.
const gemmaShift = 1.0 / 1024

// sameValues compares tensor name's F32 values after a round trip: bit for bit, but
// for a Gemma norm, which may differ by the rounding of the converter's +1.
func sameValues(ckpt, name string, got, want []byte) bool {
	if bytes.Equal(got, want) {
		return true
	}
	if !strings.HasPrefix(ckpt, "tiny-gemma") || !strings.HasSuffix(name, "norm.weight") || len(got) != len(want) {
		return false
	}
	for i := 0; i+4 <= len(got); i += 4 {
		g := math.Float32frombits(binary.LittleEndian.Uint32(got[i:]))
		w := math.Float32frombits(binary.LittleEndian.Uint32(want[i:]))
		if math.Abs(float64(g-w)) > gemmaShift {
			return false
		}
	}
	return true
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func pieces(t *testing.T, dir string) []llm.Piece {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.model"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := llm.ParseSentencePiece(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ggufKVs lists a GGUF's key-values as text, in order.
func ggufKVs(t *testing.T, b []byte) []string {
	s, err := ggufconv.NewStream(bytes.NewReader(b), ggufconv.ImportOptions{Name: "gguf"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, kvs, err := gguf.DecodeKVs(s.Header().Metadata.Extra[gguf.MetadataKey])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+kv.Value.Text(-1))
	}
	return out
}

// ggufTensors reads a GGUF's tensors, dequantized to F32.
func ggufTensors(t *testing.T, r io.Reader) map[string][]byte {
	s, err := ggufconv.NewStream(r, ggufconv.ImportOptions{Name: "gguf"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string][]byte{}
	for {
		info, r, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		f, err := stream.ToF32(tensor.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		out[info.Name] = f.Data
	}
}

// TestGGUFFixtureBack: gguf-py's tiny llama (a GGUF with no checkpoint behind it, its
// own tokenizer), as F32 and as llama-quantize's Q8_0, exports to a checkpoint that
// apr imports again as a Llama: converted back to GGUF F32 it has the GGUF's tensors
// (Q8_0 dequantized) under the same names, Q/K permutation undone and redone, and the
// same hyperparameters and vocabulary.
func TestGGUFFixtureBack(t *testing.T) {
	for _, name := range []string{"tiny-llama.f32.gguf", "tiny-llama.Q8_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile("../../testdata/gguf/" + name)
			if err != nil {
				t.Fatal(err)
			}
			out := back(t, bytes.NewReader(raw), "tiny-llama-fixture")
			for _, f := range []string{"config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model", "model.safetensors"} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Error(err)
				}
			}
			cfg := readJSON(t, out+"/config.json")
			for k, v := range map[string]any{"vocab_size": 408.0, "hidden_size": 64.0, "intermediate_size": 128.0, "num_hidden_layers": 2.0,
				"num_attention_heads": 4.0, "num_key_value_heads": 4.0, "max_position_embeddings": 128.0, "rms_norm_eps": 1e-5,
				"rope_theta": 10000.0, "tie_word_embeddings": false, "bos_token_id": 1.0, "eos_token_id": 2.0, "torch_dtype": "float32"} {
				if cfg[k] != v {
					t.Errorf("config.json %s: %v, want %v", k, cfg[k], v)
				}
			}
			if _, ok := cfg["head_dim"]; ok {
				t.Error("config.json has head_dim, but the GGUF has no key_length")
			}
			want := ggufTensors(t, bytes.NewReader(raw))
			got := ggufTensors(t, bytes.NewReader(toGGUF(t, out, "f32")))
			if len(got) != len(want) {
				t.Fatalf("%d tensors, want %d", len(got), len(want))
			}
			for n, w := range want {
				if !bytes.Equal(got[n], w) {
					t.Errorf("tensor %q differs", n)
				}
			}
			ps := pieces(t, out)
			if len(ps) != 408 || ps[0].Type != llm.TokenUnknown || ps[1].Text != "<s>" || ps[3].Type != llm.TokenByte || ps[407].Text != "\u2581llama" {
				t.Errorf("tokenizer.model pieces %d: %v %v %v %v", len(ps), ps[0], ps[1], ps[3], ps[len(ps)-1])
			}
		})
	}
}

// TestGGUFBackUnknown: a GGUF of an architecture lib/llm does not know exports as
// before, its tensors under their own names, no files generated.
func TestGGUFBackUnknown(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/gguf/small.f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	out := back(t, bytes.NewReader(raw), "small")
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 || entries[0].Name() != "model.safetensors" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files %v, want model.safetensors alone", names)
	}
}

// encodeTexts are the strings the SentencePiece peer encodes with both models.
var encodeTexts = []string{
	"Hello world", "The license", " leading space", "   three leading spaces", "trailing spaces   ",
	"runs    of     spaces\tand\ttabs\nand\n\nnewlines", "café naïve résumé Ångström", "emoji 🦙🤗 and ✨", "日本語のテキスト",
	"digits 1234567890 and 3.14159", "", " ", "<s> not special </s>", "once upon a time there was a llama",
	"MiXeD CaSe, punctuation!? (yes) \"quoted\" 'single' - dash: colon; semi",
}

// TestSentencePiecePeer: SentencePiece itself (Debian's python3-sentencepiece) loads
// the tokenizer.model apr writes from a GGUF and encodes every test string to the ids
// the original tokenizer.model gives (tiny-llama through GGUF and back), and, for the
// gguf-py fixture, to the ids the written model gives with byte fallback.
func TestSentencePiecePeer(t *testing.T) {
	py := peertest.Python(t, "sentencepiece", "python3-sentencepiece")
	orig := "../../testdata/hf/tiny-llama"
	out := back(t, bytes.NewReader(toGGUF(t, orig, "f32")), "tiny-llama")
	raw, err := os.ReadFile("../../testdata/gguf/tiny-llama.f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	fixture := back(t, bytes.NewReader(raw), "tiny-llama-fixture")
	texts, _ := json.Marshal(encodeTexts)
	script := `
import json, sys, sentencepiece as spm
texts = json.loads(sys.argv[1])
out = []
for path in sys.argv[2:]:
    sp = spm.SentencePieceProcessor(model_file=path)
    out.append({"ids": [sp.encode(s) for s in texts], "decoded": [sp.decode(sp.encode(s)) for s in texts],
                "special": [sp.vocab_size(), sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()]})
print(json.dumps(out))
`
	cmd := exec.Command(py, "-c", script, string(texts), filepath.Join(orig, "tokenizer.model"),
		filepath.Join(out, "tokenizer.model"), filepath.Join(fixture, "tokenizer.model"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("sentencepiece: %v\n%s", err, stderr.String())
	}
	var res []struct {
		IDs     [][]int  `json:"ids"`
		Decoded []string `json:"decoded"`
		Special []int    `json:"special"`
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res) != 3 {
		t.Fatalf("peer output %q: %v", b, err)
	}
	want, got, fx := res[0], res[1], res[2]
	if !reflect.DeepEqual(got.Special, want.Special) {
		t.Errorf("vocab size and unk/bos/eos/pad ids %v, want %v", got.Special, want.Special)
	}
	for i, s := range encodeTexts {
		if !reflect.DeepEqual(got.IDs[i], want.IDs[i]) {
			t.Errorf("%q: ids %v, the original gives %v", s, got.IDs[i], want.IDs[i])
		}
		if got.Decoded[i] != want.Decoded[i] {
			t.Errorf("%q: decodes to %q, the original to %q", s, got.Decoded[i], want.Decoded[i])
		}
	}
	if !reflect.DeepEqual(fx.Special, []int{408, 0, 1, 2, -1}) {
		t.Errorf("fixture: vocab size and unk/bos/eos/pad ids %v, want [408 0 1 2 -1]", fx.Special)
	}
	for i, s := range encodeTexts {
		if fx.Decoded[i] != s {
			t.Errorf("fixture: %q decodes to %q (byte fallback covers every string)", s, fx.Decoded[i])
		}
	}
	t.Logf("%d strings, %d ids with the original model", len(encodeTexts), sumLen(want.IDs))
}

func sumLen(xs [][]int) int {
	n := 0
	for _, x := range xs {
		n += len(x)
	}
	return n
}
