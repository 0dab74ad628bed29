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

The tokenizer is Qwen2's shape, test/fixtures/tokenizer/hf/qwen2.json
(make_hf_bpe_tokenizers.py: NFC, Split with Qwen2's pattern, ByteLevel,
256 bytes + 117 merges + <|endoftext|> <|im_start|> <|im_end|> = 376 ids),
with Qwen2-0.5B-Instruct's tokenizer_config.json (its chat template,
eos <|im_end|>) and generation_config.json (eos ids <|im_end|> and
<|endoftext|>).

Writes into test/fixtures/hf_qwen2/:
  config.json, model.safetensors (F32, no lm_head.weight), tokenizer.json,
  tokenizer_config.json, generation_config.json,
  reference.json: per input (the last: TEXT, mixed text, as Qwen2's
  tokenizer encodes it) the ids, the log-softmax of the logits (every
  position of the 5-token input, the last position of the others), the sum
  of next-token log-probabilities and the greedy continuation (10 tokens or
  <|im_end|>); and chat: a conversation, its prompt as the template renders
  it, the prompt's ids (the specials as their ids, the text between them
  through the tokenizer) and the greedy continuation of 12 tokens that
  stops at a stop id.

Run: /usr/bin/python3 test/reference/hf_qwen2_reference.py (from the repository root).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (RMSNorm, rotation, file writer)
import make_hf_bpe_tokenizers as T  # noqa: E402  (the byte-level BPE encoder)
import chat_templates_reference as C  # noqa: E402  (the templates, Jinja as transformers runs it)

TEXT = "The cat sat on the mat: 3.14 猫 🐈 café!\n\n  ok"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = [{"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Where did the cat sit? 猫 123"}]

torch.manual_seed(20261126)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_qwen2"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS = 48, 2, 4, 2, 96, 128
EPS, THETA = 1e-6, 1000000.0
# hf_llama_reference's forward (which adds q/k/v_proj.bias when present) on these sizes
L.D, L.LAYERS, L.HEADS, L.KV_HEADS, L.EPS, L.THETA = D, LAYERS, HEADS, KV_HEADS, EPS, THETA


def main():
    os.makedirs(OUT, exist_ok=True)
    with open("test/fixtures/tokenizer/hf/qwen2.json", encoding="utf-8") as fh:
        tok = json.load(fh)
    V = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    assert V == 376
    ids_of = {a["content"]: a["id"] for a in tok["added_tokens"]}
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
        "bos_token_id": ids_of["<|endoftext|>"],
        "eos_token_id": ids_of["<|im_end|>"],
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
    # Qwen2-0.5B-Instruct's tokenizer_config.json (its keys; ids scaled down)
    tcfg = {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(ids_of[t]): {"content": t, "lstrip": False, "normalized": False,
                                                  "rstrip": False, "single_word": False, "special": True}
                                 for t in SPECIALS},
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": C.TEMPLATES["qwen2"],
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 32768,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    with open(f"{OUT}/tokenizer_config.json", "w", encoding="utf-8") as fh:
        json.dump(tcfg, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    gcfg = {"bos_token_id": ids_of["<|endoftext|>"], "do_sample": True,
            "eos_token_id": [ids_of["<|im_end|>"], ids_of["<|endoftext|>"]],
            "pad_token_id": ids_of["<|endoftext|>"], "repetition_penalty": 1.1, "temperature": 0.7,
            "top_k": 20, "top_p": 0.8, "transformers_version": "4.40.1"}
    with open(f"{OUT}/generation_config.json", "w", encoding="utf-8") as fh:
        json.dump(gcfg, fh, indent=2)
        fh.write("\n")
    L.write_safetensors(f"{OUT}/model.safetensors", [(n, sd[n]) for n in sorted(sd)], {"format": "pt"})

    inputs = [[1], [1, 300, 270, 40, 280], T.encode(tok, "the cat sat on the mat."),
              [1] + [(7 * i * i + 3) % V for i in range(40)],
              # TEXT as tfm_generate's prompt (Qwen2 puts nothing before it)
              T.encode(tok, TEXT)]
    ref = {"vocab_size": V, "bos_token_id": ids_of["<|endoftext|>"], "eos_token_id": ids_of["<|im_end|>"],
           "text": TEXT}
    # the tied head: logits = x·embed_tokensᵀ (lm_head.weight is not in the file)
    full = dict(sd, **{"lm_head.weight": sd["model.embed_tokens.weight"]})
    ref["cases"], gap = L.reference_cases(full, inputs)
    # reference_cases stops at id 2 (Llama's </s>); here tfm stops at
    # <|im_end|> and never produces <|endoftext|> (its bos): neither may occur
    for c in ref["cases"]:
        assert len(c["greedy"]) == 10 and not set(c["greedy"]) & {2, ids_of["<|endoftext|>"], ids_of["<|im_end|>"]}
    # the chat: the template's prompt, its ids with the specials split out
    # (as tokenizers does with added tokens), greedy until a stop id
    prompt = C.render(C.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True),
                      C.TEMPLATES["qwen2"], CHAT, True, None, "<|im_end|>")
    pids, rest = [], prompt
    while rest:
        at = [(rest.find(t), t) for t in SPECIALS if rest.find(t) >= 0]
        if not at:
            pids += T.encode(tok, rest)
            break
        i, t = min(at)
        pids += T.encode(tok, rest[:i]) + [ids_of[t]]
        rest = rest[i + len(t):]
    stops = set(gcfg["eos_token_id"])
    greedy = []
    seq = list(pids)
    with torch.no_grad():
        for _ in range(12):
            logits = L.forward(full, seq)[-1]
            logits[ids_of["<|endoftext|>"]] = -float("inf")   # bos is never produced (tfm's rule)
            nxt = int(torch.argmax(logits))
            if nxt in stops:
                break
            greedy.append(nxt)
            seq.append(nxt)
    ref["chat"] = {"messages": CHAT, "prompt": prompt, "ids": pids, "greedy": greedy}
    with open(f"{OUT}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    total = sum(os.path.getsize(f"{OUT}/{n}") for n in os.listdir(OUT))
    print(f"vocab {V}, fixture {total} bytes in {OUT}; smallest top-2 logit gap of a greedy step {gap:.4g}")
    for c in ref["cases"]:
        print(c["ids"][:8], "greedy", c["greedy"], "score %.6f" % c["score"])


if __name__ == "__main__":
    main()
