#!/usr/bin/python3
"""make_unigram_specials.py — the reference for what tfm's Unigram
tokenizers find in a text before normalising it
(src/core/tokenizer/tok_unigram_specials.c), with the real SentencePiece
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

Writes test/tokenizer/unigram/NAME.cases.tsv ("T<TAB>hex text<TAB>ids<TAB>
hex decode", as make_unigram_tokenizers.py; decode: SentencePiece's of the
ids, specials dropped) for test/test_tok_unigram.c.

Run from the repository root: /usr/bin/python3 test/reference/make_unigram_specials.py
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import sentencepiece as spm

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


def train(name, opts, corpus, tmp):
    prefix = os.path.join(tmp, name)
    subprocess.run(["spm_train", "--input=" + corpus, "--model_prefix=" + prefix, "--model_type=unigram",
                    "--num_threads=1"] + opts, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(prefix + ".model", "rb") as f:
        mb = f.read()
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    tj = (base.convert_t5 if name == "uni_t5" else base.convert)(sp, mb)
    with open(os.path.join(base.OUT, name + ".json"), encoding="utf-8") as f:
        assert json.load(f)["model"] == tj["model"], "spm_train gave another " + name
    return sp, tj


def write(name, rows):
    with open(os.path.join(base.OUT, name + ".cases.tsv"), "w") as f:
        for t, ids, dec in rows:
            f.write("T\t%s\t%s\t%s\n" % (t.encode().hex(), " ".join(map(str, ids)), dec.encode().hex()))


def main():
    data = base.shared_dir()
    tmp = tempfile.mkdtemp()
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as out:
        for _, r in base.rows(os.path.join(data, "rt_polarity_train.tsv.gz")):
            out.write(r[0] + "\n")
        for _, r in base.rows(os.path.join(data, "eng_fra_train.tsv.gz"), 30000):
            out.write(r[0] + "\n" + r[1] + "\n")
    opts = dict(base_models())
    sp, tj = train("uni_t5", opts["uni_t5"], corpus, tmp)
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
    sp, tj = train("uni_nfkc", opts["uni_nfkc"], corpus, tmp)
    code_id = sp.get_piece_size()       # the extra piece ">>fra<<"
    rows = []
    for t in CODE_TEXTS:
        m = CODE_RE.match(t)
        code = [code_id if m.group(0) == ">>fra<<" else sp.unk_id()] if m else []
        ids = code + sp.encode(CODE_RE.sub("", t))
        rows.append((t, ids, sp.decode([i for i in ids if i < code_id])))
    write("uni_nfkc_codes", rows)
    print("%d + %d texts" % (len(SPECIAL_TEXTS), len(CODE_TEXTS)))


def base_models():
    return [("uni_nfkc", ["--vocab_size=2000", "--character_coverage=0.9995"]),
            ("uni_t5", ["--vocab_size=1000", "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1"])]


if __name__ == "__main__":
    main()
