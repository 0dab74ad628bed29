#!/usr/bin/python3
"""q4km_rounding.py — how far float rounding moves a Q4_K_M Llama's logits
when every matrix product quantizes its activations to Q8_K (issue 40):
why greedy ids of tfm gguf and llama.cpp part on the peers bench's file.

A numpy forward of a GGUF Llama (llama.cpp's graph: RMSNorm, rope of
adjacent pairs, causal attention, SwiGLU; the file's rms eps and rope base)
with the blocks dequantized by ggml itself (GGML_LIB's dequantize_row_q4_K /
_q6_K: exact), run four ways that differ in float rounding only:

  f64 / f32   everything between the products in float64, or in float32
              (numpy's summation order)
  Q8_K / none each product's activations quantized per row to ggml's Q8_K
              first (quantize_row_q8_K_ref: what tfm and llama.cpp both do;
              the integer sums then taken exactly), or not quantized

and prints the logit differences f64 vs f32 with and without Q8_K, the
hidden state's relative difference after each layer and the share of Q8_K
integers that differ per product.  Without Q8_K the two roundings stay
~1e-5 logits apart; with it a few integers rounded the other way in layer 0
grow, layer by layer, to the same ~0.1 rms logits that separate tfm and
llama.cpp.  With --llama (llama_probs.mjs's JSON lines, --top 32000) and
--tfm (lines "step id probability" of tfm_next_tokens(k => 32000), teacher
forced on llama.cpp's ids) and --probs LABEL=FILE (more of either) it
prints every pair's distance as well; --no-forward only those (run.sh);
--above P with them the same distances over the ids to which both give a
probability above P (1e-30: clear of float32's underflow, where one engine
prints 1.2e-38 and another 0), each step's log-probabilities centred over
those ids (f32_check.sh).

  GGML_LIB=.../libggml-base.so /usr/bin/python3 q4km_rounding.py \\
      model-Q4_K_M.gguf prompts.json [--llama probs.jsonl] [--tfm tfm.txt]
      [--probs LABEL=FILE ...] [--no-forward] [--above P]

Without --llama the forward runs the generation prompt plus 63 ids of its
own greedy path (float64, Q8_K).  Needs numpy; about 1.5 GB of memory at
Llama-134M's size.
"""
import argparse
import ctypes
import json
import os
import struct

import numpy as np

f32 = np.float32
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.join(HERE, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so")
BLOCK_BYTES = {12: 144, 14: 210}          # ggml_type: Q4_K, Q6_K (256 values a block)


def read_gguf(path, lib):
    """(metadata, {name: float32 array}) of a GGUF v3 file of F32, Q4_K and Q6_K tensors"""
    b = open(path, "rb").read()
    o = 4
    if b[:4] != b"GGUF":
        raise SystemExit("%s: not a GGUF file" % path)

    def u(fmt):
        nonlocal o
        v = struct.unpack_from("<" + fmt, b, o)[0]
        o += struct.calcsize("<" + fmt)
        return v

    def s():
        nonlocal o
        n = u("Q")
        o += n
        return b[o - n:o].decode()

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            tt, n = u("I"), u("Q")
            return [val(tt) for _ in range(n)]
        return u(scalar[t])

    u("I")
    nt, nkv = u("Q"), u("Q")
    kv = {}
    for _ in range(nkv):
        k = s()
        kv[k] = val(u("I"))
    infos = []
    for _ in range(nt):
        name = s()
        dims = [u("Q") for _ in range(u("I"))]
        infos.append((name, dims, u("I"), u("Q")))
    al = kv.get("general.alignment", 32)
    start = (o + al - 1) // al * al
    out = {}
    for name, dims, t, off in infos:
        n = int(np.prod(dims))
        if t == 0:
            a = np.frombuffer(b, np.float32, n, start + off).copy()
        elif t in BLOCK_BYTES:
            nb = n // 256 * BLOCK_BYTES[t]
            raw = ctypes.create_string_buffer(b[start + off:start + off + nb], nb)
            a = np.zeros(n, np.float32)
            fn = lib.dequantize_row_q4_K if t == 12 else lib.dequantize_row_q6_K
            fn(raw, a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(n))
        else:
            raise SystemExit("%s: ggml type %d not handled" % (name, t))
        out[name] = a.reshape(dims[::-1]).astype(np.float64)
    return kv, out


def q8_K(x, ints):
    """rows (T, K) as ggml's quantize_row_q8_K_ref gives them back (q·d, float64); the q appended to ints"""
    x = x.astype(f32)
    xb = x.reshape(x.shape[0], -1, 256)
    i = np.abs(xb).argmax(-1)                       # the first of the largest magnitude
    mx = np.take_along_axis(xb, i[..., None], -1)[..., 0]
    with np.errstate(divide="ignore"):
        iscale = (f32(-127.0) / mx).astype(f32)
    q = np.minimum(127, np.rint((iscale[..., None] * xb).astype(f32)))     # ties to even
    d = (f32(1.0) / iscale).astype(f32)
    ints.append(q)
    out = q.astype(np.float64) * d[..., None].astype(np.float64)
    out[mx == 0] = 0
    return out.reshape(x.shape)


def forward(kv, W, ids, dt, quantize):
    """logits (T, vocab) and the hidden state after each layer; dt the float type between products"""
    D = kv["llama.embedding_length"]
    H = kv["llama.attention.head_count"]
    KVH = kv.get("llama.attention.head_count_kv", H)
    eps = kv["llama.attention.layer_norm_rms_epsilon"]
    base = kv.get("llama.rope.freq_base", 10000.0)
    hd, n = D // H, len(ids)
    ints, hidden = [], []

    def lin(h, name):
        a = q8_K(h, ints) if quantize else h.astype(np.float64)
        return (a @ W[name].T).astype(dt)

    ang = np.arange(n)[:, None] * (base ** (-np.arange(0, hd, 2) / hd))[None, :]
    cos, sin = np.cos(ang).astype(dt)[:, None, :], np.sin(ang).astype(dt)[:, None, :]

    def rope(x):                                    # llama.cpp's LLAMA_ROPE_TYPE_NORM: pairs (2i, 2i+1)
        y = np.empty_like(x)
        y[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        y[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return y

    def rms(x, w):
        ms = (x * x).mean(-1, keepdims=True, dtype=np.float64)
        return x * (1.0 / np.sqrt(ms + eps)).astype(dt) * w.astype(dt)

    x = W["token_embd.weight"][ids].astype(dt)
    causal = np.tril(np.ones((n, n), bool))
    for layer in range(kv["llama.block_count"]):
        p = "blk.%d." % layer
        h = rms(x, W[p + "attn_norm.weight"])
        q = rope(lin(h, p + "attn_q.weight").reshape(n, H, hd))
        k = np.repeat(rope(lin(h, p + "attn_k.weight").reshape(n, KVH, hd)), H // KVH, 1)
        v = np.repeat(lin(h, p + "attn_v.weight").reshape(n, KVH, hd), H // KVH, 1)
        a = np.einsum("qhd,khd->hqk", q, k) * dt(1.0 / np.sqrt(hd))
        a = np.exp(np.where(causal, a, -np.inf) - a.max(-1, keepdims=True))
        a = a / a.sum(-1, keepdims=True)
        x = x + lin(np.einsum("hqk,khd->qhd", a, v).reshape(n, D), p + "attn_output.weight")
        h = rms(x, W[p + "ffn_norm.weight"])
        g, up = lin(h, p + "ffn_gate.weight"), lin(h, p + "ffn_up.weight")
        x = x + lin(g / (dt(1) + np.exp(-g)) * up, p + "ffn_down.weight")
        hidden.append(x.astype(np.float64))
    x = rms(x, W["output_norm.weight"])
    return lin(x, "output.weight" if "output.weight" in W else "token_embd.weight").astype(np.float64), hidden, ints


def centred_logp(logits):
    """log-probabilities less their mean: comparable across engines that print probabilities"""
    l = logits - logits.max(1, keepdims=True)
    l = l - np.log(np.exp(l).sum(1, keepdims=True))
    return l - l.mean(1, keepdims=True)


def from_probs(P):
    """centred log-probabilities of printed probabilities, floored at
    float32's smallest normal number: below it one engine prints
    subnormals and another zeros (flushed), a difference of up to 16 in
    the log that says nothing of the model (a wide vocabulary with logits
    of std ~16, as the real shapes' tied heads, has thousands there)"""
    L = np.log(np.maximum(P, np.finfo(np.float32).tiny))
    return L - L.mean(1, keepdims=True)


def distance(name, a, b):
    d = np.abs(a - b)
    print("  %-44s top-1 equal %2d/%d   max |Δ| %.3g   per-step max (median) %.3g   rms %.3g"
          % (name, (a.argmax(1) == b.argmax(1)).sum(), a.shape[0], d.max(), np.median(d.max(1)), np.sqrt((d * d).mean())))


def distance_above(name, a, b, floor):
    """distance() over the ids both give a probability above floor, each
    step's log-probabilities centred over them"""
    mx, ss, n, top, per = 0.0, 0.0, 0, 0, []
    for x, y in zip(a, b):
        m = (x > floor) & (y > floor)
        d = np.log(x[m]) - np.log(y[m])
        d -= d.mean()
        per.append(np.abs(d).max())
        mx, ss, n, top = max(mx, per[-1]), ss + (d * d).sum(), n + m.sum(), top + (x.argmax() == y.argmax())
    print("  %-44s top-1 equal %2d/%d   max |Δ| %.3g   per-step max (median) %.3g   rms %.3g   (p > %g in both: %d ids a step, the median)"
          % (name, top, a.shape[0], mx, np.median(per), np.sqrt(ss / n), floor,
             np.median([((x > floor) & (y > floor)).sum() for x, y in zip(a, b)])))


def read_probs(path, V, N):
    """(ids, N x V probabilities) of llama_probs.mjs's JSON lines, or (None, ...) of "step id probability" lines"""
    P = np.zeros((N, V))
    with open(path) as f:
        first = f.readline()
        f.seek(0)
        if first.startswith("{"):
            rows = [json.loads(line) for line in f][:N]
            for s, r in enumerate(rows):
                for i, p in r["top"]:
                    P[s, i] = p
            return [r["id"] for r in rows], P[:len(rows)]
        for line in f:
            s, i, p = line.split()
            if int(s) < N:
                P[int(s), int(i)] = float(p)
    return None, P


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("prompts")
    ap.add_argument("--llama", help="llama_probs.mjs output (--top 32000): the ids to teacher-force on")
    ap.add_argument("--tfm", help="tfm_next_tokens(k => 32000) lines: step id probability")
    ap.add_argument("--probs", action="append", default=[], metavar="LABEL=FILE",
                    help="more distributions on the same ids (either format), compared pairwise")
    ap.add_argument("--no-forward", action="store_true", help="only the distances of the given distributions")
    ap.add_argument("--above", type=float, help="with --no-forward: also the distances over the ids both give p > ABOVE")
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    kv, W = (None, None) if args.no_forward else read_gguf(args.gguf, ctypes.CDLL(os.environ.get("GGML_LIB", DEFAULT_LIB)))
    V = W["token_embd.weight"].shape[0] if W else 0
    prompt = json.load(open(args.prompts))["generate"]
    N = args.tokens
    named = {}
    given = ([("llama.cpp", args.llama)] if args.llama else []) + ([("tfm gguf", args.tfm)] if args.tfm else []) \
        + [tuple(x.split("=", 1)) for x in args.probs]
    ids = None
    raw = {}
    for label, path in given:
        if not V:
            with open(path) as f:
                first = f.readline()
            V = len(json.loads(first)["top"]) if first.startswith("{") else 32000
        i, P = read_probs(path, V, N)
        if ids is None and i is not None:
            ids = i
        named[label] = from_probs(P)
        if args.above is not None:
            raw[label] = P
    if args.no_forward:
        keys = list(named)
        n = min(v.shape[0] for v in named.values())
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                distance("%s vs %s" % (keys[i], keys[j]), named[keys[i]][:n], named[keys[j]][:n])
        if args.above is not None:
            for i in range(len(keys)):
                for j in range(i + 1, len(keys)):
                    distance_above("%s vs %s" % (keys[i], keys[j]), raw[keys[i]][:n], raw[keys[j]][:n], args.above)
        return
    if ids is None:
        ids = []
        for _ in range(N):
            ids.append(int(forward(kv, W, prompt + ids, np.float64, True)[0][-1].argmax()))
    N = len(ids)
    seq = prompt + ids[:N - 1]
    P = len(prompt) - 1                            # the logits of the N steps: positions P .. P+N-1
    runs = {}
    for quantize in (False, True):
        for dt in (np.float64, np.float32):
            runs[(quantize, dt)] = forward(kv, W, seq, dt, quantize)
    print("teacher-forced on %d steps (prompt %d ids), logits centred; float64 vs float32 between the products:" % (N, len(prompt)))
    for quantize in (False, True):
        (la, ha, qa), (lb, hb, qb) = runs[(quantize, np.float64)], runs[(quantize, np.float32)]
        print("activations %s:" % ("quantized to Q8_K" if quantize else "not quantized"))
        distance("f64 vs f32", centred_logp(la[P:]), centred_logp(lb[P:]))
        print("  hidden state, relative difference after each layer: "
              + " ".join("%.1e" % (np.linalg.norm(x - y) / np.linalg.norm(x)) for x, y in zip(ha, hb)))
        if quantize:
            share = [(x != y).mean() for x, y in zip(qa, qb)]
            per = len(share) // len(ha)
            print("  Q8_K integers that differ, per layer (the largest share of its %d products): " % per
                  + " ".join("%.1e" % max(share[i:i + per]) for i in range(0, len(share), per)))
            print("  Q8_K integers that differ in layer 0's products: " + " ".join("%d" % (x != y).sum() for x, y in zip(qa[:per], qb[:per]))
                  + " of " + " ".join("%d" % x.size for x in qa[:per]))
    named = dict({"numpy f64, Q8_K": centred_logp(runs[(True, np.float64)][0][P:]),
                  "numpy f32, Q8_K": centred_logp(runs[(True, np.float32)][0][P:])}, **{k: v[:N] for k, v in named.items()})
    if len(named) > 2:
        print("every pair, teacher-forced on the same ids:")
        keys = list(named)
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                distance("%s vs %s" % (keys[i], keys[j]), named[keys[i]], named[keys[j]])


if __name__ == "__main__":
    main()
