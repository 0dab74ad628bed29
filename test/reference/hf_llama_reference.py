#!/usr/bin/python3
"""hf_llama_reference.py — a small random Llama (LlamaForCausalLM) as Hugging
Face saves it, its outputs, and a SentencePiece-style BPE tokenizer.json
with its reference ids, for tfm_import's Llama tests.

Written from the published LlamaModel description (no transformers, no
safetensors, no tokenizers package):
  x = embed_tokens[ids]
  per layer:  h = RMSNorm(x) (input_layernorm);  q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ
              q, k rotated (LlamaRotaryEmbedding + apply_rotary_pos_emb:
              inv_freq = 1/θ^(2i/s), cos/sin of cat(freqs, freqs),
              q·cos + rotate_half(q)·sin, rotate_half = cat(−x2, x1))
              k, v repeated for the query heads of each group (repeat_kv)
              causal softmax(q·kᵀ/√s)·v, then o_proj;  x = x + that
              h = RMSNorm(x) (post_attention_layernorm)
              x = x + down(silu(gate(h)) ⊙ up(h))
  x = RMSNorm(x) (model.norm);  logits = x·lm_headᵀ (untied here)
RMSNorm: w ⊙ x · rsqrt(mean(x²) + eps), in float32.  No biases.

The tokenizer is Llama 2's kind: model BPE with byte_fallback, "▁" for
spaces, normalizer Sequence[Prepend "▁", Replace " " → "▁"], no
pre-tokenizer, <unk>/<s>/</s> at ids 0-2, <0x00>..<0xFF> at ids 3-258,
then single characters and merged pieces; post-processor adds <s>.  Its
merges are learned here from a small text; the encoder below follows
tokenizers' BPE (lowest merge rank first, leftmost first; a character not
in the vocabulary falls back to its UTF-8 bytes as <0xNN> tokens).

Writes into test/fixtures/hf_llama/:
  config.json, model.safetensors (F32), tokenizer.json,
  reference.json: per input the ids, the log-softmax of the logits (every
  position of the 5-token input, the last position of the others), the sum of next-token log-probabilities and the greedy
  continuation (10 tokens or </s>); per text its ids (no <s>) and the
  decoded text.

Run: /usr/bin/python3 test/reference/hf_llama_reference.py (from the repository root).
"""
import json
import math
import os
import struct
from collections import Counter

import torch

torch.manual_seed(20241124)
torch.set_num_threads(1)
OUT = "test/fixtures/hf_llama"

D, LAYERS, HEADS, KV_HEADS, FF, MAX_POS = 48, 2, 4, 2, 128, 128
EPS, THETA = 1e-6, 10000.0
SP = "\u2581"

CORPUS = """the cat sat on the mat. the dog sat on the log. a rat and a cat ran.
Hello world! Hello there, the world is wide and the sea is deep.
In the beginning the sea was calm, then the wind came and the sea rose.
"""
# characters with a piece of their own (the rest fall back to bytes)
CHARS = SP + "abcdefghijklmnoprstuvwyABCDEFGHIJKLMNOPRSTUVWY0123456789.,!?'-:;()\"é"
N_MERGES = 48

TEXTS = [
    "Hello world",
    "the cat sat on the mat.",
    "The sea rose, then the wind came!",
    "  two leading spaces and  a double",
    "quiz: xyz",
    "naïve café — 東京 🙂",
    "line\nbreak\ttab",
    "<s> is plain text here",
    "",
    " ",
    "Hello",
]


def normalize(text):
    if text == "":
        return ""
    return (SP + text).replace(" ", SP)


def learn_merges():
    words = Counter()
    for w in normalize(CORPUS.replace("\n", " ")).split(SP):
        if w:
            words[tuple(SP + w)] += 1
    merges = []
    for _ in range(N_MERGES):
        pairs = Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                if a in CHARS_OR_PIECES and b in CHARS_OR_PIECES:
                    pairs[(a, b)] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        CHARS_OR_PIECES.add(best[0] + best[1])
        new = Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] += n
        words = new
    return merges


CHARS_OR_PIECES = set(CHARS)


def spm_tokenizer_json(vocab, merges):
    """tokenizer.json of Llama 2's kind for a vocabulary (piece -> id, with
    <unk>, <s>, </s> at 0-2) and its merges (pairs of pieces)"""
    special = lambda i, c: {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SP},
            {"type": "Replace", "pattern": {"String": " "}, "content": SP}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


def make_tokenizer():
    merges = learn_merges()
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in CHARS:
        vocab[c] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    return spm_tokenizer_json(vocab, merges), vocab, merges


def encode(text, vocab, merges):
    """tokenizers' BPE over the normalized text as one word, byte fallback"""
    rank = {m: i for i, m in enumerate(merges)}
    syms = []
    for ch in normalize(text):
        if ch in vocab:
            syms.append(ch)
        else:
            syms.extend("<0x%02X>" % b for b in ch.encode("utf-8"))
    while True:
        best = None
        for i in range(len(syms) - 1):
            r = rank.get((syms[i], syms[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    return [vocab[s] for s in syms]


def decode(ids, inv):
    """Replace ▁ → ' ', ByteFallback, Fuse, Strip one leading space; specials skipped"""
    out, pending = [], b""
    for i in ids:
        p = inv[i]
        if p in ("<unk>", "<s>", "</s>"):
            continue
        if p.startswith("<0x") and len(p) == 6:
            pending += bytes([int(p[3:5], 16)])
            continue
        if pending:
            out.append(pending.decode("utf-8", errors="replace"))
            pending = b""
        out.append(p.replace(SP, " "))
    if pending:
        out.append(pending.decode("utf-8", errors="replace"))
    s = "".join(out)
    return s[1:] if s.startswith(" ") else s


def rms(x, w):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + EPS))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(sd, ids):
    """logits (T, V) of one sequence"""
    T = len(ids)
    s = D // HEADS
    inv_freq = 1.0 / (THETA ** (torch.arange(0, s, 2, dtype=torch.int64).float() / s))
    pos = torch.arange(T).float()
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = sd["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = rms(x, sd[p + "input_layernorm.weight"])
        q = (h @ sd[p + "self_attn.q_proj.weight"].T + sd.get(p + "self_attn.q_proj.bias", 0.0)).view(T, HEADS, s).transpose(0, 1)
        k = (h @ sd[p + "self_attn.k_proj.weight"].T + sd.get(p + "self_attn.k_proj.bias", 0.0)).view(T, KV_HEADS, s).transpose(0, 1)
        v = (h @ sd[p + "self_attn.v_proj.weight"].T + sd.get(p + "self_attn.v_proj.bias", 0.0)).view(T, KV_HEADS, s).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = HEADS // KV_HEADS
        k = k[:, None].expand(KV_HEADS, rep, T, s).reshape(HEADS, T, s)
        v = v[:, None].expand(KV_HEADS, rep, T, s).reshape(HEADS, T, s)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(s)
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        o = (a @ v).transpose(0, 1).reshape(T, D)
        x = x + o @ sd[p + "self_attn.o_proj.weight"].T
        h = rms(x, sd[p + "post_attention_layernorm.weight"])
        g = h @ sd[p + "mlp.gate_proj.weight"].T
        u = h @ sd[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ sd[p + "mlp.down_proj.weight"].T
    x = rms(x, sd["model.norm.weight"])
    return x @ sd["lm_head.weight"].T


def reference_cases(sd, inputs):
    """per input: its ids, log-probabilities (every position of a 5-token
    input, else the last), score and greedy continuation (10 tokens or
    </s>); and the smallest top-2 logit gap of a greedy step"""
    cases, gap = [], float("inf")
    with torch.no_grad():
        for ids in inputs:
            logits = forward(sd, ids)
            logp = logits.log_softmax(-1)
            score = float(sum(logp[t, ids[t + 1]] for t in range(len(ids) - 1)))
            seq, gen = list(ids), []
            for _ in range(10):
                last = forward(sd, seq)[-1]
                top2 = last.topk(2).values
                gap = min(gap, float(top2[0] - top2[1]))
                nxt = int(last.argmax())
                if nxt == 2:
                    break
                gen.append(nxt)
                seq.append(nxt)
            cases.append({
                "ids": ids,
                # every position's log-probabilities for the 5-token input, else the last's
                "logprobs": [[round(float(v), 7) for v in row] for row in (logp if len(ids) == 5 else logp[-1:])],
                "score": score,
                "greedy": gen,
            })
    return cases, gap


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, float32 tensor) in file order"""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
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


def write_fixture(out, config, tok, vocab, merges, sd, head=None, window=None):
    """A family's fixture (hf_phi3/gemma/gemma2_reference.py) in out:
    config.json, tokenizer.json, model.safetensors (sd, sorted by name) and
    reference.json over the Qwen2 fixture's five inputs (the last the text
    "the cat sat on the mat." after <s>) through the module's forward as the
    caller set it; head: the tied head's weights, if lm_head.weight is not
    in sd; window: every input and its continuation must fit in it"""
    V = len(vocab)
    with open(f"{out}/config.json", "w") as fh:
        json.dump(config, fh, indent=2)
        fh.write("\n")
    with open(f"{out}/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)
    write_safetensors(f"{out}/model.safetensors", [(n, sd[n]) for n in sorted(sd)], {"format": "pt"})
    inputs = [[1], [1, 300, 270, 40, 280], encode("the cat sat on the mat.", vocab, merges),
              [1] + [(7 * i * i + 3) % V for i in range(40)],
              [1] + encode("the cat sat on the mat.", vocab, merges)]
    assert window is None or max(len(i) for i in inputs) + 10 <= window
    ref = {"vocab_size": V, "bos_token_id": 1, "eos_token_id": 2}
    ref["cases"], gap = reference_cases(sd if head is None else dict(sd, **{"lm_head.weight": head}), inputs)
    with open(f"{out}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    total = sum(os.path.getsize(f"{out}/{n}") for n in os.listdir(out))
    print(f"vocab {V}, fixture {total} bytes in {out}; smallest top-2 logit gap of a greedy step {gap:.4g}")
    for c in ref["cases"]:
        print(c["ids"][:8], "greedy", c["greedy"], "score %.6f" % c["score"])


def main():
    os.makedirs(OUT, exist_ok=True)
    tok, vocab, merges = make_tokenizer()
    V = len(vocab)
    s = D // HEADS
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape) * std + mean

    param("model.embed_tokens.weight", (V, D), 0.5)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        param(p + "input_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "self_attn.q_proj.weight", (HEADS * s, D), 0.2)
        param(p + "self_attn.k_proj.weight", (KV_HEADS * s, D), 0.2)
        param(p + "self_attn.v_proj.weight", (KV_HEADS * s, D), 0.15)
        param(p + "self_attn.o_proj.weight", (D, HEADS * s), 0.1)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_proj.weight", (FF, D), 0.15)
        param(p + "mlp.up_proj.weight", (FF, D), 0.15)
        param(p + "mlp.down_proj.weight", (D, FF), 0.1)
    param("model.norm.weight", (D,), 0.1, 1.0)
    param("lm_head.weight", (V, D), 0.3)

    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": D,
        "initializer_range": 0.02,
        "intermediate_size": FF,
        "max_position_embeddings": MAX_POS,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pretraining_tp": 1,
        "rms_norm_eps": EPS,
        "rope_scaling": None,
        "rope_theta": THETA,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "transformers_version": "4.44.0",
        "use_cache": True,
        "vocab_size": V,
    }
    with open(f"{OUT}/config.json", "w") as fh:
        json.dump(config, fh, indent=2)
        fh.write("\n")
    with open(f"{OUT}/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)
    write_safetensors(f"{OUT}/model.safetensors", [(n, sd[n]) for n in sorted(sd)], {"format": "pt"})

    inv = {i: p for p, i in vocab.items()}
    inputs = [[1], [1, 300, 270, 40, 280], encode("the cat sat on the mat.", vocab, merges),
              [1] + [(7 * i * i + 3) % V for i in range(40)]]
    ref = {"vocab_size": V, "bos_token_id": 1, "eos_token_id": 2, "cases": [], "texts": []}
    ref["cases"], gap = reference_cases(sd, inputs)
    for t in TEXTS:
        ids = encode(t, vocab, merges)
        ref["texts"].append({"text": t, "ids": ids, "decoded": decode(ids, inv)})
    with open(f"{OUT}/reference.json", "w") as fh:
        json.dump(ref, fh, ensure_ascii=False)
        fh.write("\n")
    total = sum(os.path.getsize(f"{OUT}/{n}") for n in os.listdir(OUT))
    print(f"vocab {V}, {len(merges)} merges, fixture {total} bytes in {OUT}; "
          f"smallest top-2 logit gap of a greedy step {gap:.4g}")
    for t in ref["texts"]:
        print(repr(t["text"]), t["ids"], repr(t["decoded"]))


if __name__ == "__main__":
    main()
