-- tfm.work_mem: every pass is sized before it runs and refused (54000,
-- naming the size and the setting) when it needs more; calls that batch by
-- themselves split instead.  Sizes are fp32 at one thread (tfm.threads = 1).
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET tfm.precision = fp32;
-- errors as "SQLSTATE message (hint)", so all three are pinned
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' (' || nullif(h, '') || ')', '');
END $$;

LOAD 'tfm';
SHOW tfm.work_mem;
-- (the range without its units: PostgreSQL 17 prints them, 15 does not)
SELECT regexp_replace(pg_temp.err($$SET tfm.work_mem = '1023kB'$$), ' kB( \.\.|\))', '\1', 'g') AS below_minimum;
SET tfm.work_mem = '1MB';
SHOW tfm.work_mem;
RESET tfm.work_mem;

CREATE TABLE hm_text AS SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
  repeat(chr(97 + i % 7) || 'xyz ', 1 + i % 5) AS t FROM generate_series(1, 40) i;
SELECT tfm_tokenizer_train('hm_chars', t, 'char') FROM hm_text;
SELECT model FROM tfm_create_model('hm_cls', 'classify', 'hm_chars', labels => ARRAY['a', 'b'],
                                   d_model => 128, heads => 4, layers => 1, max_len => 2048,
                                   dropout => 0.1);  -- explicit: workspace sizes with dropout's masks
SELECT version AS v0 FROM tfm.models WHERE name = 'hm_cls' \gset

-- training one 2,048-token row: 4 heads × 2048² attention weights alone are 64 MB
SELECT tfm_workspace_bytes('hm_cls', 1, 2048, training => true) AS need \gset
-- (in MB; the same on every CPU: the panels' bound does not depend on the
-- BLIS kernel's blocking)
SELECT round(:need / 1048576.0, 1) AS train_need_mb,
       round(tfm_workspace_bytes('hm_cls', 2, 2048, training => true) / 1048576.0, 1) AS two_rows_mb,
       round(tfm_workspace_bytes('hm_cls', 1, 2048) / 1048576.0, 1) AS inference_need_mb;
SET tfm.work_mem = '64MB';
SELECT pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[2048]), ''a''',
                                             epochs => 1, val_fraction => 0)$$) AS refused;
-- refused before any step: nothing saved
SELECT steps, version = :v0 AS unchanged FROM tfm.models WHERE name = 'hm_cls';
-- at the limit it runs; one kB below the limit it is refused
-- (the setting's value in the message, exactly the need less 1 kB, shown as NEED-1)
SELECT set_config('tfm.work_mem', (ceil(:need / 1024.0)::bigint - 1)::text, false) IS NOT NULL AS one_kb_below;
SELECT replace(pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[2048]), ''a''',
                                             epochs => 1, val_fraction => 0)$$),
               (ceil(:need / 1024.0)::bigint - 1) || 'kB', 'NEED-1kB') AS one_kb_short;
SELECT set_config('tfm.work_mem', ceil(:need / 1024.0)::bigint::text, false) IS NOT NULL AS at_the_need;
SELECT epoch, steps FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[2048]), ''a''',
                                   epochs => 1, val_fraction => 0);
-- batch_size × length: 4 rows of 300 tokens fit 64 MB, 64 such rows do not
SET tfm.work_mem = '64MB';
SELECT epoch, steps FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[300]), ''b'' FROM generate_series(1, 4)',
                                   epochs => 1, val_fraction => 0, batch_size => 4);
SELECT pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[300]), ''b'' FROM generate_series(1, 64)',
                                             epochs => 1, val_fraction => 0, batch_size => 64)$$) AS wide_batch;
SELECT pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT array_fill(5, ARRAY[300]), ''b'' FROM generate_series(1, 64)',
                                             epochs => 1, val_fraction => 0, batch_tokens => 100000)$$) AS wide_batch_tokens;
-- the batch arguments' own limits: at and one past
SELECT pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT ARRAY[5], ''a'' LIMIT 0', batch_size => 65536)$$) AS batch_at_limit;
SELECT pg_temp.err($$SELECT * FROM tfm_train('hm_cls', 'SELECT ARRAY[5], ''a''', batch_size => 65537)$$) AS batch_past_limit;

-- inference: a long text that cannot fit is refused; arrays are split to fit
SET tfm.work_mem = '1MB';
SELECT pg_temp.err($$SELECT tfm_classify('hm_cls', repeat('axyz ', 400))$$) AS long_text;
SELECT tfm_workspace_bytes('hm_cls', 64, 10) > 1048576 AS batch_too_wide,
       tfm_workspace_bytes('hm_cls', 1, 10) < 1048576 AS one_row_fits;
SELECT tfm_classify('hm_cls', array_agg(t ORDER BY i)) = array_agg(tfm_classify('hm_cls', t) ORDER BY i) AS split_equals_single
  FROM hm_text;
RESET tfm.work_mem;
SELECT tfm_classify('hm_cls', array_agg(t ORDER BY i)) = array_agg(tfm_classify('hm_cls', t) ORDER BY i) AS unsplit_equals_single
  FROM hm_text;

-- a language model: scoring, generation (its decoder and cache), next tokens
SELECT model FROM tfm_create_model('hm_lm', 'lm', 'hm_chars', d_model => 64, heads => 4, layers => 1,
                                   max_len => 1024);
SET tfm.work_mem = '16MB';
-- a window that slides (prompt + max_tokens past max_len) is sized for the slide
SELECT pg_temp.err($$SELECT tfm_generate('hm_lm', 'axyz', max_tokens => 1100, temperature => 0)$$) AS generate_refused;
-- one that fits never slides: sized for its own positions, it runs in 16MB
SELECT length(tfm_generate('hm_lm', 'axyz', max_tokens => 5, temperature => 0)) <= 5 AS fits_without_slide;
SELECT pg_temp.err($$SELECT * FROM tfm_score('hm_lm', repeat('axyz ', 200))$$) AS score_refused;
SELECT pg_temp.err($$SELECT * FROM tfm_next_tokens('hm_lm', repeat('axyz ', 200))$$) AS next_refused;
SET tfm.work_mem = '256MB';
SELECT length(tfm_generate('hm_lm', 'axyz', max_tokens => 5, temperature => 0)) <= 5 AS generates;
SELECT tokens FROM tfm_score('hm_lm', repeat('axyz ', 200));
-- prompts decoded together are split to fit, each seeded as alone
SET tfm.work_mem = '40MB';
SELECT g[1] = tfm_generate('hm_lm', 'axyz', max_tokens => 8, temperature => 0.7, seed => 5)
   AND g[2] = tfm_generate('hm_lm', 'bxyz', max_tokens => 8, temperature => 0.7, seed => 6)
   AND g[3] = tfm_generate('hm_lm', 'cxyz', max_tokens => 8, temperature => 0.7, seed => 7) AS split_batch_equals_single
  FROM (SELECT tfm_generate('hm_lm', ARRAY['axyz', 'bxyz', 'cxyz'], max_tokens => 8, temperature => 0.7, seed => 5) AS g) x;
RESET tfm.work_mem;
-- max_tokens at its limit and one past
SELECT pg_temp.err($$SELECT tfm_generate('hm_lm', 'a', max_tokens => 100001)$$) AS max_tokens_past_limit;

-- seq2seq: beam search sized by beam × max_tokens
SELECT model FROM tfm_create_model('hm_s2s', 'seq2seq', 'hm_chars', d_model => 64, heads => 4, layers => 1,
                                   max_len => 1024, positions => 'sinusoidal');
SET tfm.work_mem = '4MB';
SELECT pg_temp.err($$SELECT tfm_translate('hm_s2s', 'axyz', beam => 64, max_tokens => 1000)$$) AS beam_refused;
SELECT pg_temp.err($$SELECT * FROM tfm_translate_nbest('hm_s2s', repeat('axyz ', 40), beam => 64, n => 2)$$) AS nbest_refused;
SELECT pg_temp.err($$SELECT * FROM tfm_attention('hm_s2s', repeat('axyz ', 200), repeat('axyz ', 200))$$) AS attention_refused;
SELECT length(tfm_translate('hm_s2s', 'axyz', beam => 2, max_tokens => 4)) <= 4 AS small_beam_runs;
-- sources decoded together are split to fit
SELECT tfm_translate('hm_s2s', ARRAY['axyz', 'bxyz', 'cxyz', 'dxyz'], beam => 4, max_tokens => 6)
     = ARRAY[tfm_translate('hm_s2s', 'axyz', beam => 4, max_tokens => 6),
             tfm_translate('hm_s2s', 'bxyz', beam => 4, max_tokens => 6),
             tfm_translate('hm_s2s', 'cxyz', beam => 4, max_tokens => 6),
             tfm_translate('hm_s2s', 'dxyz', beam => 4, max_tokens => 6)] AS split_sources_equal_single;
RESET tfm.work_mem;
SELECT pg_temp.err($$SELECT tfm_translate('hm_s2s', 'axyz', beam => 65)$$) AS beam_past_limit;

-- tfm_workspace_bytes checks its arguments
SELECT pg_temp.err($$SELECT tfm_workspace_bytes('hm_cls', 1, 2049)$$) AS length_past_max_len;
SELECT pg_temp.err($$SELECT tfm_workspace_bytes('hm_cls', 65537, 1)$$) AS batch_past_limit;

SELECT tfm_drop_model('hm_cls'), tfm_drop_model('hm_lm'), tfm_drop_model('hm_s2s');
SELECT tfm_tokenizer_drop('hm_chars');
DROP TABLE hm_text;
