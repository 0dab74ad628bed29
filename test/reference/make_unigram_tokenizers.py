#!/usr/bin/python3
"""make_unigram_tokenizers.py — SentencePiece Unigram models trained with
spm_train on the shared corpora, converted to tokenizer.json as Hugging
Face's convert_slow_tokenizer (SpmConverter) does, and the ids the real
SentencePiece (python3-sentencepiece) gives for mixed texts and corpus
lines, for tfm's Unigram tests (test/unit/test_tok_unigram.c,
test/regress/sql/import_unigram.sql).

Models (trained on the first lines of rt_polarity_train and eng_fra_train,
--num_threads=1, so a rerun gives the same files):
  uni_nfkc   vocab 2000, default nmt_nfkc normalisation (a non-trivial
             precompiled_charsmap), unknown characters -> <unk>
  uni_bytes  vocab 1000, --byte_fallback (<0x00>..<0xFF> pieces), nmt_nfkc
  uni_t5     vocab 1000 with T5's ids (<pad> 0, </s> 1, <unk> 2, no <s>),
             converted in the shape of T5's published tokenizer.json
             (T5Converter): 10 <extra_id_N> added after the pieces in
             reverse order, normalizer Precompiled alone, pre-tokenizer
             Sequence[WhitespaceSplit, Metaspace(add_prefix_space)], decoder
             Metaspace, post-processor "$A </s>"; its ids are SentencePiece's
             with </s> appended

Conversion (what SpmConverter writes for a Unigram model):
  model          {"type": "Unigram", "unk_id", "vocab": [[piece, score]...],
                  "byte_fallback"}
  normalizer     Sequence[Precompiled(precompiled_charsmap),
                  Strip(right), Replace(Regex " {2,}" -> "▁")]
  pre_tokenizer  Metaspace("▁", prepend_scheme "always", split true)
  decoder        Metaspace("▁", "always") ; with byte_fallback the Llama
                 form Sequence[Replace "▁" -> " ", ByteFallback, Fuse,
                 Strip(" ", 1, 0)]
  added_tokens   the control and unknown pieces, special
There is no protobuf module here: the model file's normalizer_spec is read
with a few lines of wire-format parsing.

Writes into test/fixtures/tokenizer/unigram/:
  NAME.json           the tokenizer.json
  NAME.cases.tsv      "T<TAB>hex text<TAB>ids<TAB>hex decode" for the mixed
                      texts (decode: SentencePiece's decode of its ids;
                      uni_t5's ids end with </s>, which decode drops)
  NAME.expected.json  {"texts": [...], "ids": [[...]], "decoded": [...]}
                      for test/regress/sql/import_unigram.sql: the same texts (but the one
                      with NUL) with the ids Hugging Face's tokenizers gives for
                      the tokenizer.json, which finds its special tokens in the
                      text first (hf_ids: "<s>" in a text is id 1 there, plain
                      text to SentencePiece)
  NAME.model.tsv.gz   the tokenizer.json's model for the C test, which has
                      no JSON reader: "V<TAB>hex piece<TAB>score (float.hex)
                      <TAB>special 0/1" by id, "C<TAB>hex precompiled_charsmap",
                      "B<TAB>byte_fallback 0/1"
  ref_ids.tsv.gz      "model<TAB>corpus<TAB>row<TAB>field<TAB>ids<TAB>dec"
                      for corpus lines (rt_polarity_test, eng_fra_test's
                      first 2500 pairs, both fields; uni_t5 the first 2000); dec is "=" when
                      SentencePiece's decode gives the text back, else hex
The .model files themselves are not kept (they are rebuilt here).

Run from the repository root: /usr/bin/python3 test/reference/make_unigram_tokenizers.py
"""
import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm

OUT = "test/fixtures/tokenizer/unigram"
SP = "\u2581"

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " ",
    "   leading and trailing   ",
    "a  b   c    d     e",
    "tab\tseparated\t\tvalues\t",
    "line one\nline two\r\n\r\nthree\n",
    "1 22 333 4444 55555 3.14159 1,000,000",
    "naïve café résumé Ünïcödé Ça va très bien",
    "e\u0301te\u0301 combining marks\u0308",
    "東京は日本の首都です。北京",
    "emoji 🎉🚀 test 👍🏽 end",
    "ＡＢＣ１２３ full-width ｶﾀｶﾅ ﬁ ① ㍿ ½",
    "unknown: ∰ ⨌ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ᚠᛇᚻ",
    "It's a \"quoted\" -- text (really)!? #tag @user",
    "Je n'ai pas vu l'homme à la fenêtre, Noël !",
    "\u00a0nbsp\u3000ideographic\u2028sep\ufeffbom\u200bzw",
    "▁ literal ▁▁ metaspace",
    "<s> </s> <unk> <0x41> are plain text",
    "x",
    "\u0000nul and \u0007bell controls\u007f",
    "mixed123abc456 x1y22z333 007",
    "Ǆ ǅ ǆ ß ẞ İ ı ﬀ Ⅻ",
]


# Unicode White_Space (Rust's char::is_whitespace)
WS = set(map(chr, list(range(9, 14)) + [0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B)) +
             [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))


def split_specials(text, specials, strip):
    """[(text part, None) or (None, special)] as Hugging Face's added vocabulary splits"""
    out, done, i = [], 0, 0
    while i < len(text):
        best = max((s for s in specials if text.startswith(s, i)), key=len, default=None)
        if best is None:
            i += 1
            continue
        a, b = i, i + len(best)
        if strip(best):
            while a > done and text[a - 1] in WS:
                a -= 1
            while b < len(text) and text[b] in WS:
                b += 1
        out.append((text[done:a], None))
        out.append((None, best))
        done = i = b
    out.append((text[done:], None))
    return out



def hf_ids(sp, text, specials, encode=None):
    """the ids Hugging Face's tokenizer.json gives: the specials found in the text first
    (split_specials), each part between them encoded apart"""
    encode = encode or sp.encode
    ids = []
    for part, special in split_specials(text, specials, lambda s: False):
        ids += [sp.piece_to_id(special)] if special is not None else (encode(part) if part else [])
    return ids


def varint(b, i):
    x = s = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return x, i


def fields(b):
    """(field number, wire type, value) of a protobuf message"""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def normalizer_spec(model_bytes):
    spec = {"charsmap": b"", "add_dummy_prefix": True, "remove_extra_whitespaces": True,
            "escape_whitespaces": True}
    for f, w, v in fields(model_bytes):
        if f == 3:
            for g, _, u in fields(v):
                if g == 2:
                    spec["charsmap"] = u
                elif g == 3:
                    spec["add_dummy_prefix"] = bool(u)
                elif g == 4:
                    spec["remove_extra_whitespaces"] = bool(u)
                elif g == 5:
                    spec["escape_whitespaces"] = bool(u)
    return spec


N_EXTRA_IDS = 10


def convert_t5(sp, model_bytes):
    """what T5Converter writes (the older tokenizers format of t5-small's file)"""
    t = convert(sp, model_bytes)
    n = sp.get_piece_size()
    extra = ["<extra_id_%d>" % i for i in range(N_EXTRA_IDS - 1, -1, -1)]
    t["model"]["vocab"] += [[e, 0.0] for e in extra]
    t["added_tokens"] += [{"id": n + k, "content": e, "single_word": False, "lstrip": False,
                           "rstrip": False, "normalized": False, "special": True}
                          for k, e in enumerate(extra)]
    t["added_tokens"].sort(key=lambda a: a["id"])
    t["normalizer"] = t["normalizer"]["normalizers"][0]
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"},
        {"type": "Metaspace", "replacement": SP, "add_prefix_space": True}]}
    t["decoder"] = {"type": "Metaspace", "replacement": SP, "add_prefix_space": True}
    t["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"</s>": {"id": "</s>", "ids": [sp.eos_id()], "tokens": ["</s>"]}}}
    return t


def convert(sp, model_bytes):
    spec = normalizer_spec(model_bytes)
    assert spec["add_dummy_prefix"] and spec["remove_extra_whitespaces"] and spec["escape_whitespaces"]
    n = sp.get_piece_size()
    vocab = [[sp.id_to_piece(i), float(sp.get_score(i))] for i in range(n)]
    byte_fallback = any(sp.is_byte(i) for i in range(n))
    added = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i in range(n) if sp.is_control(i) or sp.is_unknown(i)]
    norms = []
    if spec["charsmap"]:
        norms.append({"type": "Precompiled",
                      "precompiled_charsmap": base64.b64encode(spec["charsmap"]).decode()})
    norms.append({"type": "Strip", "strip_left": False, "strip_right": True})
    norms.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": SP})
    if byte_fallback:
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    else:
        decoder = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": norms},
        "pre_tokenizer": {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always",
                          "split": True},
        "post_processor": None,
        "decoder": decoder,
        "model": {"type": "Unigram", "unk_id": sp.unk_id(), "vocab": vocab,
                  "byte_fallback": byte_fallback},
    }


def shared_dir():
    for d in (os.environ.get("TFM_SHARED_DATA"), "../shared/data", "/work/shared/data"):
        if d and os.path.exists(os.path.join(d, "rt_polarity_train.tsv.gz")):
            return d
    sys.exit("shared data not found (set TFM_SHARED_DATA)")


def rows(path, limit=None):
    with gzip.open(path, "rt", encoding="utf-8", newline="") as g:
        next(g)
        for i, line in enumerate(g):
            if limit is not None and i >= limit:
                return
            yield i, line.rstrip("\n").split("\t")


MODELS = [("uni_nfkc", ["--vocab_size=2000", "--character_coverage=0.9995"]),
          ("uni_bytes", ["--vocab_size=1000", "--byte_fallback=true"]),
          ("uni_t5", ["--vocab_size=1000", "--pad_id=0", "--eos_id=1", "--unk_id=2",
                      "--bos_id=-1"])]


def corpus_file(data, tmp):
    """the training text: rt_polarity_train and the first 30,000 eng_fra_train pairs"""
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as out:
        for _, r in rows(os.path.join(data, "rt_polarity_train.tsv.gz")):
            out.write(r[0] + "\n")
        for _, r in rows(os.path.join(data, "eng_fra_train.tsv.gz"), 30000):
            out.write(r[0] + "\n" + r[1] + "\n")
    return corpus


def retrain(name):
    """model name of MODELS trained again (for the other scripts), checked equal to
    its committed tokenizer.json: (SentencePieceProcessor, tokenizer.json dict)"""
    tmp = tempfile.mkdtemp()
    prefix = os.path.join(tmp, name)
    subprocess.run(["spm_train", "--input=" + corpus_file(shared_dir(), tmp), "--model_prefix=" + prefix,
                    "--model_type=unigram", "--num_threads=1"] + dict(MODELS)[name],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(prefix + ".model", "rb") as f:
        mb = f.read()
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    tj = (convert_t5 if name == "uni_t5" else convert)(sp, mb)
    with open(os.path.join(OUT, name + ".json"), encoding="utf-8") as f:
        assert json.load(f)["model"] == tj["model"], "spm_train gave another " + name
    return sp, tj


def main():
    data = shared_dir()
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    corpus = corpus_file(data, tmp)
    models = MODELS
    corpus_texts = []
    for i, r in rows(os.path.join(data, "rt_polarity_test.tsv.gz")):
        corpus_texts.append(("rt_polarity_test.tsv.gz", i, 0, r[0]))
    for i, r in rows(os.path.join(data, "eng_fra_test.tsv.gz"), 2500):
        corpus_texts.append(("eng_fra_test.tsv.gz", i, 0, r[0]))
        corpus_texts.append(("eng_fra_test.tsv.gz", i, 1, r[1]))
    ref = []
    for name, opts in models:
        prefix = os.path.join(tmp, name)
        subprocess.run(["spm_train", "--input=" + corpus, "--model_prefix=" + prefix,
                        "--model_type=unigram", "--num_threads=1"] + opts,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(prefix + ".model", "rb") as f:
            mb = f.read()
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        t5 = name == "uni_t5"
        tj = (convert_t5 if t5 else convert)(sp, mb)
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False)
            f.write("\n")
        special = {a["id"] for a in tj["added_tokens"]}
        lines = ["V\t%s\t%s\t%d\n" % (piece.encode().hex(), float(score).hex(),
                                        1 if i in special else 0)
                 for i, (piece, score) in enumerate(tj["model"]["vocab"])]
        lines.append("C\t%s\n" % normalizer_spec(mb)["charsmap"].hex())
        lines.append("B\t%d\n" % (1 if tj["model"]["byte_fallback"] else 0))
        with gzip.GzipFile(os.path.join(OUT, name + ".model.tsv.gz"), "wb", mtime=0) as g:
            g.write("".join(lines).encode())
        exp = {"texts": [], "ids": [], "decoded": []}
        specials = [a["content"] for a in tj["added_tokens"] if a["special"]]
        with open(os.path.join(OUT, name + ".cases.tsv"), "w") as f:
            for t in TEXTS:
                ids = sp.encode(t) + ([sp.eos_id()] if t5 else [])
                dec = sp.decode(ids)
                f.write("T\t%s\t%s\t%s\n" % (t.encode().hex(), " ".join(map(str, ids)),
                                            dec.encode().hex()))
                if "\0" not in t:      # no PostgreSQL text holds NUL
                    # the tokenizer.json's ids: its specials found in the text
                    hf = hf_ids(sp, t, specials) + ([sp.eos_id()] if t5 else [])
                    exp["texts"].append(t)
                    exp["ids"].append(hf)
                    exp["decoded"].append(sp.decode(hf))
        with open(os.path.join(OUT, name + ".expected.json"), "w", encoding="utf-8") as f:
            json.dump(exp, f, ensure_ascii=False)
            f.write("\n")
        for c, i, fld, t in (corpus_texts if not t5 else corpus_texts[:2000]):
            ids = sp.encode(t) + ([sp.eos_id()] if t5 else [])
            dec = sp.decode(ids)
            ref.append("%s\t%s\t%d\t%d\t%s\t%s\n" % (name, c, i, fld, " ".join(map(str, ids)),
                                                    "=" if dec == t else dec.encode().hex()))
    with gzip.GzipFile(os.path.join(OUT, "ref_ids.tsv.gz"), "wb", mtime=0) as g:
        g.write("".join(ref).encode())


if __name__ == "__main__":
    main()
