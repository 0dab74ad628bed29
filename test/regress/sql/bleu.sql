-- corpus BLEU (tfm_bleu, tfm_bleu_details, tfm_bleu_tokenize): values
-- checked by hand, sacreBLEU's own test values, the reference data of
-- test/fixtures/bleu (a transcription of sacreBLEU 2.x, checked against NLTK),
-- NULLs, empty input, grouping, windows, parallel plans, bad input
SET extra_float_digits = 0;
-- errors as "SQLSTATE message", so both are pinned
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- ---- by hand -------------------------------------------------------------
-- 13a splits off the final period: 7 tokens, every n-gram matches, so every
-- precision is 100 % and bp = 1: BLEU = exp((4 log 100) / 4) = 100 up to
-- rounding; sacreBLEU returns exactly 100.00000000000004 here
SELECT tfm_bleu('The cat sat on the mat.', 'The cat sat on the mat.') AS perfect,
       tfm_bleu('The cat sat on the mat.', 'The cat sat on the mat.') = 100.00000000000004 AS as_sacrebleu;
-- brevity: 4 tokens, all n-grams match (4/4, 3/3, 2/2, 1/1), closest reference
-- 8 tokens: bp = exp(1 - 8/4) = e^-1, BLEU = 100 e^-1 = 36.7879441171442
SELECT tfm_bleu('the cat sat down', 'the cat sat down on the mat today') AS brevity,
       abs(tfm_bleu('the cat sat down', 'the cat sat down on the mat today') - 100 * exp(-1)) < 1e-12 AS is_100_over_e;
-- 'exp' smoothing: hypothesis a b c d e, reference a b x c d y:
--   unigrams 4/5 = 80 %, bigrams {ab, cd} 2/4 = 50 %,
--   trigrams 0/3 -> 100 / (2 * 3) %, 4-grams 0/2 -> 100 / (4 * 2) = 12.5 %,
--   bp = exp(1 - 6/5); BLEU = bp * (80 * 50 * 16.667 * 12.5)^(1/4) = 24.7369295440919
SELECT tfm_bleu('a b c d e', 'a b x c d y') AS smoothed,
       abs(tfm_bleu('a b c d e', 'a b x c d y')
           - exp(-0.2) * exp((ln(80) + ln(50) + ln(100.0 / 6) + ln(12.5)) / 4)) < 1e-12 AS by_hand;
SELECT tfm_bleu_details('a b c d e', 'a b x c d y');
-- clipping: "the" counts at most twice (its count in the first reference):
-- 2/7, then 0/6, 0/5, 0/4 smoothed to 100/12, 100/20, 100/32 %; bp = 1
-- (closest reference 7 tokens): BLEU = 7.80984984230064
SELECT tfm_bleu('the the the the the the the',
                ARRAY['the cat is on the mat', 'there is a cat on the mat']) AS clipped;
-- fewer than 4 tokens: no 4-gram at all, so sacreBLEU stops there and BLEU is 0
SELECT tfm_bleu('a b c', 'a b c') AS no_fourgrams;
-- no match at all: 0; case matters
SELECT tfm_bleu('alpha beta gamma delta', 'one two three four') AS no_match,
       tfm_bleu('The Cat Sat Down', 'the cat sat down') AS other_case;
-- the closest reference length, ties to the shorter: 6 tokens vs 4 and 8 -> 4, bp 1
SELECT tfm_bleu_details('one two three four five six',
                        ARRAY['one two three four five six seven eight', 'one two three four']) -> 'ref_len' AS ref_len;
-- the tokenizer: punctuation, entities, digits, dashes, Unicode spaces
SELECT tfm_bleu_tokenize('It costs 1,000.50 &amp; more-or-less 10-20 items.');
SELECT tfm_bleu_tokenize(E'« Déjà vu », dit-il\u00a0: c''est 3.5%.\u3000');
SELECT tfm_bleu_tokenize(E'exam-\nple <skipped> end') AS joined, tfm_bleu_tokenize('') AS empty;

-- ---- sacreBLEU's own tests (test/unit/test_bleu.py) and README ----------------
CREATE TEMP TABLE readme (i int, hyp text, refs text[]);
INSERT INTO readme VALUES
  (1, 'The dog bit the man.', ARRAY['The dog bit the man.', 'The dog had bit the man.']),
  (2, 'It wasn''t surprising.', ARRAY['It was not unexpected.', 'No one was surprised.']),
  (3, 'The man had just bitten him.', ARRAY['The man bit him first.', 'The man had bitten the dog.']);
-- test_corpus_bleu: 48.530827 within 1e-8
SELECT abs(tfm_bleu(hyp, refs) - 48.530827) < 1e-8 AS test_corpus_bleu FROM readme;
-- README: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
SELECT round((d->>'score')::numeric, 2) AS score,
       ARRAY(SELECT round(p::numeric, 1) FROM jsonb_array_elements_text(d->'precisions') p) AS precisions,
       round((d->>'bp')::numeric, 3) AS bp, round((d->>'ratio')::numeric, 3) AS ratio,
       d->'sys_len' AS hyp_len, d->'ref_len' AS ref_len, d->'counts' AS counts, d->'totals' AS totals
  FROM (SELECT tfm_bleu_details(hyp, refs) AS d FROM readme) s;
-- empty hypotheses are kept (and score 0)
SELECT tfm_bleu('', refs) AS empty_hyps FROM readme;

-- ---- the reference data of test/fixtures/bleu ----------------------------------------
\getenv abs_srcdir PG_ABS_SRCDIR
\set segments_file :abs_srcdir '/../fixtures/bleu/segments.tsv'
\set expected_file :abs_srcdir '/../fixtures/bleu/expected.tsv'
\set tokenize_file :abs_srcdir '/../fixtures/bleu/tokenize.tsv'
CREATE TEMP TABLE seg_hex (corpus text, hyp text, r1 text, r2 text, r3 text, r4 text);
-- CSV with a quote character that never occurs: no quoting, no backslash escapes
COPY seg_hex FROM :'segments_file' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01', HEADER true, NULL '\N');
CREATE TEMP TABLE seg AS
SELECT corpus, convert_from(decode(hyp, 'hex'), 'UTF8') AS hyp,
       ARRAY[convert_from(decode(r1, 'hex'), 'UTF8'), convert_from(decode(r2, 'hex'), 'UTF8'),
             convert_from(decode(r3, 'hex'), 'UTF8'), convert_from(decode(r4, 'hex'), 'UTF8')] AS refs
  FROM seg_hex;
CREATE TEMP TABLE expected (corpus text, segments int, sys_len bigint, ref_len bigint,
                            m1 bigint, m2 bigint, m3 bigint, m4 bigint,
                            t1 bigint, t2 bigint, t3 bigint, t4 bigint, sacrebleu float8, nltk text);
COPY expected FROM :'expected_file' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01', HEADER true);
-- every hand-written corpus: statistics equal, BLEU within 1e-9 (relative) of
-- sacreBLEU's and, where comparable, of NLTK's
SELECT e.corpus, g.segments = e.segments AS segments,
       g.d->'sys_len' = to_jsonb(e.sys_len) AND g.d->'ref_len' = to_jsonb(e.ref_len)
         AND g.d->'counts' = jsonb_build_array(e.m1, e.m2, e.m3, e.m4)
         AND g.d->'totals' = jsonb_build_array(e.t1, e.t2, e.t3, e.t4) AS stats,
       abs(g.bleu - e.sacrebleu) <= 1e-9 * e.sacrebleu AS sacrebleu,
       CASE WHEN e.nltk = '-' THEN NULL ELSE abs(g.bleu - e.nltk::float8) <= 1e-9 * e.nltk::float8 END AS nltk,
       round(g.bleu::numeric, 6) AS bleu
  FROM expected e
  LEFT JOIN (SELECT corpus, count(*) AS segments, tfm_bleu(hyp, refs) AS bleu,
                    tfm_bleu_details(hyp, refs) AS d
               FROM seg GROUP BY corpus) g USING (corpus)
 WHERE e.corpus NOT LIKE 'ef\_%'
 ORDER BY e.corpus;
-- the 13a tokenizer on every case of tokenize.tsv
CREATE TEMP TABLE tok_hex (name text, input text, expected text, readable text);
COPY tok_hex FROM :'tokenize_file' WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01', HEADER true, NULL '\N');
SELECT count(*) AS cases,
       count(*) FILTER (WHERE tfm_bleu_tokenize(convert_from(decode(input, 'hex'), 'UTF8'))
                              IS DISTINCT FROM convert_from(decode(expected, 'hex'), 'UTF8')) AS differ
  FROM tok_hex;

-- ---- NULLs, no rows, order, windows ------------------------------------------
-- NULL hypotheses are skipped; NULL and '' references in an array are ignored
SELECT tfm_bleu(h, r) = (SELECT tfm_bleu('the cat sat on the mat', 'the cat sat on the mat')) AS null_hyp_skipped
  FROM (VALUES ('the cat sat on the mat', 'the cat sat on the mat'), (NULL, 'anything'), (NULL, NULL)) v(h, r);
SELECT tfm_bleu('the small house here', ARRAY[NULL, '', 'the small house here']) AS nulls_ignored;
-- no rows, or only NULL hypotheses: NULL
SELECT tfm_bleu(hyp, refs) IS NULL AS no_rows FROM seg WHERE false;
SELECT tfm_bleu(NULL::text, 'x') IS NULL AS only_nulls, tfm_bleu_details(NULL::text, ARRAY['x']) IS NULL AS details_null;
-- the order of rows does not matter
SELECT tfm_bleu(hyp, refs ORDER BY hyp) = tfm_bleu(hyp, refs ORDER BY hyp DESC) AS order_free
  FROM seg WHERE corpus <> 'readme_empty_hyps';
-- as a window: a running BLEU
SELECT i, round(tfm_bleu(hyp, refs) OVER (ORDER BY i)::numeric, 6) AS running FROM readme ORDER BY i;

-- ---- parallel plans: partial states are combined -----------------------------
CREATE TABLE bleu_many AS
SELECT g, s.corpus, s.hyp, s.refs FROM seg s, generate_series(1, 400) g
 WHERE s.corpus NOT IN ('readme_empty_hyps');
ANALYZE bleu_many;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial AS SELECT tfm_bleu(hyp, refs) AS bleu FROM bleu_many;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT tfm_bleu(hyp, refs) FROM bleu_many;
SELECT tfm_bleu(hyp, refs) = (SELECT bleu FROM serial) AS parallel_equals_serial FROM bleu_many;
-- a corpus repeated 400 times scores as the corpus once (every count x 400)
SELECT tfm_bleu(hyp, refs) = (SELECT tfm_bleu(hyp, refs) FROM seg WHERE corpus = 'readme')
       AS repeated
  FROM bleu_many WHERE corpus = 'readme';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE bleu_many;

-- ---- the support functions called directly ------------------------------------
SELECT tfm_bleu_step(NULL, 'a b c d', 'a b c d') AS state;
SELECT tfm_bleu_final(tfm_bleu_step(tfm_bleu_step(NULL, 'a b c d', 'a b c d'), 'x y', 'x z')) AS two_rows;
SELECT tfm_bleu_combine('{4,4,4,3,2,1,4,3,2,1}', '{2,2,1,0,0,0,2,1,0,0}') AS combined;
SELECT tfm_bleu_step('{4,4,4,3,2,1,4,3,2,1}', NULL, 'x') AS null_row_keeps_state;

-- ---- bad input -------------------------------------------------------------------
-- a NULL reference skips its row, as a NULL hypothesis does
SELECT tfm_bleu('a b c d', NULL::text) IS NULL AS null_reference;
SELECT pg_temp.err($$SELECT tfm_bleu('a b c d', '')$$);
SELECT tfm_bleu('a b c d', NULL::text[]) IS NULL AS null_references;
SELECT pg_temp.err($$SELECT tfm_bleu('a b c d', ARRAY[]::text[])$$);
SELECT pg_temp.err($$SELECT tfm_bleu('a b c d', ARRAY[NULL, ''])$$);
SELECT pg_temp.err($$SELECT tfm_bleu('a b c d', ARRAY[['a b', 'c d'], ['e f', 'g h']])$$);
SELECT tfm_bleu(h, r) = tfm_bleu('a b c d', 'a b c d') AS null_reference_skipped
  FROM (VALUES ('a b c d', 'a b c d'), ('x', NULL)) v(h, r);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{1,2,3}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{4,4,4,3,2,NULL,4,3,2,1}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{{4,4,4,3,2},{1,4,3,2,1}}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{4,4,5,3,2,1,4,3,2,1}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{4,-4,4,3,2,1,4,3,2,1}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_final('{5,4,4,3,2,1,4,3,2,1}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_details_final('{4,4,4,3,2,1,4,3,2,9}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_step('{1}', 'a', 'a')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_combine('{4,4,4,3,2,1,4,3,2,1}', '{1}')$$);
SELECT pg_temp.err($$SELECT tfm_bleu_combine('{4,9223372036854775807,4,3,2,1,4,3,2,1}', '{4,4,4,3,2,1,4,3,2,1}')$$);
