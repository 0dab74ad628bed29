#!/usr/bin/python3
"""hf_bert_reference.py — small random BERT-family encoders (BertModel,
RobertaModel, DistilBertModel, each also as ...ForSequenceClassification)
as Hugging Face saves them, and their outputs, for tfm_import's tests.

Written from the published architectures (no transformers package):
post-LN encoder blocks; embeddings = word + position (+ token type 0) then
LayerNorm (eps from the config; DistilBERT's is fixed at 1e-12) and
dropout; separate nn.Linear query/key/value (weights (out, in)); exact
(erf) GELU; key padding masked.  RoBERTa's position ids start at
padding_idx + 1 (cumsum of the non-pad mask, + padding_idx).  Heads:
BERT pooler dense+tanh on [CLS] then classifier; RoBERTa classifier.dense
+tanh then classifier.out_proj on <s>; DistilBERT pre_classifier+ReLU then
classifier on [CLS].  The safetensors files are written by hand.

Writes into test/fixtures/hf_<arch>/ (arch bert, roberta, distilbert):
  config.json, model.safetensors           the base model (BertModel: no
                                           prefix, with its pooler)
  config_cls.json, model_cls.safetensors   ...ForSequenceClassification
                                           (prefixed names + head), 3 labels
  tokenizer.json                           bert, distilbert: WordPiece with
                                           BERT's normalizer, pre-tokenizer
                                           and [CLS] ... [SEP] template
  reference.json                           texts and their ids (with specials),
                                           the batch (the first 8 that fit),
                                           padded, last hidden
                                           states, mean-pooled embeddings
                                           (over non-pad tokens), logits

Also test/fixtures/hf_roberta_bpe/: a RobertaModel (config.json,
model.safetensors) whose vocabulary is the byte-level BPE tokenizer.json
of test/fixtures/tokenizer/hf/roberta.json (written by make_hf_bpe_tokenizers.py,
copied here as tokenizer.json), with reference.json holding texts, their
ids as that script gives them wrapped in <s> ... </s>, and the mean-pooled
embeddings of those that fit the positions.

Run: /usr/bin/python3 test/reference/hf_bert_reference.py (from the repository root).
"""
import json
import math
import os
import struct
import unicodedata

import torch

torch.set_num_threads(1)
D, LAYERS, HEADS, FF, POS = 16, 2, 4, 32, 32
LABELS = {"0": "negative", "1": "neutral", "2": "positive"}

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Héllo   WORLD\tagain",
    "unaffable running jumped",
    "北京 is big",
    "x",
    "naïve café, RÉSUMÉ!",
    "a\u0001b\u200bc\u00adz",
    "don't stop\u2014now...",
    "$100 + 5% (quick)",
    "supercalifragilisticexpialidocious",
    "Ünïcödé\u3000東京\n\tplay!",
]

# ---- WordPiece vocabulary and BERT's tokenizer ----------------------------

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "quick", "brown", "fox", "jump", "##s", "##ed", "over", "lazy", "dog",
         "hello", "world", "again", "un", "##aff", "##able", "run", "##ning", "is", "big",
         "北", "京", "##ing", "play"]


def wordpiece_vocab():
    toks = list(SPECIALS)
    toks += [c for c in ".,!?'\"-:;()"]
    toks += [chr(c) for c in range(ord("a"), ord("z") + 1)]
    toks += ["##" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    toks += [str(i) for i in range(10)]
    toks += WORDS
    vocab = {}
    for t in toks:  # ids dense, in first-seen order
        vocab.setdefault(t, len(vocab))
    return vocab


def is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def is_ws(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def bert_tokenize(text, vocab):
    out = []
    for ch in text:  # clean text
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        out.append(" " if is_ws(ch) else ch)
    text = "".join(" " + c + " " if is_cjk(ord(c)) else c for c in out)
    text = text.lower()
    text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    words = []
    for w in text.split():
        cur = ""
        for c in w:
            if is_punct(c):
                if cur:
                    words.append(cur)
                words.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            words.append(cur)
    ids = []
    for w in words:
        if len(w) > 100:
            ids.append(vocab["[UNK]"])
            continue
        pieces, start, bad = [], 0, False
        while start < len(w):
            end, found = len(w), None
            while start < end:
                s = w[start:end] if start == 0 else "##" + w[start:end]
                if s in vocab:
                    found = s
                    break
                end -= 1
            if found is None:
                bad = True
                break
            pieces.append(vocab[found])
            start = end
        ids += [vocab["[UNK]"]] if bad else pieces
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


def bert_tokenizer_json(vocab):
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in SPECIALS]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [vocab["[CLS]"]], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [vocab["[SEP]"]], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }

# ---- the models -------------------------------------------------------------


def lin(o, i, g):
    return {"weight": torch.randn(o, i, generator=g) * 0.2, "bias": torch.randn(o, generator=g) * 0.1}


def ln(g):
    return {"weight": 1.0 + 0.1 * torch.randn(D, generator=g), "bias": 0.1 * torch.randn(D, generator=g)}


def linear(x, p):
    return x @ p["weight"].T + p["bias"]


def layernorm(x, p, eps):
    return torch.nn.functional.layer_norm(x, (D,), p["weight"], p["bias"], eps)


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def make_weights(arch, V, P, type_vocab, g):
    w = {"word": torch.randn(V, D, generator=g) * 0.5, "pos": torch.randn(P, D, generator=g) * 0.5,
         "ln": ln(g), "layers": []}
    if type_vocab:
        w["type"] = torch.randn(type_vocab, D, generator=g) * 0.5
    for _ in range(LAYERS):
        w["layers"].append({"q": lin(D, D, g), "k": lin(D, D, g), "v": lin(D, D, g), "o": lin(D, D, g),
                            "ln1": ln(g), "f1": lin(FF, D, g), "f2": lin(D, FF, g), "ln2": ln(g)})
    w["pre"] = lin(D, D, g)
    w["cls"] = lin(len(LABELS), D, g)
    return w


def encoder(arch, w, ids, pad, eps, types=None):
    """types: (B, T) token type ids, or None for type 0 everywhere"""
    B, T = ids.shape
    mask = ids != pad
    if arch == "roberta":
        pos = torch.cumsum(mask.int(), 1) * mask.int() + pad
    else:
        pos = torch.arange(T).unsqueeze(0).expand(B, T)
    x = w["word"][ids] + w["pos"][pos]
    if "type" in w:
        x = x + (w["type"][0] if types is None else w["type"][types])
    x = layernorm(x, w["ln"], eps)
    s = D // HEADS
    for L in w["layers"]:
        def split(t):
            return t.view(B, T, HEADS, s).transpose(1, 2)
        q, k, v = split(linear(x, L["q"])), split(linear(x, L["k"])), split(linear(x, L["v"]))
        sc = q @ k.transpose(-1, -2) / math.sqrt(s)
        sc = sc.masked_fill(~mask[:, None, None, :], torch.finfo(sc.dtype).min)
        a = (torch.softmax(sc, -1) @ v).transpose(1, 2).reshape(B, T, D)
        x = layernorm(x + linear(a, L["o"]), L["ln1"], eps)
        x = layernorm(x + linear(gelu(linear(x, L["f1"])), L["f2"]), L["ln2"], eps)
    return x


def head(arch, w, hidden):
    c = hidden[:, 0]
    if arch == "distilbert":
        return linear(torch.relu(linear(c, w["pre"])), w["cls"])
    return linear(torch.tanh(linear(c, w["pre"])), w["cls"])


def names(arch, w, prefix, cls):
    """HF tensor name -> tensor"""
    t = {}
    emb = prefix + "embeddings."
    t[emb + "word_embeddings.weight"] = w["word"]
    t[emb + "position_embeddings.weight"] = w["pos"]
    if "type" in w:
        t[emb + "token_type_embeddings.weight"] = w["type"]
    t[emb + "LayerNorm.weight"] = w["ln"]["weight"]
    t[emb + "LayerNorm.bias"] = w["ln"]["bias"]
    for i, L in enumerate(w["layers"]):
        if arch == "distilbert":
            p = prefix + "transformer.layer.%d." % i
            m = {"attention.q_lin": L["q"], "attention.k_lin": L["k"], "attention.v_lin": L["v"],
                 "attention.out_lin": L["o"], "sa_layer_norm": L["ln1"], "ffn.lin1": L["f1"],
                 "ffn.lin2": L["f2"], "output_layer_norm": L["ln2"]}
        else:
            p = prefix + "encoder.layer.%d." % i
            m = {"attention.self.query": L["q"], "attention.self.key": L["k"],
                 "attention.self.value": L["v"], "attention.output.dense": L["o"],
                 "attention.output.LayerNorm": L["ln1"], "intermediate.dense": L["f1"],
                 "output.dense": L["f2"], "output.LayerNorm": L["ln2"]}
        for k, v in m.items():
            t[p + k + ".weight"] = v["weight"]
            t[p + k + ".bias"] = v["bias"]
    if arch == "bert" or (arch == "roberta" and not cls):
        t[prefix + "pooler.dense.weight"] = w["pre"]["weight"]
        t[prefix + "pooler.dense.bias"] = w["pre"]["bias"]
    if cls:
        if arch == "roberta":
            hn = {"classifier.dense": w["pre"], "classifier.out_proj": w["cls"]}
        elif arch == "distilbert":
            hn = {"pre_classifier": w["pre"], "classifier": w["cls"]}
        else:
            hn = {"classifier": w["cls"]}
        for k, v in hn.items():
            t[k + ".weight"] = v["weight"]
            t[k + ".bias"] = v["bias"]
    return t


def write_safetensors(path, tensors):
    hdr, off, blobs = {}, 0, []
    for k in sorted(tensors):
        b = tensors[k].contiguous().float().numpy().tobytes()
        hdr[k] = {"dtype": "F32", "shape": list(tensors[k].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def config(arch, V, P, pad, eps, cls):
    if arch == "distilbert":
        c = {"model_type": "distilbert", "vocab_size": V, "dim": D, "n_layers": LAYERS, "n_heads": HEADS,
             "hidden_dim": FF, "max_position_embeddings": P, "activation": "gelu", "dropout": 0.1,
             "attention_dropout": 0.1, "sinusoidal_pos_embds": False, "pad_token_id": pad,
             "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "initializer_range": 0.02,
             "tie_weights_": True,
             "architectures": ["DistilBertForSequenceClassification" if cls else "DistilBertModel"]}
    else:
        c = {"model_type": arch, "vocab_size": V, "hidden_size": D, "num_hidden_layers": LAYERS,
             "num_attention_heads": HEADS, "intermediate_size": FF, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
             "max_position_embeddings": P, "type_vocab_size": 1 if arch == "roberta" else 2,
             "initializer_range": 0.02, "layer_norm_eps": eps, "pad_token_id": pad,
             "position_embedding_type": "absolute", "use_cache": True, "classifier_dropout": None,
             "architectures": [("RobertaFor" if arch == "roberta" else "BertFor") + "SequenceClassification"
                               if cls else ("RobertaModel" if arch == "roberta" else "BertModel")]}
        if arch == "roberta":
            c.update({"bos_token_id": 0, "eos_token_id": 2})
    c["torch_dtype"] = "float32"
    c["transformers_version"] = "4.40.0"
    if cls:
        c["id2label"] = LABELS
        c["label2id"] = {v: int(k) for k, v in LABELS.items()}
    return c


def build(arch, seed):
    g = torch.Generator().manual_seed(seed)
    out = "test/fixtures/hf_" + arch
    os.makedirs(out, exist_ok=True)
    if arch == "roberta":
        # ids as RoBERTa's: <s> 0, <pad> 1, </s> 2, <unk> 3; the batch uses
        # arbitrary ids (its tokenizer is byte-level BPE, tested with GPT-2's)
        V, pad, eps = 50, 1, 1e-5
        P = POS + pad + 1
        cases = [[0, 7, 9, 11, 2], [0, 20, 2], [0, 5, 6, 7, 8, 9, 10, 2], [0, 44, 45, 46, 49, 2]]
        texts, text_ids, tok = [], [], None
    else:
        vocab = wordpiece_vocab()
        V, pad, P = len(vocab), 0, POS
        eps = 1e-12
        texts = TEXTS
        text_ids = [bert_tokenize(t, vocab) for t in texts]
        # the model's batch: the texts that fit its positions
        cases = [c for c in text_ids if len(c) <= P][:8]
        tok = bert_tokenizer_json(vocab)
    w = make_weights(arch, V, P, 0 if arch == "distilbert" else (1 if arch == "roberta" else 2), g)
    T = max(len(c) for c in cases)
    ids = torch.tensor([c + [pad] * (T - len(c)) for c in cases])
    with torch.no_grad():
        hidden = encoder(arch, w, ids, pad, eps)
        mask = (ids != pad).float().unsqueeze(-1)
        mean = (hidden * mask).sum(1) / mask.sum(1)
        logits = head(arch, w, hidden)
    base = names(arch, w, "", False)
    cls = names(arch, w, arch + ".", True)
    if arch == "bert":
        # some BertModel checkpoints keep the position_ids buffer (int64)
        pass
    write_safetensors(out + "/model.safetensors", base)
    write_safetensors(out + "/model_cls.safetensors", cls)
    for name, c in (("config.json", config(arch, V, P, pad, eps, False)),
                    ("config_cls.json", config(arch, V, P, pad, eps, True))):
        with open(out + "/" + name, "w") as f:
            json.dump(c, f, indent=2)
            f.write("\n")
    if tok:
        with open(out + "/tokenizer.json", "w") as f:
            json.dump(tok, f, ensure_ascii=False, indent=1)
            f.write("\n")
    ref = {"texts": texts, "text_ids": text_ids, "ids": cases, "pad_id": pad, "T": T,
           "labels": [LABELS[str(i)] for i in range(len(LABELS))],
           "hidden": [[[round(float(x), 7) for x in row] for row in h] for h in hidden],
           "mean": [[round(float(x), 7) for x in r] for r in mean],
           "logits": [[round(float(x), 7) for x in r] for r in logits],
           "probs": [[round(float(x), 7) for x in r] for r in torch.softmax(logits, -1)]}
    with open(out + "/reference.json", "w") as f:
        json.dump(ref, f, ensure_ascii=False)
        f.write("\n")


def build_roberta_bpe(seed):
    """a RobertaModel whose ids are those of a byte-level BPE tokenizer.json"""
    g = torch.Generator().manual_seed(seed)
    out = "test/fixtures/hf_roberta_bpe"
    os.makedirs(out, exist_ok=True)
    with open("test/fixtures/tokenizer/hf/roberta.json", encoding="utf-8") as f:
        tok = json.load(f)
    with open("test/fixtures/tokenizer/hf/roberta.expected.json", encoding="utf-8") as f:
        exp = json.load(f)
    V, pad, eps = len(tok["model"]["vocab"]), 1, 1e-5
    P = POS + pad + 1
    pairs = [(t, [0] + x + [2]) for t, x in zip(exp["texts"], exp["ids"]) if 0 < len(x) and len(x) + 2 <= POS]
    texts, cases = [t for t, _ in pairs][:8], [c for _, c in pairs][:8]
    w = make_weights("roberta", V, P, 1, g)
    T = max(len(c) for c in cases)
    ids = torch.tensor([c + [pad] * (T - len(c)) for c in cases])
    with torch.no_grad():
        hidden = encoder("roberta", w, ids, pad, eps)
        mask = (ids != pad).float().unsqueeze(-1)
        mean = (hidden * mask).sum(1) / mask.sum(1)
    write_safetensors(out + "/model.safetensors", names("roberta", w, "", False))
    with open(out + "/config.json", "w") as f:
        json.dump(config("roberta", V, P, pad, eps, False), f, indent=2)
        f.write("\n")
    with open(out + "/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    ref = {"texts": texts, "ids": cases, "pad_id": pad, "T": T,
           "mean": [[round(float(x), 7) for x in r] for r in mean]}
    with open(out + "/reference.json", "w") as f:
        json.dump(ref, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    build("bert", 1)
    build("roberta", 2)
    build("distilbert", 3)
    build_roberta_bpe(4)
