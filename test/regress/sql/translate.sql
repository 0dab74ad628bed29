-- encoder-decoder: train on a synthetic task in SQL, translate (greedy,
-- beam, batch, n-best), attention maps, and bad input.  Checks are
-- properties of the outputs (exact texts depend on the CPU's kernels).
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

-- reverse a string of 2 to 6 digits
CREATE TABLE rev AS
SELECT i, s, reverse(s) AS t
FROM (SELECT i, left(regexp_replace(md5(i::text), '[a-f]', '', 'g'), 2 + i % 5) AS s
      FROM generate_series(1, 3000) i) x
WHERE length(s) >= 2;
SELECT tfm_tokenizer_train('digits', s, 'char') FROM rev;
SELECT model FROM tfm_create_model('rev', 'seq2seq', 'digits', d_model => 32, heads => 4, layers => 2,
                                   max_len => 12, dropout => 0, attention_dropout => 0);
SELECT (array_agg(train_loss ORDER BY epoch))[6] < (array_agg(train_loss ORDER BY epoch))[1] / 3 AS learning
  FROM tfm_train('rev', 'SELECT s, t FROM rev WHERE i > 100 ORDER BY i', epochs => 6, lr => 3e-3,
                 batch_tokens => 192, val_fraction => 0, weight_decay => 0.01);

-- translations: beam and greedy mostly right on unseen rows; batch = single
SELECT avg((tfm_translate('rev', s) = t)::int) > 0.5 AS mostly_right FROM rev WHERE i <= 100;
SELECT tfm_translate('rev', array_agg(s ORDER BY i), beam => 1) = array_agg(tfm_translate('rev', s, beam => 1) ORDER BY i)
       AS batch_equals_single
  FROM rev WHERE i <= 20;
SELECT count(*) <= 3 AS at_most_n, bool_and(score <= 0) AS scores,
       (array_agg(score ORDER BY rank))[1] = max(score) AS best_first
  FROM tfm_translate_nbest('rev', '12345', 4, 3);
SELECT (SELECT translation FROM tfm_translate_nbest('rev', '12345', 4, 3) WHERE rank = 1)
     = tfm_translate('rev', '12345', beam => 4) AS nbest_first_is_translation;
SELECT length(tfm_translate('rev', '123456', max_tokens => 2)) <= 2 AS bounded;
-- tfm_translate_nbest takes tfm_translate's length penalty and length limit
SELECT (SELECT translation FROM tfm_translate_nbest('rev', '12345', 4, 3, length_penalty => 0) WHERE rank = 1)
     = tfm_translate('rev', '12345', beam => 4, length_penalty => 0) AS nbest_lp0_is_translation;
SELECT bool_and(length(translation) <= 2) AS nbest_bounded, count(*) > 0 AS some
  FROM tfm_translate_nbest('rev', '123456', 4, 4, max_tokens => 2);
-- with no length penalty a score is the hypothesis's log-probability: at 1.0 it is divided by its length
SELECT bool_and(a.score < b.score) AS lp_divides
  FROM tfm_translate_nbest('rev', '12345', 4, 1, length_penalty => 0) a,
       tfm_translate_nbest('rev', '12345', 4, 1, length_penalty => 1) b;
SELECT tfm_translate('rev', ARRAY[]::text[]);

-- evaluation: BLEU against all references of a source, exact matches, loss
SELECT exact_match > 0.5 AS exact, loss > 0 AS loss, rows
  FROM tfm_evaluate('rev', 'SELECT s, t FROM rev WHERE i <= 50');
-- its BLEU is the corpus BLEU of the translations (one token each here)
SELECT abs(e.bleu - b.bleu) < 1e-9 AS same_bleu
  FROM tfm_evaluate('rev', 'SELECT DISTINCT ON (s) s, t FROM rev WHERE i <= 50') e,
       (SELECT tfm_bleu(tfm_translate('rev', s), t) AS bleu
          FROM (SELECT DISTINCT ON (s) s, t FROM rev WHERE i <= 50) d) b;
-- a source on two rows is translated once and scored against both references
SELECT e1.bleu <= e2.bleu AS more_references_never_hurt, e2.rows
  FROM tfm_evaluate('rev', $$SELECT '1234', '4321'$$) e1,
       tfm_evaluate('rev', $$SELECT '1234', '4321' UNION ALL SELECT '1234', '4 3 2 1'$$) e2;
SELECT pg_temp.err($$SELECT tfm_evaluate('rev', 'SELECT s FROM rev')$$);
SELECT pg_temp.err($$SELECT tfm_evaluate('rev', 'SELECT s, t FROM rev WHERE false')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('rev', 'SELECT s, t FROM rev', batch_tokens => 0)$$);

-- attention: one weight per (layer, head, query, key); each query's weights sum to 1
SELECT count(*) AS rows, count(DISTINCT layer) AS layers, count(DISTINCT head) AS heads
  FROM tfm_attention('rev', '123', '321');
SELECT bool_and(abs(total - 1) < 1e-5) AS rows_sum_to_one FROM (
  SELECT sum(weight) AS total FROM tfm_attention('rev', '1234') GROUP BY layer, head, query_pos) s;

-- bad input
SELECT pg_temp.err($$SELECT tfm_translate('nope', '1')$$);
SELECT tfm_translate('rev', NULL::text) IS NULL AS null_source;
SELECT pg_temp.err($$SELECT tfm_translate('rev', '')$$);
SELECT pg_temp.err($$SELECT tfm_translate('rev', '1', beam => 0)$$);
SELECT pg_temp.err($$SELECT tfm_translate('rev', '1', beam => 65)$$);
SELECT pg_temp.err($$SELECT tfm_translate('rev', '1', length_penalty => -1)$$);
SELECT pg_temp.err($$SELECT tfm_translate('rev', '1', max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT tfm_translate('rev', '1', max_tokens => 50)$$);
-- a NULL source translates to NULL, the others as alone
SELECT t[1] = tfm_translate('rev', '1') AND t[2] IS NULL AND t[3] = tfm_translate('rev', '12') AS null_element
  FROM (SELECT tfm_translate('rev', ARRAY['1', NULL, '12']) AS t) s;
SELECT pg_temp.err($$SELECT * FROM tfm_translate_nbest('rev', '1', 2, 3)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_translate_nbest('rev', '1', 2, 1, length_penalty => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_translate_nbest('rev', '1', 2, 1, max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_attention('rev', '')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('rev', 'SELECT s FROM rev')$$);
SELECT model FROM tfm_create_model('not_s2s', 'lm', 'digits', d_model => 8, heads => 2, layers => 1);
SELECT pg_temp.err($$SELECT tfm_translate('not_s2s', '1')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_attention('not_s2s', '12', '21')$$);
SELECT count(*) AS self_attention_rows FROM tfm_attention('not_s2s', '12');

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
SELECT tfm_tokenizer_drop('digits');
DROP TABLE rev;
