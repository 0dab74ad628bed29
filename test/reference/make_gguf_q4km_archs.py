#!/usr/bin/python3
"""make_gguf_q4km_archs.py — Qwen3 and Gemma 3 GGUF files typed as
llama.cpp's Q4_K_M mix, and their reference outputs run as llama.cpp runs
such a file, for test/regress/sql/gguf_q4km_archs.sql (make_gguf_q4km.py
does the same for llama).

Writes into test/fixtures/gguf/:
  qwen3_q4_k_m.gguf: a random Qwen3 (hidden 256, 2 layers, 4 heads of 64,
    2 kv heads, feed-forward 256, q/k norms, rope base 1e6, tied head), as
    llama.cpp's converter writes a Qwen3ForCausalLM (make_gguf_fixtures.py's
    llama_file, arch "qwen3": rows as they are) with test/fixtures/hf_llama's
    tokenizer in the metadata.
  gemma3_q4_k_m.gguf: a random Gemma 3 text model (hidden 256, 6 layers,
    layers 0-4 local with sliding window 8 and rope base 1e4, layer 5
    global with base 1e6 and linear rope scaling 8, 4 heads of 64, 1 kv
    head, query_pre_attn_scalar 64, q/k norms, four norms a layer, GeGLU
    (tanh), embeddings · 16, tied head), as the converter's Gemma3Model
    writes it (make_gguf_archs.py's gemma3_file: norms stored plus 1),
    test/fixtures/hf_gemma3_gguf's tokenizer in the metadata.
  phi3_q4_k_m.gguf: a random Phi-4-mini (hidden 256, 2 layers, 4 heads of
    64, 2 kv heads, feed-forward 256, partial rotary 0.75, longrope with
    original context 4096 of 131072, tied head), as the converter's
    Phi3MiniModel writes it (make_gguf_archs.py: attn_qkv and ffn_up fused,
    rope_factors_short/long), test/fixtures/hf_phi4's tokenizer; attn_qkv
    Q5_K, as llama.cpp types a phi3 file's fused attention at Q4_K_M.
  Qwen3's and Gemma 3's with their published chat template (Qwen3's, Gemma 3's) as
    tokenizer.chat_template, as the converter writes it.
  q4km_archs_reference.txt: per file, lines "<file> ids ...", "<file>
    greedy ..." (8 greedy next ids), "<file> gap g" (the smallest top-2
    logit gap of those steps) and "<file> logits ..." (the last prompt
    position's logits, %.6f).

Types as llama.cpp's llama_tensor_get_type gives Q4_K_M (make_gguf_q4km.py's
q4km_type): token_embd (the tied output) Q6_K; attn_v and ffn_down Q6_K in
the layers use_more_bits picks, Q4_K in the others; every other matrix
Q4_K; norms F32.  The reference runs the blocks' exact dequantization with
every matrix product's activations quantized per row to ggml's Q8_K first
(make_gguf_q4km.py's q8_K and qlinear), the rest in float64 from Hugging
Face's Qwen3Model and Gemma3TextModel descriptions (hf_qwen3_reference.py,
hf_gemma3_reference.py).  The prompts run past Gemma 3's window.

Run: /usr/bin/python3 test/reference/make_gguf_q4km_archs.py (from the repository root).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gguf_fixtures as mg  # noqa: E402
import make_gguf_q4km as km  # noqa: E402  (q8_K, qlinear, the Q4_K_M types)

f32 = np.float32
D, F, H, KV, S = 256, 256, 4, 2, 64
PROMPT = [1, 330, 348, 347, 351, 330, 259, 272, 331, 290, 301]


def template(name):
    """a published chat template of test/fixtures/chat/hf_context_cases.tsv (Qwen3's, Gemma 3's)"""
    for line in open("test/fixtures/chat/hf_context_cases.tsv", encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "T" and f[1] == name:
            return bytes.fromhex(f[2]).decode("utf-8")
    raise KeyError(name)


def q4km_type(layers):
    def kind(gname):
        if gname == "token_embd.weight" or gname == "output.weight":
            return mg.Q6_K
        if gname.endswith("attn_v.weight") or gname.endswith("ffn_down.weight"):
            return mg.Q6_K if km.use_more_bits(int(gname.split(".")[1]), layers) else mg.Q4_K
        return mg.Q4_K
    return kind


def deq(kind, gname, w):
    return mg.encode(kind(gname), w)[2].reshape(w.shape).astype(np.float64)


def rms(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rotation(T, s, theta, factor=1.0):
    inv = 1.0 / (theta ** (np.arange(0, s, 2) / s)) / factor
    ang = np.arange(T)[:, None] * inv[None, :]
    return np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))


def rot(x, cs):
    cos, sin = cs
    half = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin


def attend(q, k, v, scale, mask):
    """q (H, T, s), k, v (KV, T, s): the heads' outputs (T, H·s)"""
    nh, T, s = q.shape
    k, v = np.repeat(k, nh // k.shape[0], 0), np.repeat(v, nh // v.shape[0], 0)
    a = q @ k.transpose(0, 2, 1) * scale
    a = np.where(mask, a, -np.inf)
    a = np.exp(a - a.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return (a @ v).transpose(1, 0, 2).reshape(T, nh * s)


# ---- Qwen3 ----------------------------------------------------------------------

Q3_LAYERS = 2


def qwen3_forward(sd, ids):
    T = len(ids)
    cs = rotation(T, S, 1e6)
    mask = np.tril(np.ones((T, T), bool))
    x = sd["model.embed_tokens.weight"][ids]
    for i in range(Q3_LAYERS):
        p = "model.layers.%d." % i
        h = rms(x, sd[p + "input_layernorm.weight"], 1e-6)
        q = km.qlinear(h, sd[p + "self_attn.q_proj.weight"]).reshape(T, H, S)
        k = km.qlinear(h, sd[p + "self_attn.k_proj.weight"]).reshape(T, KV, S)
        v = km.qlinear(h, sd[p + "self_attn.v_proj.weight"]).reshape(T, KV, S).transpose(1, 0, 2)
        q = rot(rms(q, sd[p + "self_attn.q_norm.weight"], 1e-6).transpose(1, 0, 2), cs)
        k = rot(rms(k, sd[p + "self_attn.k_norm.weight"], 1e-6).transpose(1, 0, 2), cs)
        x = x + km.qlinear(attend(q, k, v, S ** -0.5, mask), sd[p + "self_attn.o_proj.weight"])
        h = rms(x, sd[p + "post_attention_layernorm.weight"], 1e-6)
        g = km.qlinear(h, sd[p + "mlp.gate_proj.weight"])
        u = km.qlinear(h, sd[p + "mlp.up_proj.weight"])
        x = x + km.qlinear(g / (1 + np.exp(-g)) * u, sd[p + "mlp.down_proj.weight"])
    return km.qlinear(rms(x, sd["model.norm.weight"], 1e-6), sd["model.embed_tokens.weight"])


def qwen3(rng, ref):
    cfg = dict(json.load(open("test/fixtures/hf_qwen3/config.json")), hidden_size=D, intermediate_size=F,
               num_hidden_layers=Q3_LAYERS, num_attention_heads=H, num_key_value_heads=KV, head_dim=S,
               max_position_embeddings=8192, tie_word_embeddings=True)
    V = cfg["vocab_size"]
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    for i in range(Q3_LAYERS):
        p = "model.layers.%d." % i
        shapes.update({p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                       p + "self_attn.q_proj.weight": (H * S, D), p + "self_attn.k_proj.weight": (KV * S, D),
                       p + "self_attn.v_proj.weight": (KV * S, D), p + "self_attn.o_proj.weight": (D, H * S),
                       p + "self_attn.q_norm.weight": (S,), p + "self_attn.k_norm.weight": (S,),
                       p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                       p + "mlp.down_proj.weight": (D, F)})
    sd = {k: (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.08 * rng.standard_normal(s)).astype(f32)
          for k, s in sorted(shapes.items())}
    kind = q4km_type(Q3_LAYERS)
    tok = json.load(open("test/fixtures/hf_llama/tokenizer.json"))
    mg.llama_file(os.path.join(mg.OUT, "qwen3_q4_k_m.gguf"), cfg, sd, kind,
                  mg.tokenizer_meta(tok) + [("tokenizer.chat_template", template("hf_qwen3"))], [], arch="qwen3")
    names = {"model.embed_tokens.weight": "token_embd.weight"}
    for i in range(Q3_LAYERS):
        for hf, g in (("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                      ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                      ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")):
            names["model.layers.%d.%s.weight" % (i, hf)] = "blk.%d.%s.weight" % (i, g)
    dq = {k: (deq(kind, names[k], w) if k in names else w.astype(np.float64)) for k, w in sd.items()}
    return run("qwen3_q4_k_m.gguf", qwen3_forward, dq, ref)


# ---- Gemma 3 --------------------------------------------------------------------

G3_LAYERS, G3_KV, WINDOW = 6, 1, 8


def gemma_rms(x, w):
    return rms(x, 1.0 + w, 1e-6)


def gemma3_forward(sd, ids):
    T = len(ids)
    cs_global, cs_local = rotation(T, S, 1e6, 8.0), rotation(T, S, 1e4)
    causal = np.tril(np.ones((T, T), bool))
    windowed = causal & ~np.tril(np.ones((T, T), bool), -WINDOW)
    x = sd["model.embed_tokens.weight"][ids] * float(f32(D ** 0.5))
    for i in range(G3_LAYERS):
        p = "model.layers.%d." % i
        local = (i + 1) % 6 != 0
        cs, mask = (cs_local, windowed) if local else (cs_global, causal)
        h = gemma_rms(x, sd[p + "input_layernorm.weight"])
        q = km.qlinear(h, sd[p + "self_attn.q_proj.weight"]).reshape(T, H, S)
        k = km.qlinear(h, sd[p + "self_attn.k_proj.weight"]).reshape(T, G3_KV, S)
        v = km.qlinear(h, sd[p + "self_attn.v_proj.weight"]).reshape(T, G3_KV, S).transpose(1, 0, 2)
        q = rot(gemma_rms(q, sd[p + "self_attn.q_norm.weight"]).transpose(1, 0, 2), cs)
        k = rot(gemma_rms(k, sd[p + "self_attn.k_norm.weight"]).transpose(1, 0, 2), cs)
        o = km.qlinear(attend(q, k, v, S ** -0.5, mask), sd[p + "self_attn.o_proj.weight"])
        x = x + gemma_rms(o, sd[p + "post_attention_layernorm.weight"])
        h = gemma_rms(x, sd[p + "pre_feedforward_layernorm.weight"])
        g = km.qlinear(h, sd[p + "mlp.gate_proj.weight"])
        u = km.qlinear(h, sd[p + "mlp.up_proj.weight"])
        gelu = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
        m = km.qlinear(gelu * u, sd[p + "mlp.down_proj.weight"])
        x = x + gemma_rms(m, sd[p + "post_feedforward_layernorm.weight"])
    return km.qlinear(gemma_rms(x, sd["model.norm.weight"]), sd["model.embed_tokens.weight"])


def gemma3(rng, ref):
    d = "test/fixtures/hf_gemma3_gguf/"
    tok = json.load(open(d + "tokenizer.json"))
    base = json.load(open(d + "config.json"))
    V = base["vocab_size"]
    a = "gemma3"
    meta = [("general.architecture", a), ("general.name", "tfm-test"), ("general.alignment", 32),
            (a + ".context_length", 8192), (a + ".embedding_length", D), (a + ".block_count", G3_LAYERS),
            (a + ".feed_forward_length", F), (a + ".attention.head_count", H),
            (a + ".attention.layer_norm_rms_epsilon", 1e-6),
            (a + ".attention.key_length", S), (a + ".attention.value_length", S),
            (a + ".rope.freq_base", 1e6), (a + ".attention.sliding_window", WINDOW),
            (a + ".attention.head_count_kv", G3_KV),
            (a + ".rope.scaling.type", "linear"), (a + ".rope.scaling.factor", 8.0)] + mg.tokenizer_meta(tok) + \
        [("tokenizer.chat_template", template("hf_gemma3"))]
    names = [("attn_norm", "input_layernorm", (D,)), ("attn_q", "self_attn.q_proj", (H * S, D)),
             ("attn_k", "self_attn.k_proj", (G3_KV * S, D)), ("attn_v", "self_attn.v_proj", (G3_KV * S, D)),
             ("attn_q_norm", "self_attn.q_norm", (S,)), ("attn_k_norm", "self_attn.k_norm", (S,)),
             ("attn_output", "self_attn.o_proj", (D, H * S)),
             ("post_attention_norm", "post_attention_layernorm", (D,)),
             ("ffn_norm", "pre_feedforward_layernorm", (D,)),
             ("post_ffw_norm", "post_feedforward_layernorm", (D,)),
             ("ffn_gate", "mlp.gate_proj", (F, D)), ("ffn_up", "mlp.up_proj", (F, D)),
             ("ffn_down", "mlp.down_proj", (D, F))]
    gnames = [("token_embd.weight", "model.embed_tokens.weight", (V, D))]
    for i in range(G3_LAYERS):
        gnames += [("blk.%d.%s.weight" % (i, g), "model.layers.%d.%s.weight" % (i, h), s) for g, h, s in names]
    gnames.append(("output_norm.weight", "model.norm.weight", (D,)))
    kind = q4km_type(G3_LAYERS)
    tensors, dq = [], {}
    for gname, hf, s in gnames:
        if len(s) == 1:     # Gemma's norms: x·(1 + w), w near 0; stored plus 1
            w = (0.1 * rng.standard_normal(s)).astype(f32)
            tensors.append((gname, mg.F32, [s[0]], (w + f32(1.0)).astype("<f4").tobytes()))
            dq[hf] = w.astype(np.float64)
        else:
            w = ((0.03 if gname == "token_embd.weight" else 0.08) * rng.standard_normal(s)).astype(f32)
            t, raw, values = mg.encode(kind(gname), w)
            tensors.append((gname, t, [s[1], s[0]], raw))
            dq[hf] = values.reshape(s).astype(np.float64)
    mg.gw.write_gguf(os.path.join(mg.OUT, "gemma3_q4_k_m.gguf"), meta, tensors)
    return run("gemma3_q4_k_m.gguf", gemma3_forward, dq, ref)


# ---- Phi-4-mini (phi3) ------------------------------------------------------------
#
# llama.cpp types a phi3 file's fused attn_qkv Q5_K at Q4_K_M; its blocks
# here are this quantizer's (ggml's block_q5_K layout, any valid blocks: the
# reference runs their dequantization)

Q5_K = 13
Q5K = [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qh", "u1", 32), ("qs", "u1", 128)]


def quantize_q5_k(x):
    b = x.astype(f32).reshape(-1, 256)
    out = np.zeros(b.shape[0], dtype=Q5K)
    for i, blk in enumerate(b):
        sub = blk.reshape(8, 32)
        mins = np.minimum(sub.min(axis=1), 0)
        scales = (sub.max(axis=1) - mins) / 31
        d = f32(scales.max() / 63) if scales.max() > 0 else f32(0)
        dmin = f32(-mins.min() / 63) if mins.min() < 0 else f32(0)
        d16, dm16 = mg.f16(d), mg.f16(dmin)
        dd, dm = f32(d16), f32(dm16)
        sc = np.clip(np.rint(scales / dd), 0, 63).astype(np.uint8) if dd > 0 else np.zeros(8, np.uint8)
        mn = np.clip(np.rint(-mins / dm), 0, 63).astype(np.uint8) if dm > 0 else np.zeros(8, np.uint8)
        L = np.zeros(256, dtype=np.uint8)
        for j in range(8):
            sj, mj = dd * f32(sc[j]), dm * f32(mn[j])
            if sj > 0:
                L[32 * j:32 * j + 32] = np.clip(np.rint((sub[j] + mj) / sj), 0, 31)
        qs, qh = np.zeros(128, dtype=np.uint8), np.zeros(32, dtype=np.uint8)
        for c in range(4):      # 64 values per 32 bytes: low nibbles, high nibbles; fifth bits 2c, 2c + 1
            lo, hi = L[64 * c:64 * c + 32], L[64 * c + 32:64 * c + 64]
            qs[32 * c:32 * c + 32] = (lo & 0xF) | ((hi & 0xF) << 4)
            qh |= ((lo >> 4) << (2 * c)).astype(np.uint8) | ((hi >> 4) << (2 * c + 1)).astype(np.uint8)
        out[i] = (d16, dm16, mg.pack_scales_k4(sc, mn), qh, qs)
    return out.tobytes()


def deq_q5_k(raw):
    y = []
    for blk in np.frombuffer(raw, dtype=Q5K):
        d, dmin = f32(blk["d"]), f32(blk["dmin"])
        for c in range(4):
            s1, m1 = mg.scale_min_k4(2 * c, blk["scales"])
            s2, m2 = mg.scale_min_k4(2 * c + 1, blk["scales"])
            q = blk["qs"][32 * c:32 * c + 32]
            lo = (q & 0xF) + (((blk["qh"] >> (2 * c)) & 1) << 4)
            hi = (q >> 4) + (((blk["qh"] >> (2 * c + 1)) & 1) << 4)
            y.append(f32(d * f32(s1)) * lo.astype(f32) - f32(dmin * f32(m1)))
            y.append(f32(d * f32(s2)) * hi.astype(f32) - f32(dmin * f32(m2)))
    return np.concatenate(y).astype(f32)


P3_LAYERS, P3_ORIG, P3_MAX, P3_R = 2, 4096, 131072, 48
P3_SHORT = [1.0 + 0.05 * i * i for i in range(P3_R // 2)]
P3_LONG = [1.5 + 2.5 * i for i in range(P3_R // 2)]
P3_ATTN = float(np.sqrt(1 + np.log(P3_MAX / P3_ORIG) / np.log(P3_ORIG)))


def phi3_type(gname):
    if gname.endswith("attn_qkv.weight"):
        return Q5_K
    return q4km_type(P3_LAYERS)(gname)


def phi3_forward(sd, ids):
    """Phi3ForCausalLM (hf_phi4_reference.py): partial rotary over the first
    P3_R of each head, longrope's short factors (the sequence within
    original_max_position_embeddings), cos and sin times the attention factor"""
    T = len(ids)
    inv = 1.0 / (np.array(P3_SHORT) * 10000.0 ** (np.arange(0, P3_R, 2) / P3_R))
    ang = np.arange(T)[:, None] * inv[None, :]
    cs = (np.cos(np.concatenate([ang, ang], -1)) * P3_ATTN, np.sin(np.concatenate([ang, ang], -1)) * P3_ATTN)
    mask = np.tril(np.ones((T, T), bool))

    def partial(x):
        return np.concatenate([rot(x[..., :P3_R], cs), x[..., P3_R:]], -1)

    x = sd["model.embed_tokens.weight"][ids]
    for i in range(P3_LAYERS):
        p = "model.layers.%d." % i
        h = rms(x, sd[p + "input_layernorm.weight"], 1e-5)
        qkv = km.qlinear(h, sd[p + "self_attn.qkv_proj.weight"])
        q = qkv[:, :H * S].reshape(T, H, S).transpose(1, 0, 2)
        k = qkv[:, H * S:(H + KV) * S].reshape(T, KV, S).transpose(1, 0, 2)
        v = qkv[:, (H + KV) * S:].reshape(T, KV, S).transpose(1, 0, 2)
        x = x + km.qlinear(attend(partial(q), partial(k), v, S ** -0.5, mask), sd[p + "self_attn.o_proj.weight"])
        h = rms(x, sd[p + "post_attention_layernorm.weight"], 1e-5)
        gu = km.qlinear(h, sd[p + "mlp.gate_up_proj.weight"])
        g, u = gu[:, :F], gu[:, F:]
        x = x + km.qlinear(g / (1 + np.exp(-g)) * u, sd[p + "mlp.down_proj.weight"])
    return km.qlinear(rms(x, sd["model.norm.weight"], 1e-5), sd["model.embed_tokens.weight"])


def phi3(rng, ref):
    tok = json.load(open("test/fixtures/hf_phi4/tokenizer.json"))
    V = json.load(open("test/fixtures/hf_phi4/config.json"))["vocab_size"]
    a = "phi3"
    meta = [("general.architecture", a), ("general.name", "tfm-test"), ("general.alignment", 32),
            (a + ".context_length", P3_MAX), (a + ".rope.scaling.original_context_length", P3_ORIG),
            (a + ".embedding_length", D), (a + ".feed_forward_length", F), (a + ".block_count", P3_LAYERS),
            (a + ".attention.head_count", H), (a + ".attention.head_count_kv", KV),
            (a + ".attention.layer_norm_rms_epsilon", 1e-5), (a + ".rope.dimension_count", P3_R),
            (a + ".rope.freq_base", 10000.0), (a + ".attention.sliding_window", 0),
            (a + ".rope.scaling.attn_factor", P3_ATTN)] + mg.tokenizer_meta(tok)
    tensors, dq = [], {}

    def mat(gname, hf, s):
        w = ((0.03 if gname == "token_embd.weight" else 0.08) * rng.standard_normal(s)).astype(f32)
        t = phi3_type(gname)
        if t == Q5_K:
            raw = quantize_q5_k(w)
            values = deq_q5_k(raw)
        else:
            t, raw, values = mg.encode(t, w)
        tensors.append((gname, t, [s[1], s[0]], raw))
        dq[hf] = values.reshape(s).astype(np.float64)

    def vec(gname, hf, w):
        w = np.asarray(w, dtype=f32)
        tensors.append((gname, mg.F32, [w.shape[0]], w.astype("<f4").tobytes()))
        if hf:
            dq[hf] = w.astype(np.float64)

    mat("token_embd.weight", "model.embed_tokens.weight", (V, D))
    vec("rope_factors_long.weight", None, P3_LONG)
    vec("rope_factors_short.weight", None, P3_SHORT)
    for i in range(P3_LAYERS):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        vec(b + "attn_norm.weight", p + "input_layernorm.weight", 1.0 + 0.1 * rng.standard_normal(D))
        mat(b + "attn_qkv.weight", p + "self_attn.qkv_proj.weight", ((H + 2 * KV) * S, D))
        mat(b + "attn_output.weight", p + "self_attn.o_proj.weight", (D, H * S))
        vec(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1.0 + 0.1 * rng.standard_normal(D))
        mat(b + "ffn_up.weight", p + "mlp.gate_up_proj.weight", (2 * F, D))
        mat(b + "ffn_down.weight", p + "mlp.down_proj.weight", (D, F))
    vec("output_norm.weight", "model.norm.weight", 1.0 + 0.1 * rng.standard_normal(D))
    mg.gw.write_gguf(os.path.join(mg.OUT, "phi3_q4_k_m.gguf"), meta, tensors)
    return run("phi3_q4_k_m.gguf", phi3_forward, dq, ref)


def run(name, forward, dq, ref):
    """the reference lines of one file; its smallest top-2 gap"""
    ids, greedy, gap, first = list(PROMPT), [], float("inf"), None
    for _ in range(8):
        logits = forward(dq, ids)[-1]
        if first is None:
            first = logits
        top = np.sort(logits)[-2:]
        gap = min(gap, top[1] - top[0])
        greedy.append(int(np.argmax(logits)))
        ids.append(greedy[-1])
    ref += ["%s ids %s" % (name, " ".join(map(str, PROMPT))),
            "%s greedy %s" % (name, " ".join(map(str, greedy))),
            "%s gap %.6f" % (name, gap),
            "%s logits %s" % (name, " ".join("%.6f" % v for v in first))]
    print(name, os.path.getsize(os.path.join(mg.OUT, name)), "bytes; greedy", greedy, "min top-2 gap %.4f" % gap)
    return gap


def main():
    ref = []
    # the first seeds whose greedy steps keep a top-2 gap of 0.05 (far from
    # a tie that float32 rounding could turn)
    for name, make, seed in (("qwen3", qwen3, 4041), ("gemma3", gemma3, 4042), ("phi3", phi3, 4043)):
        while True:
            lines = []
            if make(np.random.default_rng(seed), lines) >= 0.05:
                break
            seed += 100
        print(name, "seed", seed)
        ref += lines
    with open(os.path.join(mg.OUT, "q4km_archs_reference.txt"), "w") as fh:
        fh.write("\n".join(ref) + "\n")


if __name__ == "__main__":
    main()
