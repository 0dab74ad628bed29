#!/usr/bin/python3
"""hf_tasks_reference.py — small random BERT checkpoints for the pair tasks
(a cross-encoder for tfm_rerank, an NLI model for tfm_zero_shot) in the
published layout of BertForSequenceClassification, and their outputs, for
test/regress/sql/tasks_pairs.sql.

The encoder, heads, tokenizer and safetensors writer are those of
hf_bert_reference.py (written from the architecture, no transformers
package), here with token type ids.  The task logic is reimplemented from
the published descriptions:
- a pair is [CLS] a [SEP] b [SEP] with token types 0 for "[CLS] a [SEP]"
  and 1 for "b [SEP]" (BERT's TemplateProcessing pair template);
- a pair longer than max_position_embeddings is cut as the tokenizers'
  'longest_first' does (one token at a time from the longer side, from the
  second on a tie) for reranking (sentence-transformers' CrossEncoder,
  truncation=True), and as 'only_first' (the premise only) for zero-shot
  (transformers' ZeroShotClassificationPipeline);
- a cross-encoder with one logit scores sigmoid(logit) (CrossEncoder's
  default activation); one with two or more labels scores the softmax
  probability of its last label;
- zero-shot: each label becomes the hypothesis template with {} replaced
  by the label; the text is the premise.  Single-label: the softmax over
  the labels of their entailment logits; multi-label: per label, the
  softmax over (contradiction = logit 0, entailment) of its entailment.
  The entailment label is the first whose name starts with "entail"
  (ZeroShotClassificationPipeline.entailment_id).

Writes test/fixtures/hf_tasks/: tokenizer.json, config_rerank.json +
model_rerank.safetensors (1 label), config_nli.json + model_nli.safetensors
(contradiction, neutral, entailment), reference.json.

Run: /usr/bin/python3 test/reference/hf_tasks_reference.py (from the repository root).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_bert_reference as hb  # noqa: E402

OUT = "test/fixtures/hf_tasks"
NLI = {"0": "contradiction", "1": "neutral", "2": "entailment"}

QUERY = "quick brown fox"
PASSAGES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "a lazy dog is big",
    "running, jumping and playing again and again over the big brown world of foxes, "
    "the quick dogs and the lazy ones",
    "fox",
    "北京 is big",
]
TEXTS = ["The quick brown fox jumped over the lazy dog again.",
         "hello world, it is big",
         "unaffable running dogs play over and over and over in the big lazy world of the quick fox"]
LABELS = ["dog", "fox", "world", "big play"]
TEMPLATE = "This example is {}."
TEMPLATE2 = "it is about {}"


def pieces(text, vocab):
    return hb.bert_tokenize(text, vocab)[1:-1]


def pair(a, b, vocab, P, strategy):
    a, b = list(a), list(b)
    budget = P - 3
    if strategy == "longest_first":
        while len(a) + len(b) > budget:
            if len(a) > len(b):
                a.pop()
            else:
                b.pop()
    else:  # only_first
        if len(b) > budget:
            raise ValueError("the second sequence alone is too long")
        a = a[:budget - len(b)]
    ids = [vocab["[CLS]"]] + a + [vocab["[SEP]"]] + b + [vocab["[SEP]"]]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, types


def logits_of(w, pairs, pad, eps):
    T = max(len(i) for i, _ in pairs)
    ids = torch.tensor([i + [pad] * (T - len(i)) for i, _ in pairs])
    types = torch.tensor([t + [0] * (T - len(t)) for _, t in pairs])
    with torch.no_grad():
        return hb.head("bert", w, hb.encoder("bert", w, ids, pad, 1e-12, types))


def save(name, w, labels, V, P):
    hb.LABELS = labels
    cfg = hb.config("bert", V, P, 0, 1e-12, True)
    w = dict(w)
    hb.write_safetensors(OUT + "/model_%s.safetensors" % name, hb.names("bert", w, "bert.", True))
    with open(OUT + "/config_%s.json" % name, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def r7(t):
    return [round(float(x), 7) for x in t]


def main():
    os.makedirs(OUT, exist_ok=True)
    vocab = hb.wordpiece_vocab()
    V, P = len(vocab), hb.POS
    with open(OUT + "/tokenizer.json", "w") as f:
        json.dump(hb.bert_tokenizer_json(vocab), f, ensure_ascii=False, indent=1)
        f.write("\n")
    ref = {"query": QUERY, "passages": PASSAGES, "texts": TEXTS, "labels": LABELS,
           "templates": [TEMPLATE, TEMPLATE2]}

    # the cross-encoder: one logit
    hb.LABELS = {"0": "LABEL_0"}
    g = torch.Generator().manual_seed(11)
    w = hb.make_weights("bert", V, P, 2, g)
    pairs = [pair(pieces(QUERY, vocab), pieces(p, vocab), vocab, P, "longest_first") for p in PASSAGES]
    lg = logits_of(w, pairs, 0, 1e-12)[:, 0]
    ref["rerank_ids"] = [i for i, _ in pairs]
    ref["rerank_cut"] = [len(pieces(QUERY, vocab)) + len(pieces(p, vocab)) + 3 > P for p in PASSAGES]
    ref["rerank_types"] = [t for _, t in pairs]
    ref["rerank_logits"] = r7(lg)
    ref["rerank_scores"] = r7(torch.sigmoid(lg))
    save("rerank", w, {"0": "LABEL_0"}, V, P)

    # the NLI model: contradiction, neutral, entailment
    hb.LABELS = NLI
    g = torch.Generator().manual_seed(12)
    w = hb.make_weights("bert", V, P, 2, g)
    ref["nli_labels"] = [NLI[str(i)] for i in range(3)]
    zs = []
    for tmpl in (TEMPLATE, TEMPLATE2):
        for text in TEXTS:
            hyps = [tmpl.format(lab) for lab in LABELS]
            pairs = [pair(pieces(text, vocab), pieces(h, vocab), vocab, P, "only_first") for h in hyps]
            lg = logits_of(w, pairs, 0, 1e-12)
            ent = lg[:, 2]
            single = torch.softmax(ent, 0)
            multi = torch.softmax(lg[:, [0, 2]], 1)[:, 1]
            zs.append({"template": tmpl, "text": text, "logits": [r7(r) for r in lg],
                       "cut": [len(pieces(text, vocab)) + len(pieces(h, vocab)) + 3 > P for h in hyps],
                       "single": r7(single), "multi": r7(multi)})
    ref["zero_shot"] = zs
    # the cross-encoder's logits also as the NLI model's 2-label reranker: the
    # softmax probability of the last label
    save("nli", w, NLI, V, P)
    pairs = [pair(pieces(QUERY, vocab), pieces(p, vocab), vocab, P, "longest_first") for p in PASSAGES]
    ref["rerank_nli_scores"] = r7(torch.softmax(logits_of(w, pairs, 0, 1e-12), 1)[:, 2])
    with open(OUT + "/reference.json", "w") as f:
        json.dump(ref, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
