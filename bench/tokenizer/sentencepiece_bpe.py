#!/usr/bin/python3
"""SentencePiece baseline for bench/tokenizer/run.sh: trains BPE models on the
State of the Union corpus and times encoding it.

SentencePiece skips training lines over 4,192 bytes (max_sentence_length), so
it is fed sentences (speeches split after . ! ? followed by a space), with the
limit raised so that none is dropped.  One thread (num_threads=1), like tfm's
training.  Encoding is timed speech by speech (as tfm encodes rows, one call
each) and sentence by sentence (SentencePiece's usual unit, as one batch
call, its fastest path), in one thread.

Usage: /usr/bin/python3 bench/tokenizer/sentencepiece_bpe.py SOTU_TSV_GZ [VOCAB ...]
One "key=value" line per vocabulary.
"""
import gzip
import re
import sys
import tempfile
import time

import sentencepiece as spm

path = sys.argv[1]
sizes = [int(v) for v in sys.argv[2:]] or [8000, 32000]
with gzip.open(path, 'rt', encoding='utf-8', newline='') as f:
    rows = [line.rstrip('\n').split('\t')[3] for line in list(f)[1:]]
nbytes = sum(len(r.encode('utf-8')) for r in rows)
sentences = [s for r in rows for s in re.split(r'(?<=[.!?]) ', r) if s]
for vocab in sizes:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_prefix=d + '/m',
                                       model_type='bpe', vocab_size=vocab, num_threads=1,
                                       max_sentence_length=1 << 20, minloglevel=2)
        t1 = time.perf_counter()
        sp = spm.SentencePieceProcessor(model_file=d + '/m.model')
        t2 = time.perf_counter()
        n_rows = sum(len(sp.encode(r)) for r in rows)
        t3 = time.perf_counter()
        n_sent = sum(len(ids) for ids in sp.encode(sentences, num_threads=1))
        t4 = time.perf_counter()
        ok = sum(sp.decode(sp.encode(r)) == r for r in rows)
    print(f'vocab={vocab} ids={sp.get_piece_size()} mb={nbytes / 1e6:.2f} sentences={len(sentences)} '
          f'train_s={t1 - t0:.2f} encode_rows_mbs={nbytes / 1e6 / (t3 - t2):.2f} '
          f'encode_sentences_mbs={nbytes / 1e6 / (t4 - t3):.2f} tokens={n_rows} '
          f'rows_round_trip={ok}/{len(rows)} version={spm.__version__}', flush=True)
