#!/usr/bin/python3
"""torch_classify.py — the PyTorch side of bench/classify: the same encoder
classifier as tfm's (doc/model.md), trained on the same token ids (exported
from tfm with tfm_tokenize), with the same optimiser and schedule, under a
time budget; or, with --infer, inference throughput of a model whose weights
are read from tfm.tensors (so the very model tfm_classify runs).

    BLIS_NUM_THREADS=2 OMP_NUM_THREADS=2 /usr/bin/python3 torch_classify.py train \
        --train rt_train.ids --test rt_test.ids --labels neg,pos --vocab 17517 \
        --d 128 --heads 8 --layers 4 --max-len 64 --norm pre --dropout 0.3 \
        --lr 1e-3 --wd 0.1 --label-smoothing 0.1 --epochs 5 --budget 227 --threads 2

    torch_classify.py infer --test t.ids --weights rt.tensors --labels neg,pos ...

Input files: one row per line, `label<TAB>{id,id,...}` (COPY text format of
`SELECT label, tfm_tokenize(tok, text)`), in the table's id order.

Model: token embedding + learned positions (no scaling), dropout,
nn.TransformerEncoderLayer(batch_first, norm_first = pre-LN, activation,
dropout) × layers, a final LayerNorm for pre-LN (enc.ln_f), mean pooling over
non-pad positions (pad id 0), linear head.  Init as tfm's: embeddings
N(0, 1/d), matrices Glorot-normal, pre-LN residual projections / √(2·layers),
biases 0, gains 1.  Inputs longer than max_len keep the first ceil(max/2) and
the last floor(max/2) ids (tfm's head + tail cut).

Training: AdamW (β 0.9/0.999, eps 1e-8, weight decay on 2-D tensors only),
clip_grad_norm_(clip), cross-entropy with label smoothing; batches as tfm's:
shuffled rows (seeded), grouped by length into batches of batch_size, batches
in shuffled order.  Schedule: linear warmup over 5% then cosine to 0, over
progress = max(step / (epochs · steps_per_epoch), elapsed / budget): the run
ends annealed at whichever of the epoch count or the time budget comes first
(as tfm_train(epochs => E, time_limit => T)).  10% of the training rows are
held out (seeded) for a per-epoch validation accuracy, like val_fraction 0.1.

Prints `RESULT key=value ...` lines for run.sh.
"""
import argparse
import math
import os
import random
import sys
import time


def read_ids(path, labels):
    lab_index = {l: i for i, l in enumerate(labels)}
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            lab, arr = line.rstrip("\n").split("\t")
            arr = arr.strip("{}")
            ids = [int(x) for x in arr.split(",")] if arr else []
            rows.append((ids, lab_index[lab]))
    return rows


def cut(ids, max_len):
    """tfm's head + tail truncation (src/pg/rows.c); an empty input becomes <unk>"""
    if len(ids) > max_len:
        head = (max_len + 1) // 2
        tail = max_len - head
        ids = ids[:head] + (ids[len(ids) - tail:] if tail else [])
    return ids if ids else [1]


def build(args, torch, nn):
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d
            self.tok = nn.Embedding(args.vocab, d)
            self.pos = nn.Parameter(torch.zeros(args.max_len, d))
            self.drop = nn.Dropout(args.dropout)
            layer = nn.TransformerEncoderLayer(d, args.heads, args.dff or 4 * d, args.dropout,
                                               activation=args.activation, batch_first=True,
                                               norm_first=(args.norm == "pre"))
            self.enc = nn.TransformerEncoder(layer, args.layers,
                                             norm=nn.LayerNorm(d) if args.norm == "pre" else None,
                                             enable_nested_tensor=False)
            self.head = nn.Linear(d, len(args.labels))
            self.init_like_tfm()

        def init_like_tfm(self):
            d = args.d
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if p.dim() == 1:
                        if "norm" in name and name.endswith("weight"):
                            p.fill_(1.0)
                        else:
                            p.zero_()
                        continue
                    if name in ("tok.weight", "pos"):
                        std = 1.0 / math.sqrt(d)
                    else:
                        std = math.sqrt(2.0 / (p.shape[0] + p.shape[1]))
                    if args.norm == "pre" and (name.endswith("out_proj.weight") or name.endswith("linear2.weight")):
                        std /= math.sqrt(2.0 * args.layers)
                    p.normal_(0.0, std)

        def forward(self, ids):
            pad = ids == 0
            x = self.drop(self.tok(ids) + self.pos[: ids.shape[1]])
            x = self.enc(x, src_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).to(x.dtype)
            pooled = (x * keep).sum(1) / keep.sum(1).clamp_min(1.0)
            return self.head(pooled)

    return Classifier()


def load_tfm_weights(model, path, args, torch):
    """tfm.tensors rows exported as `name<TAB>{values}` (W stored (in, out))."""
    t = {}
    with open(path) as f:
        for line in f:
            name, arr = line.rstrip("\n").split("\t")
            t[name] = torch.tensor([float(x) for x in arr.strip("{}").split(",")], dtype=torch.float32)
    d = args.d
    with torch.no_grad():
        model.tok.weight.copy_(t["tok_emb"].view(-1, d))
        model.pos.copy_(t["pos_emb"].view(-1, d)[: args.max_len])
        for i, L in enumerate(model.enc.layers):
            p = f"enc.{i}."
            L.self_attn.in_proj_weight.copy_(t[p + "attn.qkv.w"].view(d, 3 * d).t())
            L.self_attn.in_proj_bias.copy_(t[p + "attn.qkv.b"])
            L.self_attn.out_proj.weight.copy_(t[p + "attn.out.w"].view(d, d).t())
            L.self_attn.out_proj.bias.copy_(t[p + "attn.out.b"])
            f_ = t[p + "ff1.b"].numel()
            L.linear1.weight.copy_(t[p + "ff1.w"].view(d, f_).t())
            L.linear1.bias.copy_(t[p + "ff1.b"])
            L.linear2.weight.copy_(t[p + "ff2.w"].view(f_, d).t())
            L.linear2.bias.copy_(t[p + "ff2.b"])
            L.norm1.weight.copy_(t[p + "ln1.g"]); L.norm1.bias.copy_(t[p + "ln1.b"])
            L.norm2.weight.copy_(t[p + "ln2.g"]); L.norm2.bias.copy_(t[p + "ln2.b"])
        if model.enc.norm is not None:
            model.enc.norm.weight.copy_(t["enc.ln_f.g"]); model.enc.norm.bias.copy_(t["enc.ln_f.b"])
        C = len(args.labels)
        model.head.weight.copy_(t["cls.w"].view(d, C).t())
        model.head.bias.copy_(t["cls.b"])


def pad_batch(seqs, torch):
    T = max(len(s) for s in seqs)
    out = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def batches_by_length(rows, bs, rng):
    """tfm's batching: shuffle, group by length, shuffle the batches"""
    order = list(range(len(rows)))
    rng.shuffle(order)
    out = []
    for c in range(0, len(order), 8192):
        chunk = sorted(order[c:c + 8192], key=lambda k: len(rows[k][0]))
        out += [chunk[i:i + bs] for i in range(0, len(chunk), bs)]
    rng.shuffle(out)
    return out


def predict(model, rows, torch, bs=64):
    """eval-mode predictions, batches of bs grouped by length (as tfm's batched classify)"""
    order = sorted(range(len(rows)), key=lambda k: len(rows[k][0]))
    pred = [0] * len(rows)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(order), bs):
            idx = order[i:i + bs]
            logits = model(pad_batch([rows[k][0] for k in idx], torch))
            for k, p in zip(idx, logits.argmax(1).tolist()):
                pred[k] = p
    return pred


def accuracy(pred, rows):
    return sum(int(p == r[1]) for p, r in zip(pred, rows)) / max(len(rows), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "infer"])
    ap.add_argument("--train")
    ap.add_argument("--test", required=True)
    ap.add_argument("--weights", help="infer: tfm tensors file (name<TAB>{values})")
    ap.add_argument("--labels", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dff", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--norm", default="pre")
    ap.add_argument("--activation", default="relu")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--warmup-frac", type=float, default=0.05)
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds of training")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    args.labels = args.labels.split(",")

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from torch_blas import use_native_blis_kernels, blas_summary
    use_native_blis_kernels()  # before torch loads BLIS
    import torch
    import torch.nn as nn
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    print(f"INFO torch={torch.__version__} threads={torch.get_num_threads()} {blas_summary()} "
          f"BLIS_NUM_THREADS={os.environ.get('BLIS_NUM_THREADS', 'unset')} "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}", flush=True)

    test = [(cut(ids, args.max_len), y) for ids, y in read_ids(args.test, args.labels)]
    model = build(args, torch, nn)
    n_params = sum(p.numel() for p in model.parameters())

    if args.mode == "infer":
        load_tfm_weights(model, args.weights, args, torch)
        predict(model, test[:256], torch)                    # warm-up
        reps, t0 = 0, time.perf_counter()
        while True:
            pred = predict(model, test, torch)
            reps += 1
            if time.perf_counter() - t0 > 5.0:
                break
        dt = (time.perf_counter() - t0) / reps
        print(f"RESULT tag={args.tag} mode=infer rows={len(test)} seconds={dt:.3f} "
              f"rows_per_s={len(test) / dt:.1f} accuracy={accuracy(pred, test):.4f} params={n_params}", flush=True)
        return 0

    rng = random.Random(args.seed)
    rows = [(cut(ids, args.max_len), y) for ids, y in read_ids(args.train, args.labels)]
    idx = list(range(len(rows)))
    rng.shuffle(idx)
    n_val = int(round(args.val_fraction * len(rows)))
    val = [rows[k] for k in sorted(idx[:n_val])]
    train = [rows[k] for k in sorted(idx[n_val:])]
    steps_per_epoch = sum(math.ceil(min(8192, len(train) - c) / args.batch)
                          for c in range(0, len(train), 8192))
    total_epoch_steps = args.epochs * steps_per_epoch

    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    print(f"INFO train={len(train)} val={len(val)} test={len(test)} params={n_params} "
          f"steps_per_epoch={steps_per_epoch} epochs={args.epochs} budget_s={args.budget}", flush=True)

    step, tokens, done = 0, 0, False
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        tl, nb = 0.0, 0
        for b in batches_by_length(train, args.batch, rng):
            progress = max(step / total_epoch_steps, (time.perf_counter() - t0) / args.budget)
            if progress >= 1.0:
                done = True
                break
            wf = args.warmup_frac
            lr = args.lr * (progress / wf if progress < wf else
                            0.5 * (1.0 + math.cos(math.pi * (progress - wf) / (1.0 - wf))))
            for g in opt.param_groups:
                g["lr"] = lr
            x = pad_batch([train[k][0] for k in b], torch)
            y = torch.tensor([train[k][1] for k in b], dtype=torch.long)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            step += 1
            tokens += int((x != 0).sum())
            tl += loss.item()
            nb += 1
        el = time.perf_counter() - t0
        va = accuracy(predict(model, val, torch), val) if val else float("nan")
        t0 += time.perf_counter() - t0 - el                  # validation time is not training time
        print(f"epoch {epoch}{' (partial)' if done else ''}: steps {step} train_loss {tl / max(nb, 1):.4f} "
              f"val_acc {va:.4f} elapsed {el:.1f}s tokens/s {tokens / el:.0f}", flush=True)
        if done or (time.perf_counter() - t0) >= args.budget:
            break
    train_s = time.perf_counter() - t0
    acc = accuracy(predict(model, test, torch), test)
    print(f"RESULT tag={args.tag} mode=train accuracy={acc:.4f} steps={step} epochs_done={epoch} "
          f"train_seconds={train_s:.1f} tokens_per_s={tokens / train_s:.0f} params={n_params}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
