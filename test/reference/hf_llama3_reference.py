#!/usr/bin/python3
"""hf_llama3_reference.py — a small random Llama 3.2-style model
(LlamaForCausalLM with "rope_scaling": {"rope_type": "llama3", ...}, a tied
head) as Hugging Face saves it, and its outputs, for tfm_import's Llama 3
tests; its GGUF twin is make_gguf_fixtures.py's llama3_rope.gguf.

Written from the published description (no transformers): the Llama of
hf_llama_reference.py, with the rotary inverse frequencies rescaled as
transformers' _compute_llama3_parameters does, in float32:
  inv_freq = 1/θ^(2i/s);  wavelen = 2π / inv_freq
  low_wavelen = original_max_position_embeddings / low_freq_factor
  high_wavelen = original_max_position_embeddings / high_freq_factor
  wavelen > low_wavelen:   inv_freq / factor
  wavelen < high_wavelen:  inv_freq
  between:  smooth = (original_max_position_embeddings / wavelen − low_freq_factor)
                     / (high_freq_factor − low_freq_factor)
            (1 − smooth) · inv_freq / factor + smooth · inv_freq
(attention_factor 1).  forward() also takes head_dim apart from
hidden_size / heads and Qwen3's per-head q_norm / k_norm (RMSNorm over
head_dim before the rotation) when the state dict has them, for
hf_qwen3_reference.py, and SmolLM3's layers without rotation (M["NOPE"]:
layer i keeps q and k as they are when (i + 1) % NOPE == 0), for
hf_smollm3_reference.py, and Mistral's sliding window (M["WINDOW"]: query i
sees keys j with i − j < WINDOW, as MistralModel's mask), for
hf_mistral_reference.py.

The sizes put the head's 8 frequencies in all three bands (original 32:
wavelengths under 8 kept, over 32 divided, one between), and the inputs
run to 51 positions, past the original 32, so the scaling changes the
outputs (import_llama3.sql checks that an unscaled import differs).
max_position_embeddings is Llama 3.2's 131072: tfm caps it at its 8192.

Writes into test/fixtures/hf_llama3/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json
  (the Llama fixture's), reference.json.

Run: /usr/bin/python3 test/reference/hf_llama3_reference.py (from the repository root).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, rotation, cases, file writer)

OUT = "test/fixtures/hf_llama3"

# the model forward() computes (set by the caller before it runs)
M = {"D": 64, "LAYERS": 2, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 16, "EPS": 1e-5, "THETA": 10000.0,
     "ROPE": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 32}}


def inv_freqs(s, theta, rope):
    """the rotary inverse frequencies (s/2), rescaled as rope says (None: θ's)"""
    inv = 1.0 / (theta ** (torch.arange(0, s, 2, dtype=torch.int64).float() / s))
    if not rope:
        return inv
    assert rope["rope_type"] == "llama3"
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def forward(sd, ids):
    """logits (T, V) of one sequence"""
    T, s, H, KV, eps = len(ids), M["HEAD_DIM"], M["HEADS"], M["KV_HEADS"], M["EPS"]
    inv = inv_freqs(s, M["THETA"], M["ROPE"])
    freqs = torch.arange(T).float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = sd["model.embed_tokens.weight"][ids]
    for i in range(M["LAYERS"]):
        p = f"model.layers.{i}."
        h = rms(x, sd[p + "input_layernorm.weight"], eps)
        q = (h @ sd[p + "self_attn.q_proj.weight"].T).view(T, H, s)
        k = (h @ sd[p + "self_attn.k_proj.weight"].T).view(T, KV, s)
        v = (h @ sd[p + "self_attn.v_proj.weight"].T).view(T, KV, s).transpose(0, 1)
        if p + "self_attn.q_norm.weight" in sd:  # Qwen3: per head, before the rotation
            q = rms(q, sd[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, sd[p + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(0, 1), k.transpose(0, 1)
        if not (M.get("NOPE") and (i + 1) % M["NOPE"] == 0):  # SmolLM3's NoPE layers
            q = q * cos + L.rotate_half(q) * sin
            k = k * cos + L.rotate_half(k) * sin
        rep = H // KV
        k = k[:, None].expand(KV, rep, T, s).reshape(H, T, s)
        v = v[:, None].expand(KV, rep, T, s).reshape(H, T, s)
        m = mask
        if M.get("WINDOW"):  # Mistral's sliding window: query i sees keys j with i - j < WINDOW
            m = mask & ~torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-M["WINDOW"])
        a = ((q @ k.transpose(-1, -2)) / math.sqrt(s)).masked_fill(~m, float("-inf")).softmax(-1)
        x = x + (a @ v).transpose(0, 1).reshape(T, H * s) @ sd[p + "self_attn.o_proj.weight"].T
        h = rms(x, sd[p + "post_attention_layernorm.weight"], eps)
        g = h @ sd[p + "mlp.gate_proj.weight"].T
        u = h @ sd[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ sd[p + "mlp.down_proj.weight"].T
    x = rms(x, sd["model.norm.weight"], eps)
    return x @ sd.get("lm_head.weight", sd["model.embed_tokens.weight"]).T


def random_weights(V, qk_norm=False):
    """a state dict of M's sizes (tied head: no lm_head.weight)"""
    D, H, KV, s, FF = M["D"], M["HEADS"], M["KV_HEADS"], M["HEAD_DIM"], M["FF"]
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    # the head is tied: small embeddings keep the logits (and float32's error) small
    param("model.embed_tokens.weight", (V, D), 0.2)
    for i in range(M["LAYERS"]):
        p = f"model.layers.{i}."
        param(p + "input_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "self_attn.q_proj.weight", (H * s, D), 0.25)
        param(p + "self_attn.k_proj.weight", (KV * s, D), 0.25)
        param(p + "self_attn.v_proj.weight", (KV * s, D), 0.15)
        param(p + "self_attn.o_proj.weight", (D, H * s), 0.1)
        if qk_norm:
            param(p + "self_attn.q_norm.weight", (s,), 0.2, 1.0)
            param(p + "self_attn.k_norm.weight", (s,), 0.2, 1.0)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_proj.weight", (M["FF"], D), 0.15)
        param(p + "mlp.up_proj.weight", (M["FF"], D), 0.15)
        param(p + "mlp.down_proj.weight", (D, M["FF"]), 0.1)
    param("model.norm.weight", (D,), 0.1, 1.0)
    return sd


def main():
    torch.manual_seed(20261202)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    M["FF"] = 96
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = random_weights(V)
    # the keys of Llama-3.2-1B's config.json (sizes scaled down)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": M["HEAD_DIM"],
        "hidden_act": "silu",
        "hidden_size": M["D"],
        "initializer_range": 0.02,
        "intermediate_size": M["FF"],
        "max_position_embeddings": 131072,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": M["HEADS"],
        "num_hidden_layers": M["LAYERS"],
        "num_key_value_heads": M["KV_HEADS"],
        "pretraining_tp": 1,
        "rms_norm_eps": M["EPS"],
        "rope_scaling": M["ROPE"],
        "rope_theta": M["THETA"],
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.45.0.dev0",
        "use_cache": True,
        "vocab_size": V,
    }
    inv = inv_freqs(M["HEAD_DIM"], M["THETA"], M["ROPE"])
    base = inv_freqs(M["HEAD_DIM"], M["THETA"], None)
    print("frequency divisors", [round(float(b / i), 6) for b, i in zip(base, inv)])
    L.forward = forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd, head=sd["model.embed_tokens.weight"])


if __name__ == "__main__":
    main()
