package llm

import (
	"github.com/apr-go/apr/lib/gguf"
)

// olmo2 is OLMo 2's (and OLMo 3's) code: the base keys, then, where config.json has a
// sliding_window, the window and which layers slide: config.json's layer_types, or
// OLMo 3's default, all but every fourth layer.
type olmo2 struct{ plain }

func (olmo2) KVs(cp *Checkpoint, base []gguf.KV) ([]gguf.KV, error) {
	c := cp.config
	if _, ok := c["sliding_window"]; !ok {
		return base, nil
	}
	window, _, err := c.int("sliding_window", true)
	if err != nil {
		return nil, err
	}
	a := cp.Arch.GGUF
	pattern := make([]bool, cp.Hparams.Layers)
	if types, ok := c["layer_types"].([]any); ok {
		pattern = pattern[:0]
		for _, t := range types {
			pattern = append(pattern, t == "sliding_attention")
		}
	} else {
		for i := range pattern {
			pattern[i] = (i+1)%4 != 0
		}
	}
	return append(base,
		gguf.KV{Key: a + ".attention.sliding_window", Value: gguf.Uint32(uint32(window))},
		gguf.KV{Key: a + ".attention.sliding_window_pattern", Value: gguf.Array(pattern)}), nil
}

// HFConfig writes the sliding window back, with layer_types where the pattern is not
// OLMo 3's default.
func (olmo2) HFConfig(cp *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	n, ok := g.archUint("attention.sliding_window")
	if !ok {
		return nil
	}
	cfg.set("sliding_window", n)
	v, ok := g.h.Get(cp.Arch.GGUF + ".attention.sliding_window_pattern")
	if !ok {
		return nil
	}
	var types []string
	def := true
	for i := range v.Len() {
		b, _ := v.Index(i).AsBool()
		t := "full_attention"
		if b {
			t = "sliding_attention"
		}
		types = append(types, t)
		def = def && b == ((i+1)%4 != 0)
	}
	if !def {
		cfg.set("layer_types", types)
	}
	return nil
}
