#!/usr/bin/python3
"""hf_gemma3_reference.py — a small random Gemma 3 text model
(Gemma3ForCausalLM, model_type gemma3_text) as Hugging Face saves it, with
local layers whose sliding window is shorter than the inputs, and its
outputs, for tfm_import's Gemma 3 tests.

Written from the published Gemma3TextModel description (no transformers, no
safetensors package).  Gemma 3 is Gemma 2 (embeddings ·√d in the model's
dtype, RMSNorm x·(1 + w), four norms a layer, GeGLU, tied head, scores ·
query_pre_attn_scalar^-0.5) with these differences, each computed here in
float32 as Gemma3TextModel does:
  q/k norms    q_norm and k_norm (Gemma's RMSNorm, 1 + w, head_dim wide,
               rms_norm_eps) on every query and key head before the rotation
  layers       layer i is local when (i + 1) % sliding_window_pattern != 0
               (layer_types "sliding_attention"), else global
               ("full_attention"); here the pattern is 3 over 3 layers:
               layers 0 and 1 local, layer 2 global
  local        query i sees keys j with i − j < sliding_window (8 here: the
               inputs run to 51 positions), rotary base rope_local_base_freq
               (10000), unscaled
  global       every earlier key, rotary base rope_theta (1e6) with
               rope_scaling {"rope_type": "linear", "factor": 8}: the
               inverse frequencies divided by 8 (as the 4B and larger models)
  no caps      attn_logit_softcapping and final_logit_softcapping null
head_dim (16) is not hidden_size / num_attention_heads (12), and one
key/value head serves the four query heads (as Gemma 3 1B's).

Writes into test/fixtures/hf_gemma3/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json
  (the Llama fixture's: the weights' test needs only ids), reference.json.

And the same into test/fixtures/hf_gemma3_gguf/ for a Gemma 3 that a GGUF
file describes whole (llama.cpp's gemma3 metadata has no
query_pre_attn_scalar nor sliding_window_pattern: llama.cpp takes the
head's width and 6): 6 layers, the pattern 6 (layers 0-4 local, 5 global),
query_pre_attn_scalar = head_dim 16, its own seed; make_gguf_archs.py
writes its GGUF twin (import_gemma3_gguf).

Run: /usr/bin/python3 test/reference/hf_gemma3_reference.py (from the repository root).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, rotation, cases, file writer)
import hf_gemma_reference as G  # noqa: E402  (Gemma's RMSNorm)
import hf_gemma2_reference as G2  # noqa: E402  (Gemma 2's weights, q/k norms included)

OUT = "test/fixtures/hf_gemma3"

D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF = 48, 3, 4, 1, 16, 64
EPS, THETA, LOCAL_THETA, ROPE_FACTOR = 1e-6, 1000000.0, 10000.0, 8.0
WINDOW, PATTERN, QUERY_PRE_ATTN_SCALAR = 8, 3, 24


def rotation(T, theta, factor):
    """cos, sin (T, s) of the rotary positions with base theta, inverse frequencies / factor"""
    s = HEAD_DIM
    inv = 1.0 / (theta ** (torch.arange(0, s, 2, dtype=torch.int64).float() / s)) / factor
    freqs = torch.arange(T).float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def local(i):
    return (i + 1) % PATTERN != 0


def forward(sd, ids):
    """logits (T, V) of one sequence, as Gemma3ForCausalLM computes them"""
    T, s, H, KV = len(ids), HEAD_DIM, HEADS, KV_HEADS
    rot_global = rotation(T, THETA, ROPE_FACTOR)
    rot_local = rotation(T, LOCAL_THETA, 1.0)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    windowed = causal & ~torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-WINDOW)
    x = sd["model.embed_tokens.weight"][ids]
    x = x * torch.tensor(D ** 0.5, dtype=x.dtype)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        cos, sin = rot_local if local(i) else rot_global
        mask = windowed if local(i) else causal
        h = G.gemma_rms(x, sd[p + "input_layernorm.weight"])
        q = (h @ sd[p + "self_attn.q_proj.weight"].T).view(T, H, s)
        k = (h @ sd[p + "self_attn.k_proj.weight"].T).view(T, KV, s)
        v = (h @ sd[p + "self_attn.v_proj.weight"].T).view(T, KV, s).transpose(0, 1)
        q = G.gemma_rms(q, sd[p + "self_attn.q_norm.weight"]).transpose(0, 1)
        k = G.gemma_rms(k, sd[p + "self_attn.k_norm.weight"]).transpose(0, 1)
        q = q * cos + L.rotate_half(q) * sin
        k = k * cos + L.rotate_half(k) * sin
        rep = H // KV
        k = k[:, None].expand(KV, rep, T, s).reshape(H, T, s)
        v = v[:, None].expand(KV, rep, T, s).reshape(H, T, s)
        a = (q @ k.transpose(-1, -2)) * QUERY_PRE_ATTN_SCALAR ** -0.5
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (a @ v).transpose(0, 1).reshape(T, H * s) @ sd[p + "self_attn.o_proj.weight"].T
        x = x + G.gemma_rms(o, sd[p + "post_attention_layernorm.weight"])
        h = G.gemma_rms(x, sd[p + "pre_feedforward_layernorm.weight"])
        g = h @ sd[p + "mlp.gate_proj.weight"].T
        u = h @ sd[p + "mlp.up_proj.weight"].T
        m = (torch.nn.functional.gelu(g, approximate="tanh") * u) @ sd[p + "mlp.down_proj.weight"].T
        x = x + G.gemma_rms(m, sd[p + "post_feedforward_layernorm.weight"])
    x = G.gemma_rms(x, sd["model.norm.weight"])
    return x @ sd["model.embed_tokens.weight"].T


def main():
    write(OUT, 20261207)
    # the GGUF-describable one (module constants changed for its forward)
    global LAYERS, PATTERN, QUERY_PRE_ATTN_SCALAR
    LAYERS, PATTERN, QUERY_PRE_ATTN_SCALAR = 6, 6, HEAD_DIM
    write("test/fixtures/hf_gemma3_gguf", 20261208)


def write(out, seed):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = G2.random_weights(V, D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF, qk_norm=True)

    # the keys of gemma-3-270m's config.json (sizes scaled down; the 4B's rope_scaling)
    config = {
        "_sliding_window_pattern": PATTERN,
        "architectures": ["Gemma3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": None,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "final_logit_softcapping": None,
        "head_dim": HEAD_DIM,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "layer_types": ["sliding_attention" if local(i) else "full_attention" for i in range(LAYERS)],
        "max_position_embeddings": 32768,
        "model_type": "gemma3_text",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pad_token_id": 0,
        "query_pre_attn_scalar": QUERY_PRE_ATTN_SCALAR,
        "rms_norm_eps": EPS,
        "rope_local_base_freq": LOCAL_THETA,
        "rope_scaling": {"factor": ROPE_FACTOR, "rope_type": "linear"},
        "rope_theta": THETA,
        "sliding_window": WINDOW,
        "sliding_window_pattern": PATTERN,
        "torch_dtype": "float32",
        "transformers_version": "4.55.0.dev0",
        "use_bidirectional_attention": False,
        "use_cache": True,
        "vocab_size": V,
    }
    L.forward = forward
    L.write_fixture(out, config, tok, vocab, merges, sd)


if __name__ == "__main__":
    main()
