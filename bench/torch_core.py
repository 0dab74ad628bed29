#!/usr/bin/python3
"""torch_core.py — the reference encoder classifier in PyTorch, timed the way
bench_core.c times tfm's core: training steps (forward + loss + backward +
global-norm clipping + AdamW) and inference forwards, on random token ids
(no pads, full length 256), batch 32.

    BLIS_NUM_THREADS=N OMP_NUM_THREADS=N /usr/bin/python3 bench/torch_core.py --threads N

Run one fresh process per thread count (BLIS reads its thread count from the
environment).  Prints readable lines and machine-readable ones:
    RESULT impl=torch kind=<train|infer|infer_fastpath|infer_standard> threads=N tok_s=...
    INFO key=value ...

The model (doc/model.md's classifier, as test/reference/torch_reference.py):
token embedding + learned positions, dropout, nn.TransformerEncoder of
nn.TransformerEncoderLayer(d 128, 8 heads, d_ff 512, dropout 0.1, relu,
batch_first, post-LN), mean pooling over non-pad positions, a linear head,
cross-entropy; AdamW (lr 5e-4, betas 0.9/0.999, weight decay 0.01 on
matrices only), clip_grad_norm_(1.0).

Inference runs in eval mode under torch.no_grad().  There nn.TransformerEncoder
takes PyTorch's "fast path" (torch._transformer_encoder_layer_fwd, fused
native kernels) when its conditions hold; it is measured both ways — the
fast path (PyTorch's default behaviour) and the standard module path (the
fast path disabled by clearing each layer's activation_relu_or_gelu flag, so
the same Python modules as in training run, under no_grad, dropout off) — and the faster of the two is the
figure tfm is compared with (kind=infer).
"""
import argparse
import os
import statistics
import sys
import time

VOCAB, D, HEADS, LAYERS, DFF, LEN, BATCH, CLASSES, DROPOUT = 8000, 128, 8, 4, 512, 256, 32, 2, 0.1
N_BATCHES = 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--what", default="train,infer")
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()

    from torch_blas import use_native_blis_kernels, blas_summary
    use_native_blis_kernels()  # before torch loads BLIS
    import torch
    import torch.nn as nn

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    # ---- configuration report ------------------------------------------
    blas = "unknown"
    try:
        blas = os.path.realpath("/etc/alternatives/libblas.so.3-x86_64-linux-gnu")
    except OSError:
        pass
    cfg = torch.__config__.show()
    blas_info = next((part.split("=", 1)[1] for line in cfg.splitlines()
                      for part in line.replace(",", " ").split()
                      if part.startswith("BLAS_INFO=")), "?")
    cap = next((line.split(":", 1)[1].strip() for line in cfg.splitlines()
                if "CPU capability usage" in line), "?")
    env = {k: os.environ.get(k, "unset") for k in
           ("BLIS_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_ARCH_TYPE")}
    print(f"INFO impl=torch version={torch.__version__} threads={torch.get_num_threads()} "
          f"interop_threads={torch.get_num_interop_threads()} blas_info={blas_info} "
          f"libblas={blas} cpu_capability={cap} mkldnn={int(torch.backends.mkldnn.is_available())} "
          + " ".join(f"{k}={v}" for k, v in env.items()))
    print(f"PyTorch {torch.__version__}: {torch.get_num_threads()} intra-op thread(s), "
          f"BLAS_INFO={blas_info}, libblas.so.3 -> {blas}, CPU capability {cap}, "
          + ", ".join(f"{k}={v}" for k, v in env.items()))

    # ---- the model -----------------------------------------------------
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Parameter(torch.randn(LEN, D) * 0.02)
            self.drop = nn.Dropout(DROPOUT)
            layer = nn.TransformerEncoderLayer(D, HEADS, DFF, DROPOUT, activation="relu",
                                               batch_first=True, norm_first=False)
            self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
            self.head = nn.Linear(D, CLASSES)

        def forward(self, ids):
            pad = ids == 0                                  # (B, T) True = pad
            x = self.drop(self.tok(ids) + self.pos[: ids.shape[1]])
            x = self.enc(x, src_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).to(x.dtype)
            pooled = (x * keep).sum(1) / keep.sum(1).clamp_min(1.0)
            return self.head(pooled)

    model = Classifier()
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=5e-4, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.CrossEntropyLoss()

    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(6, VOCAB, (N_BATCHES, BATCH, LEN), generator=g)
    labels = torch.randint(0, CLASSES, (N_BATCHES, BATCH), generator=g)
    tokens = BATCH * LEN
    fwd_flops_tok = 2.0 * (LAYERS * (D * 3 * D + D * D + D * DFF + DFF * D) + D * CLASSES) \
        + 4.0 * LEN * D * LAYERS

    def timed(fn, label):
        for i in range(args.warmup):                        # untimed
            fn(i)
        times = []
        start = time.perf_counter()
        i = 0
        while i < args.min_iters or time.perf_counter() - start < args.seconds:
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
            i += 1
            if i >= 100000:
                break
        return statistics.median(times), statistics.mean(times), min(times), len(times)

    def report(kind, label, flops_tok, med, mean, mn, n):
        print(f"torch {label}, {args.threads} threads: {n} iters, median {med * 1e3:.1f} ms "
              f"(mean {mean * 1e3:.1f}, min {mn * 1e3:.1f}): {tokens / med:.0f} tok/s, "
              f"{flops_tok * tokens / med / 1e9:.1f} GFLOP/s")
        print(f"RESULT impl=torch kind={kind} threads={args.threads} tok_s={tokens / med:.1f} "
              f"tok_s_mean={tokens / mean:.1f} tok_s_best={tokens / mn:.1f} "
              f"gflops={flops_tok * tokens / med / 1e9:.2f} "
              f"step_ms={med * 1e3:.2f} iters={n}")
        return tokens / med

    what = args.what.split(",")
    if "train" in what:
        model.train()
        last = [0.0]

        def train_step(i):
            b = i % N_BATCHES
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(ids[b]), labels[b])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            last[0] = loss.item()

        r = timed(train_step, "train")
        report("train", "train (fwd+bwd+clip+AdamW)", 3 * fwd_flops_tok, *r)

    if "infer" in what:
        model.eval()

        def infer_fast(i):
            with torch.no_grad():
                model(ids[i % N_BATCHES])

        def set_fastpath(on):
            # TransformerEncoderLayer takes the fast path only if its flag
            # activation_relu_or_gelu is set; clearing it keeps the very same
            # computation (self.activation is still ReLU) on the standard
            # module path, still under no_grad
            for layer in model.enc.layers:
                layer.activation_relu_or_gelu = on

        def infer_standard(i):
            with torch.no_grad():
                model(ids[i % N_BATCHES])

        rf = timed(infer_fast, "infer fast path")
        tf = report("infer_fastpath", "infer (eval, no_grad: fast path)", fwd_flops_tok, *rf)
        set_fastpath(False)
        rs = timed(infer_standard, "infer standard")
        set_fastpath(True)
        ts = report("infer_standard", "infer (eval, no_grad, standard path)", fwd_flops_tok, *rs)
        best = rf if tf >= ts else rs
        print(f"torch inference figure used for the comparison: "
              f"{'fast path' if tf >= ts else 'standard path'} (the faster)")
        print(f"RESULT impl=torch kind=infer threads={args.threads} tok_s={tokens / best[0]:.1f} "
              f"tok_s_mean={tokens / best[1]:.1f} tok_s_best={tokens / best[2]:.1f} gflops={fwd_flops_tok * tokens / best[0] / 1e9:.2f} "
              f"step_ms={best[0] * 1e3:.2f} iters={best[3]} "
              f"path={'fastpath' if tf >= ts else 'standard'}")


if __name__ == "__main__":
    sys.exit(main())
