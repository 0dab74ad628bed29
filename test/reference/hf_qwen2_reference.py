#!/usr/bin/python3
"""hf_qwen2_reference.py — a small random Qwen2 (Qwen2ForCausalLM) as Hugging
Face saves it, and its outputs, for tfm_import's Qwen2 tests.

Written from the published Qwen2Model description (no transformers, no
safetensors package), with hf_llama_reference.py's forward pass.  Qwen2 is
Llama with
  q, k, v = h·Wqᵀ + bq, h·Wkᵀ + bk, h·Wvᵀ + bv   (q/k/v_proj have biases,
            o_proj and the MLP none)
and the config of the published checkpoints: rope_theta 1e6,
tie_word_embeddings true (lm_head.weight absent, logits = x·embed_tokensᵀ),
sliding_window / max_window_layers present but use_sliding_window false
(full causal attention in every layer).

The tokenizer is the Llama fixture's (a SentencePiece-style BPE tfm
imports): Qwen2's own tokenizer.json is byte-level BPE with a Split
pattern tfm does not recognise yet, and the weights' test needs only ids.

Writes into test/fixtures/hf_qwen2/:
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json,
  reference.json: per input (the last: "the cat sat on the mat." after <s>) the ids, the log-softmax of the logits (every
  position of the 5-token input, the last position of the others), the sum
  of next-token log-probabilities and the greedy continuation (10 tokens or
  </s>).

Run: /usr/bin/python3 test/reference/hf_qwen2_reference.py (from the repository root).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, RMSNorm, rotation, file writer)

torch.manual_seed(20261126)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_qwen2"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS = 48, 2, 4, 2, 96, 128
EPS, THETA = 1e-6, 1000000.0
# hf_llama_reference's forward (which adds q/k/v_proj.bias when present) on these sizes
L.D, L.LAYERS, L.HEADS, L.KV_HEADS, L.EPS, L.THETA = D, LAYERS, HEADS, KV_HEADS, EPS, THETA


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
        param(p + "self_attn.q_proj.weight", (HEADS * s, D), 0.2)
        param(p + "self_attn.q_proj.bias", (HEADS * s,), 0.5)
        param(p + "self_attn.k_proj.weight", (KV_HEADS * s, D), 0.2)
        param(p + "self_attn.k_proj.bias", (KV_HEADS * s,), 0.5)
        param(p + "self_attn.v_proj.weight", (KV_HEADS * s, D), 0.15)
        param(p + "self_attn.v_proj.bias", (KV_HEADS * s,), 0.3)
        param(p + "self_attn.o_proj.weight", (D, HEADS * s), 0.4)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_proj.weight", (FF, D), 0.15)
        param(p + "mlp.up_proj.weight", (FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.4)
    param("model.norm.weight", (D,), 0.1, 1.0)

    # the keys of a published Qwen2 config.json (Qwen2-0.5B's, sizes scaled down)
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "max_position_embeddings": MAX_POS,
        "max_window_layers": LAYERS,
        "model_type": "qwen2",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "rms_norm_eps": EPS,
        "rope_theta": THETA,
        "sliding_window": MAX_POS,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.40.1",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": V,
    }
    with open(f"{OUT}/config.json", "w") as fh:
        json.dump(config, fh, indent=2)
        fh.write("\n")
    with open(f"{OUT}/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)
    L.write_safetensors(f"{OUT}/model.safetensors", [(n, sd[n]) for n in sorted(sd)], {"format": "pt"})

    inputs = [[1], [1, 300, 270, 40, 280], L.encode("the cat sat on the mat.", vocab, merges),
              [1] + [(7 * i * i + 3) % V for i in range(40)],
              # the text "the cat sat on the mat." as tfm_generate's prompt (<s> first)
              [1] + L.encode("the cat sat on the mat.", vocab, merges)]
    ref = {"vocab_size": V, "bos_token_id": 1, "eos_token_id": 2}
    # the tied head: logits = x·embed_tokensᵀ (lm_head.weight is not in the file)
    ref["cases"], gap = L.reference_cases(dict(sd, **{"lm_head.weight": sd["model.embed_tokens.weight"]}), inputs)
    with open(f"{OUT}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    total = sum(os.path.getsize(f"{OUT}/{n}") for n in os.listdir(OUT))
    print(f"vocab {V}, fixture {total} bytes in {OUT}; smallest top-2 logit gap of a greedy step {gap:.4g}")
    for c in ref["cases"]:
        print(c["ids"][:8], "greedy", c["greedy"], "score %.6f" % c["score"])


if __name__ == "__main__":
    main()
