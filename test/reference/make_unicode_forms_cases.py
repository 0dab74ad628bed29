#!/usr/bin/python3
"""make_unicode_forms_cases.py — the reference for tfm's Unicode
normalization forms (src/core/tokenizer/unicode/tok_unicode_forms.c): Python's
unicodedata.normalize of texts in NFC, NFD, NFKC and NFKD, for
test/unit/test_unicode_forms.c.

Texts: every code point that has a decomposition (either kind), a
canonical combining class, a part in a primary composite or General
Category Mark, alone; each code point with a decomposition between "a" and
two marks out of canonical order (U+0316 below, U+0301 above); a sample of
Hangul syllables and jamo sequences (L V, L V T, LV T); runs of 20 to 6,000
marks out of order; 400 random texts of
1-12 characters drawn from all of those, ASCII and CJK. And the mark runs
(General_Category M*) over all code points, which StripAccents removes.

Writes test/fixtures/tokenizer/unicode_forms_cases.tsv.gz:
  "F<TAB>hex text<TAB>hex NFC<TAB>hex NFD<TAB>hex NFKC<TAB>hex NFKD"
  "M<TAB>first<TAB>last" (hex code points, a run of marks)
Run from the repository root: /usr/bin/python3 test/reference/make_unicode_forms_cases.py
"""
import gzip
import random
import unicodedata as u

OUT = "test/fixtures/tokenizer/unicode_forms_cases.tsv.gz"


def hx(s):
    return s.encode("utf-8").hex()


def main():
    rnd = random.Random(29)
    singles, decomposable, marks = [], [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        d = u.decomposition(c)
        m = u.category(c).startswith("M")
        if m:
            marks.append(cp)
        if d or u.combining(c) or m or any(u.normalize(f, c) != c for f in ("NFC", "NFKC")):
            if 0xAC00 <= cp <= 0xD7A3 and cp % 37:
                continue
            singles.append(c)
            if d:
                decomposable.append(c)
    texts = list(singles)
    texts += ["a" + c + "\u0316\u0301" for c in decomposable]
    texts += ["\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u1112\u1175\u11ab\u1100\u1173\u11af",
              "\u1100\u0301\u1161", "\uac00\u11a7", "\uac00\u11c3"]
    # long runs of marks out of order (sorted by counting past 32 marks)
    marks_pool = [c for c in singles if u.combining(c)]
    texts += ["a" + "\u0301\u0316" * 3000 + "b", "\u0301" * 40 + "\u0316" * 40]
    texts += ["e" + "".join(rnd.choice(marks_pool) for _ in range(rnd.randint(20, 200))) + "x"
              for _ in range(20)]
    pool = singles + list("abcxyz ,.") + ["\u4e2d", "\u6587", "\u1100", "\u1161", "\u11a8", "\u0301", "\u0316"]
    for _ in range(400):
        texts.append("".join(rnd.choice(pool) for _ in range(rnd.randint(1, 12))))
    runs = []
    for cp in marks:
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    with gzip.open(OUT, "wt", encoding="ascii", compresslevel=9) as f:
        for t in texts:
            f.write("F\t%s\t%s\t%s\t%s\t%s\n" % (hx(t), hx(u.normalize("NFC", t)), hx(u.normalize("NFD", t)),
                                              hx(u.normalize("NFKC", t)), hx(u.normalize("NFKD", t))))
        for a, b in runs:
            f.write("M\t%x\t%x\n" % (a, b))
    print("%d texts, %d mark runs (Unicode %s)" % (len(texts), len(runs), u.unidata_version))


if __name__ == "__main__":
    main()
