#!/usr/bin/python3
"""make_trained.py — a small Llama *trained* on real text, as GGUF files for
trained_ids.sh: greedy ids of tfm and llama.cpp on the same Q4_K_M file of
a model whose next-token distributions are peaked as a real checkpoint's
are (issue 40).  The random-weight shapes of run.sh are near ties at many
steps (doc/performance.md, "Greedy ids against llama.cpp on Q4_K_M"),
which any rounding decides; a trained model is what users run.

  make_trained.py OUT [--data FILE.txt.gz] [--steps 500] [--threads 2]

The model: LlamaForCausalLM as written from its published description
(test/reference/hf_llama_reference.py's forward, here in PyTorch with
autograd): hidden 256, 4 layers, 4 heads of 64, 2 key/value heads (GQA),
intermediate 768, untied head, rope theta 10000, RMSNorm eps 1e-5; the
vocabulary the bench's SentencePiece kind (make_models.llama_tokenizer) at
512 ids, the text read as its byte pieces <0xNN> (ids 3-258), each window
after <s> (id 1).  Trained on --data (default: Moby-Dick's training part
in ../shared/data) with AdamW, batches of 16 windows of 128 ids, a fixed
seed and --steps steps (about 4 minutes on 2 cores of an AMD Zen 4).

Writes OUT/model-F32.gguf, OUT/model-Q4_K_M.gguf (ggml's own quantizer:
GGML_LIB, node-llama-cpp's libggml-base, as run.sh sets it),
OUT/prompts.json ({"prompts": [[ids], ...]}: 8 passages of the held-out
part, 24 bytes each after <s>) and OUT/train.log (the loss every 50 steps,
the held-out loss at the end).
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from gguf_writer import llama_gguf
from make_models import llama_tokenizer

D, L, H, KV, FF, V, CTX, BATCH = 256, 4, 4, 2, 768, 512, 128, 16
HD = D // H
EPS, THETA = 1e-5, 10000.0
BYTE0 = 3                       # <0x00>'s id


def params(g):
    sd = {"model.embed_tokens.weight": torch.randn(V, D, generator=g) * 0.02}
    for i in range(L):
        p = "model.layers.%d." % i
        sd[p + "input_layernorm.weight"] = torch.ones(D)
        sd[p + "self_attn.q_proj.weight"] = torch.randn(H * HD, D, generator=g) * 0.02
        sd[p + "self_attn.k_proj.weight"] = torch.randn(KV * HD, D, generator=g) * 0.02
        sd[p + "self_attn.v_proj.weight"] = torch.randn(KV * HD, D, generator=g) * 0.02
        sd[p + "self_attn.o_proj.weight"] = torch.randn(D, H * HD, generator=g) * (0.02 / math.sqrt(2 * L))
        sd[p + "post_attention_layernorm.weight"] = torch.ones(D)
        sd[p + "mlp.gate_proj.weight"] = torch.randn(FF, D, generator=g) * 0.02
        sd[p + "mlp.up_proj.weight"] = torch.randn(FF, D, generator=g) * 0.02
        sd[p + "mlp.down_proj.weight"] = torch.randn(D, FF, generator=g) * (0.02 / math.sqrt(2 * L))
    sd["model.norm.weight"] = torch.ones(D)
    sd["lm_head.weight"] = torch.randn(V, D, generator=g) * 0.02
    for v in sd.values():
        v.requires_grad_(True)
    return sd


def rms(x, w):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))


def rotate(x, cos, sin):
    x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
    return x * cos + torch.cat((-x2, x1), -1) * sin


def forward(sd, ids):
    B, T = ids.shape
    inv = 1.0 / (THETA ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD))
    f = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    cos, sin = torch.cat((f, f), -1).cos(), torch.cat((f, f), -1).sin()
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    x = sd["model.embed_tokens.weight"][ids]
    for i in range(L):
        p = "model.layers.%d." % i
        h = rms(x, sd[p + "input_layernorm.weight"])
        q = (h @ sd[p + "self_attn.q_proj.weight"].T).view(B, T, H, HD).transpose(1, 2)
        k = (h @ sd[p + "self_attn.k_proj.weight"].T).view(B, T, KV, HD).transpose(1, 2)
        v = (h @ sd[p + "self_attn.v_proj.weight"].T).view(B, T, KV, HD).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        a = torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v
        x = x + a.transpose(1, 2).reshape(B, T, D) @ sd[p + "self_attn.o_proj.weight"].T
        h = rms(x, sd[p + "post_attention_layernorm.weight"])
        x = x + (F.silu(h @ sd[p + "mlp.gate_proj.weight"].T) * (h @ sd[p + "mlp.up_proj.weight"].T)) \
            @ sd[p + "mlp.down_proj.weight"].T
    return rms(x, sd["model.norm.weight"]) @ sd["lm_head.weight"].T


def windows(data, starts):
    """windows of CTX ids: <s>, then CTX - 1 bytes from each start (inputs and targets)"""
    w = np.stack([data[s:s + CTX] for s in starts]).astype(np.int64) + BYTE0
    x = np.concatenate([np.ones((len(starts), 1), np.int64), w[:, :CTX - 1]], 1)
    return torch.from_numpy(x), torch.from_numpy(w)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data", "moby_dick_train.txt.gz"))
    ap.add_argument("--held-out", default=None, help="default: --data with _train replaced by _val")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if not os.environ.get("GGML_LIB"):
        sys.exit("GGML_LIB (ggml's libggml-base, node-llama-cpp's) is needed for the Q4_K_M file")
    held = a.held_out or a.data.replace("_train", "_val")
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    with gzip.open(a.data, "rb") as fh:
        data = np.frombuffer(fh.read(), dtype=np.uint8)
    with gzip.open(held, "rb") as fh:
        val = np.frombuffer(fh.read(), dtype=np.uint8)
    g = torch.Generator().manual_seed(20261202)
    rng = np.random.RandomState(20261202)
    sd = params(g)
    opt = torch.optim.AdamW(list(sd.values()), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01)
    log = open(a.out + "/train.log", "w")
    t0 = time.time()
    for step in range(a.steps):
        lr = 3e-3 * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for pg in opt.param_groups:
            pg["lr"] = lr
        x, y = windows(data, rng.randint(0, len(data) - CTX, BATCH))
        loss = F.cross_entropy(forward(sd, x).view(-1, V), y.view(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(sd.values()), 1.0)
        opt.step()
        if step % 50 == 0 or step == a.steps - 1:
            print("step %d loss %.4f (%.0f s)" % (step, loss.item(), time.time() - t0), file=log, flush=True)
    with torch.no_grad():
        vx, vy = windows(val, np.random.RandomState(1).randint(0, len(val) - CTX, 64))
        vl = F.cross_entropy(forward(sd, vx).view(-1, V), vy.view(-1)).item()
    print("held-out loss %.4f nats a byte after %d steps, %.0f s" % (vl, a.steps, time.time() - t0), file=log, flush=True)

    tok_rng = np.random.RandomState(20261126)
    _, pieces, scores, types = llama_tokenizer(tok_rng, V)
    cfg = {
        "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "hidden_size": D, "intermediate_size": FF, "max_position_embeddings": 2048, "model_type": "llama",
        "num_attention_heads": H, "num_hidden_layers": L, "num_key_value_heads": KV, "rms_norm_eps": EPS,
        "rope_scaling": None, "rope_theta": THETA, "tie_word_embeddings": False, "vocab_size": V,
    }
    npsd = {k: v.detach().numpy().astype(np.float32) for k, v in sd.items()}
    llama_gguf(a.out + "/model-F32.gguf", cfg, npsd, pieces, scores, types, "F32")
    llama_gguf(a.out + "/model-Q4_K_M.gguf", cfg, npsd, pieces, scores, types, "Q4_K_M", os.environ["GGML_LIB"])
    # 8 held-out passages of 24 bytes, each from the start of a word
    prompts, prng = [], np.random.RandomState(8)
    while len(prompts) < 8:
        s = prng.randint(1, len(val) - 200)
        while val[s - 1] != 0x20:
            s += 1
        chunk = val[s:s + 24]
        if all(32 <= c < 127 for c in chunk):
            prompts.append([1] + [int(c) + BYTE0 for c in chunk])
    with open(a.out + "/prompts.json", "w") as fh:
        json.dump({"prompts": prompts}, fh)
    print("trained llama: hidden %d, %d layers, %d heads (%d key/value), ff %d, vocab %d; held-out loss %.3f -> %s"
          % (D, L, H, KV, FF, V, vl, a.out))


if __name__ == "__main__":
    main()
