#!/usr/bin/python3
"""hf_gemma2_reference.py — a small random Gemma 2 (Gemma2ForCausalLM) as
Hugging Face saves it, and its outputs, for tfm_import's Gemma 2 tests.

Written from the published Gemma2Model description (no transformers, no
safetensors package), with hf_gemma_reference.py's forward pass.  Gemma 2 is
Gemma (embeddings ·√d, RMSNorm x·(1 + w), GeGLU, tied head) with
  four norms a layer: x = x + post_attention_layernorm(attn(input_layernorm(x)))
                      x = x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)))
  scores · query_pre_attn_scalar^-0.5 (not head_dim^-0.5), soft-capped
      before the mask and softmax: S = tanh(S / attn_logit_softcapping) · attn_logit_softcapping
  logits soft-capped: z = tanh(z / final_logit_softcapping) · final_logit_softcapping
  a sliding window on every other layer (0, 2, ...): query i sees keys j
      with i − j < sliding_window.  tfm limits the model to sliding_window
      positions (with a notice), where the window never binds; every input
      here is shorter.
head_dim (16) is not hidden_size / num_attention_heads (12), as in every
published Gemma 2: q_proj is (heads·head_dim, hidden), o_proj (hidden,
heads·head_dim).  The caps here are small (the published 50 and 30 would not bind on a model
this small) and query_pre_attn_scalar is not head_dim, so each is tested.

Writes into test/fixtures/hf_gemma2/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json
  (the Llama fixture's), reference.json.

Run: /usr/bin/python3 test/reference/hf_gemma2_reference.py (from the repository root).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, cases, file writer)
import hf_gemma_reference as G  # noqa: E402  (Gemma's forward, Gemma 2's parts included)

torch.manual_seed(20261134)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_gemma2"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS, WINDOW = 48, 2, 4, 2, 96, 128, 64
# head_dim apart from hidden_size / heads (12), as in every Gemma 2 (2B: 2304 / 8 = 288, head_dim 256)
HEAD_DIM = 16
EPS, THETA = 1e-6, 10000.0
QUERY_PRE_ATTN_SCALAR, ATTN_SOFTCAP, FINAL_SOFTCAP = 24, 1.0, 1.0
G.D, G.LAYERS, G.HEADS, G.KV_HEADS, G.HEAD_DIM, G.EPS, G.THETA = D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, EPS, THETA
G.SCALE, G.ATTN_SOFTCAP, G.FINAL_SOFTCAP = QUERY_PRE_ATTN_SCALAR ** -0.5, ATTN_SOFTCAP, FINAL_SOFTCAP


def random_weights(V, D, LAYERS, HEADS, KV_HEADS, s, FF, qk_norm=False):
    """a Gemma 2 state dict of these sizes (tied head); qk_norm: Gemma 3's
    q_norm and k_norm too (hf_gemma3_reference.py)"""
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.embed_tokens.weight", (V, D), 0.06)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        param(p + "input_layernorm.weight", (D,), 0.1)
        param(p + "self_attn.q_proj.weight", (HEADS * s, D), 0.3)
        param(p + "self_attn.k_proj.weight", (KV_HEADS * s, D), 0.3)
        param(p + "self_attn.v_proj.weight", (KV_HEADS * s, D), 0.3)
        param(p + "self_attn.o_proj.weight", (D, HEADS * s), 0.4)
        if qk_norm:
            param(p + "self_attn.q_norm.weight", (s,), 0.3)
            param(p + "self_attn.k_norm.weight", (s,), 0.3)
        param(p + "post_attention_layernorm.weight", (D,), 0.1)
        param(p + "pre_feedforward_layernorm.weight", (D,), 0.1)
        param(p + "mlp.gate_proj.weight", (FF, D), 0.15)
        param(p + "mlp.up_proj.weight", (FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.5)
        param(p + "post_feedforward_layernorm.weight", (D,), 0.1)
    param("model.norm.weight", (D,), 0.1)
    return sd


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = random_weights(V, D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF)

    # the keys of gemma-2-2b's config.json (sizes scaled down)
    config = {
        "architectures": ["Gemma2ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": ATTN_SOFTCAP,
        "bos_token_id": 1,
        "cache_implementation": "hybrid",
        "eos_token_id": 2,
        "final_logit_softcapping": FINAL_SOFTCAP,
        "head_dim": HEAD_DIM,
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "max_position_embeddings": MAX_POS,
        "model_type": "gemma2",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pad_token_id": 0,
        "query_pre_attn_scalar": QUERY_PRE_ATTN_SCALAR,
        "rms_norm_eps": EPS,
        "rope_theta": THETA,
        "sliding_window": WINDOW,
        "torch_dtype": "float32",
        "transformers_version": "4.42.4",
        "use_cache": True,
        "vocab_size": V,
    }
    L.forward = G.gemma_forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd, window=WINDOW)

if __name__ == "__main__":
    main()
