#!/usr/bin/python3
"""hf_phi4_reference.py — a small random Phi-4-mini (Phi3ForCausalLM with
longrope, partial_rotary_factor 0.75 and a tied head) as Hugging Face saves
it, and its outputs, for tfm_import's longrope tests (import_phi4.sql) and
the GGUF phi3 fixture written from the same weights (make_gguf_fixtures.py).

Written from the published description (transformers' Phi3 modeling and
its rope utilities; no transformers package), on top of Phi-3's
computation (hf_phi3_reference.py: qkv_proj and gate_up_proj fused):
  rotary width  r = int(head_dim · partial_rotary_factor); each head's
                first r values rotate (rotate_half over those r), the rest
                pass (Phi3's apply_rotary_pos_emb)
  longrope      inv_freq = 1 / (ext · θ^(arange(0, r, 2)/r)), ext the
                short_factor while the sequence (max(position_ids) + 1) is
                at most original_max_position_embeddings, the long_factor
                past it (_compute_longrope_parameters and the longrope
                update of dynamic_rope_update); cos and sin times
                attention_factor = √(1 + ln(s)/ln(orig)),
                s = max_position_embeddings / original_max_position_embeddings
  generation    Phi3ForCausalLM drops its cache when the sequence first
                passes original_max_position_embeddings, so every step's
                logits are those of one pass over the whole sequence: the
                greedy continuation here is computed so (a full pass a step)
The config is Phi-4-mini-instruct's keys with the sizes scaled down:
original_max_position_embeddings 12 (so inputs and continuations cross it),
max_position_embeddings 384 (s 32), tie_word_embeddings true (no
lm_head.weight in the file), sliding_window past max_position_embeddings.

Writes into test/fixtures/hf_phi4/: config.json, model.safetensors (F32),
tokenizer.json (the Llama fixture's), reference.json (as
hf_llama_reference.py's, plus the rope's numbers); and into
test/fixtures/hf_phi35/ the same for a Phi-3.5-mini's layout: whole heads
rotated (no partial_rotary_factor, 8 factors a list), an untied lm_head,
rope_scaling type "su" (the older name Phi3Config reads as longrope).

Run: /usr/bin/python3 test/reference/hf_phi4_reference.py (from the repository root).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as L  # noqa: E402  (the tokenizer, RMSNorm, file writer)

torch.manual_seed(20261202)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_phi4"

D, LAYERS, HEADS, KV_HEADS, FF = 64, 2, 4, 2, 96
MAX_POS, ORIG, PARTIAL = 384, 12, 0.75
EPS, THETA = 1e-5, 10000.0
S = D // HEADS                      # 16
R = int(S * PARTIAL)                # 12 rotated, 4 passed (Phi-3.5: 16)
SHORT, LONG = None, None
ATTN = math.sqrt(1 + math.log(MAX_POS / ORIG) / math.log(ORIG))
L.EPS = EPS


def set_rope(partial):
    global PARTIAL, R, SHORT, LONG
    PARTIAL = partial
    R = int(S * PARTIAL)
    SHORT = [round(1.0 + 0.05 * i * i, 4) for i in range(R // 2)]
    LONG = [round(1.5 + 2.5 * i, 4) for i in range(R // 2)]


def rope_tables(T):
    """cos, sin (T, R) for a pass over T positions"""
    ext = torch.tensor(LONG if T > ORIG else SHORT, dtype=torch.float32)
    inv_freq = 1.0 / (ext * THETA ** (torch.arange(0, R, 2, dtype=torch.int64).float() / R))
    freqs = torch.arange(T).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * ATTN, emb.sin() * ATTN


def rotate(x, cos, sin):
    xr, xp = x[..., :R], x[..., R:]
    return torch.cat((xr * cos + L.rotate_half(xr) * sin, xp), dim=-1)


def forward(sd, ids):
    """logits (T, V) of one sequence"""
    T = len(ids)
    cos, sin = rope_tables(T)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = sd["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = L.rms(x, sd[p + "input_layernorm.weight"])
        qkv = h @ sd[p + "self_attn.qkv_proj.weight"].T
        q = qkv[:, :HEADS * S].view(T, HEADS, S).transpose(0, 1)
        k = qkv[:, HEADS * S:(HEADS + KV_HEADS) * S].view(T, KV_HEADS, S).transpose(0, 1)
        v = qkv[:, (HEADS + KV_HEADS) * S:].view(T, KV_HEADS, S).transpose(0, 1)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rep = HEADS // KV_HEADS
        k = k[:, None].expand(KV_HEADS, rep, T, S).reshape(HEADS, T, S)
        v = v[:, None].expand(KV_HEADS, rep, T, S).reshape(HEADS, T, S)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(S)
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (a @ v).transpose(0, 1).reshape(T, D)
        x = x + o @ sd[p + "self_attn.o_proj.weight"].T
        h = L.rms(x, sd[p + "post_attention_layernorm.weight"])
        gate, up = (h @ sd[p + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
        x = x + (up * torch.nn.functional.silu(gate)) @ sd[p + "mlp.down_proj.weight"].T
    x = L.rms(x, sd["model.norm.weight"])
    return x @ sd.get("lm_head.weight", sd["model.embed_tokens.weight"]).T


def make_weights(V, tied=True):
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.embed_tokens.weight", (V, D), 0.3)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        param(p + "input_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "self_attn.qkv_proj.weight", ((HEADS + 2 * KV_HEADS) * S, D), 0.2)
        param(p + "self_attn.o_proj.weight", (D, HEADS * S), 0.3)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_up_proj.weight", (2 * FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.3)
    param("model.norm.weight", (D,), 0.1, 1.0)
    if not tied:
        param("lm_head.weight", (V, D), 0.3)
    return sd


def config(V):
    # the keys of Phi-4-mini-instruct's config.json (sizes scaled down)
    return {
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 2,
        "full_attn_mod": 1,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "interpolate_factor": 1,
        "lm_head_bias": False,
        "max_position_embeddings": MAX_POS,
        "mlp_bias": False,
        "model_type": "phi3",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "original_max_position_embeddings": ORIG,
        "pad_token_id": 0,
        "partial_rotary_factor": PARTIAL,
        "resid_pdrop": 0.0,
        "rms_norm_eps": EPS,
        "rope_scaling": {"long_factor": LONG, "short_factor": SHORT, "type": "longrope"},
        "rope_theta": THETA,
        "sliding_window": 262144,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.45.0",
        "use_cache": True,
        "vocab_size": V,
    }


def build(out, partial, tied, rope_type):
    os.makedirs(out, exist_ok=True)
    set_rope(partial)
    tok, vocab, merges = L.make_tokenizer()
    V = len(vocab)
    sd = make_weights(V, tied)
    cfg = config(V)
    cfg["rope_scaling"]["type"] = rope_type
    if partial == 1.0:
        del cfg["partial_rotary_factor"]
    cfg["tie_word_embeddings"] = tied
    L.forward = forward
    L.write_fixture(out, cfg, tok, vocab, merges, sd, head=sd["model.embed_tokens.weight"] if tied else None)
    with open(f"{out}/reference.json") as fh:
        ref = json.load(fh)
    ref["rope"] = {"rotary_dim": R, "original_max_position_embeddings": ORIG,
                   "attention_factor": ATTN}
    with open(f"{out}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    print("attention factor %.9g, rotary dim %d" % (ATTN, R))


def main():
    build(OUT, 0.75, True, "longrope")
    build("test/fixtures/hf_phi35", 1.0, False, "su")


if __name__ == "__main__":
    main()
