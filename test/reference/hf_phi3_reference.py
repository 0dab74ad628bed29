#!/usr/bin/python3
"""hf_phi3_reference.py — a small random Phi-3 (Phi3ForCausalLM) as Hugging
Face saves it, and its outputs, for tfm_import's Phi-3 tests.

Written from the published Phi3Model description (no transformers, no
safetensors package).  Phi-3 computes what Llama does (RMSNorm in float32,
rotary positions with rotate_half, SwiGLU, grouped-query attention, no
biases) with two matrices fused:
  self_attn.qkv_proj.weight (h·s + 2·kv·s, d): rows [0, h·s) the queries',
      the next kv·s the keys', the last kv·s the values' (Phi3Attention
      slices qkv = qkv_proj(x) so);
  mlp.gate_up_proj.weight (2f, d): gate, up = gate_up_proj(x).chunk(2), the
      gate's rows first; h = up ⊙ silu(gate) (Phi3MLP).
The config is a published one's (Phi-3-mini-4k-instruct's keys, sizes
scaled down): rope_scaling null, untied lm_head, sliding_window below
max_position_embeddings (tfm limits the model to the window, with a notice;
every input here is shorter, so the window never binds).

The tokenizer is the Llama fixture's (Phi-3's own is a Llama 2 SentencePiece
BPE of the same kind); the weights' test needs only ids.

Writes into test/fixtures/hf_phi3/:
  config.json, model.safetensors (F32), tokenizer.json, reference.json (as
  hf_llama_reference.py's: per input the ids, log-softmax rows, score and
  greedy continuation).

Run: /usr/bin/python3 test/reference/hf_phi3_reference.py (from the repository root).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, Llama's block, file writer)

torch.manual_seed(20261127)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_phi3"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS, WINDOW = 48, 2, 4, 2, 80, 128, 64
EPS, THETA = 1e-5, 10000.0
L.D, L.LAYERS, L.HEADS, L.KV_HEADS, L.EPS, L.THETA = D, LAYERS, HEADS, KV_HEADS, EPS, THETA
llama_forward = L.forward


def phi3_forward(sd, ids):
    """Phi3Model: the fused matrices sliced as Phi3Attention and Phi3MLP do,
    then Llama's computation"""
    s = D // HEADS
    split = {}
    for name, w in sd.items():
        if name.endswith("self_attn.qkv_proj.weight"):
            p = name[: -len("qkv_proj.weight")]
            q_end = HEADS * s
            split[p + "q_proj.weight"] = w[:q_end]
            split[p + "k_proj.weight"] = w[q_end:q_end + KV_HEADS * s]
            split[p + "v_proj.weight"] = w[q_end + KV_HEADS * s:]
        elif name.endswith("mlp.gate_up_proj.weight"):
            p = name[: -len("gate_up_proj.weight")]
            gate, up = w.chunk(2, dim=0)
            split[p + "gate_proj.weight"] = gate
            split[p + "up_proj.weight"] = up
        else:
            split[name] = w
    return llama_forward(split, ids)


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    s = D // HEADS
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.embed_tokens.weight", (V, D), 0.1)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        param(p + "input_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "self_attn.qkv_proj.weight", ((HEADS + 2 * KV_HEADS) * s, D), 0.2)
        param(p + "self_attn.o_proj.weight", (D, HEADS * s), 0.4)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_up_proj.weight", (2 * FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.4)
    param("model.norm.weight", (D,), 0.1, 1.0)
    param("lm_head.weight", (V, D), 0.3)

    # the keys of Phi-3-mini-4k-instruct's config.json (sizes scaled down, GQA as Phi-3-medium's)
    config = {
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "max_position_embeddings": MAX_POS,
        "model_type": "phi3",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "original_max_position_embeddings": MAX_POS,
        "pad_token_id": 0,
        "resid_pdrop": 0.0,
        "rms_norm_eps": EPS,
        "rope_scaling": None,
        "rope_theta": THETA,
        "sliding_window": WINDOW,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "transformers_version": "4.40.2",
        "use_cache": True,
        "vocab_size": V,
    }
    L.forward = phi3_forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd, window=WINDOW)

if __name__ == "__main__":
    main()
