-- pgTAP: tokenizers on the real corpora of ../shared/data (run from the
-- repository root, as pg_prove does; the files are read client side with
-- \copy, the server cannot read the checkout).
--   * the training aggregate runs under a parallel plan (Partial Aggregate
--     under Gather, workers launched) and stores its result after the plan;
--   * with and without workers it learns the same vocabulary and merges;
--   * detokenize(tokenize(x)) = x on every row of every corpus for byte and
--     bpe (tfm-trained and GPT-2), and for char when no character is unknown;
--   * the imported GPT-2 vocabulary gives exactly the ids of the reference
--     encoder (test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz) on all its texts;
--   * the session's cache reads a tokenizer once, even with a long name.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS tfm;
SET tfm.progress = off;
SET tfm.threads = 1;

-- leftovers of an interrupted run
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name LIKE 'tap\_tok\_%' \g /dev/null
DROP TABLE IF EXISTS tap_tok_corpus, tap_tok_stage2, tap_tok_stage4, tap_tok_lines, tap_tok_ref;

SELECT plan(31);

-- ---------------------------------------------------------------------------
-- the corpora: one row per text field, named as in gpt2_ref_ids.tsv.gz
-- (file, 0-based data row, 0-based field).  Ordinary tables: parallel
-- workers cannot scan temporary ones.
CREATE TABLE tap_tok_corpus (src text, row int, field int, t text NOT NULL);
CREATE TABLE tap_tok_stage2 (n bigserial, a text, b text);
CREATE TABLE tap_tok_stage4 (n bigserial, a text, b text, c text, d text);
CREATE TABLE tap_tok_lines (n bigserial, line text);

\copy tap_tok_stage2 (a, b) FROM PROGRAM 'zcat ../shared/data/rt_polarity_train.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'rt_polarity_train.tsv.gz', n - 1, 0, a FROM tap_tok_stage2;
TRUNCATE tap_tok_stage2 RESTART IDENTITY;
\copy tap_tok_stage2 (a, b) FROM PROGRAM 'zcat ../shared/data/rt_polarity_test.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'rt_polarity_test.tsv.gz', n - 1, 0, a FROM tap_tok_stage2;
TRUNCATE tap_tok_stage2 RESTART IDENTITY;
\copy tap_tok_stage2 (a, b) FROM PROGRAM 'zcat ../shared/data/eng_fra_train.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'eng_fra_train.tsv.gz', n - 1, f, CASE f WHEN 0 THEN a ELSE b END
  FROM tap_tok_stage2, generate_series(0, 1) f;
TRUNCATE tap_tok_stage2 RESTART IDENTITY;
\copy tap_tok_stage2 (a, b) FROM PROGRAM 'zcat ../shared/data/eng_fra_test.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'eng_fra_test.tsv.gz', n - 1, f, CASE f WHEN 0 THEN a ELSE b END
  FROM tap_tok_stage2, generate_series(0, 1) f;
\copy tap_tok_stage4 (a, b, c, d) FROM PROGRAM 'zcat ../shared/data/spamassassin_train.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'spamassassin_train.tsv.gz', n - 1, 0, a FROM tap_tok_stage4;
TRUNCATE tap_tok_stage4 RESTART IDENTITY;
\copy tap_tok_stage4 (a, b, c, d) FROM PROGRAM 'zcat ../shared/data/spamassassin_test.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'spamassassin_test.tsv.gz', n - 1, 0, a FROM tap_tok_stage4;
TRUNCATE tap_tok_stage4 RESTART IDENTITY;
\copy tap_tok_stage4 (a, b, c, d) FROM PROGRAM 'zcat ../shared/data/sotu.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'sotu.tsv.gz', n - 1, 3, d FROM tap_tok_stage4;
-- plain text: one row per line (an empty line is an empty text), and Moby
-- Dick whole as one more row (1.2 MB)
\copy tap_tok_lines (line) FROM PROGRAM 'zcat ../shared/data/moby_dick_val.txt.gz' WITH (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'moby_dick_val.txt.gz', n - 1, 0, coalesce(line, '') FROM tap_tok_lines;
TRUNCATE tap_tok_lines RESTART IDENTITY;
\copy tap_tok_lines (line) FROM PROGRAM 'zcat ../shared/data/moby_dick_train.txt.gz' WITH (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'moby_dick_train.txt.gz', n - 1, 0, coalesce(line, '') FROM tap_tok_lines;
TRUNCATE tap_tok_lines RESTART IDENTITY;
\copy tap_tok_lines (line) FROM PROGRAM 'zcat ../shared/data/moby_dick.txt.gz' WITH (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')
INSERT INTO tap_tok_corpus SELECT 'moby_dick.txt.gz', n - 1, 0, coalesce(line, '') FROM tap_tok_lines;
INSERT INTO tap_tok_corpus SELECT 'moby_dick.txt.gz (whole)', 0, 0, string_agg(coalesce(line, ''), E'\n' ORDER BY n) || E'\n'
  FROM tap_tok_lines;
DROP TABLE tap_tok_stage2, tap_tok_stage4, tap_tok_lines;
ANALYZE tap_tok_corpus;

SELECT is((SELECT count(*) FROM tap_tok_corpus), 9596 + 1066 + 2 * (128696 + 14091) + 5442 + 604 + 233
          + (SELECT count(*) FROM tap_tok_corpus WHERE src LIKE 'moby%'),
          'every row of the tsv corpora is loaded');
SELECT is((SELECT octet_length(t) FROM tap_tok_corpus WHERE src = 'moby_dick.txt.gz (whole)'), 1204997,
          'Moby Dick whole, byte for byte');

-- ---------------------------------------------------------------------------
-- parallel training
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- the plan of a query, and the workers launched when it really runs (EXPLAIN
-- ANALYZE executes the statement: the tokenizer is stored)
CREATE FUNCTION pg_temp.plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
    s text := '';
BEGIN
    FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        s := s || r || E'\n';
    END LOOP;
    RETURN s;
END $$;
CREATE FUNCTION pg_temp.workers(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    j json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q INTO j;
    RETURN (j #>> '{0,Plan,Plans,0,Workers Launched}')::int;
END $$;
-- a tokenizer's pieces and merges, to compare two of them
CREATE FUNCTION pg_temp.pieces(tok text) RETURNS bytea[] LANGUAGE sql AS $$
    SELECT array_agg(v.piece ORDER BY v.id) FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
    WHERE t.name = tok $$;
CREATE FUNCTION pg_temp.merges(tok text) RETURNS int[] LANGUAGE sql AS $$
    SELECT array_agg(ARRAY[m.left_id, m.right_id] ORDER BY m.rank) FROM tfm.merges m
    JOIN tfm.tokenizers t ON t.id = m.tokenizer_id WHERE t.name = tok $$;

SELECT matches(pg_temp.plan($$SELECT tfm_tokenizer_train('tap_tok_x', t, 'bpe', 2000) FROM tap_tok_corpus
                              WHERE src = 'spamassassin_train.tsv.gz'$$),
               'Finalize Aggregate.*Gather.*Partial Aggregate.*Parallel Seq Scan',
               'the training aggregate is planned as partial aggregates under a Gather');

-- bpe on the spam corpus (10.6 MB), with workers and without
SELECT cmp_ok(pg_temp.workers($$SELECT tfm_tokenizer_train('tap_tok_spam_par', t, 'bpe', 2000) FROM tap_tok_corpus
                                WHERE src = 'spamassassin_train.tsv.gz'$$), '>', 0,
              'bpe training ran with parallel workers');
SELECT is((SELECT vocab_size FROM tfm.tokenizers WHERE name = 'tap_tok_spam_par'), 2000,
          'and stored its tokenizer after the parallel plan');
SET max_parallel_workers_per_gather = 0;
SELECT is(pg_temp.workers($$SELECT tfm_tokenizer_train('tap_tok_spam_ser', t, 'bpe', 2000) FROM tap_tok_corpus
                            WHERE src = 'spamassassin_train.tsv.gz'$$), NULL,
          'the same training without workers (no Gather)');
SET max_parallel_workers_per_gather = 2;
SELECT ok(pg_temp.pieces('tap_tok_spam_par') = pg_temp.pieces('tap_tok_spam_ser')
          AND pg_temp.merges('tap_tok_spam_par') = pg_temp.merges('tap_tok_spam_ser')
          AND array_length(pg_temp.merges('tap_tok_spam_par'), 1) = 2000 - 262,
          'bpe: the same vocabulary and merges with and without parallel workers');

-- the other kinds, on the Rotten Tomatoes and English-French sentences
SELECT is(array_agg(w ORDER BY k), ARRAY[true, true, true, true],
          'byte, char, word and wordpiece training ran with parallel workers')
  FROM (SELECT k, pg_temp.workers(format($$SELECT tfm_tokenizer_train(%L, t, %L, 3000) FROM tap_tok_corpus
                                           WHERE src IN ('rt_polarity_train.tsv.gz', 'eng_fra_test.tsv.gz')$$,
                                         'tap_tok_' || k || '_par', k)) > 0 AS w
          FROM unnest(ARRAY['byte', 'char', 'word', 'wordpiece']) k) s;
SET max_parallel_workers_per_gather = 0;
SELECT tfm_tokenizer_train('tap_tok_byte_ser', t, 'byte', 3000) FROM tap_tok_corpus
 WHERE src IN ('rt_polarity_train.tsv.gz', 'eng_fra_test.tsv.gz') \g /dev/null
SELECT tfm_tokenizer_train('tap_tok_char_ser', t, 'char', 3000) FROM tap_tok_corpus
 WHERE src IN ('rt_polarity_train.tsv.gz', 'eng_fra_test.tsv.gz') \g /dev/null
SELECT tfm_tokenizer_train('tap_tok_word_ser', t, 'word', 3000) FROM tap_tok_corpus
 WHERE src IN ('rt_polarity_train.tsv.gz', 'eng_fra_test.tsv.gz') \g /dev/null
SELECT tfm_tokenizer_train('tap_tok_wordpiece_ser', t, 'wordpiece', 3000) FROM tap_tok_corpus
 WHERE src IN ('rt_polarity_train.tsv.gz', 'eng_fra_test.tsv.gz') \g /dev/null
SET max_parallel_workers_per_gather = 2;
SELECT is(array_agg(pg_temp.pieces('tap_tok_' || k || '_par') = pg_temp.pieces('tap_tok_' || k || '_ser') ORDER BY k),
          ARRAY[true, true, true, true],
          'byte, char, word and wordpiece: the same vocabulary with and without parallel workers')
  FROM unnest(ARRAY['byte', 'char', 'word', 'wordpiece']) k;
SELECT is((SELECT array_agg(vocab_size ORDER BY name) FROM tfm.tokenizers
            WHERE name IN ('tap_tok_word_par', 'tap_tok_wordpiece_par')), ARRAY[3000, 3000],
          'word and wordpiece reached their 3000 ids');

-- the plain statement (not EXPLAIN, not inside a pgTAP call, which is not
-- parallel safe) under Gather stores too; errors in workers reach the client
SELECT matches(pg_temp.plan($$SELECT tfm_tokenizer_train('tap_tok_rt', t, 'bpe', 4000) FROM tap_tok_corpus
                              WHERE src = 'rt_polarity_train.tsv.gz'$$),
               'Finalize Aggregate.*Gather.*Partial Aggregate', 'the next statement runs under a Gather');
SELECT tfm_tokenizer_train('tap_tok_rt', t, 'bpe', 4000) AS rt_result FROM tap_tok_corpus
 WHERE src = 'rt_polarity_train.tsv.gz' \gset
SELECT is(:'rt_result'::text, 'tokenizer "tap_tok_rt": bpe, 4000 ids, 3738 merges',
          'a bpe tokenizer of 4000 ids trained on Rotten Tomatoes in a parallel plan');
SELECT is((SELECT count(*) FROM tfm.vocab WHERE tokenizer_id = (SELECT id FROM tfm.tokenizers WHERE name = 'tap_tok_rt')),
          4000::bigint, 'its 4000 pieces are stored');
SELECT throws_ok($$SELECT tfm_tokenizer_train('tap_tok_rt', t, 'bpe', 4000) FROM tap_tok_corpus
                   WHERE src = 'rt_polarity_train.tsv.gz'$$, '42710', 'tokenizer "tap_tok_rt" already exists',
                 'a duplicate name is refused under a parallel plan');
SELECT throws_ok($$SELECT tfm_tokenizer_train('tap_tok_y', t, CASE WHEN src LIKE 'rt%' THEN 'bpe' ELSE 'char' END)
                   FROM tap_tok_corpus WHERE src IN ('rt_polarity_train.tsv.gz', 'spamassassin_train.tsv.gz')$$,
                 '22023', 'the tokenizer kind must be the same on every row',
                 'kinds that vary across rows are refused under a parallel plan');

-- ---------------------------------------------------------------------------
-- round trips on every row of every corpus (the queries run in parallel too)
\set enc `zcat test/fixtures/tokenizer/gpt2_encoder.json.gz`
\set bpe `zcat test/fixtures/tokenizer/gpt2_vocab.bpe.gz`
-- psql's backticks drop the file's final newline, and vocab.bpe's last merge
-- is read only when a newline ends it (as the reference reads it)
SELECT is(tfm_tokenizer_import('tap_tok_gpt2', 'bpe', :'enc', :'bpe' || E'\n'),
          'tokenizer "tap_tok_gpt2": bpe, 50263 ids, 50000 merges', 'GPT-2 imported: 50,000 merges');
SELECT tfm_tokenizer_train('tap_tok_char_all', t, 'char') FROM tap_tok_corpus \g /dev/null
SELECT tfm_tokenizer_train('tap_tok_char_moby', t, 'char') FROM tap_tok_corpus WHERE src = 'moby_dick_train.txt.gz' \g /dev/null

-- each check is a plain statement, so that it runs in parallel (pgTAP's
-- functions are not parallel safe); the counts go to psql variables
SELECT matches(pg_temp.plan($$SELECT count(*) FROM tap_tok_corpus
                              WHERE tfm_detokenize('tap_tok_rt', tfm_tokenize('tap_tok_rt', t)) <> t$$),
               'Gather.*Parallel Seq Scan', 'the round trips run in parallel workers');
SELECT count(*) AS rows,
       count(*) FILTER (WHERE tfm_detokenize('tap_tok_byte_par', tfm_tokenize('tap_tok_byte_par', t)) <> t) AS byte,
       count(*) FILTER (WHERE tfm_detokenize('tap_tok_rt', tfm_tokenize('tap_tok_rt', t)) <> t) AS bpe_rt,
       count(*) FILTER (WHERE tfm_detokenize('tap_tok_spam_par', tfm_tokenize('tap_tok_spam_par', t)) <> t) AS bpe_spam,
       count(*) FILTER (WHERE tfm_detokenize('tap_tok_gpt2', tfm_tokenize('tap_tok_gpt2', t)) <> t) AS gpt2
  FROM tap_tok_corpus \gset bad_
SELECT is(:bad_rows::bigint, 302515 + (SELECT count(*) FROM tap_tok_corpus WHERE src LIKE 'moby%'), 'rows checked');
SELECT is(:bad_byte, 0, 'byte: detokenize(tokenize(x)) = x on every row');
SELECT is(:bad_bpe_rt, 0, 'bpe (trained on Rotten Tomatoes): detokenize(tokenize(x)) = x on every row');
SELECT is(:bad_bpe_spam, 0, 'bpe (trained on spam): detokenize(tokenize(x)) = x on every row');
SELECT is(:bad_gpt2, 0, 'bpe (GPT-2): detokenize(tokenize(x)) = x on every row');
-- char: a vocabulary of every character of every corpus knows them all;
-- Moby Dick's first 90% has all 82 characters (besides the newline) of the last 10%;
-- with unknown characters (the Rotten Tomatoes + eng-fra vocabulary on spam)
-- a row round-trips exactly when it has no <unk> (or when, as in 9 spam
-- rows, its unknown characters are U+FFFD themselves)
SELECT count(*) FILTER (WHERE 1 = ANY (ids) OR tfm_detokenize('tap_tok_char_all', ids) <> t) AS all
  FROM (SELECT t, tfm_tokenize('tap_tok_char_all', t) AS ids FROM tap_tok_corpus) s \gset char_
SELECT count(*) FILTER (WHERE 1 = ANY (ids) OR tfm_detokenize('tap_tok_char_moby', ids) <> t) AS moby
  FROM (SELECT t, tfm_tokenize('tap_tok_char_moby', t) AS ids FROM tap_tok_corpus
         WHERE src = 'moby_dick_val.txt.gz') s \gset char_
SELECT count(*) FILTER (WHERE 1 = ANY (ids)) AS unk, count(*) FILTER (WHERE NOT 1 = ANY (ids)) AS known,
       count(*) FILTER (WHERE CASE WHEN NOT 1 = ANY (ids) THEN tfm_detokenize('tap_tok_char_par', ids) <> t
                                   -- <unk> comes back as U+FFFD: exact only if the text had U+FFFD there
                                   ELSE tfm_detokenize('tap_tok_char_par', ids) = t
                                        AND position(U&'\FFFD' IN t) = 0 END) AS wrong
  FROM (SELECT t, tfm_tokenize('tap_tok_char_par', t) AS ids FROM tap_tok_corpus
         WHERE src LIKE 'spamassassin%') s \gset char_
SELECT is(:char_all, 0, 'char (all corpora): no <unk>, detokenize(tokenize(x)) = x on every row');
SELECT is((SELECT vocab_size FROM tfm.tokenizers WHERE name = 'tap_tok_char_moby'), 6 + 82,
          'char (Moby Dick train): 82 characters');
SELECT is(:char_moby, 0, 'char (Moby Dick train): no <unk> in Moby Dick val, detokenize(tokenize(x)) = x on every line');
SELECT is(ARRAY[:char_wrong, sign(:char_unk), sign(:char_known)]::int[], ARRAY[0, 1, 1],
          'char (Rotten Tomatoes + eng-fra) on spam: exact round trip exactly when no character is unknown');

-- ---------------------------------------------------------------------------
-- GPT-2 parity with the reference encoder (gpt-3-encoder 1.1.4 under node)
CREATE TABLE tap_tok_ref (corpus text, row int, field text, ids text);
\copy tap_tok_ref FROM PROGRAM 'zcat test/fixtures/tokenizer/gpt2_ref_ids.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
CREATE TEMP TABLE ref_texts AS
SELECT r.corpus, r.row, r.field, coalesce(string_to_array(r.ids, ' ')::int[], '{}') AS ids,
       CASE WHEN r.corpus = 'extra' THEN convert_from(decode(r.field, 'hex'), 'UTF8') ELSE c.t END AS t
  FROM tap_tok_ref r
  LEFT JOIN tap_tok_corpus c ON c.src = r.corpus AND c.row = r.row AND c.field::text = r.field
 WHERE r.corpus <> 'extra' OR position('\x00'::bytea IN decode(r.field, 'hex')) = 0;
SELECT is((SELECT count(*) FROM tap_tok_ref), 8969::bigint, 'the reference has 8,969 texts');
-- a text with NUL (one of the 33 hand-made corner cases) cannot be a PostgreSQL text
SELECT is((SELECT count(*) FROM ref_texts WHERE t IS NOT NULL), 8968::bigint,
          'every reference text but the one with NUL is found in the corpora');
SELECT is((SELECT array_agg(corpus || ' ' || row || ' ' || field ORDER BY corpus, row, field)
             FROM ref_texts WHERE tfm_tokenize('tap_tok_gpt2', t) IS DISTINCT FROM ids), NULL,
          'GPT-2: tfm_tokenize gives exactly the reference ids on all 8,968 texts');
SELECT is((SELECT count(*) FROM ref_texts WHERE tfm_detokenize('tap_tok_gpt2', ids) = t), 8968::bigint,
          'GPT-2: the reference ids detokenize to the texts');

-- ---------------------------------------------------------------------------
-- the session's cache: a statement reads a tokenizer's rows at most once,
-- whatever the length of its name (here the longest, 127 bytes)
SET max_parallel_workers_per_gather = 0;
SELECT tfm_tokenizer_train('tap_tok_' || repeat('long', 29) || 'max', t, 'bpe', 1000) FROM tap_tok_corpus
 WHERE src = 'rt_polarity_test.tsv.gz' \g /dev/null
BEGIN;
SELECT tfm_tokenize('tap_tok_' || repeat('long', 29) || 'max', 'x') \g /dev/null
CREATE TEMP TABLE vocab_scans AS SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS n
  FROM pg_stat_xact_user_tables WHERE relid = 'tfm.vocab'::regclass;
SELECT count(tfm_tokenize('tap_tok_' || repeat('long', 29) || 'max', t)) FROM tap_tok_corpus
 WHERE src = 'rt_polarity_test.tsv.gz' \g /dev/null
SELECT count(tfm_tokenize('tap_tok_' || repeat('long', 29) || 'max', t)) FROM tap_tok_corpus
 WHERE src = 'rt_polarity_test.tsv.gz' \g /dev/null
SELECT is((SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
            WHERE relid = 'tfm.vocab'::regclass), (SELECT n FROM vocab_scans),
          '2 x 1,066 calls with a 208-character name read no vocabulary again');
COMMIT;

SELECT * FROM finish();
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name LIKE 'tap\_tok\_%' \g /dev/null
DROP TABLE tap_tok_corpus, tap_tok_ref;
