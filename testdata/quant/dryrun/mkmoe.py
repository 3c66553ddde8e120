# mkmoe.py OUT: a tiny Qwen3-MoE F32 GGUF for llama-quantize --dry-run (README.md):
# the keys llama.cpp's loader needs, 8 layers, 8 experts, rows of 256, tensors of
# zeros (a dry run reads no data). lib/llm's TestDryRunMoE builds the same keys and
# tensor list in Go.
import sys
import numpy as np
import gguf

L, E, D, H, KV, HD, FF, V = 8, 8, 256, 4, 2, 64, 256, 512
w = gguf.GGUFWriter(sys.argv[1], arch="qwen3moe")
w.add_block_count(L)
w.add_context_length(4096)
w.add_embedding_length(D)
w.add_feed_forward_length(FF)
w.add_head_count(H)
w.add_head_count_kv(KV)
w.add_key_length(HD)
w.add_value_length(HD)
w.add_expert_count(E)
w.add_expert_used_count(2)
w.add_expert_feed_forward_length(FF)
w.add_layer_norm_rms_eps(1e-6)
w.add_rope_freq_base(1e6)
f = lambda *shape: np.zeros(shape, dtype=np.float32)
w.add_tensor("token_embd.weight", f(V, D))
w.add_tensor("output_norm.weight", f(D))
w.add_tensor("output.weight", f(V, D))
for i in range(L):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", f(D))
    w.add_tensor(p + "attn_q.weight", f(H * HD, D))
    w.add_tensor(p + "attn_k.weight", f(KV * HD, D))
    w.add_tensor(p + "attn_v.weight", f(KV * HD, D))
    w.add_tensor(p + "attn_output.weight", f(D, H * HD))
    w.add_tensor(p + "attn_q_norm.weight", f(HD))
    w.add_tensor(p + "attn_k_norm.weight", f(HD))
    w.add_tensor(p + "ffn_norm.weight", f(D))
    w.add_tensor(p + "ffn_gate_inp.weight", f(E, D))
    w.add_tensor(p + "ffn_gate_exps.weight", f(E, FF, D))
    w.add_tensor(p + "ffn_up_exps.weight", f(E, FF, D))
    w.add_tensor(p + "ffn_down_exps.weight", f(E, D, FF))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
