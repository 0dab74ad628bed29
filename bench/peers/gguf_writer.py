"""gguf_writer.py — a minimal GGUF (version 3) writer for bench/peers: a
Llama checkpoint (HF tensor names, float32 numpy arrays) and its
SentencePiece-style tokenizer as llama.cpp reads them, in F32, Q8_0 or Q4_0.

Written from the GGUF specification (ggml's docs/gguf.md) and llama.cpp's
gguf-py / convert_hf_to_gguf.py:
  header   magic "GGUF", uint32 version 3, uint64 tensor count, uint64
           metadata count
  metadata key (uint64 length + UTF-8), uint32 value type, value; arrays:
           uint32 element type, uint64 count, elements
  tensors  name, uint32 n_dims, uint64 ne[n_dims] (innermost first: a
           PyTorch (out, in) matrix is ne = [in, out]), uint32 ggml type,
           uint64 offset from the start of the data section (aligned)
  data     after padding to general.alignment (32), each tensor aligned
Quantization as ggml's reference quantizers (quantize_row_q8_0_ref,
quantize_row_q4_0_ref, as gguf-py's quants.py spells them in numpy): blocks of 32 along a row; Q8_0 = fp16 scale
amax/127 + 32 int8 (round half away from zero); Q4_0 = fp16 scale
max/-8 (max: the value of largest magnitude, signed) + 16 bytes of 4-bit
values min(15, trunc(x/d + 8.5)), element j in the low nibble of byte j
and element j+16 in its high nibble.

The llama layout permutes the rows of q_proj and k_proj (HF's rotate_half
pairs dimension i with i + d/2 inside a head; ggml's rope pairs 2i with
2i+1), as convert_hf_to_gguf.py's LlamaModel.permute does.
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
ALIGN = 32
# metadata value types
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types
GGML_F32, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q6_K = 0, 2, 8, 12, 14
# general.file_type (llama_ftype): ALL_F32 0, MOSTLY_Q4_0 2, MOSTLY_Q8_0 7, MOSTLY_Q4_K_M 15
FILE_TYPE = {"F32": 0, "Q4_0": 2, "Q8_0": 7, "Q4_K_M": 15}
# tokenizer.ggml.token_type
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_BYTE = 1, 2, 3, 6


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(v):
    """(type, bytes) of a metadata value"""
    if isinstance(v, bool):
        return T_BOOL, struct.pack("<B", int(v))
    if isinstance(v, int):
        return T_UINT32, struct.pack("<I", v)
    if isinstance(v, float):
        return T_FLOAT32, struct.pack("<f", v)
    if isinstance(v, str):
        return T_STRING, _str(v)
    raise TypeError(type(v))


def _array(elem_type, items):
    out = struct.pack("<IQ", elem_type, len(items))
    if elem_type == T_STRING:
        return out + b"".join(_str(s) for s in items)
    if elem_type == T_FLOAT32:
        return out + np.asarray(items, dtype="<f4").tobytes()
    if elem_type == T_INT32:
        return out + np.asarray(items, dtype="<i4").tobytes()
    raise TypeError(elem_type)


def _round_away(v):
    """roundf: half away from zero (gguf-py's np_roundf, bit-exact with ggml's reference)"""
    a = np.abs(v)
    f = np.floor(a)
    return np.sign(v) * (f + np.floor(2 * (a - f)))


def quantize_q8_0(x):
    """x: float32 (rows, cols), cols % 32 == 0 -> bytes of Q8_0 blocks"""
    assert x.shape[-1] % 32 == 0, "a row must be whole blocks of 32"
    b = x.astype(np.float32).reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    d = amax / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = _round_away(b * inv[:, None]).astype(np.int8)
    out = np.empty(b.shape[0], dtype=[("d", "<f2"), ("qs", "i1", 32)])
    out["d"] = d.astype(np.float16)
    out["qs"] = q
    return out.tobytes()


def quantize_q4_0(x):
    """x: float32 (rows, cols), cols % 32 == 0 -> bytes of Q4_0 blocks"""
    assert x.shape[-1] % 32 == 0, "a row must be whole blocks of 32"
    b = x.astype(np.float32).reshape(-1, 32)
    mx = b[np.arange(b.shape[0]), np.abs(b).argmax(axis=1)]
    d = mx / -8.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    # the product in float64, as gguf-py does (ggml's C reference may fuse it)
    q = np.minimum(15, np.trunc(np.float64(b) * np.float64(inv[:, None]) + 8.5)).astype(np.uint8)
    out = np.empty(b.shape[0], dtype=[("d", "<f2"), ("qs", "u1", 16)])
    out["d"] = d.astype(np.float16)
    out["qs"] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def ggml_quantize(lib_path, ggml_type, x):
    """x (rows, n) quantized by ggml's own ggml_quantize_chunk (no importance
    matrix), from the libggml-base shipped with node-llama-cpp: the file's
    bytes"""
    import ctypes
    lib = ctypes.CDLL(lib_path)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    x = np.ascontiguousarray(x, dtype=np.float32)
    rows, n = x.shape
    per = {GGML_Q4_K: 144, GGML_Q6_K: 210}[ggml_type] * (n // 256)
    out = np.zeros(rows * per, dtype=np.uint8)
    got = lib.ggml_quantize_chunk(ggml_type, x.ctypes.data, out.ctypes.data, 0, rows, n, None)
    assert got == rows * per, (got, rows * per)
    return out.tobytes()


BLOCK = {GGML_Q4_K: (256, 144), GGML_Q6_K: (256, 210), GGML_Q8_0: (32, 34), GGML_Q4_0: (32, 18), GGML_F32: (1, 4)}


def q4_k_m_type(name, n_layers):
    """llama.cpp's llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M:
    output Q6_K; attn_v and ffn_down Q6_K in the layers use_more_bits picks
    (the first and last eighth, every third between); the rest Q4_K"""
    if name == "output.weight":
        return GGML_Q6_K
    # a tied head (no output.weight): the embedding takes output's type
    if name.endswith("attn_v.weight") or name.endswith("ffn_down.weight"):
        i, n = int(name.split(".")[1]), n_layers
        more = i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
        return GGML_Q6_K if more else GGML_Q4_K
    return GGML_Q4_K


def permute_rope(w, n_head):
    """HF q/k rows (heads x [first half, second half]) -> ggml's interleaved pairs"""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_gguf(path, metadata, tensors):
    """metadata: list of (key, value) or (key, (elem_type, list)) for arrays;
    tensors: list of (name, ggml_type, ne list, raw bytes)"""
    kv = b""
    for key, v in metadata:
        if isinstance(v, tuple):
            kv += _str(key) + struct.pack("<I", T_ARRAY) + _array(*v)
        else:
            t, raw = _value(v)
            kv += _str(key) + struct.pack("<I", t) + raw
    # raw: the bytes, or (their length, a function that makes them): a 3B
    # model is made one tensor at a time, never whole in memory
    def size(raw):
        return raw[0] if isinstance(raw, tuple) else len(raw)

    infos, off = b"", 0
    offsets = []
    for name, gtype, ne, raw in tensors:
        off = (off + ALIGN - 1) // ALIGN * ALIGN
        offsets.append(off)
        infos += _str(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        infos += struct.pack("<IQ", gtype, off)
        off += size(raw)
    head = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(metadata)) + kv + infos
    with open(path, "wb") as f:
        f.write(head)
        f.write(b"\0" * ((ALIGN - len(head) % ALIGN) % ALIGN))
        pos = 0
        for (name, gtype, ne, raw), o in zip(tensors, offsets):
            f.write(b"\0" * (o - pos))
            data = raw[1]() if isinstance(raw, tuple) else raw
            assert len(data) == size(raw), (name, len(data), size(raw))
            f.write(data)
            pos = o + len(data)


def llama_meta(name, kind, cfg, pieces, scores, types, arch="llama"):
    """the metadata of a llama-architecture file with the bench's tokenizer;
    arch "qwen3": the qwen3.* keys as convert_hf_to_gguf.py's Qwen3Model
    writes them (the head's width as attention.key_length / value_length,
    no rope.dimension_count)"""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    head = [
        (arch + ".vocab_size", cfg["vocab_size"]),
        (arch + ".context_length", cfg["max_position_embeddings"]),
        (arch + ".embedding_length", cfg["hidden_size"]),
        (arch + ".block_count", cfg["num_hidden_layers"]),
        (arch + ".feed_forward_length", cfg["intermediate_size"]),
        (arch + ".rope.dimension_count", hd),
        (arch + ".rope.freq_base", float(cfg["rope_theta"])),
        (arch + ".attention.head_count", H),
        (arch + ".attention.head_count_kv", KV),
        (arch + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"])),
    ]
    if arch == "qwen3":
        head = [kv for kv in head if kv[0] not in ("qwen3.vocab_size", "qwen3.rope.dimension_count")]
        head += [("qwen3.attention.key_length", hd), ("qwen3.attention.value_length", hd)]
    return [
        ("general.architecture", arch),
        ("general.name", name),
        ("general.alignment", ALIGN),
        ("general.file_type", FILE_TYPE[kind]),
    ] + head + [
        ("tokenizer.ggml.model", "llama"),
        ("tokenizer.ggml.tokens", (T_STRING, pieces)),
        ("tokenizer.ggml.scores", (T_FLOAT32, scores)),
        ("tokenizer.ggml.token_type", (T_INT32, types)),
        ("tokenizer.ggml.unknown_token_id", 0),
        ("tokenizer.ggml.bos_token_id", cfg["bos_token_id"]),
        ("tokenizer.ggml.eos_token_id", cfg["eos_token_id"]),
        ("tokenizer.ggml.add_bos_token", True),
        ("tokenizer.ggml.add_eos_token", False),
    ]


def llama_gguf(path, cfg, sd, pieces, scores, types, kind, ggml_lib=None):
    """cfg: the HF config dict; sd: HF name -> float32 numpy array;
    pieces/scores/types: the tokenizer by id; kind: F32, Q8_0 or Q4_0
    (every matrix in that type, norms in F32: a "pure" file), or Q4_K_M
    (llama.cpp's mix of Q4_K and Q6_K, quantized by ggml itself: ggml_lib
    the path of its libggml-base)"""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    meta = llama_meta("tfm-bench-peers-llama", kind, cfg, pieces, scores, types)

    def mat(name, w):
        w = np.ascontiguousarray(w, dtype=np.float32)
        ne = [w.shape[1], w.shape[0]]
        if kind == "Q8_0":
            return (name, GGML_Q8_0, ne, quantize_q8_0(w))
        if kind == "Q4_0":
            return (name, GGML_Q4_0, ne, quantize_q4_0(w))
        if kind == "Q4_K_M":
            t = q4_k_m_type(name, cfg["num_hidden_layers"])
            return (name, t, ne, ggml_quantize(ggml_lib, t, w))
        return (name, GGML_F32, ne, w.astype("<f4").tobytes())

    def vec(name, w):
        return (name, GGML_F32, [w.shape[0]], np.asarray(w, dtype="<f4").tobytes())

    t = [mat("token_embd.weight", sd["model.embed_tokens.weight"])]
    for i in range(cfg["num_hidden_layers"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        t.append(vec(b + "attn_norm.weight", sd[p + "input_layernorm.weight"]))
        t.append(mat(b + "attn_q.weight", permute_rope(sd[p + "self_attn.q_proj.weight"], H)))
        t.append(mat(b + "attn_k.weight", permute_rope(sd[p + "self_attn.k_proj.weight"], KV)))
        t.append(mat(b + "attn_v.weight", sd[p + "self_attn.v_proj.weight"]))
        t.append(mat(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"]))
        t.append(vec(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"]))
        t.append(mat(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"]))
        t.append(mat(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"]))
        t.append(mat(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"]))
    t.append(vec("output_norm.weight", sd["model.norm.weight"]))
    t.append(mat("output.weight", sd["lm_head.weight"]))
    write_gguf(path, meta, t)


def llama3_rope_factors(theta, head, rs):
    """rope_freqs.weight of a Llama 3.1/3.2 (rope_type llama3), as
    convert_hf_to_gguf.py's LlamaModel computes it: one divisor per rotated
    pair (1 for short wavelengths, factor for long ones, smoothed between)"""
    import math
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    out = []
    for i in range(0, head, 2):
        freq = 1.0 / (theta ** (np.float32(i) / head))
        wavelen = 2 * math.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def big_q4_k_m_gguf(path, name, cfg, make, pieces, scores, types, ggml_lib, arch="llama", extra_meta=(),
                    kind="Q4_K_M"):
    """A Llama 3.2- or Qwen3-shaped Q4_K_M file written one tensor at a
    time (kind "F32": the same tensors, every matrix F32, no ggml_lib
    needed): cfg the HF config (GQA, tie_word_embeddings: no output.weight,
    the embedding Q6_K as llama.cpp makes it then; llama: rope_scaling
    llama3 as rope_freqs.weight, the rows of q/k permuted for ggml's rope as
    in llama_gguf; qwen3: head_dim, rows as they are (NEOX rope), the
    per-head q/k norms blk.N.attn_q_norm / attn_k_norm); make(hf_name,
    shape) -> float32 numpy array, called once per tensor as it is written;
    extra_meta: more (key, value) pairs (tokenizer.chat_template)"""
    H, KV, L = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    D, FF, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    head = cfg.get("head_dim") or D // H
    qwen3 = arch == "qwen3"
    meta = llama_meta(name, kind, cfg, pieces, scores, types, arch) + list(extra_meta)

    def mat(name, hf, shape, t=None, perm=0):
        t = GGML_F32 if kind == "F32" else t or q4_k_m_type(name, L)
        per, nb = BLOCK[t]
        nbytes = shape[0] * shape[1] // per * nb

        def data():
            w = make(hf, shape)
            if perm and not qwen3:
                w = permute_rope(w, perm)
            return w.astype("<f4").tobytes() if t == GGML_F32 else ggml_quantize(ggml_lib, t, w)
        return (name, t, [shape[1], shape[0]], (nbytes, data))

    def vec(name, hf, n):
        return (name, GGML_F32, [n], (4 * n, lambda: np.asarray(make(hf, (n,)), dtype="<f4").tobytes()))

    t = [mat("token_embd.weight", "model.embed_tokens.weight", (V, D), GGML_Q6_K)]
    if cfg.get("rope_scaling"):
        rf = llama3_rope_factors(cfg["rope_theta"], head, cfg["rope_scaling"])
        t.append(("rope_freqs.weight", GGML_F32, [head // 2], (4 * (head // 2), lambda: rf.astype("<f4").tobytes())))
    for i in range(L):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        t.append(vec(b + "attn_norm.weight", p + "input_layernorm.weight", D))
        t.append(mat(b + "attn_q.weight", p + "self_attn.q_proj.weight", (H * head, D), perm=H))
        t.append(mat(b + "attn_k.weight", p + "self_attn.k_proj.weight", (KV * head, D), perm=KV))
        t.append(mat(b + "attn_v.weight", p + "self_attn.v_proj.weight", (KV * head, D)))
        if qwen3:
            t.append(vec(b + "attn_q_norm.weight", p + "self_attn.q_norm.weight", head))
            t.append(vec(b + "attn_k_norm.weight", p + "self_attn.k_norm.weight", head))
        t.append(mat(b + "attn_output.weight", p + "self_attn.o_proj.weight", (D, H * head)))
        t.append(vec(b + "ffn_norm.weight", p + "post_attention_layernorm.weight", D))
        t.append(mat(b + "ffn_gate.weight", p + "mlp.gate_proj.weight", (FF, D)))
        t.append(mat(b + "ffn_up.weight", p + "mlp.up_proj.weight", (FF, D)))
        t.append(mat(b + "ffn_down.weight", p + "mlp.down_proj.weight", (D, FF)))
    t.append(vec("output_norm.weight", "model.norm.weight", D))
    write_gguf(path, meta, t)
