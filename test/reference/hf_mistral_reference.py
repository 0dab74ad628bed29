#!/usr/bin/python3
"""hf_mistral_reference.py — a small random Mistral (MistralForCausalLM) as
Hugging Face saves it, with a sliding window shorter than the inputs, and
its outputs, for tfm_import's Mistral tests.

Written from the published MistralModel description (no transformers), with
hf_llama3_reference.py's forward pass: a Llama (no biases) whose causal mask
also hides from query i every key j with i − j >= sliding_window (the
window holds the query's own key and the sliding_window − 1 before it).
The window here is 8 and the inputs run to 51 positions, so it binds on
every input past 8 tokens (import_mistral.sql checks that an import without
the window differs).

Writes into test/fixtures/hf_mistral/ (as hf_llama_reference.py does):
  config.json, model.safetensors (F32), tokenizer.json (the Llama
  fixture's), reference.json.

Run: /usr/bin/python3 test/reference/hf_mistral_reference.py (from the repository root).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, cases, file writer)
import hf_llama3_reference as R  # noqa: E402  (the forward pass, the window included)

OUT = "test/fixtures/hf_mistral"
WINDOW = 8


def main():
    torch.manual_seed(20261205)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    R.M.update({"D": 48, "LAYERS": 2, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 12, "EPS": 1e-5,
                "THETA": 10000.0, "ROPE": None, "FF": 96, "WINDOW": WINDOW})
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = R.random_weights(V)
    sd["lm_head.weight"] = torch.randn(V, R.M["D"]) * 0.2
    # the keys of Mistral-7B-v0.1's config.json (sizes scaled down)
    config = {
        "architectures": ["MistralForCausalLM"],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": R.M["D"],
        "initializer_range": 0.02,
        "intermediate_size": R.M["FF"],
        "max_position_embeddings": 128,
        "model_type": "mistral",
        "num_attention_heads": R.M["HEADS"],
        "num_hidden_layers": R.M["LAYERS"],
        "num_key_value_heads": R.M["KV_HEADS"],
        "rms_norm_eps": R.M["EPS"],
        "rope_theta": R.M["THETA"],
        "sliding_window": WINDOW,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "transformers_version": "4.34.0.dev0",
        "use_cache": True,
        "vocab_size": V,
    }
    L.forward = R.forward
    L.write_fixture(OUT, config, tok, vocab, merges, sd)


if __name__ == "__main__":
    main()
