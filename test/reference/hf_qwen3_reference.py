#!/usr/bin/python3
"""hf_qwen3_reference.py — a small random Qwen3 (Qwen3ForCausalLM) as
Hugging Face saves it, and its outputs, for tfm_import's Qwen3 tests.

Written from the published Qwen3Model description (no transformers), with
hf_llama3_reference.py's forward pass: a Llama without q/k/v biases whose
q_proj and k_proj outputs are RMS-normalised head by head (q_norm, k_norm:
weights of head_dim, the model's rms_norm_eps) before the rotation, and
whose head_dim is its own (16 here, hidden_size / heads 12, as Qwen3-0.6B's
128 is not 1024 / 16); rope_theta 1e6, a tied head, no window
(use_sliding_window false, sliding_window null as published).

Writes into test/fixtures/hf_qwen3/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json
  (the Llama fixture's: the weights' test needs only ids), reference.json.

Run: /usr/bin/python3 test/reference/hf_qwen3_reference.py (from the repository root).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, cases, file writer)
import hf_llama3_reference as R  # noqa: E402  (the forward pass, q/k norms included)

OUT = "test/fixtures/hf_qwen3"


def main():
    torch.manual_seed(20261203)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    R.M.update({"D": 48, "LAYERS": 2, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 16, "EPS": 1e-6,
                "THETA": 1000000.0, "ROPE": None, "FF": 96})
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = R.random_weights(V, qk_norm=True)
    # the keys of Qwen3-0.6B's config.json (sizes scaled down)
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": R.M["HEAD_DIM"],
        "hidden_act": "silu",
        "hidden_size": R.M["D"],
        "initializer_range": 0.02,
        "intermediate_size": R.M["FF"],
        "max_position_embeddings": 40960,
        "max_window_layers": R.M["LAYERS"],
        "model_type": "qwen3",
        "num_attention_heads": R.M["HEADS"],
        "num_hidden_layers": R.M["LAYERS"],
        "num_key_value_heads": R.M["KV_HEADS"],
        "rms_norm_eps": R.M["EPS"],
        "rope_scaling": None,
        "rope_theta": R.M["THETA"],
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": V,
    }
    L.forward = R.forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd, head=sd["model.embed_tokens.weight"])


if __name__ == "__main__":
    main()
