#!/usr/bin/python3
"""make_models.py — bench/peers' checkpoints, random with fixed seeds, each
written once for tfm and once for its peer:

  make_models.py llama OUT [--size full|small]
      a Llama (LlamaForCausalLM; full: hidden 768, 12 layers, 12 heads,
      vocab 32000, intermediate 2048, "Llama 134M"; small: hidden 256,
      4 layers, 4 heads, vocab 32000, intermediate 704) as Hugging Face
      saves it (OUT/hf: config.json, model.safetensors F32, a Llama-2-style
      SentencePiece BPE tokenizer.json) and as GGUF files for llama.cpp
      (OUT/model-F32.gguf, -Q8_0.gguf, -Q4_0.gguf: the same weights, q/k
      rows permuted for ggml's rope, the tokenizer in the metadata);
      OUT/prompts.json: the prompt ids (generation, prefill) and 8 text
      prompts (tfm's batched generation)
  make_models.py llama OUT --size 3b|1b|qwen3-0.6b
      a real model's shape as one GGUF file only, OUT/model-Q4_K_M.gguf
      (ggml's quantizer; tied embeddings: no output.weight, the embedding
      Q6_K as llama.cpp makes a tied model), written one tensor at a time
      (no float32 copy of the whole model), and OUT/prompts.json:
      3b: Llama-3.2-3B (hidden 3072, 28 layers, 24 heads, 8 key/value
      heads, intermediate 8192, vocab 128256; about 2 GB), 1b:
      Llama-3.2-1B (hidden 2048, 16 layers, 32 heads, 8 key/value heads,
      intermediate 8192, vocab 128256; about 0.8 GB), both rope theta
      500000 with Llama 3's rope scaling (factor 32) as the real
      config.json has it (rope_freqs.weight); qwen3-0.6b: Qwen3-0.6B
      (architecture qwen3: hidden 1024, 28 layers, 16 heads of 128, 8
      key/value heads, intermediate 3072, vocab 151936, rope theta 1e6,
      RMSNorm eps 1e-6, per-head q/k norms; about 0.5 GB); the tokenizer
      is the bench's SentencePiece kind at the real vocabulary's size (not
      Llama 3's or Qwen's BPE), the family's published chat template as
      tokenizer.chat_template
  make_models.py llama OUT --size 3b|1b|qwen3-0.6b --f32 [--layers N]
      the same file with every matrix F32 (the same seeded weights),
      OUT/model-F32.gguf: tfm fp32 against llama.cpp F32 on the big shapes'
      graphs (issue 40; 1b 4.9 GB, qwen3-0.6b 2.4 GB); --layers N (either
      kind) writes the first N layers only (the same weights as the full
      file's first N; the final norm's differ): bisecting by depth
  make_models.py encoder OUT [--size full|small]
      a MiniLM-shaped BertModel (hidden 384, 6 layers (small: 2), 12 heads,
      intermediate 1536, vocab 30522, 512 positions) as Hugging Face saves
      it (OUT/hf: config.json, model.safetensors, a WordPiece
      tokenizer.json) and exported to ONNX (OUT/model.onnx, torch.onnx.export
      of the same weights: input_ids [batch, length] -> the embedding
      [batch, 384], the mean over non-pad positions of the last hidden
      states, as tfm_embed pools a base BertModel) and its dynamic int8
      quantization (OUT/model-int8.onnx, onnx_int8.py: quantize_dynamic's
      graph); OUT/texts.json: 32 texts of 126 words that tokenize to 128
      ids ([CLS] + one id a word + [SEP]) and those ids;
      OUT/reference.json: their embeddings by the same forward in float64

Needs PyTorch (/usr/bin/python3, Debian's python3-torch) and numpy; no
transformers, safetensors, tokenizers or onnx packages.
"""
import argparse
import itertools
import json
import math
import os
import sys

import numpy as np
import torch

from onnx_int8 import quantize_model
from gguf_writer import TOK_BYTE, TOK_CONTROL, TOK_NORMAL, TOK_UNKNOWN, big_q4_k_m_gguf, llama_gguf

# the tokenizer.json writers and the safetensors writer of tfm's test references
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "reference"))
from hf_bert_reference import SPECIALS, bert_tokenizer_json, write_safetensors  # noqa: E402
from hf_llama_reference import SP, spm_tokenizer_json  # noqa: E402

LLAMA = {"full": dict(hidden=768, layers=12, heads=12, ff=2048),
         "small": dict(hidden=256, layers=4, heads=4, ff=704)}
VOCAB = 32000
GEN_PROMPT, PREFILL_PROMPT = 16, 128


# ---- Llama -------------------------------------------------------------------

def llama_tokenizer(rng, VOCAB=VOCAB, longest=8):
    """Llama 2's kind: <unk> <s> </s>, the 256 byte pieces, characters, then
    pieces made by merges of two earlier pieces (at most longest
    characters), up to VOCAB ids"""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    chars = SP + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-:;()\""
    for c in chars:
        vocab[c] = len(vocab)
    pieces = list(chars)
    merges = []
    while len(vocab) < VOCAB:
        a = pieces[rng.randint(len(pieces))]
        b = pieces[rng.randint(len(pieces))]
        if len(a) + len(b) > longest or SP in b or (a + b) in vocab:
            continue
        vocab[a + b] = len(vocab)
        pieces.append(a + b)
        merges.append((a, b))
    tok = spm_tokenizer_json(vocab, merges)
    by_id = sorted(vocab, key=vocab.get)
    types = [TOK_UNKNOWN, TOK_CONTROL, TOK_CONTROL] + [TOK_BYTE] * 256 + [TOK_NORMAL] * (VOCAB - 259)
    # SentencePiece scores: higher merges first; the merged pieces in merge order
    scores = [0.0] * 259 + [float(-i) for i in range(VOCAB - 259)]
    return tok, by_id, scores, types


def make_llama(out, size):
    s = LLAMA[size]
    D, L, H, FF = s["hidden"], s["layers"], s["heads"], s["ff"]
    rng = np.random.RandomState(20261126)
    g = torch.Generator().manual_seed(20261126)
    os.makedirs(out + "/hf", exist_ok=True)
    tok, pieces, scores, types = llama_tokenizer(rng)

    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape, generator=g) * std + mean

    # scales chosen so that attention is not uniform and the logits spread
    # (std ~3): greedy ids are compared across engines
    param("model.embed_tokens.weight", (VOCAB, D), 0.5)
    for i in range(L):
        p = "model.layers.%d." % i
        param(p + "input_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "self_attn.q_proj.weight", (D, D), 0.05)
        param(p + "self_attn.k_proj.weight", (D, D), 0.05)
        param(p + "self_attn.v_proj.weight", (D, D), 0.05)
        param(p + "self_attn.o_proj.weight", (D, D), 0.03)
        param(p + "post_attention_layernorm.weight", (D,), 0.1, 1.0)
        param(p + "mlp.gate_proj.weight", (FF, D), 0.05)
        param(p + "mlp.up_proj.weight", (FF, D), 0.05)
        param(p + "mlp.down_proj.weight", (D, FF), 0.03)
    param("model.norm.weight", (D,), 0.1, 1.0)
    param("lm_head.weight", (VOCAB, D), 0.1)
    # <unk>, <s> and </s> are never predicted (greedy decoding runs the full
    # number of tokens on both engines): their head rows are zero, a logit of
    # 0 where the largest is several units above it
    sd["lm_head.weight"][0:3] = 0.0

    cfg = {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": D,
        "initializer_range": 0.02, "intermediate_size": FF, "max_position_embeddings": 2048,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": H, "num_hidden_layers": L,
        "num_key_value_heads": H, "pretraining_tp": 1, "rms_norm_eps": 1e-5, "rope_scaling": None,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": "4.44.0", "use_cache": True, "vocab_size": VOCAB,
    }
    with open(out + "/hf/config.json", "w") as fh:
        json.dump(cfg, fh, indent=2)
    with open(out + "/hf/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)
    write_safetensors(out + "/hf/model.safetensors", sd)   # F32, in name order
    npsd = {k: v.numpy() for k, v in sd.items()}
    for kind in ("F32", "Q8_0", "Q4_0"):
        llama_gguf("%s/model-%s.gguf" % (out, kind), cfg, npsd, pieces, scores, types, kind)
    # llama.cpp's default mix, by ggml's own quantizer (node-llama-cpp's libggml-base)
    # (its K-quants take rows of whole 256-value blocks: not --size small's ff 704)
    if os.environ.get("GGML_LIB") and D % 256 == 0 and FF % 256 == 0:
        llama_gguf("%s/model-Q4_K_M.gguf" % out, cfg, npsd, pieces, scores, types, "Q4_K_M",
                   os.environ["GGML_LIB"])
    prng = np.random.RandomState(7)
    prompts = {"generate": [1] + [int(x) for x in prng.randint(259, VOCAB, GEN_PROMPT - 1)],
               "prefill": [1] + [int(x) for x in prng.randint(259, VOCAB, PREFILL_PROMPT - 1)],
               # tfm's batched generation takes text: 8 prompts of 10 lower-case words
               "batch": [" ".join("".join(prng.choice(list("abcdefghijklmnopqrstuvwxyz"), prng.randint(2, 8)))
                                  for _ in range(10)) for _ in range(8)]}
    with open(out + "/prompts.json", "w") as fh:
        json.dump(prompts, fh)
    n = sum(v.numel() for v in sd.values())
    print("llama %s: hidden %d, %d layers, %d heads, ff %d, vocab %d: %d parameters -> %s"
          % (size, D, L, H, FF, VOCAB, n, out))


def prompts_json(out, vocab):
    prng = np.random.RandomState(7)
    prompts = {"generate": [1] + [int(x) for x in prng.randint(259, vocab, GEN_PROMPT - 1)],
               "prefill": [1] + [int(x) for x in prng.randint(259, vocab, PREFILL_PROMPT - 1)],
               # tfm's batched generation takes text: 8 prompts of 10 lower-case words
               "batch": [" ".join("".join(prng.choice(list("abcdefghijklmnopqrstuvwxyz"), prng.randint(2, 8)))
                                  for _ in range(10)) for _ in range(8)]}
    with open(out + "/prompts.json", "w") as fh:
        json.dump(prompts, fh)


# the big shapes (--size 3b, 1b, qwen3-0.6b): the real models' config.json
# values; one Q4_K_M file each, written one tensor at a time
BIG = {
    "3b": dict(arch="llama", label="Llama-3.2-3B", hidden_size=3072, num_hidden_layers=28, num_attention_heads=24,
               num_key_value_heads=8, intermediate_size=8192, vocab_size=128256),
    "1b": dict(arch="llama", label="Llama-3.2-1B", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=8192, vocab_size=128256),
    "qwen3-0.6b": dict(arch="qwen3", label="Qwen3-0.6B", hidden_size=1024, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, intermediate_size=3072,
                       vocab_size=151936, max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       rope_scaling=None),
}
LLAMA3 = {"max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
          "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                           "original_max_position_embeddings": 8192, "rope_type": "llama3"}}


def chat_template(arch):
    """the published chat template of the shape's family, from tfm's test
    fixtures: Llama 3's (test/fixtures/chat/templates.json) or Qwen3's
    (test/fixtures/chat/hf_context_cases.tsv)"""
    fx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "fixtures", "chat")
    if arch == "llama":
        with open(os.path.join(fx, "templates.json"), encoding="utf-8") as fh:
            return json.load(fh)["llama3"]
    for line in open(os.path.join(fx, "hf_context_cases.tsv"), encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "T" and f[1] == "hf_qwen3":
            return bytes.fromhex(f[2]).decode("utf-8")
    raise KeyError("hf_qwen3")


def make_big(out, size, f32=False, layers=None):
    """a real model's shape (BIG[size]) at Q4_K_M (f32: F32), one tensor
    at a time (numpy's generator: PyTorch's randn would take minutes for
    3.2e9 values), the family's chat template in the metadata; layers: the
    first that many layers only"""
    s = dict(BIG[size])
    arch, label = s.pop("arch"), s.pop("label")
    if layers:
        s["num_hidden_layers"] = layers
    D, L, H, KV, FF, V = (s["hidden_size"], s["num_hidden_layers"], s["num_attention_heads"],
                          s["num_key_value_heads"], s["intermediate_size"], s["vocab_size"])
    hd = s.get("head_dim") or D // H
    if not f32 and not os.environ.get("GGML_LIB"):
        sys.exit("--size %s writes only the Q4_K_M file: GGML_LIB (ggml's libggml-base) is needed" % size)
    os.makedirs(out, exist_ok=True)
    tok_rng = np.random.RandomState(20261126)
    # pieces of up to 16 characters: of up to 8, random merges run dry long
    # before 128256 (most pairs are then too long)
    _, pieces, scores, types = llama_tokenizer(tok_rng, V, 16)
    cfg = dict(LLAMA3, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
    cfg.update(s)
    # the stds of the 134M model's, scaled by sqrt(768 / inputs): the same
    # spread of activations at every width; the tied head's logits spread
    # widely (the embedding's 0.5), so greedy ids are clear-cut
    std = {"embed_tokens": 0.5, "q_proj": 0.05, "k_proj": 0.05, "v_proj": 0.05, "o_proj": 0.03,
           "gate_proj": 0.05, "up_proj": 0.05, "down_proj": 0.03}
    seed = [20261202]

    def make(name, shape):
        seed[0] += 1
        g = np.random.default_rng(seed[0])
        if len(shape) == 1:   # a norm's weight (qwen3's q/k norms too): 1 + 0.1 N(0, 1)
            return (1.0 + 0.1 * g.standard_normal(shape, dtype=np.float32)).astype(np.float32)
        kind = name.split(".")[-2]
        s = std[kind] * (1.0 if kind == "embed_tokens" else math.sqrt(768 / shape[1]) * (2048 / 768) ** 0.5
                         if kind == "down_proj" else math.sqrt(768 / shape[1]))
        w = g.standard_normal(shape, dtype=np.float32)
        w *= np.float32(s)
        if kind == "embed_tokens":
            # <unk>, <s>, </s> never predicted (the tied head's rows zero):
            # greedy decoding runs the full number of tokens on both engines
            w[0:3] = 0.0
        return w

    kind = "F32" if f32 else "Q4_K_M"
    big_q4_k_m_gguf("%s/model-%s.gguf" % (out, kind), "tfm-bench-peers-%s-%s" % ("llama3" if arch == "llama" else arch, size),
                    cfg, make, pieces, scores, types, os.environ.get("GGML_LIB"), arch,
                    [("tokenizer.chat_template", chat_template(arch))], kind)
    prompts_json(out, V)
    n = V * D + L * (2 * D + D * H * hd * 2 + 2 * D * KV * hd + 3 * D * FF + (2 * hd if arch == "qwen3" else 0)) + D
    print("%s %s: hidden %d, %d layers, %d heads of %d (%d key/value), ff %d, vocab %d, tied: %d parameters -> %s"
          % (label, arch, D, L, H, hd, KV, FF, V, n, out))


# ---- the MiniLM-shaped encoder ---------------------------------------------------

ENC = {"full": 6, "small": 2}
E_D, E_H, E_FF, E_V, E_P, E_EPS = 384, 12, 1536, 30522, 512, 1e-12


def wordpiece_vocab():
    """specials, punctuation, letters, ##letters, digits, then every
    lower-case word of 2, 3, 4 ... letters in order, up to E_V ids: each word
    of the vocabulary is one id"""
    toks = list(SPECIALS) + list(".,!?'\"-:;()")
    letters = "abcdefghijklmnopqrstuvwxyz"
    toks += list(letters) + ["##" + c for c in letters] + [str(i) for i in range(10)]
    words = []
    for n in itertools.count(2):
        for w in itertools.product(letters, repeat=n):
            toks.append("".join(w))
            words.append(toks[-1])
            if len(toks) == E_V:
                return {t: i for i, t in enumerate(toks)}, words


class Encoder(torch.nn.Module):
    """BertModel's forward (post-LN, erf GELU, token type 0) and mean pooling
    over the non-pad positions, from the HF state dict"""

    def __init__(self, sd, layers, pad):
        super().__init__()
        self.sd, self.layers, self.pad = sd, layers, pad
        for k, v in sd.items():
            self.register_buffer(k.replace(".", "__"), v)

    def w(self, name):
        return getattr(self, name.replace(".", "__"))

    def lin(self, x, name):
        return x @ self.w(name + ".weight").t() + self.w(name + ".bias")

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (E_D,), self.w(name + ".weight"), self.w(name + ".bias"), E_EPS)

    def forward(self, ids):
        B, T = ids.shape
        s = E_D // E_H
        mask = (ids != self.pad)
        x = (self.w("embeddings.word_embeddings.weight")[ids]
             + self.w("embeddings.position_embeddings.weight")[:T].unsqueeze(0)
             + self.w("embeddings.token_type_embeddings.weight")[0])
        x = self.ln(x, "embeddings.LayerNorm")
        bias = (~mask).float()[:, None, None, :] * -1e9
        for i in range(self.layers):
            p = "encoder.layer.%d." % i

            def split(t):
                return t.view(B, T, E_H, s).transpose(1, 2)
            q = split(self.lin(x, p + "attention.self.query"))
            k = split(self.lin(x, p + "attention.self.key"))
            v = split(self.lin(x, p + "attention.self.value"))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(s) + bias, -1) @ v
            a = a.transpose(1, 2).reshape(B, T, E_D)
            x = self.ln(x + self.lin(a, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = torch.nn.functional.gelu(self.lin(x, p + "intermediate.dense"))
            x = self.ln(x + self.lin(h, p + "output.dense"), p + "output.LayerNorm")
        m = mask.float().unsqueeze(-1)
        return (x * m).sum(1) / m.sum(1)


def make_encoder(out, size):
    layers = ENC[size]
    g = torch.Generator().manual_seed(20261127)
    os.makedirs(out + "/hf", exist_ok=True)
    vocab, words = wordpiece_vocab()
    sd = {}

    def param(name, shape, std, mean=0.0):
        sd[name] = torch.randn(*shape, generator=g) * std + mean

    param("embeddings.word_embeddings.weight", (E_V, E_D), 0.5)
    param("embeddings.position_embeddings.weight", (E_P, E_D), 0.5)
    param("embeddings.token_type_embeddings.weight", (2, E_D), 0.5)
    param("embeddings.LayerNorm.weight", (E_D,), 0.1, 1.0)
    param("embeddings.LayerNorm.bias", (E_D,), 0.1)
    for i in range(layers):
        p = "encoder.layer.%d." % i
        for n, o, k, std in (("attention.self.query", E_D, E_D, 0.08), ("attention.self.key", E_D, E_D, 0.08),
                             ("attention.self.value", E_D, E_D, 0.05), ("attention.output.dense", E_D, E_D, 0.05),
                             ("intermediate.dense", E_FF, E_D, 0.05), ("output.dense", E_D, E_FF, 0.03)):
            param(p + n + ".weight", (o, k), std)
            param(p + n + ".bias", (o,), 0.02)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            param(p + n + ".weight", (E_D,), 0.1, 1.0)
            param(p + n + ".bias", (E_D,), 0.1)
    param("pooler.dense.weight", (E_D, E_D), 0.05)
    param("pooler.dense.bias", (E_D,), 0.02)
    cfg = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": E_V, "hidden_size": E_D,
           "num_hidden_layers": layers, "num_attention_heads": E_H, "intermediate_size": E_FF,
           "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
           "max_position_embeddings": E_P, "type_vocab_size": 2, "initializer_range": 0.02,
           "layer_norm_eps": E_EPS, "pad_token_id": 0, "position_embedding_type": "absolute",
           "use_cache": True, "classifier_dropout": None, "torch_dtype": "float32",
           "transformers_version": "4.40.0"}
    with open(out + "/hf/config.json", "w") as fh:
        json.dump(cfg, fh, indent=2)
    with open(out + "/hf/tokenizer.json", "w", encoding="utf-8") as fh:
        json.dump(bert_tokenizer_json(vocab), fh)
    write_safetensors(out + "/hf/model.safetensors", sd)

    rng = np.random.RandomState(11)
    texts, ids = [], []
    for _ in range(32):
        ws = [words[j] for j in rng.randint(0, len(words), 126)]
        texts.append(" ".join(ws))
        ids.append([vocab["[CLS]"]] + [vocab[w] for w in ws] + [vocab["[SEP]"]])
    model = Encoder({k: v for k, v in sd.items() if not k.startswith("pooler.")}, layers, 0).eval()
    x = torch.tensor(ids[:2])
    with torch.no_grad():
        ref = model(x)
    torch.onnx.export(model, (x,), out + "/model.onnx", input_names=["input_ids"], output_names=["embedding"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "length"}, "embedding": {0: "batch"}},
                      opset_version=14, do_constant_folding=True)
    with open(out + "/texts.json", "w") as fh:
        json.dump({"texts": texts, "ids": ids, "torch_embedding_0": ref[0].tolist()}, fh)
    # ONNX Runtime's dynamic int8 (quantize_dynamic's graph, by onnx_int8.py)
    with open(out + "/model.onnx", "rb") as fh:
        q, nq, _ = quantize_model(fh.read())
    with open(out + "/model-int8.onnx", "wb") as fh:
        fh.write(q)
    # the reference every engine's embeddings are measured against: the same
    # forward in float64, the 32 sequences at once (no padding: all 128 ids)
    with torch.no_grad():
        ref64 = model.double()(torch.tensor(ids))
    with open(out + "/reference.json", "w") as fh:
        json.dump({"float64": ref64.tolist()}, fh)
    n = sum(v.numel() for v in sd.values())
    print("encoder %s: hidden %d, %d layers, %d heads, ff %d, vocab %d: %d parameters -> %s"
          % (size, E_D, layers, E_H, E_FF, E_V, n, out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["llama", "encoder"])
    ap.add_argument("out")
    ap.add_argument("--size", choices=["full", "small"] + list(BIG), default="full")
    ap.add_argument("--f32", action="store_true", help="--size 3b|1b|qwen3-0.6b: every matrix F32 (model-F32.gguf)")
    ap.add_argument("--layers", type=int, help="--size 3b|1b|qwen3-0.6b: the first N layers only")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.size in BIG:
        if a.what != "llama":
            sys.exit("--size %s is a decoder shape only" % a.size)
        make_big(a.out, a.size, a.f32, a.layers)
    elif a.f32 or a.layers:
        sys.exit("--f32 and --layers are for --size 3b, 1b or qwen3-0.6b (the others write F32 already)")
    else:
        (make_llama if a.what == "llama" else make_encoder)(a.out, a.size)


if __name__ == "__main__":
    main()
