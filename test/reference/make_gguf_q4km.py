#!/usr/bin/python3
"""make_gguf_q4km.py — a small llama GGUF file typed as llama.cpp's Q4_K_M
mix, and its reference outputs run as llama.cpp runs such a file, for
test/unit/test_gguf_kept.c and test/regress/sql/gguf_kept.sql.

Writes into test/fixtures/gguf/:
  llama_q4_k_m.gguf: a random Llama (hidden 256, 2 layers, 4 heads, 2 kv
    heads, feed-forward 512, tied embeddings, test/fixtures/hf_llama's
    vocabulary and tokenizer in the metadata), its tensors typed as
    llama.cpp's llama_tensor_get_type gives Q4_K_M: token_embd (the tied
    output) Q6_K; attn_v and ffn_down Q6_K in the layers use_more_bits
    picks (layer 0 of 2), Q4_K in the others; every other matrix Q4_K;
    norms F32.  The blocks are make_gguf_fixtures.py's quantizers' (ggml's
    block layouts).
  q4km_reference.txt: the model run from the blocks' exact dequantization
    (ggml's dequantize_row_q4_K / q6_K, as make_gguf_fixtures.py's) with
    every matrix product's activations quantized per row to ggml's Q8_K
    first (quantize_row_q8_K_ref: per 256 values iscale = -127 / the value
    of largest magnitude, nearest int, at most 127, d = 1 / iscale), as
    llama.cpp's CPU backend multiplies K-quant weights; the rest (RMSNorm,
    rotary, attention, SwiGLU) in float64 from Hugging Face's LlamaModel
    description.  Lines: "ids ..." the prompt, "greedy ..." the 8 greedy
    next ids, "gap g" the smallest top-2 logit gap of those steps, then
    "logits ..." the last prompt position's logits (%.6f).

Run: /usr/bin/python3 test/reference/make_gguf_q4km.py (from the repository root).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import make_gguf_fixtures as mg  # noqa: E402

f32 = np.float32
Q4_K, Q6_K = mg.Q4_K, mg.Q6_K
D, F, LAYERS, H, KV = 256, 512, 2, 4, 2
PROMPT = [1, 330, 348, 347, 351, 330, 259, 272, 331]


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def q4km_type(gname):
    if gname == "token_embd.weight" or gname == "output.weight":
        return Q6_K
    if gname.endswith("attn_v.weight") or gname.endswith("ffn_down.weight"):
        layer = int(gname.split(".")[1])
        return Q6_K if use_more_bits(layer, LAYERS) else Q4_K
    return Q4_K


def q8_K(x):
    """ggml's quantize_row_q8_K_ref of one row: (q int array, d per block)"""
    x = x.astype(f32).reshape(-1, 256)
    q = np.zeros(x.shape, dtype=np.int64)
    d = np.zeros(x.shape[0], dtype=np.float64)
    for b, blk in enumerate(x):
        i = int(np.argmax(np.abs(blk)))      # the first of the largest magnitude
        mx = blk[i]
        if mx == 0:
            continue
        iscale = f32(f32(-127.0) / mx)
        v = np.rint((iscale * blk).astype(f32)).astype(np.int64)     # ties to even
        q[b] = np.minimum(127, v)
        d[b] = float(f32(f32(1.0) / iscale))
    return q, d


def qlinear(h, W):
    """rows of h (T, K) times W (N, K)ᵀ, each row's activations Q8_K"""
    out = np.zeros((h.shape[0], W.shape[0]))
    Wb = W.astype(np.float64).reshape(W.shape[0], -1, 256)
    for t in range(h.shape[0]):
        q, d = q8_K(h[t])
        out[t] = np.einsum("nbk,bk,b->n", Wb, q.astype(np.float64), d)
    return out


def rms(x, w):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6))


def forward(sd, ids):
    T, s = len(ids), D // H
    inv = 1.0 / (10000.0 ** (np.arange(0, s, 2) / s))
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rot(x):                               # (heads, T, s)
        half = s // 2
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin

    x = sd["model.embed_tokens.weight"][ids].astype(np.float64)
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        h = rms(x, sd[p + "input_layernorm.weight"])
        q = qlinear(h, sd[p + "self_attn.q_proj.weight"]).reshape(T, H, s).transpose(1, 0, 2)
        k = qlinear(h, sd[p + "self_attn.k_proj.weight"]).reshape(T, KV, s).transpose(1, 0, 2)
        v = qlinear(h, sd[p + "self_attn.v_proj.weight"]).reshape(T, KV, s).transpose(1, 0, 2)
        q, k = rot(q), rot(k)
        k, v = np.repeat(k, H // KV, 0), np.repeat(v, H // KV, 0)
        a = q @ k.transpose(0, 2, 1) / np.sqrt(s)
        a = np.where(np.tril(np.ones((T, T), bool)), a, -np.inf)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = (a @ v).transpose(1, 0, 2).reshape(T, D)
        x = x + qlinear(o, sd[p + "self_attn.o_proj.weight"])
        h = rms(x, sd[p + "post_attention_layernorm.weight"])
        g = qlinear(h, sd[p + "mlp.gate_proj.weight"])
        u = qlinear(h, sd[p + "mlp.up_proj.weight"])
        x = x + qlinear(g / (1 + np.exp(-g)) * u, sd[p + "mlp.down_proj.weight"])
    x = rms(x, sd["model.norm.weight"])
    return qlinear(x, sd["model.embed_tokens.weight"])


def dequantized(sd):
    """each matrix as the file's blocks give it back (Hugging Face's layout)"""
    names = {"model.embed_tokens.weight": "token_embd.weight"}
    for i in range(LAYERS):
        for hf, g in (("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                      ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                      ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
                      ("mlp.down_proj", "ffn_down")):
            names["model.layers.%d.%s.weight" % (i, hf)] = "blk.%d.%s.weight" % (i, g)
    out = dict(sd)
    for hf, g in names.items():
        w = sd[hf]
        heads = H if g.endswith("attn_q.weight") else KV if g.endswith("attn_k.weight") else None
        _, _, deq = mg.encode(q4km_type(g), mg.gw.permute_rope(w, heads) if heads else w)
        deq = deq.reshape(w.shape)
        out[hf] = mg.unpermute(deq, heads) if heads else deq
    return out


def main():
    tok = json.load(open("test/fixtures/hf_llama/tokenizer.json"))
    cfg = json.load(open("test/fixtures/hf_llama/config.json"))
    V = cfg["vocab_size"]
    qcfg = dict(cfg, hidden_size=D, intermediate_size=F, num_hidden_layers=LAYERS,
                num_attention_heads=H, num_key_value_heads=KV, tie_word_embeddings=True)
    rng = np.random.default_rng(4040)
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        shapes.update({p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                       p + "self_attn.q_proj.weight": (D, D), p + "self_attn.k_proj.weight": (KV * D // H, D),
                       p + "self_attn.v_proj.weight": (KV * D // H, D), p + "self_attn.o_proj.weight": (D, D),
                       p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                       p + "mlp.down_proj.weight": (D, F)})
    sd = {}
    for k in sorted(shapes):
        s = shapes[k]
        sd[k] = (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.08 * rng.standard_normal(s)).astype(f32)
    mg.llama_file(os.path.join(mg.OUT, "llama_q4_k_m.gguf"), qcfg, sd, q4km_type,
                  mg.tokenizer_meta(tok), [])
    dq = dequantized(sd)
    ids, greedy, gap = list(PROMPT), [], float("inf")
    first = None
    for _ in range(8):
        logits = forward(dq, ids)[-1]
        if first is None:
            first = logits
        top = np.sort(logits)[-2:]
        gap = min(gap, top[1] - top[0])
        nxt = int(np.argmax(logits))
        greedy.append(nxt)
        ids.append(nxt)
    with open(os.path.join(mg.OUT, "q4km_reference.txt"), "w") as fh:
        fh.write("ids " + " ".join(map(str, PROMPT)) + "\n")
        fh.write("greedy " + " ".join(map(str, greedy)) + "\n")
        fh.write("gap %.6f\n" % gap)
        fh.write("logits " + " ".join("%.6f" % v for v in first) + "\n")
    print("greedy", greedy, "min top-2 gap %.4f" % gap)


if __name__ == "__main__":
    main()
