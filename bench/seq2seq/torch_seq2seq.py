#!/usr/bin/python3
"""torch_seq2seq.py — the PyTorch side of bench/seq2seq: the same
encoder-decoder as tfm's 'seq2seq' (doc/model.md) built from nn.Transformer,
trained on the same token ids (exported from tfm with tfm_tokenize) under the
same time budget, then greedy-decoding the test sources; or, with `speed`,
training tokens/s and translation sentences/s on those ids.

    torch_seq2seq.py train --train train.ids --test test_src.ids --out hyp.ids \
        --vocab 8000 --d 256 --heads 8 --enc 3 --dec 3 --dff 1024 --max-len 64 \
        --batch-tokens 8192 --lr 1.5e-3 --budget 3600 --threads 2

Input files: `{src ids}<TAB>{tgt ids}` per line (train), `{src ids}` per line
(test), COPY text format of tfm_tokenize's arrays.  Output: one line per test
source, `{hypothesis ids}`, in input order.

Model (tfm's post-LN defaults, or pre-LN with --norm pre): shared token embedding (source, target and
output projection: three-way tying) scaled by √d, sinusoidal positions,
dropout 0.1 on embeddings, attention weights, the FF hidden layer and the
residual branches; nn.Transformer(norm_first=False, activation='relu') with
encoder and decoder stacks given without the final LayerNorm that
nn.Transformer adds by default (tfm's post-LN stacks have none); logits =
x·Eᵀ, no bias. Init as tfm's: embedding N(0, 1/d), matrices Glorot-normal,
biases 0, gains 1.

Data as tfm_train reads it: source ids truncated to max_len, target to
max_len − 1; decoder input <bos> + target, prediction target + <eos>.
Batches as tfm's batch_tokens: chunks of 8,192 rows in file order, shuffled
(seeded), sorted by (longest side, source length, target length), cut into batches whose
rows × longest side (max(source, target + 1)) stay within batch_tokens, the
batches in shuffled order. AdamW (β 0.9/0.98, eps 1e-8, weight decay on 2-D
tensors), clip_grad_norm_(1.0), cross-entropy with label smoothing 0.1
ignoring pads, linear warmup over 5 % then cosine to 0 over the time budget.
Tokens counted as tfm counts them: source + target + 1 per row.

Greedy decoding: sources sorted by length in batches of 64, the encoder once,
the decoder re-run over the whole prefix for each new token (nn.Transformer
has no key/value cache), <pad> and <bos> never produced, at most
2 · source length + 10 tokens, stop at <eos>.
"""
import argparse
import math
import os
import random
import sys
import time

PAD, BOS, EOS = 0, 2, 3


def parse_ids(s):
    s = s.strip().strip("{}")
    return [int(x) for x in s.split(",")] if s else []


def read_pairs(path, max_len):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            a, b = line.rstrip("\n").split("\t")
            src = parse_ids(a)[:max_len] or [EOS]
            rows.append((src, parse_ids(b)[:max_len - 1]))
    return rows


def read_sources(path, max_len):
    with open(path, encoding="utf-8") as f:
        return [parse_ids(line)[:max_len] or [EOS] for line in f]


def build(args, torch, nn):
    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d
            self.emb = nn.Embedding(args.vocab, d)
            pe = torch.zeros(args.max_len * 4, d)
            pos = torch.arange(pe.shape[0], dtype=torch.float32).unsqueeze(1)
            div = torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float32) / d)
            pe[:, 0::2] = torch.sin(pos / div)
            pe[:, 1::2] = torch.cos(pos / div)
            self.register_buffer("pe", pe)
            self.drop = nn.Dropout(args.dropout)
            pre = args.norm == "pre"
            enc_layer = nn.TransformerEncoderLayer(d, args.heads, args.dff, args.dropout, batch_first=True,
                                                   norm_first=pre)
            dec_layer = nn.TransformerDecoderLayer(d, args.heads, args.dff, args.dropout, batch_first=True,
                                                   norm_first=pre)
            # pre-LN stacks end with a final LayerNorm, as tfm's; post-LN ones have none
            self.tf = nn.Transformer(d, args.heads, dim_feedforward=args.dff, dropout=args.dropout,
                                     batch_first=True,
                                     custom_encoder=nn.TransformerEncoder(enc_layer, args.enc,
                                                                          norm=nn.LayerNorm(d) if pre else None,
                                                                          enable_nested_tensor=False),
                                     custom_decoder=nn.TransformerDecoder(dec_layer, args.dec,
                                                                          norm=nn.LayerNorm(d) if pre else None))
            self.scale = math.sqrt(d)
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if p.dim() == 1:
                        p.fill_(1.0) if "norm" in name and name.endswith("weight") else p.zero_()
                    elif name == "emb.weight":
                        p.normal_(0.0, 1.0 / math.sqrt(d))
                    else:
                        p.normal_(0.0, math.sqrt(2.0 / (p.shape[0] + p.shape[1])))

        def embed(self, ids):
            return self.drop(self.emb(ids) * self.scale + self.pe[: ids.shape[1]])

        def encode(self, src):
            return self.tf.encoder(self.embed(src), src_key_padding_mask=src == PAD)

        def decode(self, dec_in, mem, src_pad):
            T = dec_in.shape[1]
            causal = torch.ones(T, T, dtype=torch.bool).triu(1)
            x = self.tf.decoder(self.embed(dec_in), mem, tgt_mask=causal,
                                tgt_key_padding_mask=dec_in == PAD, memory_key_padding_mask=src_pad)
            return x @ self.emb.weight.t()

        def forward(self, src, dec_in):
            return self.decode(dec_in, self.encode(src), src == PAD)

    return Seq2Seq()


def batches(rows, batch_tokens, rng):
    """tfm_train's batch_tokens batches (src/pg/train.c cut_batches)"""
    out = []
    for c in range(0, len(rows), 8192):
        chunk = rows[c:c + 8192]
        rng.shuffle(chunk)
        chunk.sort(key=lambda r: (max(len(r[0]), len(r[1]) + 1), len(r[0]), len(r[1])))
        bs, i = [], 0
        while i < len(chunk):
            longest, j = 0, i
            while j < len(chunk):
                l = max(longest, len(chunk[j][0]), len(chunk[j][1]) + 1)
                if j > i and l * (j - i + 1) > batch_tokens:
                    break
                longest, j = l, j + 1
            bs.append(chunk[i:j])
            i = j
        rng.shuffle(bs)
        out += bs
    return out


def tensors(batch, torch):
    Ts = max(len(s) for s, _ in batch)
    Tt = max(len(t) for _, t in batch) + 1
    src = torch.full((len(batch), Ts), PAD, dtype=torch.long)
    din = torch.full((len(batch), Tt), PAD, dtype=torch.long)
    tgt = torch.full((len(batch), Tt), PAD, dtype=torch.long)
    for i, (s, t) in enumerate(batch):
        src[i, :len(s)] = torch.tensor(s)
        din[i, :len(t) + 1] = torch.tensor([BOS] + t)
        tgt[i, :len(t) + 1] = torch.tensor(t + [EOS])
    return src, din, tgt, sum(len(s) + len(t) + 1 for s, t in batch)


def make_opt(model, args, torch):
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.98), eps=1e-8)


def step(model, opt, loss_fn, b, args, torch):
    src, din, tgt, _ = b
    opt.zero_grad(set_to_none=True)
    logits = model(src, din)
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    opt.step()
    return loss


def greedy(model, sources, torch, bs=64):
    order = sorted(range(len(sources)), key=lambda k: len(sources[k]))
    out = [None] * len(sources)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(order), bs):
            idx = order[i:i + bs]
            Ts = max(len(sources[k]) for k in idx)
            src = torch.full((len(idx), Ts), PAD, dtype=torch.long)
            for r, k in enumerate(idx):
                src[r, :len(sources[k])] = torch.tensor(sources[k])
            mem, src_pad = model.encode(src), src == PAD
            limit = [2 * len(sources[k]) + 10 for k in idx]
            ids = torch.full((len(idx), 1), BOS, dtype=torch.long)
            done = [False] * len(idx)
            hyps = [[] for _ in idx]
            for t in range(max(limit)):
                logits = model.decode(ids, mem, src_pad)[:, -1]
                logits[:, PAD] = float("-inf")
                logits[:, BOS] = float("-inf")
                nxt = logits.argmax(-1)
                for r in range(len(idx)):
                    if not done[r]:
                        v = int(nxt[r])
                        if v == EOS or t >= limit[r]:
                            done[r] = True
                        else:
                            hyps[r].append(v)
                if all(done):
                    break
                ids = torch.cat([ids, nxt.view(-1, 1)], 1)
            for r, k in enumerate(idx):
                out[k] = hyps[r]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "speed"])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--out")
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--enc", type=int, default=3)
    ap.add_argument("--dec", type=int, default=3)
    ap.add_argument("--dff", type=int, default=1024)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--norm", choices=["post", "pre"], default="post")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--warmup-frac", type=float, default=0.05)
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds of training")
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
    rng = random.Random(args.seed)
    rows = read_pairs(args.train, args.max_len)
    sources = read_sources(args.test, args.max_len)
    model = build(args, torch, nn)
    opt = make_opt(model, args, torch)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=args.label_smoothing)
    print(f"INFO train_rows={len(rows)} test_sources={len(sources)} "
          f"params={sum(p.numel() for p in model.parameters())}", flush=True)

    if args.mode == "speed":
        model.train()
        bs = [tensors(b, torch) for b in batches(list(rows[:8192]), args.batch_tokens, rng)[:40]]
        times, toks = [], 0
        step(model, opt, loss_fn, bs[0], args, torch)
        for b in bs[1:]:
            t = time.perf_counter()
            step(model, opt, loss_fn, b, args, torch)
            times.append(time.perf_counter() - t)
            toks += b[3]
        print(f"RESULT tag={args.tag} mode=train_speed tokens_per_s={toks / sum(times):.1f} "
              f"steps={len(times)}", flush=True)
        t = time.perf_counter()
        greedy(model, sources, torch)
        dt = time.perf_counter() - t
        print(f"RESULT tag={args.tag} mode=greedy_speed sentences_per_s={len(sources) / dt:.2f} "
              f"sentences={len(sources)}", flush=True)
        return 0

    step_n, tokens, t0 = 0, 0, time.perf_counter()
    done, epoch = False, 0
    model.train()
    while not done:
        epoch += 1
        tl, nb = 0.0, 0
        for b in batches(list(rows), args.batch_tokens, rng):
            progress = (time.perf_counter() - t0) / args.budget
            if progress >= 1.0:
                done = True
                break
            wf = args.warmup_frac
            lr = args.lr * (progress / wf if progress < wf else
                            0.5 * (1.0 + math.cos(math.pi * (progress - wf) / (1.0 - wf))))
            for g in opt.param_groups:
                g["lr"] = lr
            tb = tensors(b, torch)
            tl += float(step(model, opt, loss_fn, tb, args, torch))
            nb += 1
            step_n += 1
            tokens += tb[3]
        el = time.perf_counter() - t0
        print(f"epoch {epoch}{' (partial)' if done else ''}: steps {step_n} train_loss {tl / max(nb, 1):.4f} "
              f"elapsed {el:.0f}s tokens/s {tokens / el:.0f}", flush=True)
    train_s = time.perf_counter() - t0
    t = time.perf_counter()
    hyps = greedy(model, sources, torch)
    dec_s = time.perf_counter() - t
    with open(args.out, "w") as f:
        for h in hyps:
            f.write("{" + ",".join(map(str, h)) + "}\n")
    print(f"RESULT tag={args.tag} mode=train steps={step_n} epochs={epoch} train_seconds={train_s:.1f} "
          f"tokens_per_s={tokens / train_s:.0f} greedy_sentences_per_s={len(sources) / dec_s:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
