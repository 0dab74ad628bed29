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

Writes into test/fixtures/tokenizer/hf/ for each tokenizer NAME:
  NAME.json            the tokenizer.json
  NAME.expected.json   {"texts": [...], "ids": [[...]], "template": {...}}
                       ids without the post-processor's specials
  NAME.cases.tsv       the same for the C unit tests: "P<TAB>hex" per id
                       (raw piece bytes, in id order, model.vocab and the
                       added tokens), "M<TAB>left<TAB>right" per merge in
                       rank order, "T<TAB>hex text<TAB>ids"
  and "S<TAB>behavior<TAB>invert<TAB>hex pattern" per Split step as tfm
                       runs it on PCRE2 (Digits and ByteLevel's use_regex as
                       the Split they are), "N" when the text is put in NFC
Names: roberta (ByteLevel, RobertaProcessing), roberta_prefix (the same
with add_prefix_space true), llama3 (Split with Llama 3's pattern +
ByteLevel without regex, ignore_merges, "<|begin_of_text|> $A"), smollm
(Digits individual + ByteLevel); and, on TEXTS + MORE_TEXTS, qwen2 (NFC,
Split with Qwen2's pattern, ByteLevel without regex, <|endoftext|>
<|im_start|> <|im_end|> after model.vocab), gpt4o (Split with the o200k
pattern of GPT-4o-style tokenizers), deepseek (three Splits as DeepSeek-V3:
digits, CJK runs, its main pattern) and behaviors (Splits with every
behavior and invert, then ByteLevel with regex).

Run from the repository root: /usr/bin/python3 test/reference/make_hf_bpe_tokenizers.py
The output is deterministic.
"""
import gzip
import json
import os
import sys

import regex
import unicodedata

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
              r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
N_MERGES = 300
QWEN2_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
             r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
O200K_PAT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+"""])
DEEPSEEK_PATS = [
    r"""\p{N}{1,3}""",
    "[一-龥\u3040-ゟ゠-ヿ]+",  # the characters themselves, as the file has them
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""]

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

# more texts for the tokenizers run by PCRE2: NFC's compositions (decomposed
# accents, Hangul jamo, a singleton, marks out of canonical order), scripts
# with marks, Unicode spaces and line ends, case-insensitive contractions
MORE_TEXTS = [
    "A\u030angstro\u0308m Cafe\u0301 n\u0303 \u212b \u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
    "a\u0323\u0307 a\u0307\u0323 q\u0307\u0323 \u0958 \u2126hm",
    "हिन्दी العَرَبِيَّة ไทย Ελληνικά Русский 한국어 עִבְרִית",
    "x\u00a0y\u2003z\u3000w\u2028v\u0085u\u000bt\u000cs",
    "HELLO World CamelCaseWord iPhone McDonald's DON'T we'RE",
    "3.14159 1e10 ١٢٣٤ 12,345,678 ⅫⅦ",
    "path/to/file.txt https://example.com/a/b?c=d&e=f\nnext/\n",
    "日本語のテキストとカタカナ、ひらがな。中文混合English123",
    "🎉🎉🎉 👨‍👩‍👧 🇫🇷 ✓✔ ★☆",
    "    def f(x):\n        return x  # comment\n\n\n",
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


def split_pattern(p):
    pat = p["pattern"]
    return pat["Regex"] if "Regex" in pat else regex.escape(pat["String"])


def split(splits, pattern, behavior, invert):
    """Split as tokenizers' NormalizedString::split: the matches and the gaps
    (is_match flipped by invert), folded by the behavior; empty pieces go"""
    out = []
    for s in splits:
        pieces, prev = [], 0
        for m in regex.finditer(pattern, s):
            if m.start() > prev:
                pieces.append([prev, m.start(), invert])
            pieces.append([m.start(), m.end(), not invert])
            prev = m.end()
        if prev < len(s):
            pieces.append([prev, len(s), invert])
        acc, last = [], False
        if behavior == "Isolated":
            acc = [[a, b, False] for a, b, _ in pieces]
        elif behavior == "Removed":
            acc = pieces
        elif behavior in ("Contiguous", "MergedWithPrevious"):
            for a, b, m in pieces:
                join = (m == last) if behavior == "Contiguous" else (m and not last)
                if join and acc:
                    acc[-1][1] = b
                else:
                    acc.append([a, b, False])
                last = m
        elif behavior == "MergedWithNext":
            for a, b, m in reversed(pieces):
                if m and not last and acc:
                    acc[-1][0] = a
                else:
                    acc.append([a, b, False])
                last = m
            acc.reverse()
        else:
            raise ValueError(behavior)
        out += [s[a:b] for a, b, removed in acc if not removed and b > a]
    return out


def pcre_rules(spec):
    """the Split steps tfm runs on PCRE2 for a pre-tokenizer"""
    steps = spec["pretokenizers"] if spec["type"] == "Sequence" else [spec]
    rules = []
    for p in steps:
        if p["type"] == "Digits":
            rules.append(("Isolated", False, r"\p{N}" if p["individual_digits"] else r"\p{N}+"))
        elif p["type"] == "Split":
            pat = p["pattern"]
            rules.append((p["behavior"], p["invert"],
                          pat["Regex"] if "Regex" in pat else "\\Q" + pat["String"] + "\\E"))
        elif p["type"] == "ByteLevel" and p["use_regex"]:
            rules.append(("Isolated", False, GPT2_PAT))
    return rules


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
            splits = split(splits, split_pattern(p), p["behavior"], p["invert"])
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
    if tok.get("normalizer") and tok["normalizer"]["type"] == "NFC":
        text = unicodedata.normalize("NFC", text)
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


def split_bpe(name, steps, n_merges=N_MERGES, nfc=False, leading=(), specials=()):
    """a byte-level BPE with these Split steps before ByteLevel (no regex)"""
    pre = {"type": "Sequence", "pretokenizers": steps + [byte_level_spec(False, False)]}
    if not any(p["type"] == "ByteLevel" for p in steps):
        pre["pretokenizers"][-1] = byte_level_spec(False, False)
    merges = learn(pre, n_merges)
    vocab = vocab_of(leading, merges)
    n = len(vocab)
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(t, n + i) for i, t in enumerate(specials)],
        "normalizer": {"type": "NFC"} if nfc else None, "pre_tokenizer": pre,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": bpe_model(vocab, merges),
    }
    return tok, {}


def regex_split(pattern, behavior="Isolated", invert=False):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


def qwen2():
    # Qwen2's shape: NFC, its Split, ByteLevel; 256 bytes + 117 merges + its
    # three specials = 376 ids (the size of the Qwen2 model fixture)
    return split_bpe("qwen2", [regex_split(QWEN2_PAT)], n_merges=117, nfc=True,
                     specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])


def gpt4o():
    return split_bpe("gpt4o", [regex_split(O200K_PAT)], specials=["<|endoftext|>"])


def deepseek():
    return split_bpe("deepseek", [regex_split(p) for p in DEEPSEEK_PATS],
                     specials=["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"])


def behaviors():
    steps = [
        {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithPrevious", "invert": False},
        regex_split(r"[,.;:]", "MergedWithNext"),
        regex_split(r"\p{N}", "Contiguous"),
        regex_split(r"\t", "Removed"),
        regex_split(r"\p{Lu}+", "Isolated", True),
        regex_split(r"[aeiou]", "MergedWithPrevious", True),
    ]
    tok, tpl = split_bpe("behaviors", steps, n_merges=120)
    tok["pre_tokenizer"]["pretokenizers"][-1] = byte_level_spec(False, True)
    return tok, tpl


def write(out, name, tok, template, texts=None):
    texts = texts or TEXTS
    ids = [encode(tok, t) for t in texts]
    with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(out, name + ".expected.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "ids": ids, "template": template}, f, ensure_ascii=False)
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
        for b, inv, pat in pcre_rules(tok["pre_tokenizer"]):
            f.write("S\t%s\t%d\t%s\n" % (b, inv, pat.encode("utf-8").hex()))
        if tok.get("normalizer"):
            f.write("N\n")
        for t, x in zip(texts, ids):
            f.write("T\t%s\t%s\n" % (t.encode("utf-8").hex(), " ".join(map(str, x))))
    # the ids decode back to the text (the prefix space aside; NFC and Removed change it)
    for t, x in zip(texts, ids):
        if tok.get("normalizer"):
            t = unicodedata.normalize("NFC", t)
        if name == "behaviors":
            t = t.replace("\t", "")
        inv = {i: p for p, i in tok["model"]["vocab"].items()}
        back = b"".join(raw_bytes(inv[i]) for i in x).decode("utf-8")
        want = " " + t if tok["pre_tokenizer"].get("add_prefix_space") and t and t[0] != " " else t
        assert back == want, (name, t, back)
    print("%-15s %4d pieces %4d merges %5d ids" % (name, len(pieces), len(tok["model"]["merges"]),
                                                   sum(len(x) for x in ids)))


def main():
    out = "test/fixtures/tokenizer/hf"
    os.makedirs(out, exist_ok=True)
    for name, (tok, tpl) in (("roberta", roberta(False)), ("roberta_prefix", roberta(True)),
                             ("llama3", llama3()), ("smollm", smollm())):
        write(out, name, tok, tpl)
    for name, (tok, tpl) in (("qwen2", qwen2()), ("gpt4o", gpt4o()), ("deepseek", deepseek()),
                             ("behaviors", behaviors())):
        write(out, name, tok, tpl, TEXTS + MORE_TEXTS)


if __name__ == "__main__":
    main()
