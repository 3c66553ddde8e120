package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/stconv"
)

// TestGemma3Multimodal: Gemma 3's multimodal checkpoint (Gemma3ForConditionalGeneration:
// the text model's fields under text_config, its tensors under model.language_model.,
// a vision tower and projector beside them) converts to the language model's GGUF, the
// one llama.cpp's converter writes of it; for tiny-gemma3 made multimodal that is
// tiny-gemma3's own (checked with today's converter on 2026-11-27).
func TestGemma3Multimodal(t *testing.T) {
	dir := multimodal(t, "tiny-gemma3", "tiny-gemma3", "Gemma3ForConditionalGeneration", "gemma3", "gemma3_text")
	want := refSums(t, "tiny-gemma3")["ref/tiny-gemma3.f32.gguf"]
	if got := sha256Hex(toGGUF(t, dir, "f32")); got != want {
		t.Errorf("SHA-256 %s, want tiny-gemma3's %s", got, want)
	}
}

// TestMistral3Multimodal: Mistral Small 3.1's layout (Mistral3ForConditionalGeneration,
// made here of tiny-llama3) converts to the GGUF today's converter writes of it: Llama's
// form under the architecture mistral3. The sum is of that converter's --outtype f32
// output of this directory, made on 2026-11-27 with testdata/hf/README.md's CONVERT.
func TestMistral3Multimodal(t *testing.T) {
	dir := multimodal(t, "tiny-llama3", "tiny-mistral3", "Mistral3ForConditionalGeneration", "mistral3", "mistral")
	const want = "bd76dce6f8e18a1a4f0b3fd34a3e21345eaf40a52120dc31c259ab0217c7261c"
	if got := sha256Hex(toGGUF(t, dir, "f32")); got != want {
		t.Errorf("SHA-256 %s, today's converter wrote %s", got, want)
	}
	// Ministral 3 (its own yarn keys) and Mistral 4 (experts) are refused by name.
	for _, mt := range []string{"ministral3", "mistral4"} {
		dir := multimodal(t, "tiny-llama3", "tiny-"+mt, "Mistral3ForConditionalGeneration", "mistral3", mt)
		if s, err := stconv.Open(dir, stconv.ImportOptions{}); err == nil {
			s.Close()
			t.Errorf("%s: imported", mt)
		} else if !strings.Contains(err.Error(), mt) {
			t.Errorf("%s: error %v", mt, err)
		}
	}
}

// multimodal writes checkpoint src of testdata/hf as a multimodal model's, in a folder
// named name: config.json's fields under text_config (its model_type textType),
// architectures arch and model_type top, the tensors under model.language_model., and a
// vision tower and projector beside them.
func multimodal(t *testing.T, src, name, arch, top, textType string) string {
	t.Helper()
	return copyCheckpointWith(t, "../../testdata/hf/"+src, name, func(file string, b []byte) []byte {
		switch file {
		case "config.json":
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			text := map[string]any{}
			for k, v := range cfg {
				if k != "architectures" && k != "torch_dtype" {
					text[k] = v
				}
			}
			text["model_type"] = textType
			b, _ = json.Marshal(map[string]any{"architectures": []string{arch}, "model_type": top,
				"text_config": text, "vision_config": map[string]any{"hidden_size": 8, "model_type": "siglip_vision_model"}})
		case "model.safetensors":
			ts, _ := readTensors(t, b) // in data order, as the converter reads them
			for i := range ts {
				ts[i].name = strings.Replace(ts[i].name, "model.", "model.language_model.", 1)
			}
			ts = append(ts, stTensor{"model.vision_tower.vision_model.embeddings.patch_embedding.weight", "BF16", []int64{8}, make([]byte, 16)},
				stTensor{"model.multi_modal_projector.mm_soft_emb_norm.weight", "BF16", []int64{8}, make([]byte, 16)})
			b = writeTensors(t, ts, nil)
		}
		return b
	})
}
