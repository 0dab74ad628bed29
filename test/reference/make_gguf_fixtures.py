#!/usr/bin/python3
"""make_gguf_fixtures.py — tiny llama GGUF files of every type tfm imports,
for test/unit/test_gguf.c and test/regress/sql/import_gguf.sql.

Writes into test/fixtures/gguf/:
  llama_f32.gguf, llama_f16.gguf, llama_bf16.gguf: test/fixtures/hf_llama's
    weights (hidden 48, 2 layers) with its tokenizer in the metadata
    (tokenizer.ggml.model "llama": pieces, scores, token types);
  q/model.safetensors + q/config.json: a second random Llama (hidden 256,
    1 layer, 4 heads, 2 kv heads, tied embeddings, the same vocabulary),
    stored in BF16, whose rows are whole blocks of 256 (what Q4_K and Q6_K
    need);
  llama_q8_0.gguf, llama_q4_0.gguf, llama_q4_k.gguf, llama_q6_k.gguf: that
    model with every matrix in the type (norms in F32);
  llama3_tok.gguf: a tiny random Llama (hidden 16) whose metadata holds
    test/fixtures/tokenizer/hf/llama3.json as llama.cpp's converter writes a
    byte-level BPE (tokenizer.ggml.model "gpt2", pre "llama-bpe": tokens in
    GPT-2's byte mapping, added tokens as their text with type 3
    (control), merges "a b");
  llama3_rope.gguf: test/fixtures/hf_llama3 (Llama 3.2's kind: "llama3"
    rope_scaling, tied head) with rope_freqs.weight as llama.cpp's
    converter computes it, and llama.rope.scaling.original_context_length
    (the fixture's 32; the converter writes none for Llama 3's 8192);
  qwen3_f32.gguf: test/fixtures/hf_qwen3 as llama.cpp's converter writes a
    Qwen3ForCausalLM (qwen3.* metadata with key_length, q and k rows not
    permuted, attn_q_norm / attn_k_norm);
  gpt2_f32.gguf, gpt2_q8_0.gguf: test/fixtures/hf_gpt2 as llama.cpp's
    converter writes a GPT2LMHeadModel (gpt2.* metadata, the Conv1D
    weights transposed to (out, in), tokenizer "gpt2" with pre "gpt-2");
    the F32 file without output.weight (tied, as the checkpoint), the Q8_0
    one with it, as the converter repeats the tied head;
  reference.txt: per file and tensor, the FNV-1a 64 hash of the float32
    values this script's dequantization gives, in Hugging Face's layout
    (rows of q and k un-permuted): "file tensor hash n_values".

The scores of the "llama" tokenizer: a piece made by merge rank r scores
-(r + 1), other pieces -1e9 (they are never formed); <unk> is type 2
(unknown), <s> and </s> 3 (control), <0xNN> 6 (byte), others 1 (normal).

Q8_0 and Q4_0 as ggml's reference quantizers (bench/peers/gguf_writer.py).
Q4_K and Q6_K follow ggml's block layouts (ggml-quants.c: block_q4_K with
fp16 d and dmin, 12 bytes of 6-bit scales and mins packed as
get_scale_min_k4 reads them, 128 bytes of nibbles; block_q6_K with 128
bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, fp16 d) with
a plain quantizer (per sub-block min/max, scales rounded to 6 or 8 bits),
not ggml's iterative search: the layout is what is tested, and the
dequantization below is ggml's dequantize_row_q4_K / q6_K, in float32 in
its order.

Run: /usr/bin/python3 test/reference/make_gguf_fixtures.py (from the repository root).
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "peers"))
import gguf_writer as gw  # noqa: E402

OUT = "test/fixtures/gguf"
F32, F16, Q4_0, Q8_0, Q4_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 14, 30
f32 = np.float32


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        assert v["dtype"] == "F32"
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(v["shape"]).copy()
    return out


def write_safetensors_bf16(path, sd):
    hdr, off, blobs = {}, 0, []
    for k in sorted(sd):
        b = bf16_bits(sd[k]).tobytes()
        hdr[k] = {"dtype": "BF16", "shape": list(sd[k].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bf16_bits(x):
    """round to nearest even, as torch"""
    u = np.ascontiguousarray(x, dtype=f32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(f32)


def f16(x):
    return np.asarray(x, dtype=f32).astype("<f2")


# ---- the block formats: quantizers and ggml's dequantizers -----------------
def deq_q8_0(raw):
    b = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "i1", 32)])
    return (b["qs"].astype(f32) * b["d"].astype(f32)[:, None]).reshape(-1)


def deq_q4_0(raw):
    b = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "u1", 16)])
    lo = (b["qs"] & 0xF).astype(np.int32) - 8
    hi = (b["qs"] >> 4).astype(np.int32) - 8
    q = np.concatenate([lo, hi], axis=1).astype(f32)
    return (q * b["d"].astype(f32)[:, None]).reshape(-1)


Q4K = [("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)]
Q6K = [("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")]


def pack_scales_k4(sc, mn):
    """8 6-bit scales and mins into 12 bytes, as get_scale_min_k4 reads them"""
    q = np.zeros(12, dtype=np.uint8)
    for j in range(8):
        if j < 4:
            q[j] = sc[j]
            q[j + 4] = mn[j]
        else:
            q[j + 4] = (sc[j] & 0xF) | ((mn[j] & 0xF) << 4)
            q[j - 4] |= (sc[j] >> 4) << 6
            q[j] |= (mn[j] >> 4) << 6
    return q


def scale_min_k4(j, q):
    if j < 4:
        return int(q[j] & 63), int(q[j + 4] & 63)
    return (int(q[j + 4] & 0xF) | (int(q[j - 4] >> 6) << 4),
            int(q[j + 4] >> 4) | (int(q[j] >> 6) << 4))


def quantize_q4_k(x):
    b = x.astype(f32).reshape(-1, 256)
    out = np.zeros(b.shape[0], dtype=Q4K)
    for i, blk in enumerate(b):
        sub = blk.reshape(8, 32)
        mins = np.minimum(sub.min(axis=1), 0)      # value = d·q - m, m >= 0
        scales = (sub.max(axis=1) - mins) / 15
        d = f32(scales.max() / 63) if scales.max() > 0 else f32(0)
        dmin = f32(-mins.min() / 63) if mins.min() < 0 else f32(0)
        d16, dm16 = f16(d), f16(dmin)
        dd, dm = f32(d16), f32(dm16)
        sc = np.clip(np.rint(scales / dd), 0, 63).astype(np.uint8) if dd > 0 else np.zeros(8, np.uint8)
        mn = np.clip(np.rint(-mins / dm), 0, 63).astype(np.uint8) if dm > 0 else np.zeros(8, np.uint8)
        L = np.zeros(256, dtype=np.uint8)
        for j in range(8):
            s = dd * f32(sc[j])
            m = dm * f32(mn[j])
            if s > 0:
                L[32 * j:32 * j + 32] = np.clip(np.rint((sub[j] + m) / s), 0, 15)
        qs = np.zeros(128, dtype=np.uint8)
        for j in range(4):      # 64 values per 32 bytes: low nibbles then high
            qs[32 * j:32 * j + 32] = L[64 * j:64 * j + 32] | (L[64 * j + 32:64 * j + 64] << 4)
        out[i] = (d16, dm16, pack_scales_k4(sc, mn), qs)
    return out.tobytes()


def deq_q4_k(raw):
    b = np.frombuffer(raw, dtype=Q4K)
    y = []
    for blk in b:
        d, dmin = f32(blk["d"]), f32(blk["dmin"])
        q = blk["qs"]
        for j in range(4):
            s1, m1 = scale_min_k4(2 * j, blk["scales"])
            s2, m2 = scale_min_k4(2 * j + 1, blk["scales"])
            d1, mm1 = f32(d * f32(s1)), f32(dmin * f32(m1))
            d2, mm2 = f32(d * f32(s2)), f32(dmin * f32(m2))
            qq = q[32 * j:32 * j + 32]
            y.append((d1 * (qq & 0xF).astype(f32)) - mm1)
            y.append((d2 * (qq >> 4).astype(f32)) - mm2)
    return np.concatenate(y).astype(f32)


def quantize_q6_k(x):
    b = x.astype(f32).reshape(-1, 256)
    out = np.zeros(b.shape[0], dtype=Q6K)
    for i, blk in enumerate(b):
        sub = blk.reshape(16, 16)
        amax = np.abs(sub).max(axis=1)
        scales = amax / 31
        d = f32(scales.max() / 127) if scales.max() > 0 else f32(0)
        d16 = f16(d)
        dd = f32(d16)
        sc = np.clip(np.rint(scales / dd), -128, 127).astype(np.int8) if dd > 0 else np.zeros(16, np.int8)
        L = np.full(256, 32, dtype=np.uint8)
        for j in range(16):
            s = dd * f32(sc[j])
            if s > 0:
                L[16 * j:16 * j + 16] = np.clip(np.rint(sub[j] / s), -32, 31).astype(np.int32) + 32
        ql = np.zeros(128, dtype=np.uint8)
        qh = np.zeros(64, dtype=np.uint8)
        for n in range(2):
            Ln = L[128 * n:128 * n + 128]
            for l in range(32):
                q1, q2, q3, q4 = Ln[l], Ln[l + 32], Ln[l + 64], Ln[l + 96]
                ql[64 * n + l] = (q1 & 0xF) | ((q3 & 0xF) << 4)
                ql[64 * n + l + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4)
                qh[32 * n + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
        out[i] = (ql, qh, sc, d16)
    return out.tobytes()


def deq_q6_k(raw):
    b = np.frombuffer(raw, dtype=Q6K)
    y = np.zeros((b.shape[0], 256), dtype=f32)
    for i, blk in enumerate(b):
        d = f32(blk["d"])
        for n in range(2):
            ql = blk["ql"][64 * n:64 * n + 64].astype(np.int32)
            qh = blk["qh"][32 * n:32 * n + 32].astype(np.int32)
            sc = blk["scales"][8 * n:8 * n + 8]
            for l in range(32):
                s = l // 16
                q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32
                q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32
                q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32
                q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32
                for off, q, k in ((0, q1, 0), (32, q2, 2), (64, q3, 4), (96, q4, 6)):
                    y[i, 128 * n + l + off] = f32(f32(d * f32(sc[s + k])) * f32(q))
    return y.reshape(-1)


def encode(kind, w):
    """(ggml type, bytes, dequantized float32 values) of a float32 matrix"""
    w = np.ascontiguousarray(w, dtype=f32)
    if kind == F32:
        return F32, w.astype("<f4").tobytes(), w.reshape(-1)
    if kind == F16:
        h = w.astype("<f2")
        return F16, h.tobytes(), h.astype(f32).reshape(-1)
    if kind == BF16:
        b = bf16_bits(w)
        return BF16, b.tobytes(), from_bf16(b).reshape(-1)
    q, deq = {Q8_0: (gw.quantize_q8_0, deq_q8_0), Q4_0: (gw.quantize_q4_0, deq_q4_0),
              Q4_K: (quantize_q4_k, deq_q4_k), Q6_K: (quantize_q6_k, deq_q6_k)}[kind]
    raw = q(w)
    return kind, raw, deq(raw)


def unpermute(w, n_head):
    rows = w.shape[0]
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def fnv(values):
    h = 0xcbf29ce484222325
    for byte in np.ascontiguousarray(values, dtype="<f4").tobytes():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def tokenizer_meta(tok):
    vocab = tok["model"]["vocab"]
    pieces = [None] * len(vocab)
    for p, i in vocab.items():
        pieces[i] = p
    rank = {}
    for r, m in enumerate(tok["model"]["merges"]):
        a, b = m.split(" ") if isinstance(m, str) else m
        rank.setdefault(a + b, r)
    scores, types = [], []
    for i, p in enumerate(pieces):
        scores.append(float(-(rank[p] + 1)) if p in rank else -1e9)
        if p == "<unk>":
            types.append(2)
        elif p in ("<s>", "</s>"):
            types.append(3)
        elif p.startswith("<0x") and len(p) == 6:
            types.append(6)
        else:
            types.append(1)
    return [("tokenizer.ggml.model", "llama"),
            ("tokenizer.ggml.tokens", (gw.T_STRING, pieces)),
            ("tokenizer.ggml.scores", (gw.T_FLOAT32, scores)),
            ("tokenizer.ggml.token_type", (gw.T_INT32, types)),
            ("tokenizer.ggml.unknown_token_id", 0),
            ("tokenizer.ggml.bos_token_id", 1),
            ("tokenizer.ggml.eos_token_id", 2),
            ("tokenizer.ggml.add_bos_token", True)]


def gpt2_tokenizer_meta(tok):
    vocab = dict(tok["model"]["vocab"])
    types = {}
    for a in tok["added_tokens"]:
        vocab[a["content"]] = a["id"]
        types[a["id"]] = 3
    n = max(vocab.values()) + 1
    pieces = [None] * n
    for p, i in vocab.items():
        pieces[i] = p
    assert all(p is not None for p in pieces)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    return [("tokenizer.ggml.model", "gpt2"),
            ("tokenizer.ggml.pre", "llama-bpe"),
            ("tokenizer.ggml.tokens", (gw.T_STRING, pieces)),
            ("tokenizer.ggml.token_type", (gw.T_INT32, [types.get(i, 1) for i in range(n)])),
            ("tokenizer.ggml.merges", (gw.T_STRING, merges)),
            ("tokenizer.ggml.bos_token_id", 561),
            ("tokenizer.ggml.eos_token_id", 562),
            ("tokenizer.ggml.add_bos_token", True)], n


def gpt2_file(path, cfg, sd, kind, ref, with_output):
    name = os.path.basename(path)
    tok = json.load(open("test/fixtures/hf_gpt2/tokenizer.json"))
    tmeta, n = gpt2_tokenizer_meta(tok)
    tmeta = [(k, v) for k, v in tmeta if not k.startswith(("tokenizer.ggml.pre", "tokenizer.ggml.bos",
                                                           "tokenizer.ggml.eos", "tokenizer.ggml.add_bos"))]
    tmeta += [("tokenizer.ggml.pre", "gpt-2"), ("tokenizer.ggml.bos_token_id", 319),
              ("tokenizer.ggml.eos_token_id", 319)]
    d = cfg["n_embd"]
    meta = [("general.architecture", "gpt2"), ("general.name", "tfm-test-gpt2"),
            ("gpt2.block_count", cfg["n_layer"]), ("gpt2.context_length", cfg["n_ctx"]),
            ("gpt2.embedding_length", d), ("gpt2.feed_forward_length", 4 * d),
            ("gpt2.attention.head_count", cfg["n_head"]),
            ("gpt2.attention.layer_norm_epsilon", float(cfg["layer_norm_epsilon"]))] + tmeta
    tensors = []

    def put(gname, w, conv1d=False):
        hf = w
        w = w.T.copy() if conv1d else w
        if w.ndim == 2 and w.shape[1] % 32 == 0 and kind != F32:
            t, raw, deq = encode(kind, w)
        else:
            t, raw, deq = encode(F32, w)
        deq = deq.reshape(w.shape)
        tensors.append((gname, t, list(reversed(w.shape)), raw))
        ref.append("%s %s %016x %d" % (name, gname, fnv(deq.T if conv1d else deq), hf.size))

    put("token_embd.weight", sd["transformer.wte.weight"])
    put("position_embd.weight", sd["transformer.wpe.weight"])
    for i in range(cfg["n_layer"]):
        p, b = "transformer.h.%d." % i, "blk.%d." % i
        for hf, g in (("ln_1", "attn_norm"), ("ln_2", "ffn_norm")):
            put(b + g + ".weight", sd[p + hf + ".weight"])
            put(b + g + ".bias", sd[p + hf + ".bias"])
        for hf, g in (("attn.c_attn", "attn_qkv"), ("attn.c_proj", "attn_output"),
                      ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")):
            put(b + g + ".weight", sd[p + hf + ".weight"], conv1d=True)
            put(b + g + ".bias", sd[p + hf + ".bias"])
    put("output_norm.weight", sd["transformer.ln_f.weight"])
    put("output_norm.bias", sd["transformer.ln_f.bias"])
    if with_output:
        put("output.weight", sd["transformer.wte.weight"])
    gw.write_gguf(path, meta, tensors)


def llama3_rope_freqs(cfg):
    """rope_freqs.weight as llama.cpp's convert_hf_to_gguf.py writes it for a
    "llama3" rope_scaling: per frequency the divisor 1, factor, or
    1 / ((1 − smooth) / factor + smooth), computed in float64 from float32
    frequencies (its loop over a float32 tensor)"""
    rs, base = cfg["rope_scaling"], cfg["rope_theta"]
    dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (f32(base) ** (np.arange(0, dim, 2).astype(f32) / f32(dim)))
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    out = []
    for freq in freqs.astype(f32):
        wavelen = 2 * np.pi / float(freq)
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=f32)


def llama_file(path, cfg, sd, kind, tok_meta, ref, arch="llama"):
    """arch "llama": q and k rows permuted for ggml's paired rope, as the
    converter's LlamaModel does; "qwen3" (Qwen3Model): rows as they are
    (NEOX rope), the head's width in key_length/value_length, q/k norms"""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    name = os.path.basename(path)
    meta = [("general.architecture", arch), ("general.name", "tfm-test"),
            ("general.alignment", 32),
            (arch + ".context_length", cfg["max_position_embeddings"]),
            (arch + ".embedding_length", cfg["hidden_size"]),
            (arch + ".block_count", cfg["num_hidden_layers"]),
            (arch + ".feed_forward_length", cfg["intermediate_size"]),
            (arch + ".rope.dimension_count", hd),
            (arch + ".rope.freq_base", float(cfg["rope_theta"])),
            (arch + ".attention.head_count", H),
            (arch + ".attention.head_count_kv", KV),
            (arch + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"]))] + tok_meta
    if arch == "qwen3":
        meta += [("qwen3.attention.key_length", hd), ("qwen3.attention.value_length", hd)]
        H = KV = None  # no permutation
    if cfg.get("rope_scaling"):
        # the key llama.cpp reads for it (8192, Llama 3's, when absent)
        meta.append(("llama.rope.scaling.original_context_length",
                     cfg["rope_scaling"]["original_max_position_embeddings"]))
    tensors = []

    def mat(gname, w, heads=None):
        k = kind(gname) if callable(kind) else kind    # a type per tensor (make_gguf_q4km.py)
        t, raw, deq = encode(k, gw.permute_rope(w, heads) if heads else w)
        deq = deq.reshape(w.shape)
        if heads:
            deq = unpermute(deq, heads)
        tensors.append((gname, t, [w.shape[1], w.shape[0]], raw))
        ref.append("%s %s %016x %d" % (name, gname, fnv(deq), deq.size))

    def vec(gname, w):
        tensors.append((gname, F32, [w.shape[0]], np.asarray(w, dtype="<f4").tobytes()))
        ref.append("%s %s %016x %d" % (name, gname, fnv(w), w.size))

    mat("token_embd.weight", sd["model.embed_tokens.weight"])
    if cfg.get("rope_scaling"):
        vec("rope_freqs.weight", llama3_rope_freqs(cfg))
    for i in range(cfg["num_hidden_layers"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        vec(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        mat(b + "attn_q.weight", sd[p + "self_attn.q_proj.weight"], H)
        mat(b + "attn_k.weight", sd[p + "self_attn.k_proj.weight"], KV)
        mat(b + "attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        if p + "self_attn.q_norm.weight" in sd:
            vec(b + "attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
            vec(b + "attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
        mat(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        vec(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        mat(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        mat(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        mat(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    vec("output_norm.weight", sd["model.norm.weight"])
    if "lm_head.weight" in sd:
        mat("output.weight", sd["lm_head.weight"])
    gw.write_gguf(path, meta, tensors)


def main():
    os.makedirs(OUT + "/q", exist_ok=True)
    tok = json.load(open("test/fixtures/hf_llama/tokenizer.json"))
    tmeta = tokenizer_meta(tok)
    cfg = json.load(open("test/fixtures/hf_llama/config.json"))
    sd = read_safetensors("test/fixtures/hf_llama/model.safetensors")
    ref = []
    for kind, fname in ((F32, "llama_f32.gguf"), (F16, "llama_f16.gguf"), (BF16, "llama_bf16.gguf")):
        llama_file(os.path.join(OUT, fname), cfg, sd, kind, tmeta, ref)

    # the block-quantized twin: hidden 256, rows of whole super-blocks
    rng = np.random.default_rng(2026)
    qcfg = dict(cfg, hidden_size=256, intermediate_size=256, num_hidden_layers=1,
                num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    d, f, V, kvd = 256, 256, cfg["vocab_size"], 128
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,),
              "model.layers.0.input_layernorm.weight": (d,),
              "model.layers.0.post_attention_layernorm.weight": (d,),
              "model.layers.0.self_attn.q_proj.weight": (d, d),
              "model.layers.0.self_attn.k_proj.weight": (kvd, d),
              "model.layers.0.self_attn.v_proj.weight": (kvd, d),
              "model.layers.0.self_attn.o_proj.weight": (d, d),
              "model.layers.0.mlp.gate_proj.weight": (f, d),
              "model.layers.0.mlp.up_proj.weight": (f, d),
              "model.layers.0.mlp.down_proj.weight": (d, f)}
    qsd = {}
    for k in sorted(shapes):
        s = shapes[k]
        w = 1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.06 * rng.standard_normal(s)
        qsd[k] = from_bf16(bf16_bits(w.astype(f32))).reshape(s)
    write_safetensors_bf16(OUT + "/q/model.safetensors", qsd)
    with open(OUT + "/q/config.json", "w") as fh:
        json.dump(qcfg, fh, indent=2)
    for kind, fname in ((Q8_0, "llama_q8_0.gguf"), (Q4_0, "llama_q4_0.gguf"),
                        (Q4_K, "llama_q4_k.gguf"), (Q6_K, "llama_q6_k.gguf")):
        llama_file(os.path.join(OUT, fname), qcfg, qsd, kind, tmeta, ref)
    # a byte-level BPE (Llama 3's kind) in the metadata of a tiny model
    l3 = json.load(open("test/fixtures/tokenizer/hf/llama3.json"))
    l3meta, n = gpt2_tokenizer_meta(l3)
    tcfg = dict(cfg, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=2, vocab_size=n,
                bos_token_id=561, eos_token_id=562)
    tsd = {}
    for k in sorted(shapes):
        s = tuple({256: 16, 128: 16, V: n}.get(x, x) for x in shapes[k])
        tsd[k] = (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.2 * rng.standard_normal(s)).astype(f32)
    tsd["lm_head.weight"] = (0.2 * rng.standard_normal((n, 16))).astype(f32)
    llama_file(os.path.join(OUT, "llama3_tok.gguf"), tcfg, tsd, F32, l3meta, ref)

    # Llama 3.2's kind: test/fixtures/hf_llama3 with its rope_freqs.weight
    # (llama.cpp's converter writes no other scaling metadata for "llama3")
    l3cfg = json.load(open("test/fixtures/hf_llama3/config.json"))
    l3sd = read_safetensors("test/fixtures/hf_llama3/model.safetensors")
    llama_file(os.path.join(OUT, "llama3_rope.gguf"), dict(l3cfg, max_position_embeddings=8192),
               l3sd, F32, tmeta, ref)

    # Qwen3: test/fixtures/hf_qwen3 as the converter's Qwen3Model writes it
    q3cfg = json.load(open("test/fixtures/hf_qwen3/config.json"))
    q3sd = read_safetensors("test/fixtures/hf_qwen3/model.safetensors")
    llama_file(os.path.join(OUT, "qwen3_f32.gguf"), dict(q3cfg, max_position_embeddings=8192),
               q3sd, F32, tmeta, ref, arch="qwen3")

    # GPT-2, as llama.cpp converts a GPT2LMHeadModel
    gcfg = json.load(open("test/fixtures/hf_gpt2/config.json"))
    gsd = read_safetensors("test/fixtures/hf_gpt2/model.safetensors")
    gpt2_file(os.path.join(OUT, "gpt2_f32.gguf"), gcfg, gsd, F32, ref, False)
    gpt2_file(os.path.join(OUT, "gpt2_q8_0.gguf"), gcfg, gsd, Q8_0, ref, True)
    with open(OUT + "/reference.txt", "w") as fh:
        fh.write("\n".join(ref) + "\n")


if __name__ == "__main__":
    main()
