package llm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apr-go/apr/lib/llm"
	"github.com/apr-go/apr/lib/stconv"
)

// TestLayerNumbers: the N of "model.layers.N." is canonical decimal below
// llm.MaxLayers, as the converter's name map (which lists each layer's names) takes
// it; "00", "01" and a number that overflows an int were read as 0, 1 and 0.
func TestLayerNumbers(t *testing.T) {
	a, ok := llm.LookupArch("LlamaForCausalLM")
	if !ok {
		t.Fatal("no Llama")
	}
	for in, want := range map[string]string{
		"model.layers.0.input_layernorm.weight":                 "blk.0.attn_norm.weight",
		"model.layers.10.input_layernorm.weight":                "blk.10.attn_norm.weight",
		"model.layers.65535.mlp.up_proj.weight":                 "blk.65535.ffn_up.weight",
		"model.layers.00.input_layernorm.weight":                "",
		"model.layers.01.input_layernorm.weight":                "",
		"model.layers.010.input_layernorm.weight":               "",
		"model.language_model.layers.01.input_layernorm.weight": "",
		"model.layers.65536.input_layernorm.weight":             "",
		"model.layers.4294967296.mlp.up_proj.weight":            "",
		"model.layers.99999999999999999999.mlp.up_proj.weight":  "",
		"model.layers.18446744073709551616.mlp.up_proj.weight":  "",
	} {
		g, _, _, err := a.GGUFName(in)
		switch {
		case want != "" && (err != nil || g != want):
			t.Errorf("%s: %q, %v; want %q", in, g, err, want)
		case want == "" && err == nil:
			t.Errorf("%s: mapped to %q", in, g)
		case want == "" && !strings.Contains(err.Error(), fmt.Sprintf("tensor %q: layer number", in)):
			t.Errorf("%s: error %q does not name the tensor and its layer number", in, err)
		}
		if want == "" {
			continue
		}
		if back, err := a.HFName(want); err != nil || back != in {
			t.Errorf("HFName(%s) = %q, %v; want %q", want, back, err, in)
		}
	}
	for _, g := range []string{"blk.01.attn_norm.weight", "blk.+1.attn_norm.weight", "blk.65536.attn_norm.weight", "blk.99999999999999999999.attn_norm.weight"} {
		if hf, err := a.HFName(g); err == nil {
			t.Errorf("HFName(%s) = %q", g, hf)
		}
	}
}

// TestLayerNumbersImport: a checkpoint whose second layer is named "model.layers.01."
// was imported as if it said "1"; it is refused, naming a tensor.
func TestLayerNumbersImport(t *testing.T) {
	dir := copyCheckpoint(t, func(s string) string { return s })
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	hdr := strings.ReplaceAll(string(b[8:8+n]), `"model.layers.1.`, `"model.layers.01.`)
	if len(hdr) == int(n) {
		t.Fatal("no layer 1 in the header")
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(append(out, hdr...), b[8+n:]...)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := stconv.Open(dir, stconv.ImportOptions{})
	if err == nil {
		s.Close()
		t.Fatal("imported")
	}
	if !strings.Contains(err.Error(), `tensor "model.layers.01.`) || !strings.Contains(err.Error(), `layer number "01"`) {
		t.Errorf("error %q does not name the tensor and its layer number", err)
	}
}
