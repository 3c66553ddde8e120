#!/usr/bin/env bash
# mkckpt.sh: rewrite the test checkpoints apr makes with genckpt (deterministic:
# seeded weights), one per family the converter handles beyond renaming, and their
# files' sums in NAME.sha256 (mkref.sh then adds the references). small-mistral's
# command is in README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
gen() { # name flags...
	local name=$1
	shift
	rm -rf "testdata/hf/$name"
	go run ./testdata/hf/genckpt "$@" -o "testdata/hf/$name"
	(cd testdata/hf && sha256sum "$name"/* >"$name.sha256")
}
spm=testdata/hf/tiny-llama/tokenizer.model
gemmagen='{"bos_token_id": 1, "eos_token_id": 2, "do_sample": true, "top_k": 64, "top_p": 0.95}'
gen tiny-qwen3 -tokenizer qwen2-bpe -arch Qwen3ForCausalLM -vocab 320 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 2 -headdim 96 -dtype bf16 -tied=true -shards 1 \
	-generation '{"bos_token_id": 311, "do_sample": true, "eos_token_id": 313, "pad_token_id": 311, "temperature": 0.6, "top_k": 20, "top_p": 0.95}'
gen tiny-llama3 -tokenizer "$spm" -arch LlamaForCausalLM -vocab 512 -hidden 256 -ffn 512 -layers 2 -heads 4 \
	-kvheads 2 -headdim 64 -dtype bf16 -tied=true -shards 1 -rope-theta 500000.0 \
	-rope-scaling '{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}' \
	-generation '{"bos_token_id": 1, "do_sample": true, "eos_token_id": 2, "temperature": 0.6, "top_p": 0.9}'
gen tiny-gemma -tokenizer "$spm" -arch GemmaForCausalLM -vocab 512 -hidden 256 -ffn 512 -layers 2 -heads 4 \
	-kvheads 4 -headdim 64 -dtype bf16 -tied=true -shards 1 -rope-theta 10000.0 \
	-extra '{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh"}' -generation "$gemmagen"
gen tiny-gemma2 -tokenizer "$spm" -arch Gemma2ForCausalLM -vocab 512 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 2 -headdim 64 -dtype f16 -tied=true -shards 1 -rope-theta 10000.0 \
	-extra '{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096, "query_pre_attn_scalar": 64, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0}' \
	-generation "$gemmagen"
gen tiny-gemma3 -tokenizer "$spm" -arch Gemma3ForCausalLM -vocab 512 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 1 -headdim 96 -dtype bf16 -tied=true -shards 1 -rope-scaling '{"factor": 8.0, "rope_type": "linear"}' \
	-extra '{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 512, "sliding_window_pattern": 6, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 96, "final_logit_softcapping": null, "attn_logit_softcapping": null}' \
	-generation "$gemmagen"
gen tiny-phi3 -tokenizer "$spm" -arch Phi3ForCausalLM -vocab 520 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=false -shards 1 -rope-theta 10000.0 \
	-rope-scaling '{"long_factor": [1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4, 1.45, 1.5, 1.55, 1.6, 1.65, 1.7, 1.75, 1.8, 1.85, 1.9, 1.95, 2.0, 2.05, 2.1, 2.15], "short_factor": [1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.1, 1.11, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.19, 1.2, 1.21, 1.22, 1.23], "type": "longrope"}' \
	-extra '{"partial_rotary_factor": 0.75, "original_max_position_embeddings": 256, "sliding_window": 262144}' \
	-generation '{"bos_token_id": 1, "eos_token_id": 2}' \
	-tokenizer-config '{"added_tokens_decoder": {"512": {"content": "<|endoftext|>", "special": true}, "513": {"content": "<|assistant|>", "special": true}, "514": {"content": "<|end|>", "special": true}, "515": {"content": "<|user|>", "special": true}, "516": {"content": "my\u2581word", "special": false}}}'
gen tiny-smollm3 -tokenizer "$spm" -arch SmolLM3ForCausalLM -vocab 512 -hidden 256 -ffn 512 -layers 4 -heads 4 \
	-kvheads 1 -headdim 0 -dtype bf16 -tied=true -shards 1 -rope-theta 5000000.0 \
	-extra '{"no_rope_layers": [1, 1, 1, 0], "no_rope_layer_interval": 4}'
gen tiny-olmo2 -tokenizer qwen2-bpe -arch Olmo2ForCausalLM -vocab 320 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 4 -headdim 0 -dtype f16 -tied=false -shards 1 -rope-theta 500000.0 \
	-extra '{"sliding_window": 4096}' -generation '{"bos_token_id": 311, "eos_token_id": 313, "pad_token_id": 311}'
gen tiny-granite -tokenizer "$spm" -arch GraniteForCausalLM -vocab 512 -hidden 256 -ffn 512 -layers 2 -heads 4 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=true -shards 1 -rope-theta 10000.0 \
	-extra '{"attention_multiplier": 0.015625, "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "logits_scaling": 8.0}'
gen tiny-starcoder2 -tokenizer qwen2-bpe -arch Starcoder2ForCausalLM -vocab 320 -hidden 256 -ffn 512 -layers 2 \
	-heads 4 -kvheads 2 -headdim 0 -dtype bf16 -tied=true -shards 1 -rope-theta 100000.0 \
	-extra '{"hidden_act": "gelu_pytorch_tanh", "norm_epsilon": 1e-05, "use_bias": true, "sliding_window": 4096}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-glm4 -tokenizer qwen2-bpe -specials "<|user|> <|assistant|>" -arch Glm4ForCausalLM -vocab 320 -hidden 256 \
	-ffn 320 -layers 2 -heads 4 -kvheads 2 -headdim 64 -dtype bf16 -tied=false -shards 1 -rope-theta 10000.0 \
	-extra '{"partial_rotary_factor": 0.5, "attention_bias": true}' -generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-qwen3moe -tokenizer qwen2-bpe -arch Qwen3MoeForCausalLM -vocab 320 -hidden 256 -ffn 512 -layers 2 -heads 4 \
	-kvheads 2 -headdim 64 -dtype bf16 -tied=false -shards 1 -experts 6 -moe-ffn 128 \
	-extra '{"num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": []}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-qwen2moe -tokenizer qwen2-bpe -arch Qwen2MoeForCausalLM -vocab 320 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 4 -headdim 0 -dtype f16 -tied=false -shards 2 -experts 4 -moe-ffn 256 -shared-ffn 320 \
	-extra '{"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 256, "shared_expert_intermediate_size": 320, "norm_topk_prob": false, "decoder_sparse_step": 1, "mlp_only_layers": []}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-mixtral -tokenizer "$spm" -arch MixtralForCausalLM -vocab 512 -hidden 256 -ffn 128 -layers 2 -heads 4 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=false -shards 1 -experts 8 -rope-theta 1000000.0 \
	-extra '{"num_local_experts": 8, "num_experts_per_tok": 2, "router_aux_loss_coef": 0.02}'
gen tiny-deepseek3 -tokenizer qwen2-bpe -arch DeepseekV3ForCausalLM -vocab 320 -hidden 256 -ffn 256 -layers 2 -heads 2 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=false -shards 1 -experts 4 -moe-ffn 128 -shared-ffn 128 \
	-mla 256,256,64,32,64 -dense-layers 1 -mtp-layers 1 -rope-theta 10000.0 \
	-rope-scaling '{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}' \
	-extra '{"first_k_dense_replace": 1, "kv_lora_rank": 256, "moe_intermediate_size": 128, "moe_layer_freq": 1, "n_group": 2, "n_routed_experts": 4, "n_shared_experts": 1, "norm_topk_prob": true, "num_experts_per_tok": 2, "num_nextn_predict_layers": 1, "q_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_group": 1, "topk_method": "noaux_tc", "v_head_dim": 64}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-deepseek2 -tokenizer qwen2-bpe -arch DeepseekV2ForCausalLM -vocab 320 -hidden 256 -ffn 256 -layers 2 -heads 2 \
	-kvheads 2 -headdim 0 -dtype f16 -tied=false -shards 1 -experts 4 -moe-ffn 128 -shared-ffn 256 \
	-mla 128,256,64,32,64 -dense-layers 1 -rope-theta 10000.0 \
	-rope-scaling '{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "type": "yarn"}' \
	-extra '{"first_k_dense_replace": 1, "kv_lora_rank": 256, "moe_intermediate_size": 128, "moe_layer_freq": 1, "n_group": 2, "n_routed_experts": 4, "n_shared_experts": 2, "norm_topk_prob": false, "num_experts_per_tok": 2, "q_lora_rank": 128, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "topk_group": 1, "topk_method": "group_limited_greedy", "v_head_dim": 64}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-olmoe -tokenizer qwen2-bpe -arch OlmoeForCausalLM -vocab 320 -hidden 256 -ffn 128 -layers 2 -heads 4 \
	-kvheads 4 -headdim 0 -dtype bf16 -tied=false -shards 1 -experts 4 -rope-theta 10000.0 \
	-extra '{"num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": false, "clip_qkv": null, "router_aux_loss_coef": 0.01, "rms_norm_eps": 1e-05}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
gen tiny-granitemoe -tokenizer "$spm" -arch GraniteMoeSharedForCausalLM -vocab 512 -hidden 256 -ffn 128 -layers 2 -heads 4 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=true -shards 1 -experts 4 -shared-ffn 256 -rope-theta 10000.0 \
	-extra '{"num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 256, "attention_multiplier": 0.015625, "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "logits_scaling": 8.0}'
gptoss='{"attention_bias": true, "num_local_experts": 4, "num_experts_per_tok": 2, "experts_per_token": 2, "sliding_window": 128, "swiglu_limit": 7.0, "initial_context_length": 4096, "layer_types": ["sliding_attention", "full_attention"], "hidden_act": "silu"}'
gptossrope='{"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false}'
gen tiny-gptoss -tokenizer qwen2-bpe -arch GptOssForCausalLM -vocab 320 -hidden 256 -ffn 256 -layers 2 -heads 4 \
	-kvheads 2 -headdim 64 -experts 4 -dtype bf16 -tied=false -shards 1 -rope-theta 150000.0 -rope-scaling "$gptossrope" \
	-extra "$gptoss" -generation '{"bos_token_id": 311, "eos_token_id": 313, "pad_token_id": 311}'
gen tiny-gptoss-mxfp4 -tokenizer qwen2-bpe -arch GptOssForCausalLM -vocab 320 -hidden 256 -ffn 256 -layers 2 -heads 4 \
	-kvheads 2 -headdim 64 -experts 4 -mxfp4 -dtype bf16 -tied=false -shards 1 -rope-theta 150000.0 -rope-scaling "$gptossrope" \
	-extra "${gptoss%\}}"', "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313, "pad_token_id": 311}'
gen tiny-qwen3-fp8 -tokenizer qwen2-bpe -arch Qwen3ForCausalLM -vocab 320 -hidden 256 -ffn 320 -layers 2 -heads 4 \
	-kvheads 2 -headdim 96 -dtype bf16 -tied=true -shards 1 -fp8 \
	-extra '{"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}}' \
	-generation '{"bos_token_id": 311, "do_sample": true, "eos_token_id": 313, "pad_token_id": 311, "temperature": 0.6, "top_k": 20, "top_p": 0.95}'
gen tiny-deepseek3-fp8 -tokenizer qwen2-bpe -arch DeepseekV3ForCausalLM -vocab 320 -hidden 256 -ffn 256 -layers 2 -heads 2 \
	-kvheads 2 -headdim 0 -dtype bf16 -tied=false -shards 1 -experts 4 -moe-ffn 128 -shared-ffn 128 \
	-mla 256,256,64,32,64 -dense-layers 1 -mtp-layers 1 -rope-theta 10000.0 -fp8 \
	-rope-scaling '{"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}' \
	-extra '{"first_k_dense_replace": 1, "kv_lora_rank": 256, "moe_intermediate_size": 128, "moe_layer_freq": 1, "n_group": 2, "n_routed_experts": 4, "n_shared_experts": 1, "norm_topk_prob": true, "num_experts_per_tok": 2, "num_nextn_predict_layers": 1, "q_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "topk_group": 1, "topk_method": "noaux_tc", "v_head_dim": 64, "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}}' \
	-generation '{"bos_token_id": 311, "eos_token_id": 313}'
