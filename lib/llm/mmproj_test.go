package llm_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/gguf"
	"github.com/apr-go/apr/lib/ggufconv"
	"github.com/apr-go/apr/lib/internal/ggufdrop"
	"github.com/apr-go/apr/lib/quant"
	"github.com/apr-go/apr/lib/stconv"
)

const mistral3 = "../../testdata/hf/tiny-mistral3"

// mmprojGGUF is `apr-st import --mmproj DIR | apr-quant TYP | apr-gguf export`.
func mmprojGGUF(t *testing.T, dir, typ string) ([]byte, error) {
	t.Helper()
	s, err := stconv.Open(dir, stconv.ImportOptions{MMProj: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	target, err := quant.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	q, err := quant.New(apr(t, s), quant.Options{Type: target})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = ggufconv.Export(&out, apr(t, q), ggufconv.ExportOptions{TempDir: t.TempDir()})
	return out.Bytes(), err
}

// without is ggufdrop.Without, failing the test on an error.
func without(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	out, err := ggufdrop.Without(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPixtralProjector: apr's projector of tiny-mistral3 is today's converter's
// (convert_hf_to_gguf.py --mmproj, sums made by testdata/hf/mkmmprojref.sh) byte for
// byte, every key and tensor, once v.token_embd.img_break (which the converter
// drops and llama.cpp requires) is taken out; for each type the converter writes.
func TestPixtralProjector(t *testing.T) {
	sums := refSums(t, "tiny-mistral3")
	for _, typ := range []string{"f32", "f16", "bf16", "q8_0"} {
		want := sums["ref/mmproj-tiny-mistral3."+typ+".gguf"]
		if want == "" {
			t.Fatalf("%s: no reference sum", typ)
		}
		b, err := mmprojGGUF(t, mistral3, typ)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if got := sha256Hex(without(t, b, "v.token_embd.img_break")); got != want {
			t.Errorf("%s: without img_break SHA-256 %s, the converter's %s", typ, got, want)
		}
	}
}

// TestPixtralImgBreak: v.token_embd.img_break is the F32 row of the text model's
// embed_tokens.weight at the id tokenizer_config.json gives [IMG_BREAK], where the
// converter means to take it (conversion/llava.py).
func TestPixtralImgBreak(t *testing.T) {
	raw, err := os.ReadFile(mistral3 + "/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		Added map[string]struct{ Content string } `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		t.Fatal(err)
	}
	id := -1
	for k, v := range tc.Added {
		if v.Content == "[IMG_BREAK]" {
			id, _ = strconv.Atoi(k)
		}
	}
	if id <= 0 {
		t.Fatal("tiny-mistral3 names no [IMG_BREAK] token")
	}
	st, err := os.ReadFile(mistral3 + "/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := readTensors(t, st)
	var want []float32
	for _, x := range ts {
		if x.name == "language_model.model.embed_tokens.weight" {
			hidden := int(x.shape[1])
			for i := range hidden {
				bits := binary.LittleEndian.Uint16(x.data[2*(id*hidden+i):])
				want = append(want, math.Float32frombits(uint32(bits)<<16))
			}
		}
	}
	if want == nil {
		t.Fatal("tiny-mistral3 has no embed_tokens.weight")
	}
	b, err := mmprojGGUF(t, mistral3, "f16")
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i, ti := range f.Tensors {
		if ti.Name != "v.token_embd.img_break" {
			continue
		}
		if ti.Type != gguf.TensorType(0) || len(ti.Dims) != 1 || ti.Dims[0] != int64(len(want)) {
			t.Fatalf("img_break is type %v dims %v, want F32 [%d]", ti.Type, ti.Dims, len(want))
		}
		data, err := f.TensorData(i)
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range want {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:])); got != w {
				t.Fatalf("img_break[%d] = %v, embed_tokens[%d][%d] = %v", j, got, id, j, w)
			}
		}
		return
	}
	t.Fatal("no v.token_embd.img_break")
}

// TestProjectorRefused: --mmproj of a checkpoint without a vision tower, without a
// tensor Pixtral needs, or without the [IMG_BREAK] token is an error naming what is
// missing, never a projector short of it.
func TestProjectorRefused(t *testing.T) {
	dropTensor := func(name string) func(string, []byte) []byte {
		return func(file string, b []byte) []byte {
			if file != "model.safetensors" {
				return b
			}
			ts, meta := readTensors(t, b)
			var kept []stTensor
			for _, x := range ts {
				if x.name != name {
					kept = append(kept, x)
				}
			}
			return writeTensors(t, kept, meta)
		}
	}
	for _, c := range []struct{ name, dir, want string }{
		{"text model", "../../testdata/hf/tiny-llama3", "no vision_config"},
		{"linear_2", copyCheckpointWith(t, mistral3, "tiny-mistral3", dropTensor("multi_modal_projector.linear_2.weight")), "mm.2.weight"},
		{"layer", copyCheckpointWith(t, mistral3, "tiny-mistral3", dropTensor("vision_tower.transformer.layers.2.feed_forward.up_proj.weight")), "v.blk.2.ffn_up.weight"},
		{"embeddings", copyCheckpointWith(t, mistral3, "tiny-mistral3", dropTensor("language_model.model.embed_tokens.weight")), "embed_tokens.weight"},
		{"token", copyCheckpointWith(t, mistral3, "tiny-mistral3", func(file string, b []byte) []byte {
			if file == "tokenizer_config.json" {
				return bytes.ReplaceAll(b, []byte("[IMG_BREAK]"), []byte("[IMG_BRK]"))
			}
			return b
		}), "[IMG_BREAK]"},
		{"vision model type", copyCheckpointWith(t, mistral3, "tiny-mistral3", func(file string, b []byte) []byte {
			if file == "config.json" {
				return bytes.Replace(b, []byte(`"model_type": "pixtral"`), []byte(`"model_type": "siglip_vision_model"`), 1)
			}
			return b
		}), "vision_config.model_type"},
		{"unknown tensor", copyCheckpointWith(t, mistral3, "tiny-mistral3", func(file string, b []byte) []byte {
			if file != "model.safetensors" {
				return b
			}
			ts, meta := readTensors(t, b)
			ts = append(ts, stTensor{"vision_tower.extra.weight", "BF16", []int64{4}, make([]byte, 8)})
			return writeTensors(t, ts, meta)
		}), "vision_tower.extra.weight"},
	} {
		b, err := mmprojGGUF(t, c.dir, "f16")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %d bytes, error %v; want one naming %s", c.name, len(b), err, c.want)
		}
	}
}

// TestPixtralTextModel: without --mmproj, tiny-mistral3 converts to the text model's
// GGUF today's converter writes of it: the vision tower and projector left out.
func TestPixtralTextModel(t *testing.T) {
	want := refSums(t, "tiny-mistral3")["ref/tiny-mistral3.f32.gguf"]
	if got := sha256Hex(toGGUF(t, mistral3, "f32")); got != want {
		t.Errorf("SHA-256 %s, the converter's %s", got, want)
	}
}
