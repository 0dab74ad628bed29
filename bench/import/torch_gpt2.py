#!/usr/bin/python3
"""torch_gpt2.py — the PyTorch side of bench/import (run by run.sh).

    torch_gpt2.py make DIR                      a random GPT-2 small as HF saves it
    torch_gpt2.py generate DIR --threads N --prompt 1,2,... --tokens 64
    torch_gpt2.py encoder --threads N --rows 512 --batch 32 --len 128

make: config.json (HF field names), model.safetensors (F32, HF's tensor
names with the "transformer." prefix, no lm_head.weight: tied) written by
hand as test/reference/hf_gpt2_reference.py does, and GPT-2's real
tokenizer.json (test/reference/make_gpt2_tokenizer_json.py; run from the
repository root).  Shape: n_layer 12, n_embd 768, n_head 12, n_positions
1024, vocab 50257.  Weights: HF's initialisation (normal(0, 0.02), the
residual projections / sqrt(2 n_layer), LayerNorm gains 1, biases 0) with
a seed, so greedy decoding has clear winners.

generate: loads DIR/model.safetensors (parsed by hand) into a GPT-2 written
from the published architecture (pre-LN, Conv1D (in, out) weights, fused
c_attn [Q|K|V], gelu_new, ln_f, tied head) with its own key/value cache:
one forward over the prompt, then one token per step with the past keys and
values kept per layer.  Greedy, batch 1, stops after --tokens new tokens or
at <|endoftext|> (as tfm does).  One untimed round, then timed rounds for
about --seconds (at least 3); median.  Prints
    RESULT what=generate threads=N tokens=T tokens_per_s=X
    IDS id,id,...

encoder: a MiniLM-shaped encoder, nn.TransformerEncoder of 6 post-LN
nn.TransformerEncoderLayer (d 384, 12 heads, d_ff 1536, GELU, dropout 0,
batch_first) under token + learned position embeddings, mean pooling; eval
mode, torch.no_grad(); --rows random rows of --len ids in batches of
--batch; one untimed batch, then passes over all rows for about --seconds
(at least 1),
median.  Measured on PyTorch's fast path (its default in eval/no_grad) and
on the standard module path; the faster is the figure (kind=best).
    RESULT what=encoder threads=N kind=fastpath|standard|best embeddings_per_s=X

Threads: torch.set_num_threads(N) and BLIS_NUM_THREADS / OMP_NUM_THREADS /
OPENBLAS_NUM_THREADS (set by run.sh in the environment of a fresh process),
and BLIS's kernels chosen as tfm chooses them (bench/torch_blas.py).
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for torch_blas

N_LAYER, N_EMBD, N_HEAD, N_POS, VOCAB = 12, 768, 12, 1024, 50257
EOT = 50256
EPS = 1e-5


def load_torch(threads):
    from torch_blas import use_native_blis_kernels, blas_summary
    use_native_blis_kernels()  # before torch loads BLIS
    import torch
    torch.set_num_threads(threads)
    print(f"INFO torch={torch.__version__} threads={torch.get_num_threads()} blas={blas_summary()}", flush=True)
    return torch


# ---- safetensors by hand ---------------------------------------------------

def write_safetensors(path, tensors, metadata=None):
    header, off = {}, 0
    for name, t in tensors:
        n = t.numel() * 4
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + n]}
        off += n
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, t in tensors:
            f.write(t.contiguous().numpy().tobytes())


def read_safetensors(path, torch):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = bytearray(f.read())
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        a, b = e["data_offsets"]
        out[name] = torch.frombuffer(data, dtype=torch.float32, offset=a, count=(b - a) // 4).view(e["shape"])
    return out


# ---- make --------------------------------------------------------------------

def make(args):
    torch = load_torch(1)
    os.makedirs(args.dir, exist_ok=True)
    g = torch.Generator().manual_seed(20261124)
    d, f = N_EMBD, 4 * N_EMBD
    sd = []

    def p(name, shape, std=0.02, fill=None):
        t = torch.full(shape, fill) if fill is not None else torch.randn(*shape, generator=g) * std
        sd.append(("transformer." + name, t))

    p("wte.weight", (VOCAB, d))
    p("wpe.weight", (N_POS, d), 0.01)
    for i in range(N_LAYER):
        h = f"h.{i}."
        p(h + "ln_1.weight", (d,), fill=1.0)
        p(h + "ln_1.bias", (d,), fill=0.0)
        p(h + "attn.c_attn.weight", (d, 3 * d))
        p(h + "attn.c_attn.bias", (3 * d,), fill=0.0)
        p(h + "attn.c_proj.weight", (d, d), 0.02 / math.sqrt(2 * N_LAYER))
        p(h + "attn.c_proj.bias", (d,), fill=0.0)
        p(h + "ln_2.weight", (d,), fill=1.0)
        p(h + "ln_2.bias", (d,), fill=0.0)
        p(h + "mlp.c_fc.weight", (d, f))
        p(h + "mlp.c_fc.bias", (f,), fill=0.0)
        p(h + "mlp.c_proj.weight", (f, d), 0.02 / math.sqrt(2 * N_LAYER))
        p(h + "mlp.c_proj.bias", (d,), fill=0.0)
    p("ln_f.weight", (d,), fill=1.0)
    p("ln_f.bias", (d,), fill=0.0)
    config = {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": EOT, "embd_pdrop": 0.1, "eos_token_id": EOT,
        "initializer_range": 0.02, "layer_norm_epsilon": EPS, "model_type": "gpt2",
        "n_ctx": N_POS, "n_embd": N_EMBD, "n_head": N_HEAD, "n_inner": None, "n_layer": N_LAYER,
        "n_positions": N_POS, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "tie_word_embeddings": True, "torch_dtype": "float32", "use_cache": True, "vocab_size": VOCAB,
    }
    with open(os.path.join(args.dir, "config.json"), "w") as fh:
        json.dump(config, fh, indent=2)
    write_safetensors(os.path.join(args.dir, "model.safetensors"), sorted(sd), {"format": "pt"})
    tok = subprocess.run([sys.executable, "test/reference/make_gpt2_tokenizer_json.py"],
                         check=True, capture_output=True).stdout
    with open(os.path.join(args.dir, "tokenizer.json"), "wb") as fh:
        fh.write(tok)
    print(f"INFO wrote {args.dir}: {sum(t.numel() for _, t in sd)} parameters, "
          f"{os.path.getsize(os.path.join(args.dir, 'model.safetensors'))} bytes of safetensors")


# ---- generate ----------------------------------------------------------------

def generate(args):
    torch = load_torch(args.threads)
    F = torch.nn.functional
    sd = read_safetensors(os.path.join(args.dir, "model.safetensors"), torch)
    sd = {k.removeprefix("transformer."): v for k, v in sd.items()}
    d, h = N_EMBD, N_HEAD
    s = d // h
    L = [{k: sd[f"h.{i}.{k}"] for k in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                          "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                          "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
                                          "mlp.c_proj.bias")} for i in range(N_LAYER)]
    wte, wpe = sd["wte.weight"], sd["wpe.weight"]

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def forward(ids, cache, start):
        """ids: list of T ids at positions start..; cache: per layer [k, v] (h, past, s); last logits"""
        T = len(ids)
        x = wte[ids] + wpe[start:start + T]
        for i, p in enumerate(L):
            u = F.layer_norm(x, (d,), p["ln_1.weight"], p["ln_1.bias"], EPS)
            q, k, v = torch.addmm(p["attn.c_attn.bias"], u, p["attn.c_attn.weight"]).split(d, dim=-1)
            q = q.view(T, h, s).transpose(0, 1)
            k = k.view(T, h, s).transpose(0, 1)
            v = v.view(T, h, s).transpose(0, 1)
            if cache[i]:
                k = torch.cat([cache[i][0], k], dim=1)
                v = torch.cat([cache[i][1], v], dim=1)
            cache[i] = [k, v]
            a = (q @ k.transpose(-1, -2)) / math.sqrt(s)
            if T > 1:
                mask = torch.ones(T, start + T, dtype=torch.bool).triu(start + 1)
                a = a.masked_fill(mask, float("-inf"))
            o = (a.softmax(-1) @ v).transpose(0, 1).reshape(T, d)
            x = x + torch.addmm(p["attn.c_proj.bias"], o, p["attn.c_proj.weight"])
            u = F.layer_norm(x, (d,), p["ln_2.weight"], p["ln_2.bias"], EPS)
            x = x + torch.addmm(p["mlp.c_proj.bias"], gelu_new(torch.addmm(p["mlp.c_fc.bias"], u, p["mlp.c_fc.weight"])),
                                p["mlp.c_proj.weight"])
        x = F.layer_norm(x[-1:], (d,), sd["ln_f.weight"], sd["ln_f.bias"], EPS)
        return (x @ wte.t())[0]

    prompt = [int(t) for t in args.prompt.split(",")]

    def run():
        cache = [None] * N_LAYER
        out = []
        logits = forward(prompt, cache, 0)
        pos = len(prompt)
        while True:
            nxt = int(logits.argmax())
            out.append(nxt)
            if nxt == EOT or len(out) == args.tokens:
                return out
            logits = forward([nxt], cache, pos)
            pos += 1

    with torch.no_grad():
        ids = run()
        rates = []
        t_end = time.perf_counter() + args.seconds
        while len(rates) < 3 or time.perf_counter() < t_end:
            t = time.perf_counter()
            ids = run()
            rates.append(len(ids) / (time.perf_counter() - t))
    print(f"RESULT what=generate threads={args.threads} tokens={len(ids)} rounds={len(rates)} "
          f"tokens_per_s={statistics.median(rates):.2f}")
    print("IDS " + ",".join(map(str, ids)))


# ---- encoder -----------------------------------------------------------------

def encoder(args):
    torch = load_torch(args.threads)
    nn = torch.nn
    torch.manual_seed(0)
    V, D, H, NL, FF = 30522, 384, 12, 6, 1536

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, D)
            self.pos = nn.Parameter(torch.randn(512, D) * 0.02)
            layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=False)
            self.enc = nn.TransformerEncoder(layer, NL, enable_nested_tensor=False)

        def forward(self, ids):
            x = self.tok(ids) + self.pos[:ids.shape[1]]
            return self.enc(x).mean(dim=1)  # no pads: mean over all positions

    m = Enc().eval()
    rows = torch.randint(6, V, (args.rows, args.len))
    batches = rows.split(args.batch)

    def one_pass():
        t = time.perf_counter()
        for b in batches:
            e = m(b)
        assert e.shape[-1] == D
        return args.rows / (time.perf_counter() - t)

    res = {}
    with torch.no_grad():
        for kind in ("fastpath", "standard"):
            if kind == "standard":  # clear the flag the fast path requires: the plain module path
                for layer in m.enc.layers:
                    layer.activation_relu_or_gelu = 0
            m(batches[0])  # warm-up: one batch
            rates, t_end = [], time.perf_counter() + args.seconds
            while not rates or time.perf_counter() < t_end:
                rates.append(one_pass())
            res[kind] = statistics.median(rates)
            print(f"RESULT what=encoder threads={args.threads} kind={kind} passes={len(rates)} "
                  f"embeddings_per_s={res[kind]:.2f}", flush=True)
    print(f"RESULT what=encoder threads={args.threads} kind=best embeddings_per_s={max(res.values()):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["make", "generate", "encoder"])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", default="")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--len", type=int, default=128)
    args = ap.parse_args()
    {"make": make, "generate": generate, "encoder": encoder}[args.mode](args)


if __name__ == "__main__":
    main()
