#!/usr/bin/env python3
"""Reference forward pass of a Hugging Face Llama, Mistral, Qwen3, Gemma 1-3, Phi-3, gpt-oss or DeepSeek-V2/V3 checkpoint, in NumPy.

Test-only peer for .ci/test-peers-forward. It reads the checkpoint directory as
transformers would (config.json, model.safetensors or the shards named by
model.safetensors.index.json; BF16, F16, F32, or F8_E4M3 with the block scales of an "fp8"
quantization_config, multiplied out in float64) and shares no code with apr: the
SafeTensors files are parsed here with json and numpy, and the model runs in the
Hugging Face layout (rotate-half rotary embeddings on the Q and K rows as stored,
before any converter permutes them). Everything is computed in float64, so the
result is the checkpoint's exact function up to float64 rounding. Written from the
families' published definitions (transformers' modeling_llama, modeling_qwen3 and
modeling_gemma/gemma2/gemma3): Qwen3's RMS norm of each head's queries and keys before
the rotary embedding, Llama 3.1's rope scaling of the rotary frequencies (rope_type
"llama3"), and Gemma's RMS norms scaling by 1 + weight, embeddings scaled by
sqrt(hidden_size), GELU (tanh) feed-forward, queries scaled by query_pre_attn_scalar,
Gemma 2's soft-capped attention and final logits and norms after attention and
feed-forward, Gemma 3's q/k norms and its sliding layers' own rotary base; Phi-3's fused
QKV and gate/up projections, partial rotary dimensions and LongRoPE (the short factors
below the original context, with the attention factor on cos and sin); SmolLM3's layers
without rotary embedding (no_rope_layers 0); OLMo 2's norms of the attention and
feed-forward outputs only, and its q/k norms over the whole projections; Granite's
multipliers of the embeddings, attention scores, residual branches and logits;
StarCoder2's LayerNorms with biases, biased projections and GELU feed-forward of two;
GLM-4's norms after attention and feed-forward besides before, fused gate/up, and its
rotary embedding of interleaved pairs over half of each head; Mixtral's, Qwen2-MoE's,
Qwen3-MoE's, OLMoE's and Granite-MoE's mixtures of experts (softmax routing to the top-k experts, Qwen2-MoE's
shared expert with its sigmoid gate).

    forward.py CKPT --tokens 1,450,... [--out ref.f64]
        the logits after every token, float64 [tokens, vocab] raw little-endian
    forward.py CKPT --tokens ... --check LABEL:TOL:LOGITS [--check ...]
        compares logits another runtime wrote (float32 [tokens, vocab], raw
        little-endian) with the reference: prints the largest absolute difference and
        how many argmaxes agree; exits 1 when the difference exceeds TOL or the argmax
        differs at a position whose top-2 margin exceeds 2*TOL.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    """Returns {name: float64 array} of one .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        buf = data[lo:hi]
        dt = info["dtype"]
        if dt == "BF16":
            # bfloat16 is the top half of a float32.
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif dt == "F16":
            a = np.frombuffer(buf, dtype="<f2")
        elif dt == "F32":
            a = np.frombuffer(buf, dtype="<f4")
        elif dt == "U8":  # gpt-oss's MXFP4 blocks and scales, decoded in load_checkpoint
            a = np.frombuffer(buf, dtype=np.uint8)
        elif dt == "F8_E4M3":
            # FP8 E4M3 (fn: no infinities, S.1111.111 is NaN), from its definition.
            b = np.frombuffer(buf, dtype=np.uint8).astype(np.int64)
            e, m = (b >> 3) & 15, (b & 7).astype(np.float64)
            v = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * np.exp2(e - 7.0))
            v = np.where((e == 15) & (m == 7), np.nan, v)
            a = np.where(b & 0x80, -v, v)
        else:
            raise SystemExit(f"{path}: {name}: dtype {dt} not supported")
        shape = info["shape"]
        if a.size != int(np.prod(shape, dtype=np.int64)):
            raise SystemExit(f"{path}: {name}: {a.size} values for shape {shape}")
        out[name] = a.astype(np.float64).reshape(shape)
    return out


def load_checkpoint(ckpt):
    with open(os.path.join(ckpt, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(ckpt, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for name in files:
        w.update(read_safetensors(os.path.join(ckpt, name)))
    # An FP8 checkpoint (quantization_config.quant_method "fp8"): each weight times its
    # weight_scale_inv, one scale per weight_block_size block (the last ones partial).
    q = cfg.get("quantization_config") or {}
    if q.get("quant_method") == "fp8":
        bs = q.get("weight_block_size")
        for name in [n for n in w if n.endswith("_scale_inv")]:
            s, wt = w.pop(name), name[: -len("_scale_inv")]
            if bs:
                s = np.repeat(np.repeat(s, bs[0], axis=0), bs[1], axis=1)[: w[wt].shape[0], : w[wt].shape[1]]
            w[wt] = w[wt] * s
    # gpt-oss's MXFP4 experts: 32-value blocks of E2M1 codes (byte i: values 2i low, 2i+1
    # high nibble) times 2^(scale - 127), [experts, out, in] stored, used as [experts, in, out].
    if q.get("quant_method") == "mxfp4":
        fp4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
        for name in [n for n in w if n.endswith("_blocks")]:
            b = w.pop(name).astype(np.uint8)
            s = w.pop(name[: -len("_blocks")] + "_scales").astype(np.int64)
            codes = np.stack([b & 15, b >> 4], axis=-1).reshape(*b.shape[:-1], 32)
            v = fp4[codes] * np.exp2(s - 127.0)[..., None]
            w[name[: -len("_blocks")]] = v.reshape(*v.shape[:-2], -1).transpose(0, 2, 1)
    return cfg, w


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_pairs(x):
    # GLM-4's layout: dimensions 2i and 2i+1 are a pair.
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


def rotate_half(x):
    # Hugging Face's rotary layout: the first half of each head's dimensions pairs
    # with the second half (not adjacent pairs, which is ggml's).
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def llama3_inv_freq(inv_freq, s):
    """Llama 3.1's rope scaling of the rotary frequencies: long wavelengths divided by
    the factor, short ones kept, the band between blended smoothly."""
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * np.pi / inv_freq
    scaled = np.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return np.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)


def linear(x, w, bias=None):
    y = x @ w.T
    return y if bias is None else y + bias


def yarn(cfg, head_dim, theta):
    """transformers' YaRN (_compute_yarn_parameters): the blended frequencies and the
    attention factor that scales cos and sin."""
    s = cfg["rope_scaling"]
    factor, orig = s["factor"], s["original_max_position_embeddings"]
    fast, slow = s.get("beta_fast", 32), s.get("beta_slow", 1)
    mscale = s.get("attention_factor") or 0.1 * np.log(factor) + 1.0

    def corr(rot):
        return head_dim * np.log(orig / (rot * 2 * np.pi)) / (2 * np.log(theta))

    low, high = corr(fast), corr(slow)
    if s.get("truncate", True):
        low, high = np.floor(low), np.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(head_dim // 2) - low) / (high - low), 0, 1)
    pos_freqs = theta ** (np.arange(0, head_dim, 2) / head_dim)
    extra = 1 - ramp
    return (1 / (factor * pos_freqs)) * (1 - extra) + (1 / pos_freqs) * extra, mscale


def forward_gptoss(cfg, w, tokens):
    """gpt-oss (transformers' modeling_gpt_oss): biased attention with one sink logit per
    head in the softmax, NeoX (rotate-half) YaRN rotary, a biased router whose top-k
    logits are softmaxed, and experts whose gate/up outputs alternate: gate clamped at
    swiglu_limit, up clamped to +-limit, (up + 1) * gate * sigmoid(1.702 gate)."""
    dim, n_head = cfg["hidden_size"], cfg["num_attention_heads"]
    n_kv, head_dim = cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta, limit = cfg["rms_norm_eps"], cfg["rope_theta"], cfg.get("swiglu_limit", 7.0)
    k_top = cfg.get("num_experts_per_tok") or cfg["experts_per_token"]
    T = len(tokens)
    if cfg.get("sliding_window") and T > cfg["sliding_window"]:
        raise SystemExit(f"{T} tokens exceed the sliding window")
    inv_freq, mscale = yarn(cfg, head_dim, theta)
    angles = np.outer(np.arange(T, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)
    cos, sin = mscale * np.cos(angles)[:, None, :], mscale * np.sin(angles)[:, None, :]
    causal = np.triu(np.full((T, T), -np.inf), k=1)
    group = n_head // n_kv
    h = w["model.embed_tokens.weight"][np.asarray(tokens)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = linear(x, w[p + "self_attn.q_proj.weight"], w[p + "self_attn.q_proj.bias"]).reshape(T, n_head, head_dim)
        k = linear(x, w[p + "self_attn.k_proj.weight"], w[p + "self_attn.k_proj.bias"]).reshape(T, n_kv, head_dim)
        v = linear(x, w[p + "self_attn.v_proj.weight"], w[p + "self_attn.v_proj.bias"]).reshape(T, n_kv, head_dim)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        sinks = w[p + "self_attn.sinks"]
        out = np.empty((T, n_head, head_dim))
        for hd in range(n_head):
            s = q[:, hd] @ k[:, hd // group].T * head_dim ** -0.5 + causal
            s = np.concatenate([s, np.full((T, 1), sinks[hd])], axis=-1)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, hd] = (s / s.sum(axis=-1, keepdims=True))[:, :T] @ v[:, hd // group]
        h = h + linear(out.reshape(T, -1), w[p + "self_attn.o_proj.weight"], w[p + "self_attn.o_proj.bias"])
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        logits = linear(x, w[p + "mlp.router.weight"], w[p + "mlp.router.bias"])
        f = np.zeros_like(x)
        for t in range(T):
            top = np.argsort(-logits[t], kind="stable")[:k_top]
            r = np.exp(logits[t, top] - logits[t, top].max())
            r = r / r.sum()
            for e, we in zip(top, r):
                gu = x[t] @ w[p + "mlp.experts.gate_up_proj"][e] + w[p + "mlp.experts.gate_up_proj_bias"][e]
                g, u = np.minimum(gu[::2], limit), np.clip(gu[1::2], -limit, limit)
                y = (u + 1) * g / (1 + np.exp(-1.702 * g))
                f[t] += we * (y @ w[p + "mlp.experts.down_proj"][e] + w[p + "mlp.experts.down_proj_bias"][e])
        h = h + f
    h = rms_norm(h, w["model.norm.weight"], eps)
    return h @ w["lm_head.weight"].T


def forward_deepseek(cfg, w, tokens):
    """DeepSeek-V2 and V3 (transformers' modeling_deepseek_v2 and modeling_deepseek_v3, as
    DeepSeek's own modeling_deepseek.py): multi-head latent attention, the queries through
    q_a_proj, q_a_layernorm and q_b_proj (or one q_proj where q_lora_rank is null),
    kv_a_proj_with_mqa giving the compressed keys and values (kv_lora_rank) and one rotary
    key part shared by the heads (qk_rope_head_dim), kv_a_layernorm, then kv_b_proj giving
    each head's non-rotary key (qk_nope_head_dim) and its value (v_head_dim); the rotary part
    of queries and keys stored as interleaved pairs, which the modeling code permutes to
    halves (even dimensions, then odd) before the rotate-half rotation; YaRN frequencies,
    cos and sin scaled by mscale(mscale)/mscale(mscale_all_dim), the softmax scale by
    mscale(mscale_all_dim)^2. The first first_k_dense_replace layers have a dense SwiGLU,
    the others routed experts plus shared experts (no gate on them): V3's sigmoid scores
    (noaux_tc), V2's softmax (group_limited_greedy), experts chosen within the topk_group
    best of n_group groups (V3: a group's two best scores plus e_score_correction_bias summed;
    V2: its best score; --llama-group-scores: the two best summed for V2 too, as llama.cpp's graph
    does for every model with expert groups), the bias used for choosing only, the chosen scores normalized where
    norm_topk_prob says so and times routed_scaling_factor. Layers past num_hidden_layers
    (V3's multi-token prediction) are not used."""
    dim, n_head, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["rms_norm_eps"]
    nope, rope, vdim = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kv_rank, theta = cfg["kv_lora_rank"], cfg.get("rope_theta", 10000.0)
    T = len(tokens)
    scale = (nope + rope) ** -0.5
    inv_freq, cs = 1.0 / theta ** (np.arange(0, rope, 2, dtype=np.float64) / rope), 1.0
    s = cfg.get("rope_scaling")
    if s:
        kind = s.get("rope_type", s.get("type"))
        if kind != "yarn":
            raise SystemExit(f"rope_scaling {kind!r}: DeepSeek only with yarn")
        factor = s["factor"]

        def get_mscale(m):  # DeepSeek's yarn_get_mscale
            return 1.0 if factor <= 1 else 0.1 * m * np.log(factor) + 1.0

        ms, ms_all = s.get("mscale", 1), s.get("mscale_all_dim", 0)
        inv_freq, _ = yarn(cfg, rope, theta)
        cs = get_mscale(ms) / get_mscale(ms_all)
        if ms_all:
            scale = scale * get_mscale(ms_all) ** 2
    angles = np.outer(np.arange(T, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)
    cos, sin = cs * np.cos(angles)[:, None, :], cs * np.sin(angles)[:, None, :]

    def rotary(x):  # interleaved pairs to halves, then rotate-half
        x = np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)
        return x * cos + rotate_half(x) * sin

    causal = np.triu(np.full((T, T), -np.inf), k=1)
    h = w["model.embed_tokens.weight"][np.asarray(tokens)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        if cfg.get("q_lora_rank"):
            q = linear(rms_norm(linear(x, w[a + "q_a_proj.weight"]), w[a + "q_a_layernorm.weight"], eps), w[a + "q_b_proj.weight"])
        else:
            q = linear(x, w[a + "q_proj.weight"])
        q = q.reshape(T, n_head, nope + rope)
        ckv = linear(x, w[a + "kv_a_proj_with_mqa.weight"])
        ckv, k_pe = ckv[:, :kv_rank], ckv[:, kv_rank:].reshape(T, 1, rope)
        kv = linear(rms_norm(ckv, w[a + "kv_a_layernorm.weight"], eps), w[a + "kv_b_proj.weight"]).reshape(T, n_head, nope + vdim)
        k_nope, v = kv[..., :nope], kv[..., nope:]
        q = np.concatenate([q[..., :nope], rotary(q[..., nope:])], axis=-1)
        k = np.concatenate([k_nope, np.broadcast_to(rotary(k_pe), (T, n_head, rope))], axis=-1)
        out = np.empty((T, n_head, vdim))
        for hd in range(n_head):
            sc = q[:, hd] @ k[:, hd].T * scale + causal
            sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
            out[:, hd] = (sc / sc.sum(axis=-1, keepdims=True)) @ v[:, hd]
        h = h + linear(out.reshape(T, -1), w[a + "o_proj.weight"])
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        moe_layer = (cfg.get("n_routed_experts") and i >= cfg.get("first_k_dense_replace", 0)
                     and i % cfg.get("moe_layer_freq", 1) == 0)
        if not moe_layer:
            m = p + "mlp."
            h = h + linear(silu(linear(x, w[m + "gate_proj.weight"])) * linear(x, w[m + "up_proj.weight"]), w[m + "down_proj.weight"])
            continue
        h = h + deepseek_moe(cfg, w, p, x)
    h = rms_norm(h, w["model.norm.weight"], eps)
    return h @ w["lm_head.weight"].T


def deepseek_moe(cfg, w, p, x):
    """DeepSeek's routed and shared experts (see forward_deepseek)."""
    n, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    groups, top_groups = cfg.get("n_group") or 1, cfg.get("topk_group") or 1
    logits = linear(x, w[p + "mlp.gate.weight"])
    if cfg.get("scoring_func", "softmax") == "sigmoid":
        scores = 1.0 / (1.0 + np.exp(-logits))
    else:
        scores = np.exp(logits - logits.max(axis=-1, keepdims=True))
        scores = scores / scores.sum(axis=-1, keepdims=True)
    choice = scores + w.get(p + "mlp.gate.e_score_correction_bias", 0.0)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        g = choice[t].reshape(groups, n // groups)
        if cfg.get("topk_method") == "noaux_tc" or cfg.get("llama_group_scores"):
            gs = np.sort(g, axis=-1)[:, -2:].sum(axis=-1)
        else:
            gs = g.max(axis=-1)
        keep = np.argsort(-gs, kind="stable")[:top_groups]
        masked = np.zeros_like(g)  # the modeling code's masked_fill(..., 0.0)
        masked[keep] = g[keep]
        top = np.argsort(-masked.reshape(-1), kind="stable")[:k]
        wt = scores[t, top]
        if cfg.get("norm_topk_prob"):
            wt = wt / (wt.sum() + 1e-20)
        wt = wt * cfg.get("routed_scaling_factor", 1.0)
        for e, we in zip(top, wt):
            q = f"{p}mlp.experts.{e}."
            y = silu(linear(x[t], w[q + "gate_proj.weight"])) * linear(x[t], w[q + "up_proj.weight"])
            out[t] += we * linear(y, w[q + "down_proj.weight"])
    if p + "mlp.shared_experts.gate_proj.weight" in w:
        q = p + "mlp.shared_experts."
        out = out + linear(silu(linear(x, w[q + "gate_proj.weight"])) * linear(x, w[q + "up_proj.weight"]), w[q + "down_proj.weight"])
    return out


def forward(cfg, w, tokens):
    arch = cfg.get("model_type")
    if arch == "gpt_oss":
        return forward_gptoss(cfg, w, tokens)
    if arch in ("deepseek_v2", "deepseek_v3"):
        return forward_deepseek(cfg, w, tokens)
    if arch not in ("llama", "mistral", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "smollm3", "olmo2", "granite", "starcoder2", "glm4",
                    "mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoeshared", "granitemoe"):
        raise SystemExit(f"model_type {arch!r}: only llama, mistral, qwen3, gemma 1-3, phi3, smollm3, olmo2, granite, starcoder2, glm4, "
                         "mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe(shared), deepseek_v2, deepseek_v3 and gpt_oss")
    gemma = arch.startswith("gemma")
    act = cfg.get("hidden_activation") or cfg.get("hidden_act", "silu") if gemma else cfg.get("hidden_act", "silu")
    if act not in ("silu", "gelu_pytorch_tanh"):
        raise SystemExit(f"hidden activation {act!r}: only silu and gelu_pytorch_tanh")
    dim = cfg["hidden_size"]
    n_head = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads") or n_head
    head_dim = cfg.get("head_dim") or dim // n_head
    eps = cfg["rms_norm_eps"]
    theta = cfg.get("rope_theta", 10000.0)
    T = len(tokens)

    pos = np.arange(T, dtype=np.float64)
    rot = int(head_dim * cfg.get("partial_rotary_factor", 0.5 if arch == "glm4" else 1.0))  # rotated dimensions
    inv_freq = 1.0 / theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    mscale = 1.0
    local = 1.0 / cfg.get("rope_local_base_freq", theta) ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    scaling = cfg.get("rope_scaling")
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind == "linear":
            pos = pos / scaling["factor"]
        elif kind == "llama3":
            inv_freq = llama3_inv_freq(inv_freq, scaling)
        elif kind in ("longrope", "su"):
            orig = cfg["original_max_position_embeddings"]
            ext = scaling["long_factor"] if T > orig else scaling["short_factor"]
            inv_freq = inv_freq / np.asarray(ext, dtype=np.float64)
            factor = cfg["max_position_embeddings"] / orig
            if factor > 1:
                mscale = np.sqrt(1 + np.log(factor) / np.log(orig))
        else:
            raise SystemExit(f"rope_scaling {kind!r}: only linear, llama3 and longrope")
    window = cfg.get("sliding_window")
    if window is not None and T > window:
        raise SystemExit(f"{T} tokens exceed the sliding window {window}")

    def rotary(pos, inv_freq, mscale=1.0):
        angles = np.outer(pos, inv_freq)
        if arch == "glm4":  # each frequency on a pair of adjacent dimensions
            angles = np.repeat(angles, 2, axis=-1)
        else:
            angles = np.concatenate([angles, angles], axis=-1)  # [T, rotated dimensions]
        return mscale * np.cos(angles)[:, None, :], mscale * np.sin(angles)[:, None, :]

    cos, sin = rotary(pos, inv_freq, mscale)
    # Gemma 3's sliding layers (all but every sliding_window_pattern-th) rotate with
    # their own base and without the global layers' scaling.
    local_cos, local_sin = rotary(np.arange(T, dtype=np.float64), local[: rot // 2])
    pattern = cfg.get("sliding_window_pattern") if arch == "gemma3" else None
    norm = (lambda x, wt: rms_norm(x, 1.0 + wt, eps)) if gemma else (lambda x, wt: rms_norm(x, wt, eps))
    if arch == "starcoder2":  # LayerNorm: centered, with a bias (w[name + "bias"])
        ln_eps = cfg["norm_epsilon"]

        def norm(x, wt, bias=None):
            c = x - x.mean(axis=-1, keepdims=True)
            y = c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + ln_eps) * wt
            return y if bias is None else y + bias
    scale = cfg.get("query_pre_attn_scalar", head_dim) ** -0.5 if gemma else head_dim ** -0.5
    granite = arch.startswith("granite")
    if granite:
        scale = cfg.get("attention_multiplier") or scale
    residual = cfg.get("residual_multiplier", 1.0) if granite else 1.0
    attn_cap = cfg.get("attn_logit_softcapping") if arch == "gemma2" else None
    final_cap = cfg.get("final_logit_softcapping") if arch in ("gemma2", "gemma3") else None

    causal = np.triu(np.full((T, T), -np.inf), k=1)
    group = n_head // n_kv  # query heads per key/value head (repeat_kv)

    h = w["model.embed_tokens.weight"][np.asarray(tokens)]
    if gemma:
        h = h * np.sqrt(dim)
    if granite:
        h = h * cfg.get("embedding_multiplier", 1.0)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        if arch == "starcoder2":
            x = norm(h, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"])
        else:
            x = h if arch == "olmo2" else norm(h, w[p + "input_layernorm.weight"])
        if arch == "phi3":  # Q, K and V in one projection, in that order
            qkv = linear(x, w[p + "self_attn.qkv_proj.weight"])
            q, k, v = np.split(qkv, [n_head * head_dim, (n_head + n_kv) * head_dim], axis=-1)
        else:
            q = linear(x, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias"))
            k = linear(x, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias"))
            v = linear(x, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias"))
        if arch in ("olmo2", "olmoe"):  # RMS norm over the whole projection, before the heads
            q = norm(q, w[p + "self_attn.q_norm.weight"])
            k = norm(k, w[p + "self_attn.k_norm.weight"])
        q = q.reshape(T, n_head, head_dim)
        k = k.reshape(T, n_kv, head_dim)
        v = v.reshape(T, n_kv, head_dim)
        if arch in ("qwen3", "gemma3", "qwen3_moe"):  # RMS norm over each head's dimensions, weights shared by the heads
            q = norm(q, w[p + "self_attn.q_norm.weight"])
            k = norm(k, w[p + "self_attn.k_norm.weight"])
        c, sn = (local_cos, local_sin) if pattern and (i + 1) % pattern != 0 else (cos, sin)
        if arch == "smollm3" and not cfg["no_rope_layers"][i]:
            c, sn = 1.0, 0.0  # this layer has no rotary embedding
        # only the first rot dimensions of each head rotate (all but Phi-3's partial rotary)
        turn = rotate_pairs if arch == "glm4" else rotate_half
        q = np.concatenate([q[..., :rot] * c + turn(q[..., :rot]) * sn, q[..., rot:]], axis=-1)
        k = np.concatenate([k[..., :rot] * c + turn(k[..., :rot]) * sn, k[..., rot:]], axis=-1)
        out = np.empty((T, n_head, head_dim))
        for hd in range(n_head):
            kh, vh = k[:, hd // group], v[:, hd // group]
            s = q[:, hd] @ kh.T * scale
            if attn_cap:
                s = np.tanh(s / attn_cap) * attn_cap
            s = s + causal
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, hd] = (s / s.sum(axis=-1, keepdims=True)) @ vh
        a = linear(out.reshape(T, n_head * head_dim), w[p + "self_attn.o_proj.weight"],
                   w.get(p + "self_attn.o_proj.bias"))
        if arch in ("gemma2", "gemma3"):  # norms after attention and around the feed-forward
            h = h + norm(a, w[p + "post_attention_layernorm.weight"])
            x = norm(h, w[p + "pre_feedforward_layernorm.weight"])
        elif arch == "olmo2":
            h = h + norm(a, w[p + "post_attention_layernorm.weight"])
            x = h
        elif arch == "glm4":
            h = h + norm(a, w[p + "post_self_attn_layernorm.weight"])
            x = norm(h, w[p + "post_attention_layernorm.weight"])
        elif arch == "starcoder2":
            h = h + a
            x = norm(h, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"])
        else:
            h = h + residual * a
            x = norm(h, w[p + "post_attention_layernorm.weight"])
        if arch == "starcoder2":  # no gate: GELU of one projection, then the other
            g = linear(x, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"])
            g = 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))
            h = h + linear(g, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
            continue
        if arch in ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "granitemoeshared"):
            h = h + residual * moe(cfg, w, p, x, arch)
            continue
        if arch in ("phi3", "glm4"):  # gate then up in one projection
            g, u = np.split(linear(x, w[p + "mlp.gate_up_proj.weight"]), 2, axis=-1)
        else:
            g = linear(x, w[p + "mlp.gate_proj.weight"], w.get(p + "mlp.gate_proj.bias"))
            u = linear(x, w[p + "mlp.up_proj.weight"], w.get(p + "mlp.up_proj.bias"))
        if act == "silu":
            g = g / (1.0 + np.exp(-g))
        else:  # GELU, tanh approximation
            g = 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))
        f = linear(g * u, w[p + "mlp.down_proj.weight"], w.get(p + "mlp.down_proj.bias"))
        if arch in ("gemma2", "gemma3", "olmo2"):
            f = norm(f, w[p + "post_feedforward_layernorm.weight"])
        if arch == "glm4":
            f = norm(f, w[p + "post_mlp_layernorm.weight"])
        h = h + residual * f
    h = norm(h, w["model.norm.weight"], w["model.norm.bias"]) if arch == "starcoder2" else norm(h, w["model.norm.weight"])
    head = w.get("lm_head.weight")
    if head is None:
        if not cfg.get("tie_word_embeddings", False):
            raise SystemExit("no lm_head.weight and tie_word_embeddings is not true")
        head = w["model.embed_tokens.weight"]
    logits = h @ head.T
    if granite:
        logits = logits / cfg.get("logits_scaling", 1.0)
    if final_cap:
        logits = np.tanh(logits / final_cap) * final_cap
    return logits


def silu(x):
    return x / (1.0 + np.exp(-x))


def moe(cfg, w, p, x, arch):
    """A mixture of experts' feed-forward network (transformers' MixtralSparseMoeBlock,
    Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock, OlmoeSparseMoeBlock): the router's softmax over the
    experts, the top num_experts_per_tok of them per token, their weights renormalized
    to sum 1 where the model says so (Mixtral always, Qwen's norm_topk_prob), each
    expert a SwiGLU network; Qwen2-MoE adds its shared expert, scaled by the sigmoid of
    its gate."""
    if arch.startswith("granitemoe"):  # experts stacked, gate and up fused; top-k, then softmax over those
        k = cfg["num_experts_per_tok"]
        logits = linear(x, w[p + "block_sparse_moe.router.layer.weight"])
        fused, down = w[p + "block_sparse_moe.input_linear.weight"], w[p + "block_sparse_moe.output_linear.weight"]
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            top = np.argsort(-logits[t], kind="stable")[:k]
            e = np.exp(logits[t, top] - logits[t, top].max())
            for i, wt in zip(top, e / e.sum()):
                g, u = np.split(fused[i] @ x[t], 2)
                out[t] += wt * (down[i] @ (silu(g) * u))
        if p + "shared_mlp.input_linear.weight" in w:
            g, u = np.split(linear(x, w[p + "shared_mlp.input_linear.weight"]), 2, axis=-1)
            out = out + linear(silu(g) * u, w[p + "shared_mlp.output_linear.weight"])
        return out
    if arch == "mixtral":
        router, experts, names, norm_topk = "block_sparse_moe.gate.weight", "block_sparse_moe.experts.", ("w1", "w3", "w2"), True
    else:
        router, experts, names = "mlp.gate.weight", "mlp.experts.", ("gate_proj", "up_proj", "down_proj")
        norm_topk = cfg.get("norm_topk_prob", False)
    k = cfg["num_experts_per_tok"]
    logits = linear(x, w[p + router])
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = probs / probs.sum(axis=-1, keepdims=True)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-probs[t], kind="stable")[:k]
        weights = probs[t, top] / probs[t, top].sum() if norm_topk else probs[t, top]
        for e, wt in zip(top, weights):
            q = f"{p}{experts}{e}."
            g = linear(x[t], w[q + names[0] + ".weight"])
            u = linear(x[t], w[q + names[1] + ".weight"])
            out[t] += wt * linear(silu(g) * u, w[q + names[2] + ".weight"])
    if p + "mlp.shared_expert.gate_proj.weight" in w:
        q = p + "mlp.shared_expert."
        sh = linear(silu(linear(x, w[q + "gate_proj.weight"])) * linear(x, w[q + "up_proj.weight"]), w[q + "down_proj.weight"])
        gate = linear(x, w[p + "mlp.shared_expert_gate.weight"])
        out = out + sh / (1.0 + np.exp(-gate))
    return out


def check(ref, label, tol, path):
    """Compares the logits in path with ref; prints one line, returns whether they agree."""
    got = np.fromfile(path, dtype="<f4").astype(np.float64)
    if got.size != ref.size:
        print(f"FAIL {label}: {got.size} logits in {path}, the reference has {ref.shape}")
        return False
    got = got.reshape(ref.shape)
    diff = np.abs(got - ref)
    worst = np.unravel_index(np.argmax(diff), diff.shape)
    arg_ref, arg_got = ref.argmax(axis=-1), got.argmax(axis=-1)
    # The margin of the reference's top token over its runner-up at each position.
    # Where it exceeds 2*tol, logits within tol of the reference cannot have another
    # argmax, so the argmax must agree there (random test models have small margins,
    # so a loose tolerance leaves some positions free).
    top2 = np.sort(ref, axis=-1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    must = margin > 2 * tol
    same = arg_ref == arg_got
    ok = diff.max() <= tol and same[must].all()
    print(f"{'ok' if ok else 'FAIL'} {label}: {ref.shape[0]} positions x {ref.shape[1]} logits, "
          f"max |logit| {np.abs(ref).max():.3g}, max |difference| {diff.max():.2g} "
          f"(position {worst[0]}, token {worst[1]}; tolerance {tol:g}), "
          f"argmax equal at {same.sum()}/{len(same)} positions "
          f"(required at {must.sum()}: top-2 margin > {2 * tol:g}; smallest margin {margin.min():.2g})")
    if not same.all():
        bad = np.nonzero(~same)[0]
        print(f"  argmax differs at positions {bad.tolist()} (margins {np.round(margin[bad], 4).tolist()}): "
              f"reference {arg_ref[bad].tolist()}, runtime {arg_got[bad].tolist()}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ckpt")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", help="write the reference logits (float64, raw) here")
    ap.add_argument("--check", action="append", default=[], metavar="LABEL:TOL:FILE",
                    help="compare the logits in FILE (float32 [tokens, vocab], raw) with a tolerance TOL")
    ap.add_argument("--llama-group-scores", action="store_true",
                    help="DeepSeek-V2: score expert groups by their two best scores summed, as llama.cpp "
                         "does, not by the best (the modeling code's group_limited_greedy)")
    a = ap.parse_args()

    tokens = [int(t) for t in a.tokens.split(",")]
    cfg, w = load_checkpoint(a.ckpt)
    cfg["llama_group_scores"] = a.llama_group_scores
    ref = forward(cfg, w, tokens)
    if a.out:
        ref.astype("<f8").tofile(a.out)
    ok = True
    for c in a.check:
        label, tol, path = c.split(":", 2)
        ok = check(ref, label, float(tol), path) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
