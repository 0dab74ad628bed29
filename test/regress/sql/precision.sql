-- precision: bf16, int8 and int4 inference against fp32 (tolerances the same on
-- every CPU: where the bf16/int8 instructions are missing the plain-C
-- kernels run the same arithmetic), tfm.precision = fp32 exact, a model's
-- own default, and bad settings
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- auto is not the CPU's business: each model runs at its checkpoint's own
-- precision (auto_precision.sql), whatever kernels this CPU has
SET tfm.precision = auto;
SELECT inference_precision = 'auto' AS auto_is_each_models_own,
       bf16_kernel IN ('amx', 'avx512bf16', 'avx2', 'fallback') AND int8_kernel IN ('amx', 'avx512vnni', 'avx2', 'fallback') AS kernels,
       attention_kernels IN ('avx512', 'avx2', 'portable') AS attention,
       int4_kernel IN ('avx512vnni', 'avx2', 'fallback') AS int4
FROM tfm_info();

-- a classifier on 600 rows of a learnable task
CREATE TABLE prec_rows AS
SELECT i, array(SELECT 6 + (i * 7 + j * 13) % 90 FROM generate_series(1, 8 + i % 17) j)
          || CASE WHEN i % 2 = 1 THEN ARRAY[97] ELSE ARRAY[]::int[] END AS ids,
       CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label
FROM generate_series(1, 600) i;
-- post-LN: the model int4's bounds were measured on (with 0.4's pre-LN default
-- the same toy model's worst probability moves 0.111 at int4: doc/reference.md)
SELECT model FROM tfm_create_model('prec_clf', 'classify', vocab_size => 100, labels => ARRAY['a', 'b'],
                                   d_model => 32, heads => 4, layers => 2, max_len => 32, norm => 'post');
SELECT epoch FROM tfm_train('prec_clf', 'SELECT ids, label FROM prec_rows ORDER BY i', epochs => 2, batch_size => 32,
                             keep => 'last');
CREATE TABLE prec_out (precision text, i int, label text, p double precision);
SET tfm.precision = fp32;
INSERT INTO prec_out SELECT 'fp32', i, p.label, p.probability FROM prec_rows, tfm_predict_proba('prec_clf', ids) p;
SET tfm.precision = bf16;
INSERT INTO prec_out SELECT 'bf16', i, p.label, p.probability FROM prec_rows, tfm_predict_proba('prec_clf', ids) p;
SET tfm.precision = int8;
INSERT INTO prec_out SELECT 'int8', i, p.label, p.probability FROM prec_rows, tfm_predict_proba('prec_clf', ids) p;
SET tfm.precision = int4;
INSERT INTO prec_out SELECT 'int4', i, p.label, p.probability FROM prec_rows, tfm_predict_proba('prec_clf', ids) p;
SET tfm.precision = fp32;
INSERT INTO prec_out SELECT 'fp32 again', i, p.label, p.probability FROM prec_rows, tfm_predict_proba('prec_clf', ids) p;
-- probabilities: bf16 within 0.01 of fp32, int8 within 0.03, int4 within 0.1;
-- fp32 again exact; the low-precision passes really ran (some probability
-- differs), except bf16 where its kernel is avx2: a classifier's passes are
-- row-exact, and bf16's row-exact product on AVX2 is fp32's at every row count
SELECT o.precision, max(abs(o.p - f.p)) <= CASE o.precision WHEN 'bf16' THEN 0.01 WHEN 'int8' THEN 0.03 WHEN 'int4' THEN 0.1 ELSE 0 END AS within_tolerance,
       bool_or(o.p <> f.p) = (o.precision <> 'fp32 again' AND
                              NOT (o.precision = 'bf16' AND (SELECT bf16_kernel FROM tfm_info()) = 'avx2')) AS differs_unless_fp32
FROM prec_out o JOIN prec_out f ON f.precision = 'fp32' AND f.i = o.i AND f.label = o.label
WHERE o.precision <> 'fp32' GROUP BY o.precision ORDER BY o.precision;
-- the most likely label agrees on at least 99.5 % of the rows with bf16
-- (int8 states its own bound: 98 %; int4 85 %: this model is barely trained,
-- 74 % accurate, with many rows near 0.5, and d_model 32 puts a whole
-- column in one block of 32; measured 90.5 %)
WITH best AS (SELECT DISTINCT ON (precision, i) precision, i, label FROM prec_out ORDER BY precision, i, p DESC)
SELECT b.precision, avg((b.label = f.label)::int) >= CASE b.precision WHEN 'int8' THEN 0.98 WHEN 'int4' THEN 0.85 ELSE 0.995 END AS labels_agree
FROM best b JOIN best f ON f.precision = 'fp32' AND f.i = b.i
WHERE b.precision <> 'fp32' GROUP BY b.precision ORDER BY b.precision;

-- a language model's next-token probabilities
SELECT model FROM tfm_create_model('prec_lm', 'lm', vocab_size => 100, d_model => 32, heads => 4, layers => 2, max_len => 32);
SELECT epoch FROM tfm_train('prec_lm', 'SELECT ids FROM prec_rows ORDER BY i', epochs => 1, batch_size => 16);
CREATE TABLE prec_next AS SELECT 'fp32'::text AS precision, id, probability FROM tfm_next_tokens('prec_lm', ARRAY[6, 19, 32], k => 100);
SET tfm.precision = bf16;
INSERT INTO prec_next SELECT 'bf16', id, probability FROM tfm_next_tokens('prec_lm', ARRAY[6, 19, 32], k => 100);
SET tfm.precision = int8;
INSERT INTO prec_next SELECT 'int8', id, probability FROM tfm_next_tokens('prec_lm', ARRAY[6, 19, 32], k => 100);
SET tfm.precision = int4;
INSERT INTO prec_next SELECT 'int4', id, probability FROM tfm_next_tokens('prec_lm', ARRAY[6, 19, 32], k => 100);
SELECT n.precision, max(abs(n.probability - f.probability)) <= CASE n.precision WHEN 'bf16' THEN 0.01 WHEN 'int4' THEN 0.1 ELSE 0.03 END AS within_tolerance
FROM prec_next n JOIN prec_next f ON f.precision = 'fp32' AND f.id = n.id
WHERE n.precision <> 'fp32' GROUP BY n.precision ORDER BY n.precision;
-- greedy generation agrees on the first tokens
SET tfm.precision = fp32;
CREATE TABLE prec_gen AS SELECT 'fp32'::text AS precision, array_agg(id ORDER BY pos) AS ids
  FROM tfm_generate_tokens('prec_lm', ARRAY[6, 19, 32], max_tokens => 3, temperature => 0);
SET tfm.precision = bf16;
INSERT INTO prec_gen SELECT 'bf16', array_agg(id ORDER BY pos) FROM tfm_generate_tokens('prec_lm', ARRAY[6, 19, 32], max_tokens => 3, temperature => 0);
SET tfm.precision = int4;
INSERT INTO prec_gen SELECT 'int4', array_agg(id ORDER BY pos) FROM tfm_generate_tokens('prec_lm', ARRAY[6, 19, 32], max_tokens => 3, temperature => 0);
SELECT count(DISTINCT ids) = 1 AS greedy_agrees FROM prec_gen;

-- a model's own default is used under auto, and training stays fp32
SET tfm.precision = auto;
SELECT tfm_set_precision('prec_clf', 'int8');
SELECT config->>'precision' AS own_default FROM tfm.models WHERE name = 'prec_clf';
SELECT (SELECT probability FROM tfm_predict_proba('prec_clf', (SELECT ids FROM prec_rows WHERE i = 1)) WHERE label = 'a')
     = (SELECT p FROM prec_out WHERE precision = 'int8' AND i = 1 AND label = 'a') AS int8_by_default;
SELECT epoch FROM tfm_train('prec_clf', 'SELECT ids, label FROM prec_rows ORDER BY i', epochs => 1, batch_size => 32);
SELECT tfm_set_precision('prec_clf', 'auto');
SELECT config ? 'precision' AS has_own_default FROM tfm.models WHERE name = 'prec_clf';

-- bad settings
SELECT pg_temp.err($$SET tfm.precision = fp16$$);
SELECT pg_temp.err($$SELECT tfm_set_precision('prec_clf', 'fp16')$$);
SELECT tfm_set_precision('prec_clf', 'int4');
SELECT config->>'precision' AS own_default FROM tfm.models WHERE name = 'prec_clf';
SELECT pg_temp.err($$SELECT epoch FROM tfm_train('prec_clf', 'SELECT ids, label FROM prec_rows', epochs => 1, train_precision => 'int4')$$);
SELECT pg_temp.err($$SELECT tfm_set_precision('no_model', 'bf16')$$);
SELECT pg_temp.err($$SELECT tfm_set_precision(NULL, 'bf16')$$);
SELECT pg_temp.err($$SELECT tfm_set_precision('prec_clf', NULL)$$);

SELECT tfm_drop_model('prec_clf');
SELECT tfm_drop_model('prec_lm');
DROP TABLE prec_rows, prec_out, prec_next, prec_gen;
