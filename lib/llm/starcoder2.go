package llm

// starcoder2 is StarCoder2's code, for the way back only: its GELU activation, the
// LayerNorm epsilon and its biases in config.json (the import is the base
// converter's, a table entry).
type starcoder2 struct{ plain }

func (starcoder2) HFConfig(cp *Checkpoint, g ggufKVs, cfg *jsonObject) error {
	cfg.set("hidden_act", "gelu_pytorch_tanh")
	if f, ok := g.archFloat("attention.layer_norm_epsilon"); ok {
		cfg.set("norm_epsilon", f)
	}
	cfg.set("use_bias", true)
	return nil
}
