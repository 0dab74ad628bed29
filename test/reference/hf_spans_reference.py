#!/usr/bin/python3
"""hf_spans_reference.py — small random BERT checkpoints for the span tasks
(a token classifier for tfm_entities, an extractive question-answering
model for tfm_answer) in the published layouts of
BertForTokenClassification (classifier.*) and BertForQuestionAnswering
(qa_outputs.*: start and end logits), and their outputs, for
test/regress/sql/tasks_spans.sql.

The encoder, tokenizer and safetensors writer are those of
hf_bert_reference.py (written from the architecture, no transformers
package); the head is one linear layer on every token's top row.  The task
logic is reimplemented from the published descriptions of transformers'
pipelines:
- offsets: each WordPiece piece's characters in the original text
  (BertNormalizer maps every normalized character back to the character it
  came from; a word that is [UNK] covers the whole word);
- TokenClassificationPipeline: per-token softmax scores; special tokens
  skipped; aggregation 'none' (each token's best label), 'simple' (tokens
  grouped: a token joins the group before it when its tag, the label
  without its B-/I- prefix, is the group's and it is not a B-), 'first'
  and 'max' (first the words: a piece whose text is shorter than its
  token, a "##" piece, joins the word before it; the word takes its first
  token's label and score, or those of its token with the highest score;
  then the words are grouped as 'simple' groups tokens); a group's label is
  its first label after the last '-', its score the mean; groups and
  tokens labelled O are left out.  A text longer than the model's
  positions is read in consecutive windows of max_position_embeddings - 2
  tokens (tfm's rule: the pipeline would truncate);
- QuestionAnsweringPipeline: [CLS] question [SEP] context [SEP], the
  context in windows of max_seq_len - len(question) - 3 tokens that
  overlap by doc_stride (tokenizers' overflowing tokens: window k starts
  at k * (room - doc_stride), the last reaches the end); per window the
  start and end logits of tokens outside the context (but [CLS]) set to
  -10000, each softmaxed, the null score start[0] * end[0] kept, [CLS]'s
  probabilities zeroed, the best (start <= end < start + max_answer_len) of
  start * end; its characters from the first token's word start to the
  last token's word end (align_to_words); the best over windows; with
  handle_impossible_answer the empty answer with the least null score
  competes.

Also a RobertaForTokenClassification over the byte-level BPE tokenizer of
test/fixtures/tokenizer/hf/roberta.json, its ids those the tokenizers
library made (roberta.expected.json): offsets from the tokens' bytes,
trim_offsets leaving a token's spaces out (a character split between
tokens is each one's), is_subword the pipeline's fallback (the character
before the token is not a space: the tokenizer has no continuing-subword
prefix).

And a DistilBertForQuestionAnswering (no token types).

Writes test/fixtures/hf_tasks/: config_ner.json + model_ner.safetensors,
config_qa.json + model_qa.safetensors, config_ner_roberta.json +
model_ner_roberta.safetensors, config_qa_distilbert.json +
model_qa_distilbert.safetensors, spans_reference.json (the tokenizer.json
is hf_tasks_reference.py's).

Run: /usr/bin/python3 test/reference/hf_spans_reference.py (from the repository root).
"""
import json
import os
import sys
import unicodedata

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_bert_reference as hb  # noqa: E402

OUT = "test/fixtures/hf_tasks"
NER = {"0": "O", "1": "B-PER", "2": "I-PER", "3": "B-LOC", "4": "I-LOC", "5": "B-ORG", "6": "I-ORG"}
QA = {"0": "LABEL_0", "1": "LABEL_1"}

NER_TEXTS = [
    "The quick brown fox jumped over the lazy dog again.",
    "Hello world, Jumping Bob runs in Big Paris!",
    "unaffable running dogs play",
    "北京 is big, said Zoe",
    "over and over and over the quick brown dogs jumped, playing in the big lazy world of "
    "the quick fox and the brown dog, again and again",
    "x",
]
QUESTIONS = ["who is big?", "what jumped over the dog?", "where"]
CONTEXTS = [
    "The quick brown fox jumped over the lazy dog again.",
    "Hello world, it is big.",
    "over and over and over the quick brown dogs jumped, playing in the big lazy world of "
    "the quick fox and the brown dog, again and again until unaffable running dogs play",
]


def normalized(text):
    """BertNormalizer's output, each character with the original's index"""
    out = []
    for i, ch in enumerate(text):
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or hb.is_control(ch):
            continue
        if hb.is_ws(ch):
            out.append((" ", i))
            continue
        if hb.is_cjk(cp):
            out += [(" ", i), (ch, i), (" ", i)]
            continue
        for c in unicodedata.normalize("NFD", ch.lower()):
            if unicodedata.category(c) != "Mn":
                out.append((c, i))
    return out


def tokens(text, vocab):
    """the WordPiece tokens of text: (id, piece, start, end, word)"""
    norm = normalized(text)
    words, cur = [], []
    for c, i in norm:
        if c == " ":
            if cur:
                words.append(cur)
            cur = []
        elif hb.is_punct(c):
            if cur:
                words.append(cur)
            words.append([(c, i)])
            cur = []
        else:
            cur.append((c, i))
    if cur:
        words.append(cur)
    out = []
    for wi, w in enumerate(words):
        s = "".join(c for c, _ in w)
        if len(s) > 100:
            out.append((vocab["[UNK]"], "[UNK]", w[0][1], w[-1][1] + 1, wi))
            continue
        pieces, start, bad = [], 0, False
        while start < len(s):
            end, found = len(s), None
            while start < end:
                p = s[start:end] if start == 0 else "##" + s[start:end]
                if p in vocab:
                    found = p
                    break
                end -= 1
            if found is None:
                bad = True
                break
            pieces.append((vocab[found], found, w[start][1], w[end - 1][1] + 1, wi))
            start = end
        out += [(vocab["[UNK]"], "[UNK]", w[0][1], w[-1][1] + 1, wi)] if bad else pieces
    return out


def run(w, ids, types=None, arch="bert"):
    x = torch.tensor([ids])
    t = None if types is None or arch == "distilbert" else torch.tensor([types])
    with torch.no_grad():
        return hb.linear(hb.encoder(arch, w, x, 0, 1e-12, t), w["cls"])[0]


def save(name, w, labels, arch, V, P):
    hb.LABELS = labels
    cfg = hb.config("bert", V, P, 0, 1e-12, True)
    cfg["architectures"] = [arch]
    t = hb.names("bert", w, "bert.", False)
    del t["bert.pooler.dense.weight"], t["bert.pooler.dense.bias"]
    head = "qa_outputs" if arch.endswith("QuestionAnswering") else "classifier"
    t[head + ".weight"] = w["cls"]["weight"]
    t[head + ".bias"] = w["cls"]["bias"]
    hb.write_safetensors(OUT + "/model_%s.safetensors" % name, t)
    with open(OUT + "/config_%s.json" % name, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def r7(x):
    return round(float(x), 7)


def tag(label):
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def group(ents):
    """TokenClassificationPipeline.group_entities on (label, score, start, end)"""
    groups, cur = [], []

    def close():
        groups.append((cur[0][0].split("-")[-1], sum(e[1] for e in cur) / len(cur), cur[0][2], cur[-1][3]))
    for e in ents:
        if cur:
            bi, t = tag(e[0])
            if not (t == tag(cur[-1][0])[1] and bi != "B"):
                close()
                cur = []
        cur.append(e)
    if cur:
        close()
    return groups


def entities(text, toks, probs, labels, strategy):
    """rows (entity, label, score, start, end) as the pipeline, entity = text[start:end]"""
    pre = []
    for (tid, piece, s, e, _), p in zip(toks, probs):
        sub = len(piece) != len(text[s:e]) and piece != "[UNK]"
        pre.append((p, s, e, sub))
    return entities_of(text, pre, labels, strategy)


def entities_of(text, pre, labels, strategy):
    """pre: (probabilities, start, end, is_subword) of each token"""
    if strategy in ("none", "simple"):
        ents = [(labels[int(p.argmax())], float(p.max()), s, e) for p, s, e, _ in pre]
    else:
        words, cur = [], []
        for x in pre:
            if cur and not x[3]:
                words.append(cur)
                cur = []
            cur.append(x)
        if cur:
            words.append(cur)
        ents = []
        for wd in words:
            if strategy == "first":
                p = wd[0][0]
            else:
                p = max(wd, key=lambda x: float(x[0].max()))[0]
            ents.append((labels[int(p.argmax())], float(p.max()), wd[0][1], wd[-1][2]))
    if strategy != "none":
        ents = group(ents)
    return [[text[s:e], lab, r7(sc), s, e] for lab, sc, s, e in ents if lab != "O"]


def answer(w, vocab, P, question, context, max_answer_len, doc_stride, impossible, arch="bert"):
    q = [t[0] for t in hb_tokens_ids(question, vocab)]
    ctx = tokens(context, vocab)
    room = P - len(q) - 3
    starts = []
    k = 0
    while True:
        stop = min(k + room, len(ctx))
        starts.append((k, stop))
        if stop == len(ctx):
            break
        k += room - doc_stride
    best, null = None, 1e6
    windows = []
    for a, b in starts:
        win = ctx[a:b]
        ids = [vocab["[CLS]"]] + q + [vocab["[SEP]"]] + [t[0] for t in win] + [vocab["[SEP]"]]
        types = [0] * (len(q) + 2) + [1] * (len(win) + 1)
        lg = run(w, ids, types, arch)
        st, en = lg[:, 0].clone().double(), lg[:, 1].clone().double()
        first = len(q) + 2
        mask = torch.ones(len(ids), dtype=torch.bool)
        mask[0] = False
        mask[first:first + len(win)] = False
        st[mask] = -10000.0
        en[mask] = -10000.0
        st = torch.softmax(st, 0)
        en = torch.softmax(en, 0)
        null = min(null, float(st[0] * en[0]))
        st[0] = en[0] = 0.0
        outer = torch.triu(st[:, None] * en[None, :])
        outer = torch.tril(outer, max_answer_len - 1)
        flat = int(outer.flatten().argmax())
        i, j = divmod(flat, len(ids))
        windows.append({"ids": ids, "start_logits": [r7(x) for x in lg[:, 0]],
                        "end_logits": [r7(x) for x in lg[:, 1]]})
        if i < first or j >= first + len(win):
            continue
        ti, tj = win[i - first], win[j - first]
        # align_to_words: the first token's word start, the last token's word end (in this window)
        s = min(t[2] for t in win if t[4] == ti[4])
        e = max(t[3] for t in win if t[4] == tj[4])
        sc = float(outer[i, j])
        if best is None or sc > best[1]:
            best = (context[s:e], sc, s, e)
    if impossible and (best is None or null > best[1]):
        best = ("", null, 0, 0)
    return {"question": question, "context": context, "max_answer_len": max_answer_len,
            "doc_stride": doc_stride, "impossible": impossible, "windows": windows,
            "answer": best[0], "score": r7(best[1]), "start": best[2], "end": best[3]}


def hb_tokens_ids(text, vocab):
    return tokens(text, vocab)


def byte_decoder():
    """GPT-2's printable character of each byte, reversed"""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def bpe_tokens(text, ids, inv):
    """byte-level BPE tokens with offsets: (id, piece, start, end, 0); trim_offsets
    leaves a token's spaces out, a character split between tokens is each one's"""
    raw = text.encode("utf-8")
    char_of = []
    for i, ch in enumerate(text):
        char_of += [i] * len(ch.encode("utf-8"))
    dec = byte_decoder()
    out, at = [], 0
    for i in ids:
        piece = inv[i]
        b = bytes(dec[c] for c in piece)
        assert raw[at:at + len(b)] == b, (text, piece)
        b0, b1 = at, at + len(b)
        at = b1
        while b0 < b1 and raw[b0] == 0x20:
            b0 += 1
        while b1 > b0 and raw[b1 - 1] == 0x20:
            b1 -= 1
        s = char_of[b0] if b0 < len(raw) else len(text)
        e = char_of[b1 - 1] + 1 if b1 > b0 else s
        out.append((i, piece, s, e, 0))
    assert at == len(raw)
    return out


def roberta_ner(ref):
    """a RobertaForTokenClassification over the byte-level BPE tokenizer of
    test/fixtures/tokenizer/hf (its ids made by the tokenizers library)"""
    with open("test/fixtures/tokenizer/hf/roberta.json", encoding="utf-8") as f:
        tok = json.load(f)
    with open("test/fixtures/tokenizer/hf/roberta.expected.json", encoding="utf-8") as f:
        exp = json.load(f)
    inv = {v: k for k, v in tok["model"]["vocab"].items()}
    V, pad, eps = len(tok["model"]["vocab"]), 1, 1e-5
    P = hb.POS + pad + 1
    hb.LABELS = NER
    g = torch.Generator().manual_seed(23)
    w = hb.make_weights("roberta", V, P, 1, g)
    w["cls"]["weight"] *= 4.0
    labels = [NER[str(i)] for i in range(len(NER))]
    rows = []
    for text, ids in zip(exp["texts"], exp["ids"]):
        if not ids:
            continue
        toks = bpe_tokens(text, ids, inv)
        logits = []
        for a in range(0, len(toks), hb.POS - 2):
            win = [0] + [t[0] for t in toks[a:a + hb.POS - 2]] + [2]
            with torch.no_grad():
                lg = hb.linear(hb.encoder("roberta", w, torch.tensor([win]), pad, eps), w["cls"])[0]
            logits += lg[1:-1]
        probs = [torch.softmax(x.double(), 0) for x in logits]
        # the pipeline's fallback: a token continues a word when the character before it is no space
        toks2 = []
        for t in toks:
            sub = t[2] > 0 and text[t[2] - 1:t[2]] != " "
            toks2.append((t[0], t[1], t[2], t[3], sub))
        rows.append({"text": text, "offsets": [[t[2], t[3]] for t in toks],
                     "entities": {st: entities_bpe(text, toks2, probs, labels, st)
                                  for st in ("none", "simple", "first", "max")}})
    ref["roberta_ner"] = rows
    cfg = hb.config("roberta", V, P, pad, eps, True)
    cfg["architectures"] = ["RobertaForTokenClassification"]
    t = hb.names("roberta", w, "roberta.", False)
    del t["roberta.pooler.dense.weight"], t["roberta.pooler.dense.bias"]
    t["classifier.weight"] = w["cls"]["weight"]
    t["classifier.bias"] = w["cls"]["bias"]
    hb.write_safetensors(OUT + "/model_ner_roberta.safetensors", t)
    with open(OUT + "/config_ner_roberta.json", "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def entities_bpe(text, toks, probs, labels, strategy):
    """entities() with each token's is_subword given (toks: ..., sub)"""
    pre = [(p, t[2], t[3], t[4]) for t, p in zip(toks, probs)]
    return entities_of(text, pre, labels, strategy)


def main():
    vocab = hb.wordpiece_vocab()
    V, P = len(vocab), hb.POS
    ref = {}

    # the token classifier
    hb.LABELS = NER
    g = torch.Generator().manual_seed(21)
    w = hb.make_weights("bert", V, P, 2, g)
    w["cls"]["weight"] *= 4.0   # scores away from uniform, labels that change along a text
    labels = [NER[str(i)] for i in range(len(NER))]
    ner = []
    for text in NER_TEXTS:
        toks = tokens(text, vocab)
        room = P - 2
        logits = []
        for a in range(0, len(toks), room):
            win = toks[a:a + room]
            lg = run(w, [vocab["[CLS]"]] + [t[0] for t in win] + [vocab["[SEP]"]])
            logits += lg[1:-1]
        probs = [torch.softmax(x.double(), 0) for x in logits]
        ner.append({"text": text, "ids": [t[0] for t in toks],
                    "offsets": [[t[2], t[3]] for t in toks],
                    "logits": [[r7(v) for v in x] for x in logits],
                    "entities": {s: entities(text, toks, probs, labels, s)
                                 for s in ("none", "simple", "first", "max")}})
    ref["ner"] = ner
    save("ner", w, NER, "BertForTokenClassification", V, P)

    # the question-answering model
    hb.LABELS = QA
    g = torch.Generator().manual_seed(22)
    w = hb.make_weights("bert", V, P, 2, g)
    w["cls"]["weight"] *= 4.0
    qa = []
    for q in QUESTIONS:
        for c in CONTEXTS:
            qa.append(answer(w, vocab, P, q, c, 15, 8, False))
    qa.append(answer(w, vocab, P, QUESTIONS[0], CONTEXTS[2], 3, 8, False))
    qa.append(answer(w, vocab, P, QUESTIONS[0], CONTEXTS[2], 15, 2, False))
    for c in CONTEXTS:
        qa.append(answer(w, vocab, P, QUESTIONS[1], c, 15, 8, True))
    ref["qa"] = qa
    save("qa", w, QA, "BertForQuestionAnswering", V, P)
    roberta_ner(ref)

    # a DistilBertForQuestionAnswering (no token types)
    hb.LABELS = QA
    g = torch.Generator().manual_seed(24)
    w = hb.make_weights("distilbert", V, P, 0, g)
    w["cls"]["weight"] *= 4.0
    ref["qa_distilbert"] = [answer(w, vocab, P, q, c, 15, 8, False, "distilbert")
                            for q in QUESTIONS for c in CONTEXTS]
    cfg = hb.config("distilbert", V, P, 0, 1e-12, True)
    cfg["architectures"] = ["DistilBertForQuestionAnswering"]
    t = hb.names("distilbert", w, "distilbert.", False)
    t["qa_outputs.weight"] = w["cls"]["weight"]
    t["qa_outputs.bias"] = w["cls"]["bias"]
    hb.write_safetensors(OUT + "/model_qa_distilbert.safetensors", t)
    with open(OUT + "/config_qa_distilbert.json", "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(OUT + "/spans_reference.json", "w") as f:
        json.dump(ref, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
