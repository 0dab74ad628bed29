#!/usr/bin/python3
"""make_unigram_albert.py — an ALBERT/XLNet-shaped Unigram tokenizer.json
(the normalizers AlbertConverter writes: Replace "``" and "''" by '"',
NFKD, StripAccents, Lowercase, then the SentencePiece converter's
Precompiled, Strip and Replace) over the uni_nfkc model of
make_unigram_tokenizers.py (retrained here with the same spm_train call,
and checked equal to the committed uni_nfkc.json), with the ids the real
SentencePiece gives for the same texts normalised first as those steps
say (Python's unicodedata NFKD, General_Category Mark removed as Rust's
is_combining_mark, each character lower-cased as Rust's
char::to_lowercase).

Writes into test/fixtures/tokenizer/unigram/ (the tokenizer.json itself is
uni_nfkc.json with the five steps put first; test/regress/sql/import_unigram.sql builds it):
  uni_albert.cases.tsv      "T<TAB>hex text<TAB>ids<TAB>hex decode" for
                            make_unigram_tokenizers.py's mixed texts, more
                            accented ones and 120 rt_polarity_test lines
  uni_albert.expected.json  {"texts", "ids", "decoded"} for test/regress/sql/import_unigram.sql
                            (ids as Hugging Face's: special tokens found first)
test/unit/test_tok_unigram.c runs uni_nfkc.model.tsv.gz with these steps.

Run from the repository root: /usr/bin/python3 test/reference/make_unigram_albert.py
"""
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_unigram_tokenizers as base  # noqa: E402

MORE_TEXTS = [
    "``Quoted'' the ``old'' way",
    "Ÿ Ž Œ œ Æ æ Ø ø Å å Ñ ñ Ç ç",
    "Crème brûlée à la mode, Zürich, São Paulo, Kraków, Ångström",
    "Ａｃｃｅｎｔｅｄ ｆｕｌｌ ｗｉｄｔｈ ÀÉÎÕÜ",
    "दिल्ली हिन्दी मराठी",
    "ﬁnal ﬂag ﬀ ³ ㎏ ™ ℡ ⅷ",
    "Ελληνικά ΆΈΉΊΌΎΏ άέήίόύώ",
    "한국어 텍스트 가나다",
]


def prenormalize(t):
    t = t.replace("``", '"').replace("''", '"')
    t = unicodedata.normalize("NFKD", t)
    t = "".join(c for c in t if not unicodedata.category(c).startswith("M"))
    return "".join(c.lower() for c in t)


def main():
    data = base.shared_dir()
    sp, tj = base.retrain("uni_nfkc")
    tj["normalizer"]["normalizers"] = [
        {"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
        {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
        {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
    ] + tj["normalizer"]["normalizers"]
    # test/regress/sql/import_unigram.sql builds the same tokenizer.json from uni_nfkc.json
    # (these five steps put before its normalizers); not written, to keep one copy
    texts = [t for t in base.TEXTS + MORE_TEXTS]
    for _, r in base.rows(os.path.join(data, "rt_polarity_test.tsv.gz"), 120):
        texts.append(r[0])
    exp = {"texts": [], "ids": [], "decoded": []}
    specials = [a["content"] for a in tj["added_tokens"] if a["special"]]
    with open(os.path.join(base.OUT, "uni_albert.cases.tsv"), "w") as f:
        for t in texts:
            ids = sp.encode(prenormalize(t))
            dec = sp.decode(ids)
            f.write("T\t%s\t%s\t%s\n" % (t.encode().hex(), " ".join(map(str, ids)), dec.encode().hex()))
            if "\0" not in t:
                # the tokenizer.json's ids: its specials found in the text first
                hf = base.hf_ids(sp, t, specials, lambda part: sp.encode(prenormalize(part)))
                exp["texts"].append(t)
                exp["ids"].append(hf)
                exp["decoded"].append(sp.decode(hf))
    with open(os.path.join(base.OUT, "uni_albert.expected.json"), "w", encoding="utf-8") as f:
        json.dump(exp, f, ensure_ascii=False)
        f.write("\n")
    print("%d texts" % len(texts))


if __name__ == "__main__":
    main()
