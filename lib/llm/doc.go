// Package llm turns Hugging Face checkpoints of the language-model families apr knows
// into llama.cpp's form and back, so that `apr-st import DIR | apr-quant TYPE |
// apr-gguf export` writes the file llama.cpp's convert_hf_to_gguf.py writes.
//
// llama.cpp's form is the one both roads into apr meet in: tensors under GGUF names
// (token_embd.weight, blk.N.attn_q.weight, ..., output.weight), the Q and K rows of
// Llama-style attention permuted from Hugging Face's rotary layout to ggml's, 1-D
// tensors (norms, biases) in F32, and the model's description (hyperparameters,
// tokenizer, special tokens, chat template) as the GGUF key-values the converter
// writes, kept in the APR metadata under gguf.MetadataKey exactly as an imported GGUF
// keeps its own (docs/FORMAT.md, "The LLM description").
//
// A family is an entry of the architecture table (arch.go): its config.json names,
// its GGUF name, its tensor names, whether Q/K are permuted and which biases it has;
// a family whose conversion is more than renaming has a file of its own behind the
// Family interface (family.go; llama.go for Llama 3's rope scaling, gemma.go for
// Gemma 1-3). Supported today: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM and Gemma3ForCausalLM (and
// Gemma3ForConditionalGeneration's text tower), Phi3ForCausalLM (phi3.go),
// GraniteForCausalLM (llama.go), Starcoder2ForCausalLM, Glm4ForCausalLM (glm4.go),
// SmolLM3ForCausalLM, Olmo2ForCausalLM (olmo2.go), Mistral3ForConditionalGeneration's
// text model, and the mixtures of experts MixtralForCausalLM, Qwen2MoeForCausalLM,
// Qwen3MoeForCausalLM, OlmoeForCausalLM, GraniteMoeForCausalLM (moe.go: per-expert
// tensors stacked as the stream goes, Walk; fused ones split)
// and DeepseekV2ForCausalLM/DeepseekV3ForCausalLM (deepseek.go)
// (grouped-query attention, tied or untied embeddings, sharded checkpoints), with a
// SentencePiece tokenizer.model or a byte-level BPE tokenizer.json (bpe.go; llama.cpp's
// pre-tokenizer named from the tokenizer's definition, preTable).
//
// And back: a model in llama.cpp's form returns to the Hugging Face layout
// (Checkpoint.HFStream); one imported from a GGUF file, with no checkpoint files of
// its own, gets its config, generation config, tokenizer config, special tokens map
// and SentencePiece tokenizer.model or BPE tokenizer.json generated from its GGUF
// key-values (Checkpoint.HFFiles, hfgen.go, bpegen.go).
//
// Layer: a transform (layer 4). It imports the formats (container, gguf), the stream
// and the kernels; lib/stconv calls it on import and export.
package llm
