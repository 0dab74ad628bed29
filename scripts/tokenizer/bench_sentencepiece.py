#!/usr/bin/python3
"""SentencePiece baseline for the tokenizer benchmark: trains a BPE model of
VOCAB pieces on the State of the Union corpus (fed as sentences: SentencePiece
skips lines over 4,192 bytes) and times encoding the whole corpus, speech by
speech.  Compare with `TFM_TOK_BENCH=1 test/test_tokenizer`.

Usage: /usr/bin/python3 scripts/tokenizer/bench_sentencepiece.py [SHARED_DATA_DIR] [VOCAB]
"""
import gzip, io, os, re, sys, tempfile, time
import sentencepiece as spm

data = sys.argv[1] if len(sys.argv) > 1 else os.environ.get('TFM_SHARED_DATA', '../shared/data')
vocab = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
with gzip.open(os.path.join(data, 'sotu.tsv.gz'), 'rt', encoding='utf-8', newline='') as f:
    rows = [l.rstrip('\n').split('\t')[3] for l in list(f)[1:]]
nbytes = sum(len(r.encode('utf-8')) for r in rows)
sentences = [s for r in rows for s in re.split(r'(?<=[.!?]) ', r) if s]
with tempfile.TemporaryDirectory() as d:
    t0 = time.time()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_prefix=d + '/m',
                                   model_type='bpe', vocab_size=vocab, num_threads=1,
                                   max_sentence_length=1 << 16, minloglevel=2)
    t1 = time.time()
    sp = spm.SentencePieceProcessor(model_file=d + '/m.model')
    t2 = time.time()
    n = sum(len(sp.encode(r)) for r in rows)
    t3 = time.time()
print(f'sentencepiece bpe {vocab} on sotu ({nbytes / 1e6:.1f} MB): train {t1 - t0:.1f} s, '
      f'encode {nbytes / 1e6 / (t3 - t2):.2f} MB/s ({n} ids)')
