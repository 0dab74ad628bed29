#!/usr/bin/python3
"""hf_marian_tokens.py — the ids MarianTokenizer gives for mixed texts with
the Marian fixture's SentencePiece models (test/fixtures/hf_marian), from
the sentencepiece Python module (python3-sentencepiece, 0.1.97): the
source model's pieces mapped to vocab.json's ids (a piece it lacks is
<unk>) and </s> appended, as MarianTokenizer encodes a source; the target
model's likewise without </s>.  Writes test/fixtures/hf_marian/tokens.json
for test/regress/sql/import_marian.sql.

Run: /usr/bin/python3 test/reference/hf_marian_tokens.py (from the repository root).
"""
import json

import sentencepiece as spm

DIR = "test/fixtures/hf_marian"
TEXTS = [
    "I like the cat.",
    "Hello world",
    "  leading and trailing   ",
    "a  b   c    d     e",
    "tab\tseparated\t\tvalues\t",
    "1 22 333 4444 55555 3.14159 1,000,000",
    "naïve café résumé Ünïcödé Ça va très bien",
    "e\u0301te\u0301 combining marks\u0308",
    "東京は日本の首都です。北京",
    "emoji 🎉🚀 test 👍🏽 end",
    "ＡＢＣ１２３ full-width ｶﾀｶﾅ ﬁ ① ㍿ ½",
    "Je n'ai pas vu l'homme à la fenêtre, Noël !",
    "\u00a0nbsp\u3000ideographic\u2028sep\ufeffbom\u200bzw",
    "<s> </s> <unk> are plain text",
    "x",
    "",
]


def main():
    vocab = json.load(open(f"{DIR}/vocab.json", encoding="utf-8"))
    out = {"texts": TEXTS, "source": [], "target": []}
    for side in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=f"{DIR}/{side}.spm")
        for t in TEXTS:
            ids = [vocab.get(p, vocab["<unk>"]) for p in sp.encode(t, out_type=str)]
            out[side].append(ids + ([vocab["</s>"]] if side == "source" else []))
    with open(f"{DIR}/tokens.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
