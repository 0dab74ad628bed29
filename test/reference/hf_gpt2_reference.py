#!/usr/bin/python3
"""hf_gpt2_reference.py — a small random GPT-2 (GPT2LMHeadModel) as Hugging
Face saves it, and its outputs, for tfm_import's tests.

Written from the published architecture (no transformers package): pre-LN
blocks, learned positions, Conv1D weights stored (in, out), fused c_attn
with columns [Q | K | V], GELU's tanh approximation (gelu_new), final
ln_f, lm_head tied to wte.  The safetensors files are written by hand
(8-byte little-endian header length, JSON header, raw bytes).

Writes into test/fixtures/hf_gpt2/:
  config.json              HF field names (model_type gpt2, n_embd, ...)
  model.safetensors        F32, HF's tensor names ("transformer." prefix,
                           no lm_head.weight: HF drops the tied copy)
  model_half.safetensors   the same weights, layer 0 in BF16, layer 1 in F16,
                           the rest F32, with lm_head.weight present (tied)
                           and the old attn.bias buffers; the weights were
                           rounded so all three files hold the same values
  tokenizer.json           byte-level BPE: GPT-2's 256 byte tokens, its
                           first 63 merges, <|endoftext|> (HF tokenizers format)
  reference.json           inputs (token ids), the log-softmax of the last
                           position's logits, the raw logits of every position
                           (of the 5-token input),
                           per-input sum of next-token log-probabilities,
                           and greedy continuations

Run: /usr/bin/python3 test/reference/hf_gpt2_reference.py (from the repository root).
"""
import gzip
import json
import math
import os
import struct

import torch

torch.manual_seed(20240517)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_gpt2"

N_MERGES = 63
N_EMBD, N_LAYER, N_HEAD, N_POS = 32, 2, 4, 64
EPS = 1e-5


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


def make_tokenizer():
    bs, cs = bytes_to_unicode()
    vocab = {}
    for i, c in enumerate(cs):  # GPT-2's encoder.json: ids 0..255 in this order
        vocab[c] = i
    with gzip.open("test/fixtures/tokenizer/gpt2_vocab.bpe.gz", "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[1:]
    merges = [l for l in lines if l][:N_MERGES]
    for m in merges:
        a, b = m.split(" ")
        vocab[a + b] = len(vocab)
    eot = len(vocab)
    vocab["<|endoftext|>"] = eot
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges},
    }
    return tok, len(vocab), eot


def round_to(t, dtype):
    return t.to(dtype).to(torch.float32)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


def forward(sd, ids):
    """logits (T, V) of one sequence"""
    T = len(ids)
    d, h = N_EMBD, N_HEAD
    s = d // h
    x = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(N_LAYER):
        p = f"transformer.h.{i}."
        u = layer_norm(x, sd[p + "ln_1.weight"], sd[p + "ln_1.bias"])
        qkv = u @ sd[p + "attn.c_attn.weight"] + sd[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(d, dim=-1)
        q = q.view(T, h, s).transpose(0, 1)
        k = k.view(T, h, s).transpose(0, 1)
        v = v.view(T, h, s).transpose(0, 1)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(s)
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (a @ v).transpose(0, 1).reshape(T, d)
        x = x + o @ sd[p + "attn.c_proj.weight"] + sd[p + "attn.c_proj.bias"]
        u = layer_norm(x, sd[p + "ln_2.weight"], sd[p + "ln_2.bias"])
        hdn = gelu_new(u @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"])
        x = x + hdn @ sd[p + "mlp.c_proj.weight"] + sd[p + "mlp.c_proj.bias"]
    x = layer_norm(x, sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"])
    return x @ sd["transformer.wte.weight"].T


DT = {torch.float32: ("F32", None), torch.bfloat16: ("BF16", None), torch.float16: ("F16", None)}


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, tensor) in file order"""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors:
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        header[name] = {"dtype": DT[t.dtype][0], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, V, eot = make_tokenizer()
    d, f = N_EMBD, 4 * N_EMBD
    # the dtype each layer is stored in by model_half.safetensors (values rounded to it)
    layer_dtype = {0: torch.bfloat16, 1: torch.float16}
    sd = {}

    def param(name, shape, std, mean=0.0, dtype=None):
        t = torch.randn(*shape) * std + mean
        if dtype is not None:
            t = round_to(t, dtype)
        sd[name] = t

    param("transformer.wte.weight", (V, d), 0.1)
    param("transformer.wpe.weight", (N_POS, d), 0.05)
    for i in range(N_LAYER):
        p = f"transformer.h.{i}."
        dt = layer_dtype[i]
        param(p + "ln_1.weight", (d,), 0.1, 1.0, dt)
        param(p + "ln_1.bias", (d,), 0.05, 0.0, dt)
        param(p + "attn.c_attn.weight", (d, 3 * d), 0.15, 0.0, dt)
        param(p + "attn.c_attn.bias", (3 * d,), 0.05, 0.0, dt)
        param(p + "attn.c_proj.weight", (d, d), 0.1, 0.0, dt)
        param(p + "attn.c_proj.bias", (d,), 0.02, 0.0, dt)
        param(p + "ln_2.weight", (d,), 0.1, 1.0, dt)
        param(p + "ln_2.bias", (d,), 0.05, 0.0, dt)
        param(p + "mlp.c_fc.weight", (d, f), 0.15, 0.0, dt)
        param(p + "mlp.c_fc.bias", (f,), 0.05, 0.0, dt)
        param(p + "mlp.c_proj.weight", (f, d), 0.1, 0.0, dt)
        param(p + "mlp.c_proj.bias", (d,), 0.02, 0.0, dt)
    param("transformer.ln_f.weight", (d,), 0.1, 1.0)
    param("transformer.ln_f.bias", (d,), 0.05)

    config = {
        "_name_or_path": "tfm-test-gpt2-tiny",
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": eot,
        "embd_pdrop": 0.1,
        "eos_token_id": eot,
        "initializer_range": 0.02,
        "layer_norm_epsilon": EPS,
        "model_type": "gpt2",
        "n_ctx": N_POS,
        "n_embd": N_EMBD,
        "n_head": N_HEAD,
        "n_inner": None,
        "n_layer": N_LAYER,
        "n_positions": N_POS,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.40.0",
        "use_cache": True,
        "vocab_size": V,
    }
    with open(f"{OUT}/config.json", "w") as fh:
        json.dump(config, fh, indent=2)
        fh.write("\n")
    with open(f"{OUT}/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)

    names = sorted(sd)
    write_safetensors(f"{OUT}/model.safetensors", [(n, sd[n]) for n in names], {"format": "pt"})
    half = []
    for n in names:
        t = sd[n]
        for i, dt in layer_dtype.items():
            if n.startswith(f"transformer.h.{i}."):
                t = t.to(dt)
        half.append((n, t))
        if n.endswith(".ln_1.bias"):
            i = int(n.split(".")[2])
            half.append((f"transformer.h.{i}.attn.bias",
                         torch.tril(torch.ones(N_POS, N_POS)).view(1, 1, N_POS, N_POS).to(torch.float16)))
    half.append(("lm_head.weight", sd["transformer.wte.weight"]))
    write_safetensors(f"{OUT}/model_half.safetensors", half, {"format": "pt"})
    # every stored value must read back to the reference's float32
    for n, t in half:
        if n in sd:
            assert torch.equal(t.to(torch.float32), sd[n]), n

    inputs = [[5], [40, 256, 300, 17, 90], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
              [270, 261, 300, 313, 65, 200, 100, 0, 255, 318, 12, 99, 3, 44, 290, 301, 266]]
    ref = {"vocab_size": V, "eos_token_id": eot, "cases": []}
    gap = float("inf")
    with torch.no_grad():
        for ids in inputs:
            logits = forward(sd, ids)
            logp = logits.log_softmax(-1)
            score = float(sum(logp[t, ids[t + 1]] for t in range(len(ids) - 1)))
            # greedy: argmax until eos or 10 new tokens (as HF generate with do_sample=False)
            seq = list(ids)
            gen = []
            for _ in range(10):
                last = forward(sd, seq)[-1]
                top2 = last.topk(2).values
                gap = min(gap, float(top2[0] - top2[1]))
                nxt = int(last.argmax())
                if nxt == eot:
                    break
                gen.append(nxt)
                seq.append(nxt)
            ref["cases"].append({
                "ids": ids,
                "last_logprobs": [round(float(v), 7) for v in logp[-1]],
                # raw logits of every position for one input (the file stays small)
                "logits": [[round(float(v), 6) for v in row] for row in logits] if len(ids) == 5 else None,
                "score": score,
                "greedy": gen,
            })
    with open(f"{OUT}/reference.json", "w") as fh:
        json.dump(ref, fh)
        fh.write("\n")
    total = sum(os.path.getsize(f"{OUT}/{n}") for n in os.listdir(OUT))
    print(f"vocab {V}, fixture {total} bytes in {OUT}; smallest top-2 logit gap of a greedy step {gap:.4g}")


if __name__ == "__main__":
    main()
