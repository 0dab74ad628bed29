#!/usr/bin/python3
"""make_unigram_specials.py — the reference for what tfm's Unigram
tokenizers find in a text before normalising it
(src/core/tokenizer/unigram/tok_unigram_specials.c), with the real SentencePiece
(python3-sentencepiece) on the models of make_unigram_tokenizers.py
(retrained with the same spm_train calls, checked equal to the committed
tokenizer.json files):

  uni_t5_specials  uni_t5 with its special pieces (<pad>, </s>, <unk>,
                   <extra_id_0..9>) found in text as Hugging Face's added
                   vocabulary finds them: at each position the longest
                   special there, the leftmost first; the text between
                   them encoded on its own; </s> appended (T5's template)
  (lstrip / rstrip change nothing under T5's WhitespaceSplit or the
  converter's Strip: test_tok_unigram.c checks them on a pipeline without)
  uni_nfkc_codes   uni_nfkc with one more piece ">>fra<<" (id 2000, never
                   matched by the model) and Marian's language codes as
                   MarianTokenizer takes them: re.match(">>.+<<") at the
                   start is a token (its id, or <unk>), re.sub removes
                   every match before SentencePiece

Writes test/fixtures/tokenizer/unigram/NAME.cases.tsv ("T<TAB>hex text<TAB>ids<TAB>
hex decode", as make_unigram_tokenizers.py; decode: SentencePiece's of the
ids, specials dropped) for test/unit/test_tok_unigram.c.

Run from the repository root: /usr/bin/python3 test/reference/make_unigram_specials.py
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_unigram_tokenizers as base  # noqa: E402

SPECIAL_TEXTS = [
    "Hello <extra_id_0> world",
    "<extra_id_0>",
    "a<extra_id_1>b",
    "The <extra_id_0> walks in <extra_id_1> park.",
    "<extra_id_10> is not one of them",
    "</s> and <pad> and <unk> in text",
    "x</s>",
    "  <extra_id_2>  spaced \t <extra_id_3>  ",
    "<extra_id_0><extra_id_1><extra_id_2>",
    "<<extra_id_0>>",
    "ünïcödé<extra_id_4>東京\u3000<extra_id_5>\u00a0end",
    "<extra_id_9",
    "plain text with no special",
    "",
]

CODE_TEXTS = [
    ">>fra<< I like the cat.",
    ">>fra<<Hello",
    ">>xx<< Hello",
    "Hello >>fra<< world",
    ">>fra<< a >>spa<< b",
    ">>fra<<\nsecond >>x<< line",
    ">><< no code",
    ">>a<< one letter",
    "> >fra<< x",
    ">>fra<<",
    "line one\n>>fra<< x",
    ">>fra<< ünïcödé 東京",
    "",
]
CODE_RE = re.compile(">>.+<<")


def write(name, rows):
    with open(os.path.join(base.OUT, name + ".cases.tsv"), "w") as f:
        for t, ids, dec in rows:
            f.write("T\t%s\t%s\t%s\n" % (t.encode().hex(), " ".join(map(str, ids)), dec.encode().hex()))


def main():
    sp, tj = base.retrain("uni_t5")
    vocab = {p: i for i, (p, _) in enumerate(tj["model"]["vocab"])}
    specials = [a["content"] for a in tj["added_tokens"] if a["special"]]
    for name, strip in (("uni_t5_specials", lambda s: False),):
        rows = []
        for t in SPECIAL_TEXTS:
            ids = []
            for part, special in base.split_specials(t, specials, strip):
                ids += [vocab[special]] if special is not None else (sp.encode(part) if part else [])
            ids.append(sp.eos_id())
            dec = sp.decode([i for i in ids if i < sp.get_piece_size()])
            rows.append((t, ids, dec))
        write(name, rows)
    sp, tj = base.retrain("uni_nfkc")
    code_id = sp.get_piece_size()       # the extra piece ">>fra<<"
    rows = []
    for t in CODE_TEXTS:
        m = CODE_RE.match(t)
        code = [code_id if m.group(0) == ">>fra<<" else sp.unk_id()] if m else []
        ids = code + sp.encode(CODE_RE.sub("", t))
        rows.append((t, ids, sp.decode([i for i in ids if i < code_id])))
    write("uni_nfkc_codes", rows)
    print("%d + %d texts" % (len(SPECIAL_TEXTS), len(CODE_TEXTS)))


if __name__ == "__main__":
    main()
