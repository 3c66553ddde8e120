#!/usr/bin/env python3
"""mkmistral3.py: write testdata/hf/tiny-mistral3, a tiny seeded Mistral Small
3.1 checkpoint in Hugging Face's layout (Mistral3ForConditionalGeneration): a text
tower under language_model., a Pixtral vision tower under vision_tower. and the
projector under multi_modal_projector., in BF16, with tiny-llama3's SentencePiece
tokenizer and [IMG], [IMG_BREAK], [IMG_END] added as ids 512-514 (tokenizer_config's
added_tokens_decoder, where the converter looks the break token up). Needs only numpy;
the output is the same on every run. Three vision layers at least: the converter maps
multi_modal_projector.linear_N only for N below the vision block count."""
import json, os, shutil, struct, sys
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "tiny-mistral3")
src = os.path.join(here, "tiny-llama3")
rng = np.random.default_rng(20261202)

TEXT = dict(vocab=520, hidden=64, ffn=128, layers=1, heads=4, kv=2, head_dim=16)
VIS = dict(hidden=64, ffn=128, layers=3, heads=4, patch=16, image=64, merge=2)


def bf16(a):
    """The bytes of a as BF16 (float32 rounded to nearest even)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16).tobytes()


tensors = []


def add(name, *shape, scale=0.02):
    tensors.append((name, shape, bf16(rng.standard_normal(shape) * scale)))


def ones(name, n):
    tensors.append((name, (n,), bf16(1.0 + rng.standard_normal(n) * 0.05)))


T, V = TEXT, VIS
add("language_model.model.embed_tokens.weight", T["vocab"], T["hidden"])
for i in range(T["layers"]):
    p = f"language_model.model.layers.{i}."
    ones(p + "input_layernorm.weight", T["hidden"])
    ones(p + "post_attention_layernorm.weight", T["hidden"])
    add(p + "self_attn.q_proj.weight", T["heads"] * T["head_dim"], T["hidden"])
    add(p + "self_attn.k_proj.weight", T["kv"] * T["head_dim"], T["hidden"])
    add(p + "self_attn.v_proj.weight", T["kv"] * T["head_dim"], T["hidden"])
    add(p + "self_attn.o_proj.weight", T["hidden"], T["heads"] * T["head_dim"])
    add(p + "mlp.gate_proj.weight", T["ffn"], T["hidden"])
    add(p + "mlp.up_proj.weight", T["ffn"], T["hidden"])
    add(p + "mlp.down_proj.weight", T["hidden"], T["ffn"])
ones("language_model.model.norm.weight", T["hidden"])
add("language_model.lm_head.weight", T["vocab"], T["hidden"])

add("vision_tower.patch_conv.weight", V["hidden"], 3, V["patch"], V["patch"])
ones("vision_tower.ln_pre.weight", V["hidden"])
for i in range(V["layers"]):
    p = f"vision_tower.transformer.layers.{i}."
    ones(p + "attention_norm.weight", V["hidden"])
    ones(p + "ffn_norm.weight", V["hidden"])
    for w in "qkvo":
        add(p + f"attention.{w}_proj.weight", V["hidden"], V["hidden"])
    add(p + "feed_forward.gate_proj.weight", V["ffn"], V["hidden"])
    add(p + "feed_forward.up_proj.weight", V["ffn"], V["hidden"])
    add(p + "feed_forward.down_proj.weight", V["hidden"], V["ffn"])
ones("multi_modal_projector.norm.weight", V["hidden"])
add("multi_modal_projector.patch_merger.merging_layer.weight", V["hidden"], V["hidden"] * V["merge"] ** 2)
add("multi_modal_projector.linear_1.weight", T["hidden"], V["hidden"])
add("multi_modal_projector.linear_2.weight", T["hidden"], T["hidden"])

shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
header, off = {}, 0
for name, shape, b in tensors:
    header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + len(b)]}
    off += len(b)
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for _, _, b in tensors:
        f.write(b)

config = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "model_type": "mistral3",
    "image_token_index": 512,
    "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu",
    "spatial_merge_size": V["merge"],
    "vision_feature_layer": -1,
    "text_config": {
        "model_type": "mistral", "vocab_size": T["vocab"], "hidden_size": T["hidden"],
        "intermediate_size": T["ffn"], "num_hidden_layers": T["layers"],
        "num_attention_heads": T["heads"], "num_key_value_heads": T["kv"], "head_dim": T["head_dim"],
        "max_position_embeddings": 1024, "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0,
        "sliding_window": None, "hidden_act": "silu", "tie_word_embeddings": False,
        "bos_token_id": 1, "eos_token_id": 2,
    },
    "vision_config": {
        "model_type": "pixtral", "hidden_size": V["hidden"], "intermediate_size": V["ffn"],
        "num_hidden_layers": V["layers"], "num_attention_heads": V["heads"],
        "head_dim": V["hidden"] // V["heads"], "num_channels": 3, "image_size": V["image"],
        "patch_size": V["patch"], "hidden_act": "silu", "rope_theta": 10000.0,
        "attention_dropout": 0.0, "initializer_range": 0.02,
    },
    "torch_dtype": "bfloat16",
}
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
pre = {"image_processor_type": "PixtralImageProcessor", "do_normalize": True, "do_rescale": True,
       "do_resize": True, "image_mean": [0.48145466, 0.4578275, 0.40821073],
       "image_std": [0.26862954, 0.26130258, 0.27577711], "patch_size": {"height": V["patch"], "width": V["patch"]},
       "size": {"longest_edge": V["image"]}, "rescale_factor": 0.00392156862745098}
with open(os.path.join(out, "preprocessor_config.json"), "w") as f:
    json.dump(pre, f, indent=2)
    f.write("\n")
with open(os.path.join(src, "tokenizer_config.json")) as f:
    tc = json.load(f)
tc["added_tokens_decoder"] = {str(512 + i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                                             "single_word": False, "special": True}
                              for i, c in enumerate(["[IMG]", "[IMG_BREAK]", "[IMG_END]"])}
with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
    json.dump(tc, f, indent=2)
    f.write("\n")
for n in ("tokenizer.model", "special_tokens_map.json"):
    shutil.copy(os.path.join(src, n), os.path.join(out, n))
