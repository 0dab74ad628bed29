#!/usr/bin/python3
"""Reference data for tfm's BLEU (test/test_bleu.c, sql/bleu.sql).

Run from the repository root with Debian's Python and NLTK (python3-nltk 3.8):

    /usr/bin/python3 test/bleu/make_reference.py [SHARED_DATA_DIR]

SHARED_DATA_DIR (default $TFM_SHARED_DATA, then ../shared/data, then
/work/shared/data) must hold eng_fra_test.tsv.gz.  The output is the same
bytes on every run.  It writes, in test/bleu/:

  tokenize.tsv       13a tokenizer cases: name, input (UTF-8 hex), expected
                     tokenized line (UTF-8 hex), the input as a Python repr.
                     Hand-made corners and seeded random strings over the
                     characters the tokenizer treats specially.
  segments.tsv       small hand-written corpora: corpus, hypothesis, four
                     references (UTF-8 hex; \\N = NULL, an empty field = '').
  corpus.tsv         corpora from eng_fra_test.tsv.gz (shared data, never
                     copied here): corpus, hypothesis row, edits, reference
                     rows.  Rows are 0-based data lines of the file (after
                     the header); texts are the French column.  The
                     hypothesis is the text of its row split on ' ' with the
                     edits applied in order, joined with ' ':
                       d:I          delete word I
                       s:I          swap words I and I+1
                       u:I          repeat word I after itself
                       j:I          join words I and I+1 (no space)
                       r:I:ROW:J    word I := word J of row ROW
                       i:I:TEXT     insert TEXT (no space, TAB or ':') before word I
  expected.tsv       per corpus: segments, the 10 sufficient statistics
                     (sys_len, ref_len, matches 1-4, totals 1-4), sacreBLEU's
                     score and NLTK's (or '-' where NLTK is not comparable),
                     both as repr() of the double.
  corpus_tokens.tsv  FNV-1a 64 of the 13a tokenization of every row of
                     eng_fra_test (both columns), in blocks of 1000 rows:
                     block, first row, rows, hash (hex).

Two independent computations of each corpus score must agree to 1e-12
(relative) or the script stops:

  sacreBLEU  this file's transcription of sacreBLEU 2.x (metrics/bleu.py:
             _extract_reference_info, _compute_segment_statistics,
             _get_closest_ref_len, compute_bleu with smooth_method='exp';
             metrics/base.py: _cache_references drops None and '' references;
             tokenizers/tokenizer_13a.py + tokenizer_re.py; utils.my_log).
             sacreBLEU itself is not installable here (no PyPI access).
  NLTK       nltk.translate.bleu_score.corpus_bleu on the same token lists
             with SmoothingFunction().method3 (NIST geometric smoothing:
             the k-th order with no match gets 1 / (2^k * total), which is
             sacreBLEU's 'exp'), its closest_ref_length (ties to the
             shorter) and brevity_penalty; x 100.  NLTK also gives the
             statistics (modified_precision numerators and denominators,
             closest_ref_length), which must equal ours.  NLTK floors each
             segment's n-gram total at 1, so it is compared only on corpora
             whose hypotheses all have 4 tokens or more.

The tokenizer itself has no second implementation here: this one is Python's
re engine running sacreBLEU's patterns, which is what the C code emulates.
"""
import gzip
import math
import os
import random
import re
import sys
from collections import Counter

from nltk.translate.bleu_score import (SmoothingFunction, closest_ref_length,
                                       corpus_bleu, modified_precision)

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_ORDER = 4

# ---- sacreBLEU 2.x, default settings -------------------------------------------

# mteval-v13a's language-dependent part, as sacreBLEU's TokenizerRegexp
_PASSES = [
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]


def tok13a(sent):
    """BLEU._preprocess_segment with lowercase=False: Tokenizer13a(sent.rstrip())."""
    line = sent.rstrip()
    line = line.replace('<skipped>', '')
    line = line.replace('-\n', '')
    line = line.replace('\n', ' ')
    line = line.replace('&quot;', '"')
    line = line.replace('&amp;', '&')
    line = line.replace('&lt;', '<')
    line = line.replace('&gt;', '>')
    line = ' {} '.format(line)
    for pattern, repl in _PASSES:
        line = pattern.sub(repl, line)
    return ' '.join(line.split())


def ngrams_of(line):
    """helpers.extract_all_word_ngrams(line, 1, 4): (Counter, length)."""
    toks = tuple(line.split())
    c = Counter()
    for n in range(1, MAX_ORDER + 1):
        for i in range(0, len(toks) - n + 1):
            c[toks[i:i + n]] += 1
    return c, len(toks)


def closest(hyp_len, ref_lens):
    best_diff, best = -1, -1
    for r in ref_lens:
        d = abs(hyp_len - r)
        if best_diff == -1 or d < best_diff:
            best_diff, best = d, r
        elif d == best_diff and r < best:
            best = r
    return best


def segment_stats(hyp, refs):
    """[sys_len, ref_len, matches x4, totals x4] of one raw segment."""
    lines = [x for x in refs if x is not None and x != '']
    if not lines:
        raise RuntimeError('Empty or `None` reference sentence found.')
    lines = [tok13a(x) for x in lines]
    ref_ngrams, ref_lens = None, []
    for ref in lines:
        this, n = ngrams_of(ref)
        ref_lens.append(n)
        if ref_ngrams is None:
            ref_ngrams = this
        else:
            for g, c in this.items():
                ref_ngrams[g] = max(ref_ngrams[g], c)
    hyp_ngrams, hyp_len = ngrams_of(tok13a(hyp))
    correct = [0] * MAX_ORDER
    total = [0] * MAX_ORDER
    for g, c in hyp_ngrams.items():
        n = len(g) - 1
        total[n] += c
        if g in ref_ngrams:
            correct[n] += min(c, ref_ngrams[g])
    return [hyp_len, closest(hyp_len, ref_lens)] + correct + total


def my_log(x):
    return -9999999999 if x == 0.0 else math.log(x)


def sacre_score(stats):
    """BLEU.compute_bleu(smooth_method='exp', effective_order=False).score"""
    sys_len, ref_len = stats[0], stats[1]
    correct, total = stats[2:6], stats[6:10]
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    precisions = [0.0] * MAX_ORDER
    if not any(correct):
        return 0.0
    smooth_mteval = 1.
    for n in range(1, MAX_ORDER + 1):
        if total[n - 1] == 0:
            break
        if correct[n - 1] == 0:
            smooth_mteval *= 2
            precisions[n - 1] = 100. / (smooth_mteval * total[n - 1])
        else:
            precisions[n - 1] = 100. * correct[n - 1] / total[n - 1]
    return bp * math.exp(sum([my_log(p) for p in precisions]) / MAX_ORDER)


def corpus_stats(segs):
    acc = [0] * 10
    for hyp, refs in segs:
        acc = [a + b for a, b in zip(acc, segment_stats(hyp, refs))]
    return acc


# ---- NLTK ------------------------------------------------------------------------

def nltk_check(segs, stats):
    """NLTK's score x 100 after checking its statistics equal ours, or None
    when a hypothesis has fewer than 4 tokens (NLTK floors totals at 1)."""
    hyps, refss = [], []
    for hyp, refs in segs:
        hyps.append(tok13a(hyp).split())
        refss.append([tok13a(r).split() for r in refs if r is not None and r != ''])
    if any(len(h) < MAX_ORDER for h in hyps):
        return None
    num, den = [0] * MAX_ORDER, [0] * MAX_ORDER
    ref_len = 0
    for h, rs in zip(hyps, refss):
        for n in range(1, MAX_ORDER + 1):
            p = modified_precision(rs, h, n)
            num[n - 1] += p.numerator
            den[n - 1] += p.denominator
        ref_len += closest_ref_length(rs, len(h))
    sys_len = sum(len(h) for h in hyps)
    mine = [sys_len, ref_len] + num + den
    if mine != stats:
        raise SystemExit(f'NLTK statistics {mine} differ from ours {stats}')
    return 100.0 * corpus_bleu(refss, hyps, smoothing_function=SmoothingFunction().method3)


def agree(a, b):
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


# ---- tokenizer cases ---------------------------------------------------------------

HAND = [
    ('empty', ''),
    ('spaces', '   '),
    ('word', 'word'),
    ('sentence', 'The dog bit the man.'),
    ('contraction', "It wasn't surprising."),
    ('decimal', 'Pi is 3.14, e is 2.71.'),
    ('thousands', 'It costs 1,000,000 dollars, or 1.000.000 euros.'),
    ('leading_dot', 'Take .5 of .x and ,y'),
    ('trailing_digit_dot', 'Version 2. Then 3, then 4.'),
    ('digit_dash', 'pages 10-20, 3-4-5 and 1 - 2 and a-b and -5'),
    ('dash_digit', 'x -1 and 2--3'),
    ('entities', 'a &amp; b &lt;c&gt; &quot;d&quot; &amp;lt; &apos;'),
    ('entity_chain', '&amp;amp; &amp;quot;'),
    ('skipped', 'one <skipped> two<skipped>three'),
    ('hyphen_newline', 'exam-\nple and line\nbreak'),
    ('hyphen_newline_end', 'trailing-\n'),
    ('skipped_makes_hyphen_newline', 'con-<skipped>\ntinue'),
    ('crlf', 'line one\r\nline two\r\n'),
    ('punct_all', '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'),
    ('url', 'See https://example.com/a?b=c&d=e.'),
    ('email', 'mail me@example.org, now.'),
    ('quotes_fr', '« Bonjour », dit-il… — oui.'),
    ('apostrophe_fr', "l'été, c'est aujourd'hui."),
    ('nbsp', 'a\u00a0b\u00a0.'),
    ('unicode_spaces', 'a\u2000b\u200ac\u2028d\u2029e\u202ff\u205fg\u3000h\u1680i\u0085j'),
    ('not_spaces', 'a\u200bb\ufeffc\u180ed'),
    ('ascii_controls', 'a\x1cb\x1dc\x1ed\x1fe\x0bf\x0cg\th'),
    ('trailing_unicode_space', 'end.\u3000\u00a0 \t'),
    ('digits_other_script', '\u0661.\u0662 and \uff11,\uff12'),
    ('accent_dot', 'café. naïve,'),
    ('cjk', '中文。测试，好'),
    ('emoji', 'ok 👍. fine👌,yes'),
    ('dot_runs', 'wait... what?! 1... 2.. ..3'),
    ('comma_dot', 'x., y,. 5., 6,. .,7'),
    ('numbers_mixed', '1.2.3 4,5,6 7-8 9.-1 a1.b2'),
    ('tab_inside', 'tab\there'),
    ('only_punct', '...'),
    ('lone_entity_parts', '&amp &lt &gt; &quot'),
    ('skipped_upper', '<SKIPPED> <skipped'),
]

FUZZ_ALPHABET = (list('aZé0195.,-&;<>"\'()/:@[]~_`{}!?#') +
                 [' ', ' ', ' ', '\n', '\t', '\r', '\x1c', '\u00a0', '\u3000',
                  '\u2028', '\u0085', '\u200b', '€', '中', '&amp;', '&lt;', '&gt;',
                  '&quot;', '<skipped>', '-\n', '3.', ',5', '9-'])


def fuzz_cases(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(0, 24)
        out.append((f'fuzz{i:04d}', ''.join(rng.choice(FUZZ_ALPHABET) for _ in range(k))))
    return out


# ---- hand-written corpora ----------------------------------------------------------

# sacreBLEU's README example (its test/test_bleu.py expects 48.530827 and,
# for empty hypotheses, 0.0)
README_REFS = [['The dog bit the man.', 'It was not unexpected.', 'The man bit him first.'],
               ['The dog had bit the man.', 'No one was surprised.', 'The man had bitten the dog.']]
README_HYPS = ['The dog bit the man.', "It wasn't surprising.", 'The man had just bitten him.']

SEGMENTS = [
    ('readme', [(h, [README_REFS[0][i], README_REFS[1][i]]) for i, h in enumerate(README_HYPS)]),
    ('readme_empty_hyps', [('', [README_REFS[0][i], README_REFS[1][i]]) for i in range(3)]),
    ('perfect', [('The cat sat on the mat.', ['The cat sat on the mat.']),
                 ('It rained all day long, again.', ['It rained all day long, again.'])]),
    # 4-token hypothesis, 8-token reference: precisions 100, bp = exp(1 - 8/4)
    ('brevity', [('the cat sat down', ['the cat sat down on the mat today'])]),
    # no 3- or 4-gram match anywhere: exp smoothing on both
    ('exp_smoothing', [('the cat the dog the bird', ['the cat ate the dog food']),
                       ('a b c d e', ['a b x c d y'])]),
    # every hypothesis shorter than 4 tokens: no 4-grams, score 0
    ('no_fourgrams', [('a b c', ['a b c']), ('d e', ['d e f'])]),
    # no match at all: score 0
    ('no_match', [('alpha beta gamma delta', ['one two three four'])]),
    # clipping: repeated words count at most as often as in one reference
    ('clipping', [('the the the the the the the', ['the cat is on the mat', 'there is a cat on the mat'])]),
    # closest reference length: 6 tokens vs references of 4 and 8 (tie: the shorter)
    ('closest_tie', [('one two three four five six', ['one two three four', 'one two three four five six seven eight'])]),
    # 5 tokens vs 3 and 7 tokens: tie again; vs 4 and 7: 4
    ('closest', [('a b c d e', ['a b c', 'a b c d e f g']),
                 ('v w x y z', ['v w x y', 'v w x y z t u'])]),
    # NULL and empty references are ignored; ' ' is a reference of 0 tokens
    ('ignored_refs', [('the small house', [None, '', 'the small house']),
                      ('a big tree here', ['', 'a big tree there', None, 'a tree'])]),
    ('blank_ref', [('some words here now', [' ', 'some words here'])]),
    # tokenization matters: entities, digits, dashes, Unicode spaces
    ('tokenizer', [('It costs 1,000.50 &amp; more-or-less 10-20 items.', ['It costs 1,000.50 & more-or-less 10 - 20 items .']),
                   ('« Déjà vu », dit-il\u00a0: c\'est 3.5%.', ['« Déjà vu » , dit-il : c\'est 3.5 %.'])]),
    ('case_sensitive', [('The Cat Sat Down', ['the cat sat down'])]),
]


def write_segments(path):
    with open(path, 'w', encoding='utf-8', newline='\n') as f:
        f.write('# corpus\thyp\tref1\tref2\tref3\tref4 (UTF-8 hex; \\N = NULL)\n')
        for name, segs in SEGMENTS:
            for hyp, refs in segs:
                refs = list(refs) + [None] * (4 - len(refs))
                cols = [name, hyp.encode().hex()] + ['\\N' if r is None else r.encode().hex() for r in refs]
                f.write('\t'.join(cols) + '\n')


# ---- corpora from eng_fra_test -------------------------------------------------------

LITERALS = ['3.14', '1-2', '&amp;', '(x)', "l'été", '10,000', 'U.S.', '--', 'e-mail',
            '«', '»', '...', '&quot;oui&quot;', 'a/b', '2-3-4', 'ça,', '.5', '!']


def apply_edits(words, edits, rows):
    w = list(words)
    for e in edits:
        f = e.split(':', 2) if e[0] == 'i' else e.split(':')
        op, i = f[0], int(f[1])
        if op == 'd':
            del w[i]
        elif op == 's':
            w[i], w[i + 1] = w[i + 1], w[i]
        elif op == 'u':
            w.insert(i + 1, w[i])
        elif op == 'j':
            w[i:i + 2] = [w[i] + w[i + 1]]
        elif op == 'r':
            w[i] = rows[int(f[2])].split(' ')[int(f[3])]
        elif op == 'i':
            w.insert(i, f[2])
    return w


def random_edits(rng, words, rows, ops='dsujri', counts=(0, 1, 1, 2, 2, 3, 4)):
    edits = []
    w = list(words)
    for _ in range(rng.choice(counts)):
        n = len(w)
        op = rng.choice(ops)
        if op in 'dj' and n < 3 or op in 'sj' and n < 2:
            continue
        if op == 'd':
            e = f'd:{rng.randrange(n)}'
        elif op == 's':
            e = f's:{rng.randrange(n - 1)}'
        elif op == 'u':
            e = f'u:{rng.randrange(n)}'
        elif op == 'j':
            e = f'j:{rng.randrange(n - 1)}'
        elif op == 'r':
            row = rng.randrange(len(rows))
            e = f'r:{rng.randrange(n)}:{row}:{rng.randrange(len(rows[row].split(" ")))}'
        else:
            e = f'i:{rng.randint(0, n)}:{rng.choice(LITERALS)}'
        w = apply_edits(w, [e], rows)
        edits.append(e)
    return edits, w


def shared_dir():
    cands = [sys.argv[1]] if len(sys.argv) > 1 else []
    cands += [os.environ.get('TFM_SHARED_DATA'), '../shared/data', '/work/shared/data']
    for d in cands:
        if d and os.path.exists(os.path.join(d, 'eng_fra_test.tsv.gz')):
            return d
    raise SystemExit('eng_fra_test.tsv.gz not found: pass the shared data directory')


def load_eng_fra(d):
    with gzip.open(os.path.join(d, 'eng_fra_test.tsv.gz'), 'rt', encoding='utf-8', newline='') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    return [tuple(l.split('\t')) for l in lines[1:]]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def main():
    out = {}
    # tokenizer cases
    with open(os.path.join(HERE, 'tokenize.tsv'), 'w', encoding='utf-8', newline='\n') as f:
        f.write('# name\tinput (UTF-8 hex)\texpected (UTF-8 hex)\tinput (Python repr)\n')
        for name, s in HAND + fuzz_cases(800, 13013):
            f.write(f'{name}\t{s.encode().hex()}\t{tok13a(s).encode().hex()}\t{s!r}\n')

    # hand-written corpora
    write_segments(os.path.join(HERE, 'segments.tsv'))
    for name, segs in SEGMENTS:
        out[name] = segs

    # eng_fra corpora
    pairs = load_eng_fra(shared_dir())
    tgt = [p[1] for p in pairs]
    with open(os.path.join(HERE, 'corpus_tokens.tsv'), 'w', encoding='utf-8', newline='\n') as f:
        f.write('# block\tfirst row\trows\tFNV-1a 64 of tok13a(src) + "\\n" + tok13a(tgt) + "\\n" per row\n')
        for b in range(0, len(pairs), 1000):
            data = b''.join((tok13a(s) + '\n' + tok13a(t) + '\n').encode() for s, t in pairs[b:b + 1000])
            f.write(f'{b // 1000}\t{b}\t{len(pairs[b:b + 1000])}\t{fnv1a64(data):016x}\n')

    groups = {}
    for i, (src, _) in enumerate(pairs):
        groups.setdefault(src, []).append(i)
    sources = sorted(groups, key=lambda s: groups[s][0])
    rng = random.Random(20240607)
    rng.shuffle(sources)
    lines = []
    chosen = []
    for src in sources:
        rows = groups[src]
        words = tgt[rows[0]].split(' ')
        edits, w = random_edits(rng, words, tgt)
        hyp = ' '.join(w)
        if len(tok13a(hyp).split()) < MAX_ORDER:
            continue
        chosen.append((rows, edits, hyp))
        if len(chosen) == 300:
            break
    multi = [c for c in chosen if len(c[0]) >= 2]
    # shorter hypotheses (deletions and joins only): a brevity penalty < 1
    shorter = []
    for rows, _, _ in chosen[:150]:
        edits, w = random_edits(rng, tgt[rows[0]].split(' '), tgt, ops='dj', counts=(1, 2, 3))
        hyp = ' '.join(w)
        if len(tok13a(hyp).split()) >= MAX_ORDER:
            shorter.append((rows, edits, hyp))

    def add(corpus, items, refsel):
        segs = []
        for rows, edits, hyp in items:
            refs = refsel(rows)
            lines.append(f'{corpus}\t{rows[0]}\t{" ".join(edits) or "-"}\t{",".join(map(str, refs))}')
            segs.append((hyp, [tgt[r] for r in refs]))
        out[corpus] = segs

    add('ef_single', chosen, lambda rows: rows[:1])
    add('ef_multi', chosen, lambda rows: rows)
    add('ef_others', multi, lambda rows: rows[1:])
    add('ef_shorter', shorter, lambda rows: rows)
    for k in range(5):
        add(f'ef_part{k}', chosen[k::5], lambda rows: rows)
    with open(os.path.join(HERE, 'corpus.tsv'), 'w', encoding='utf-8', newline='\n') as f:
        f.write('# corpus\thypothesis row\tedits (- = none)\treference rows '
                '(0-based data rows of eng_fra_test.tsv.gz, French column)\n')
        f.write('\n'.join(lines) + '\n')

    # check our reconstruction of the hypotheses from the edits
    for line in lines:
        c, row, edits, _ = line.split('\t')
        w = apply_edits(tgt[int(row)].split(' '), [] if edits == '-' else edits.split(' '), tgt)
        assert ' '.join(w) in [h for h, _ in out[c]], line

    with open(os.path.join(HERE, 'expected.tsv'), 'w', encoding='utf-8', newline='\n') as f:
        f.write('# corpus\tsegments\tsys_len\tref_len\tm1\tm2\tm3\tm4\tt1\tt2\tt3\tt4\t'
                'sacrebleu\tnltk\n')
        for name, segs in out.items():
            stats = corpus_stats(segs)
            s = sacre_score(stats)
            nl = nltk_check(segs, stats)
            if nl is not None and not agree(s, nl):
                raise SystemExit(f'{name}: sacreBLEU {s!r} != NLTK {nl!r}')
            f.write('\t'.join([name, str(len(segs))] + [str(x) for x in stats] +
                              [repr(s), '-' if nl is None else repr(nl)]) + '\n')
            print(f'{name:20s} {len(segs):4d} segments  BLEU {s:.6f}  NLTK {"-" if nl is None else f"{nl:.6f}"}')

    # sacreBLEU's own expectations (test/test_bleu.py)
    assert abs(sacre_score(corpus_stats(out['readme'])) - 48.530827) < 1e-8
    assert sacre_score(corpus_stats(out['readme_empty_hyps'])) == 0.0
    assert abs(sacre_score([11, 11, 9, 7, 5, 3, 10, 8, 6, 4]) / 100 - 0.8375922397) < 1e-8


if __name__ == '__main__':
    main()
