#!/usr/bin/python3
"""hf_gemma_reference.py — a small random Gemma (GemmaForCausalLM) as Hugging
Face saves it, and its outputs, for tfm_import's Gemma tests.

Written from the published GemmaModel description (no transformers, no
safetensors package).  Gemma is a Llama-shaped decoder with these
differences, each computed here as GemmaModel does in float32:
  embeddings   x = embed_tokens[ids] · normalizer, normalizer =
               torch.tensor(hidden_size ** 0.5, dtype=x.dtype)
  RMSNorm      x · rsqrt(mean(x²) + eps) · (1 + w)   (the weights are
               stored as w, around 0)
  MLP          down_proj(gelu_tanh(gate_proj(x)) ⊙ up_proj(x))
               (hidden_activation gelu_pytorch_tanh: GeGLU)
  attention    scores · head_dim^-0.5, multi-query here (one key/value
               head, as Gemma 2B's), rotary positions with rotate_half
  head         tied: logits = x · embed_tokensᵀ (no lm_head.weight)
head_dim is hidden_size / num_attention_heads here (as Gemma 2B's 2048 / 8
= 256; Gemma 7B's 256 is not 3072 / 16: the Gemma 2 fixture tests that).

gemma_forward also computes Gemma 2 (hf_gemma2_reference.py) when the state
dict has a layer's pre_feedforward_layernorm: four norms a layer
(post_attention_layernorm on the attention's output), scores scaled by
SCALE and soft-capped by ATTN_SOFTCAP, logits soft-capped by FINAL_SOFTCAP.

The tokenizer is the Llama fixture's: Gemma's own is a SentencePiece BPE
with byte fallback of the same kind (256000 pieces); the weights' test
needs only ids.

Writes into test/fixtures/hf_gemma/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json,
  reference.json.

Run: /usr/bin/python3 test/reference/hf_gemma_reference.py (from the repository root).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, rotation, cases, file writer)

torch.manual_seed(20261128)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_gemma"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS = 48, 2, 4, 1, 96, 128
HEAD_DIM = D // HEADS
EPS, THETA = 1e-6, 10000.0
# Gemma 2's (None: Gemma's head_dim^-0.5 and no caps)
SCALE, ATTN_SOFTCAP, FINAL_SOFTCAP = None, None, None


def gemma_rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * (1.0 + w)


def gemma_forward(sd, ids):
    """logits (T, V) of one sequence, as GemmaForCausalLM computes them"""
    T, s = len(ids), HEAD_DIM
    inv_freq = 1.0 / (THETA ** (torch.arange(0, s, 2, dtype=torch.int64).float() / s))
    freqs = torch.arange(T).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = sd["model.embed_tokens.weight"][ids]
    x = x * torch.tensor(D ** 0.5, dtype=x.dtype)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = gemma_rms(x, sd[p + "input_layernorm.weight"])
        q = (h @ sd[p + "self_attn.q_proj.weight"].T).view(T, HEADS, s).transpose(0, 1)
        k = (h @ sd[p + "self_attn.k_proj.weight"].T).view(T, KV_HEADS, s).transpose(0, 1)
        v = (h @ sd[p + "self_attn.v_proj.weight"].T).view(T, KV_HEADS, s).transpose(0, 1)
        q = q * cos + L.rotate_half(q) * sin
        k = k * cos + L.rotate_half(k) * sin
        rep = HEADS // KV_HEADS
        k = k[:, None].expand(KV_HEADS, rep, T, s).reshape(HEADS, T, s)
        v = v[:, None].expand(KV_HEADS, rep, T, s).reshape(HEADS, T, s)
        a = (q @ k.transpose(-1, -2)) * (SCALE if SCALE is not None else 1 / math.sqrt(s))
        if ATTN_SOFTCAP is not None:
            a = torch.tanh(a / ATTN_SOFTCAP) * ATTN_SOFTCAP
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (a @ v).transpose(0, 1).reshape(T, HEADS * s) @ sd[p + "self_attn.o_proj.weight"].T
        gemma2 = p + "pre_feedforward_layernorm.weight" in sd
        if gemma2:
            x = x + gemma_rms(o, sd[p + "post_attention_layernorm.weight"])
            h = gemma_rms(x, sd[p + "pre_feedforward_layernorm.weight"])
        else:
            x = x + o
            h = gemma_rms(x, sd[p + "post_attention_layernorm.weight"])
        g = h @ sd[p + "mlp.gate_proj.weight"].T
        u = h @ sd[p + "mlp.up_proj.weight"].T
        m = (torch.nn.functional.gelu(g, approximate="tanh") * u) @ sd[p + "mlp.down_proj.weight"].T
        x = x + (gemma_rms(m, sd[p + "post_feedforward_layernorm.weight"]) if gemma2 else m)
    x = gemma_rms(x, sd["model.norm.weight"])
    logits = x @ sd["model.embed_tokens.weight"].T
    if FINAL_SOFTCAP is not None:
        logits = torch.tanh(logits / FINAL_SOFTCAP) * FINAL_SOFTCAP
    return logits


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    s = HEAD_DIM
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.embed_tokens.weight", (V, D), 0.1)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        # RMSNorm weights around 0: the gain is 1 + w
        param(p + "input_layernorm.weight", (D,), 0.1)
        param(p + "self_attn.q_proj.weight", (HEADS * s, D), 0.1)
        param(p + "self_attn.k_proj.weight", (KV_HEADS * s, D), 0.1)
        param(p + "self_attn.v_proj.weight", (KV_HEADS * s, D), 0.3)
        param(p + "self_attn.o_proj.weight", (D, HEADS * s), 0.4)
        param(p + "post_attention_layernorm.weight", (D,), 0.1)
        param(p + "mlp.gate_proj.weight", (FF, D), 0.15)
        param(p + "mlp.up_proj.weight", (FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.5)
    param("model.norm.weight", (D,), 0.1)

    # the keys of gemma-2b's config.json (sizes scaled down)
    config = {
        "architectures": ["GemmaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": HEAD_DIM,
        "hidden_act": "gelu",
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "max_position_embeddings": MAX_POS,
        "model_type": "gemma",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pad_token_id": 0,
        "rms_norm_eps": EPS,
        "rope_scaling": None,
        "rope_theta": THETA,
        "torch_dtype": "float32",
        "transformers_version": "4.42.0",
        "use_cache": True,
        "vocab_size": V,
    }
    L.forward = gemma_forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd)

if __name__ == "__main__":
    main()
