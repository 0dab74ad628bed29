#!/usr/bin/python3
"""torch_lm.py — the PyTorch side of bench/lm: the same decoder-only language
model as tfm's 'lm' (doc/model.md: token + learned position embeddings,
pre-LN causal blocks with GELU, a final LayerNorm, logits = x·Eᵀ tied to the
token embedding, no bias), written as a nanoGPT-style module so that one
definition serves training, decoding without a cache (the whole prefix again
for every new token) and decoding with a per-layer key/value cache.

    torch_lm.py train --train train.ids --val val.ids --vocab 89 --d 128 --heads 4 \
        --layers 4 --max-len 128 --batch 64 --lr 2e-3 --budget 1800 --threads 2
    torch_lm.py speed --vocab 50257 --d 768 --heads 12 --layers 12 --max-len 1024 \
        --batch 4 --seq 64 --gen-prompt 16 --gen-tokens 64 --threads 2

Input files: one line holding the stream's ids as `{id,id,...}` (COPY text
of `SELECT tfm_tokenize(tok, text)`); the <eos> id (3) is appended, as tfm's
training and evaluation streams end each row with it.

train: windows of max_len + 1 ids at uniformly random offsets (seeded),
batch of them per step (tfm draws its windows the same way), AdamW (β
0.9/0.99, eps 1e-8, weight decay on 2-D tensors only), clip_grad_norm_(1.0),
linear warmup over 5 % then cosine to 0 over the time budget (progress =
elapsed / budget, as tfm_train's time_limit fits its schedule to the
budget). Then the val stream is scored as tfm_evaluate does: consecutive
windows of max_len + 1 ids overlapping by one, so every id after the first is
predicted once; nats per character = total nats / (characters + 1), the
<eos> counting as one character.

speed: random ids; training tokens/s (batch × seq per step, the same step as
above: 3 untimed steps, then timed steps for about 15 s, at least 5, median),
then generation tokens/s from a prompt, greedy, without a cache and with
one (1 untimed round, then timed rounds for about 4 s, at least 3, median).

Prints `RESULT key=value ...` lines.
"""
import argparse
import math
import os
import random
import statistics
import sys
import time

EOS = 3


def read_stream(path):
    with open(path, encoding="utf-8") as f:
        arr = f.read().strip().strip("{}")
    return [int(x) for x in arr.split(",")] + [EOS]


def build(args, torch, nn):
    F = nn.functional

    class Block(nn.Module):
        def __init__(self, d, h, f):
            super().__init__()
            self.h = h
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.ff1 = nn.Linear(d, f)
            self.ff2 = nn.Linear(f, d)

        def attend(self, x, cache):
            B, T, d = x.shape
            h, s = self.h, d // self.h
            q, k, v = self.qkv(x).split(d, dim=2)
            q = q.view(B, T, h, s).transpose(1, 2)
            k = k.view(B, T, h, s).transpose(1, 2)
            v = v.view(B, T, h, s).transpose(1, 2)
            past = 0
            if cache is not None:
                if cache:
                    past = cache[0].shape[2]
                    k = torch.cat([cache[0], k], dim=2)
                    v = torch.cat([cache[1], v], dim=2)
                cache[:] = [k, v]
            a = (q @ k.transpose(-2, -1)) / math.sqrt(s)
            if T > 1:
                mask = torch.ones(T, past + T, dtype=torch.bool).triu(past + 1)
                a = a.masked_fill(mask, float("-inf"))
            y = F.softmax(a, dim=-1) @ v
            return self.out(y.transpose(1, 2).reshape(B, T, d))

        def forward(self, x, cache=None):
            x = x + self.attend(self.ln1(x), cache)
            return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d
            self.tok = nn.Embedding(args.vocab, d)
            self.pos = nn.Parameter(torch.zeros(args.max_len, d))
            self.blocks = nn.ModuleList(Block(d, args.heads, args.dff or 4 * d) for _ in range(args.layers))
            self.ln_f = nn.LayerNorm(d)
            self.init_like_tfm()

        def init_like_tfm(self):
            """tfm's init: embeddings N(0, 1/d), matrices Glorot-normal, pre-LN
            residual projections / √(2·layers), biases 0, gains 1"""
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if p.dim() == 1:
                        p.fill_(1.0) if ("ln" in name and name.endswith("weight")) else p.zero_()
                        continue
                    if name in ("tok.weight", "pos"):
                        std = 1.0 / math.sqrt(args.d)
                    else:
                        std = math.sqrt(2.0 / (p.shape[0] + p.shape[1]))
                    if name.endswith("out.weight") or name.endswith("ff2.weight"):
                        std /= math.sqrt(2.0 * args.layers)
                    p.normal_(0.0, std)

        def forward(self, ids, caches=None, start=0):
            x = self.tok(ids) + self.pos[start:start + ids.shape[1]]
            for i, b in enumerate(self.blocks):
                x = b(x, None if caches is None else caches[i])
            return self.ln_f(x) @ self.tok.weight.t()

    return LM()


def make_opt(model, args, torch):
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.99), eps=1e-8)


def train_step(model, opt, x, y, args, torch):
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    opt.step()
    return loss


def evaluate(model, stream, L, torch):
    """tfm_evaluate's rule: windows of L + 1 ids overlapping by one"""
    model.eval()
    nats, n = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(stream) - 1, L):              # the last window may be short
            w = stream[s:s + L + 1]
            x = torch.tensor([w[:-1]], dtype=torch.long)
            y = torch.tensor(w[1:], dtype=torch.long)
            lp = torch.log_softmax(model(x)[0], dim=-1)
            nats -= float(lp.gather(1, y.view(-1, 1)).sum())
            n += len(w) - 1
    return nats, n


def train(args, torch, nn):
    stream = read_stream(args.train)
    val = read_stream(args.val)
    model = build(args, torch, nn)
    opt = make_opt(model, args, torch)
    rng = random.Random(args.seed)
    L, B = args.max_len, args.batch
    data = torch.tensor(stream, dtype=torch.long)
    print(f"INFO train_ids={len(stream)} val_ids={len(val)} params={sum(p.numel() for p in model.parameters())} "
          f"budget_s={args.budget}", flush=True)
    step, t0, tl, nb = 0, time.perf_counter(), 0.0, 0
    model.train()
    while True:
        progress = (time.perf_counter() - t0) / args.budget
        if progress >= 1.0:
            break
        wf = args.warmup_frac
        lr = args.lr * (progress / wf if progress < wf else
                        0.5 * (1.0 + math.cos(math.pi * (progress - wf) / (1.0 - wf))))
        for g in opt.param_groups:
            g["lr"] = lr
        offs = [rng.randrange(0, len(stream) - L) for _ in range(B)]
        w = torch.stack([data[o:o + L + 1] for o in offs])
        loss = train_step(model, opt, w[:, :-1], w[:, 1:], args, torch)
        step += 1
        tl += float(loss)
        nb += 1
        if step % 200 == 0:
            el = time.perf_counter() - t0
            print(f"step {step}: loss {tl / nb:.4f} elapsed {el:.0f}s tokens/s {step * B * L / el:.0f}", flush=True)
            tl, nb = 0.0, 0
    train_s = time.perf_counter() - t0
    nats, n = evaluate(model, val, L, torch)
    chars = len(val)                                         # the val text's characters + its <eos>
    print(f"RESULT tag={args.tag} mode=train steps={step} train_seconds={train_s:.1f} "
          f"tokens_per_s={step * B * L / train_s:.0f} val_loss={nats / n:.4f} nats_per_char={nats / chars:.4f} "
          f"predicted={n}", flush=True)


def timed(fn, budget=4.0, warmup=1, min_iters=3):
    for _ in range(warmup):
        fn()
    times, t_all = [], time.perf_counter()
    while len(times) < min_iters or time.perf_counter() - t_all < budget:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def speed(args, torch, nn):
    model = build(args, torch, nn)
    g = torch.Generator().manual_seed(args.seed)
    if args.seq > 0:
        opt = make_opt(model, args, torch)
        model.train()
        x = torch.randint(6, args.vocab, (args.batch, args.seq + 1), generator=g)
        dt = timed(lambda: train_step(model, opt, x[:, :-1], x[:, 1:], args, torch), budget=15.0, warmup=3,
                   min_iters=5)
        print(f"RESULT tag={args.tag} mode=train_speed tokens_per_s={args.batch * args.seq / dt:.1f} "
              f"step_s={dt:.4f}", flush=True)
    if args.gen_tokens > 0:
        model.eval()
        prompt = torch.randint(6, args.vocab, (1, args.gen_prompt), generator=g)

        def gen(cached):
            with torch.no_grad():
                ids = prompt
                if cached:
                    caches = [[] for _ in model.blocks]
                    logits = model(ids, caches)
                    for t in range(args.gen_tokens):
                        nxt = logits[:, -1].argmax(-1, keepdim=True)
                        ids = torch.cat([ids, nxt], 1)
                        logits = model(nxt, caches, start=ids.shape[1] - 1)
                else:
                    for t in range(args.gen_tokens):
                        nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
                        ids = torch.cat([ids, nxt], 1)
            return ids

        a, b = gen(False), gen(True)
        same = bool(torch.equal(a, b))
        for cached in (False, True):
            dt = timed(lambda: gen(cached))
            print(f"RESULT tag={args.tag} mode=generate cache={'yes' if cached else 'no'} "
                  f"tokens_per_s={args.gen_tokens / dt:.2f} prompt={args.gen_prompt} "
                  f"tokens={args.gen_tokens} same_tokens={same}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "speed"])
    ap.add_argument("--train")
    ap.add_argument("--val")
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dff", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=0, help="speed: training sequence length (0: skip)")
    ap.add_argument("--gen-prompt", type=int, default=16)
    ap.add_argument("--gen-tokens", type=int, default=0, help="speed: tokens to generate (0: skip)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--warmup-frac", type=float, default=0.05)
    ap.add_argument("--budget", type=float, default=1800.0, help="seconds of training")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from torch_blas import use_native_blis_kernels, blas_summary
    use_native_blis_kernels()  # before torch loads BLIS
    import torch
    import torch.nn as nn
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    print(f"INFO torch={torch.__version__} threads={torch.get_num_threads()} {blas_summary()} "
          f"BLIS_NUM_THREADS={os.environ.get('BLIS_NUM_THREADS', 'unset')}", flush=True)
    (train if args.mode == "train" else speed)(args, torch, nn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
