#!/usr/bin/python3
"""make_hf_bpe_tokenizers.py — small byte-level BPE tokenizer.json files in
the shapes of published models, and the ids Hugging Face tokenizers gives
for a set of texts, for tfm's tokenizer.json import tests.

There is no `tokenizers` package here: this is a from-the-description
implementation of what it does for these files (python3 with `regex`, which
has \\p{L} / \\p{N} and the same backtracking semantics as Oniguruma):
  pre-tokenizers  ByteLevel (add_prefix_space: " " before a text that does
                  not start with one; use_regex: GPT-2's pattern, matches
                  isolated), Split (a regex, behavior Isolated), Digits
                  (\\p{N} isolated one by one, or in runs), Sequence (each
                  one applied to every split of the previous)
  model           BPE over the bytes_to_unicode characters of each
                  pre-token: the adjacent pair of lowest merge rank is
                  merged, leftmost first, until none is left; with
                  ignore_merges a pre-token that is a piece of the vocabulary
                  is that one id
  post-processor  a template's specials around the ids (recorded apart)

Merges are learned from real text (/work/shared/data, or TFM_SHARED_DATA)
by plain BPE on the pre-token counts: the most frequent pair first, ties
by the pair's pieces.

Writes into test/tokenizer/hf/ for each tokenizer NAME:
  NAME.json            the tokenizer.json
  NAME.expected.json   {"texts": [...], "ids": [[...]], "template": {...}}
                       ids without the post-processor's specials
  NAME.cases.tsv       the same for the C unit tests: "P<TAB>hex" per id
                       (raw piece bytes, in id order, model.vocab and the
                       added tokens), "M<TAB>left<TAB>right" per merge in
                       rank order, "T<TAB>hex text<TAB>ids"
Names: roberta (ByteLevel, RobertaProcessing), roberta_prefix (the same
with add_prefix_space true), llama3 (Split with Llama 3's pattern +
ByteLevel without regex, ignore_merges, "<|begin_of_text|> $A"), smollm
(Digits individual + ByteLevel).

Run from the repository root: /usr/bin/python3 test/reference/make_hf_bpe_tokenizers.py
The output is deterministic.
"""
import gzip
import json
import os
import sys

import regex

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
              r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
N_MERGES = 300

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "I'm sure it's fine, we'll see; they've said you'd go and we're off.",
    "I'M SURE IT'S FINE, WE'LL SEE; THEY'VE SAID YOU'D GO, WE'RE OFF",
    "'S 'll 'LL 'Ll 'rE x's 'ſ 'x",
    "1 22 333 4444 55555 666666 7777777",
    "In 1851, 3.14159 and 1,000,000 whales; ٣٤٥ and ²³",
    "line one\nline two\r\n\r\nline three\n\n\n  indented\r\n",
    "a  b   c    d     e",
    "   leading spaces and trailing spaces   ",
    " one leading space",
    "Wait... what?!?! (really) -- yes!!! #hashtag @user {x: [1, 2]}",
    "naïve café résumé Ünïcödé Ça va très bien",
    "e\u0301te\u0301 combining marks\u0308",
    "東京は日本の首都です。北京",
    "emoji 🎉🚀 test 👍🏽 end",
    "tab\tseparated\tvalues\t\t end\t",
    "Call me Ishmael. Some years ago—never mind how long precisely—having little",
    "mixed123abc456 x1y22z333 007",
    "Ishmael Ishmael whale whales",
    "\n\n\n",
    "      ",
    "hello\r\n\tworld \n x ",
]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()
U2B = {v: k for k, v in B2U.items()}


def to_printable(s):
    return "".join(B2U[b] for b in s.encode("utf-8"))


def raw_bytes(piece):
    return bytes(U2B[c] for c in piece)


# ---- pre-tokenizers: each maps a list of splits to a list of splits ------------

def isolated(splits, pattern):
    """Split with behavior Isolated: the matches and the gaps between them"""
    out = []
    for s in splits:
        pos = 0
        for m in regex.finditer(pattern, s):
            if m.start() > pos:
                out.append(s[pos:m.start()])
            if m.end() > m.start():
                out.append(m.group(0))
            pos = m.end()
        if pos < len(s):
            out.append(s[pos:])
    return out


def byte_level(splits, add_prefix_space, use_regex):
    if add_prefix_space:
        # NormalizedString.prepend does nothing to an empty string
        splits = [s if s.startswith(" ") or not s else " " + s for s in splits]
    if use_regex:
        splits = isolated(splits, GPT2_PAT)
    return splits


def pre_tokenize(spec, text):
    splits = [text] if text else []
    kind = spec["type"]
    steps = spec["pretokenizers"] if kind == "Sequence" else [spec]
    for p in steps:
        if p["type"] == "ByteLevel":
            splits = byte_level(splits, p["add_prefix_space"], p["use_regex"])
        elif p["type"] == "Split":
            assert p["behavior"] == "Isolated" and not p["invert"]
            splits = isolated(splits, p["pattern"]["Regex"])
        elif p["type"] == "Digits":
            splits = isolated(splits, r"\p{N}" if p["individual_digits"] else r"\p{N}+")
        else:
            raise ValueError(p["type"])
    return [to_printable(s) for s in splits]


# ---- the BPE model ------------------------------------------------------------

def bpe(word, vocab, ranks, ignore_merges):
    if ignore_merges and word in vocab:
        return [vocab[word]]
    syms = list(word)
    while len(syms) > 1:
        best, at = None, -1
        for i in range(len(syms) - 1):
            r = ranks.get((syms[i], syms[i + 1]))
            if r is not None and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        syms[at:at + 2] = [syms[at] + syms[at + 1]]
    return [vocab[s] for s in syms]


def encode(tok, text):
    model = tok["model"]
    vocab = model["vocab"]
    ranks = {tuple(m): r for r, m in enumerate(model["merges"])}
    ids = []
    for w in pre_tokenize(tok["pre_tokenizer"], text):
        ids += bpe(w, vocab, ranks, model.get("ignore_merges", False))
    return ids


# ---- learning merges ------------------------------------------------------------

def shared_dir():
    for d in (os.environ.get("TFM_SHARED_DATA"), "../shared/data", "/work/shared/data"):
        if d and os.path.isdir(d):
            return d
    sys.exit("no shared data directory (set TFM_SHARED_DATA)")


def corpus():
    d = shared_dir()
    with gzip.open(os.path.join(d, "moby_dick_train.txt.gz"), "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(3000)]
    with gzip.open(os.path.join(d, "eng_fra_train.tsv.gz"), "rt", encoding="utf-8") as f:
        next(f)
        lines += [next(f).replace("\t", "\n") for _ in range(1500)]
    # paragraphs, so that newline runs and indentation are seen too
    return ["".join(lines[i:i + 6]) for i in range(0, len(lines), 6)]


def learn(pre_tokenizer, n_merges):
    counts = {}
    for text in corpus():
        for w in pre_tokenize(pre_tokenizer, text):
            counts[w] = counts.get(w, 0) + 1
    words = [(list(w), c) for w, c in sorted(counts.items())]
    merges = []
    while len(merges) < n_merges:
        pairs = {}
        for syms, c in words:
            for i in range(len(syms) - 1):
                k = (syms[i], syms[i + 1])
                pairs[k] = pairs.get(k, 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda k: (-pairs[k], k))
        if pairs[best] < 2:
            break
        merges.append(best)
        for syms, _ in words:
            i = 0
            while i < len(syms) - 1:
                if (syms[i], syms[i + 1]) == best:
                    syms[i:i + 2] = [best[0] + best[1]]
                i += 1
    return merges


def vocab_of(leading, merges, extra=()):
    vocab = {}
    for t in leading:
        vocab[t] = len(vocab)
    for b in sorted(B2U):  # the 256 bytes in byte order
        vocab.setdefault(B2U[b], len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for t in extra:
        vocab.setdefault(t, len(vocab))
    return vocab


def added(content, id_):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def bpe_model(vocab, merges, ignore_merges=False):
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
         "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False}
    if ignore_merges:
        m["ignore_merges"] = True
    m["vocab"] = vocab
    m["merges"] = [[a, b] for a, b in merges]
    return m


def byte_level_spec(prefix, use_regex=True):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": use_regex}


def roberta(prefix):
    pre = byte_level_spec(prefix)
    merges = learn(pre, N_MERGES)
    vocab = vocab_of(["<s>", "<pad>", "</s>", "<unk>"], merges, ["<mask>"])
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(t, vocab[t]) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")],
        "normalizer": None, "pre_tokenizer": pre,
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": prefix},
        "decoder": byte_level_spec(prefix),
        "model": bpe_model(vocab, merges),
    }
    return tok, {"cls": 0, "sep": 2}


def llama3():
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_PAT}, "behavior": "Isolated", "invert": False},
        byte_level_spec(False, False)]}
    merges = learn(pre, N_MERGES)
    # whole words that the merges do not build: ignore_merges makes them one id
    extra = [to_printable(w) for w in (" Ishmael", " whales", "Hello", " precisely", "ſ")]
    vocab = vocab_of([], merges, extra)
    n = len(vocab)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>"]
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        # as Meta's file: the specials are added tokens after model.vocab's ids
        "added_tokens": [added(t, n + i) for i, t in enumerate(specials)],
        "normalizer": None, "pre_tokenizer": pre,
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [n],
                                                      "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": byte_level_spec(True),
        "model": bpe_model(vocab, merges, ignore_merges=True),
    }
    return tok, {"bos": n}


def smollm():
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, byte_level_spec(False)]}
    merges = learn(pre, N_MERGES)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = vocab_of(specials, merges)
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(t, vocab[t]) for t in specials],
        "normalizer": None, "pre_tokenizer": pre,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": byte_level_spec(True),
        "model": bpe_model(vocab, merges),
    }
    return tok, {}


def write(out, name, tok, template):
    ids = [encode(tok, t) for t in TEXTS]
    with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(out, name + ".expected.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": TEXTS, "ids": ids, "template": template}, f, ensure_ascii=False)
        f.write("\n")
    pieces = {}
    for p, i in tok["model"]["vocab"].items():
        pieces[i] = raw_bytes(p) if not any(p == a["content"] for a in tok["added_tokens"]) \
            else p.encode("utf-8")
    for a in tok["added_tokens"]:
        pieces[a["id"]] = a["content"].encode("utf-8")
    with open(os.path.join(out, name + ".cases.tsv"), "w", encoding="utf-8") as f:
        f.write("# %s: pieces by id (hex), merges (ids) by rank, texts (hex) and their ids;"
                " made by test/reference/make_hf_bpe_tokenizers.py\n" % name)
        for i in range(len(pieces)):
            f.write("P\t%s\n" % pieces[i].hex())
        v = tok["model"]["vocab"]
        for a, b in tok["model"]["merges"]:
            f.write("M\t%d\t%d\n" % (v[a], v[b]))
        for t, x in zip(TEXTS, ids):
            f.write("T\t%s\t%s\n" % (t.encode("utf-8").hex(), " ".join(map(str, x))))
    # the ids decode back to the text (the prefix space aside)
    for t, x in zip(TEXTS, ids):
        inv = {i: p for p, i in tok["model"]["vocab"].items()}
        back = b"".join(raw_bytes(inv[i]) for i in x).decode("utf-8")
        want = " " + t if tok["pre_tokenizer"].get("add_prefix_space") and t and t[0] != " " else t
        assert back == want, (name, t, back)
    print("%-15s %4d pieces %4d merges %5d ids" % (name, len(pieces), len(tok["model"]["merges"]),
                                                   sum(len(x) for x in ids)))


def main():
    out = "test/tokenizer/hf"
    os.makedirs(out, exist_ok=True)
    for name, (tok, tpl) in (("roberta", roberta(False)), ("roberta_prefix", roberta(True)),
                             ("llama3", llama3()), ("smollm", smollm())):
        write(out, name, tok, tpl)


if __name__ == "__main__":
    main()
