#!/usr/bin/python3
"""hf_smollm3_reference.py — a small random SmolLM3 (SmolLM3ForCausalLM) as
Hugging Face saves it, and its outputs, for tfm_import's SmolLM3 tests.

Written from the published SmolLM3Model description (no transformers), with
hf_llama3_reference.py's forward pass: a Llama (no biases, tied head) whose
layer i applies no rotary positions to its queries and keys when
no_rope_layers[i] is 0, SmolLM3Config making that list, when absent, as
[int((i + 1) % no_rope_layer_interval != 0) for i in range(layers)].  Here
3 layers with interval 2: layer 1 is NoPE, layers 0 and 2 rotate; the
config lists no_rope_layers as the published one does.

Writes into test/fixtures/hf_smollm3/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json
  (the Llama fixture's), reference.json.

Run: /usr/bin/python3 test/reference/hf_smollm3_reference.py (from the repository root).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, cases, file writer)
import hf_llama3_reference as R  # noqa: E402  (the forward pass, NoPE layers included)

OUT = "test/fixtures/hf_smollm3"
INTERVAL = 2


def main():
    torch.manual_seed(20261204)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    R.M.update({"D": 48, "LAYERS": 3, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 12, "EPS": 1e-6,
                "THETA": 5000000.0, "ROPE": None, "FF": 96, "NOPE": INTERVAL})
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = R.random_weights(V)
    # the keys of SmolLM3-3B's config.json (sizes scaled down)
    config = {
        "architectures": ["SmolLM3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": R.M["D"],
        "initializer_range": 0.02,
        "intermediate_size": R.M["FF"],
        "max_position_embeddings": 65536,
        "max_window_layers": R.M["LAYERS"],
        "mlp_bias": False,
        "model_type": "smollm3",
        "no_rope_layer_interval": INTERVAL,
        "no_rope_layers": [int((i + 1) % INTERVAL != 0) for i in range(R.M["LAYERS"])],
        "num_attention_heads": R.M["HEADS"],
        "num_hidden_layers": R.M["LAYERS"],
        "num_key_value_heads": R.M["KV_HEADS"],
        "pretraining_tp": 1,
        "rms_norm_eps": R.M["EPS"],
        "rope_scaling": None,
        "rope_theta": R.M["THETA"],
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.54.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": V,
    }
    L.forward = R.forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd, head=sd["model.embed_tokens.weight"])


if __name__ == "__main__":
    main()
