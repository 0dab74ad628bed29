-- the training recipe per task (issue 29): a classifier's truncation of
-- inputs longer than max_len (head_tail by default, head or tail), the same
-- window in training, evaluation and inference, stored in the model's
-- config; label smoothing said in the result rows and tfm.history; the
-- seq2seq defaults (pre-LN)
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
-- every tensor of two models equal, bit for bit
CREATE FUNCTION pg_temp.same_weights(x text, y text) RETURNS text LANGUAGE sql AS $$
SELECT count(*) || ' tensors, '
       || CASE WHEN bool_and(a.data::text = b.data::text) THEN 'identical' ELSE 'DIFFERENT' END
  FROM tfm.tensors a JOIN tfm.tensors b USING (name)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = x)
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = y) $$;
-- a classifier with max_len 8 (same seed: the same initial weights)
CREATE FUNCTION pg_temp.new(n text, extra text DEFAULT '') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT tfm_create_model(%L, ''classify'', vocab_size => 50, labels => ARRAY[''a'', ''b''],
                    d_model => 16, heads => 2, layers => 1, max_len => 8, dropout => 0,
                    attention_dropout => 0, seed => 5 %s)', n, extra);
END $$;

-- the default and the choices, in the config
SELECT pg_temp.new('ht'), pg_temp.new('hd', ', truncation => ''head'''),
       pg_temp.new('tl', ', truncation => ''tail'''),
       pg_temp.new('cht', ', pooling => ''cls'''),
       pg_temp.new('ctl', ', pooling => ''cls'', truncation => ''tail''');
SELECT name, config->>'truncation' AS truncation FROM tfm.models ORDER BY name;

-- inference reads exactly its window of 15 ids (6..20) in 8: head_tail the
-- first 4 and the last 4, head the first 8, tail the last 8; with a <cls>
-- first, head_tail keeps it and 3 + 4 ids, tail keeps it and the last 7
SELECT tfm_embed('ht', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('ht', ARRAY[6,7,8,9,17,18,19,20]) AS head_tail_4_4,
       tfm_embed('ht', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('ht', ARRAY[6,7,8,9,10,11,12,13]) AS head_tail_is_not_head,
       tfm_embed('hd', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('hd', ARRAY[6,7,8,9,10,11,12,13]) AS head_8,
       tfm_embed('tl', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('tl', ARRAY[13,14,15,16,17,18,19,20]) AS tail_8,
       tfm_embed('cht', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('cht', ARRAY[6,7,8,17,18,19,20]) AS cls_head_tail_3_4,
       tfm_embed('ctl', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('ctl', ARRAY[14,15,16,17,18,19,20]) AS cls_tail_7;
-- what fits is read whole whatever the mode
SELECT tfm_embed('tl', ARRAY[6,7,8]) = tfm_embed('hd', ARRAY[6,7,8]) AS short_inputs_alike;

-- training sees the same window: a model trained on long rows holds the
-- same weights, bit for bit, as one trained on the rows cut by hand (no
-- held-out rows: those are chosen by a hash of the uncut tokens), and
-- evaluation and classification agree on both
CREATE TABLE tlong AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       array(SELECT 6 + ((i * 7 + j * 13) % 30) FROM generate_series(1, 10 + i % 5) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[40 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 300) i;
CREATE TABLE tcut AS
SELECT i, label, ids[1:4] || ids[array_length(ids, 1) - 3:] AS ht_ids,
       ids[array_length(ids, 1) - 7:] AS tail_ids
FROM tlong;
SELECT pg_temp.new('ht_long'), pg_temp.new('ht_cut'),
       pg_temp.new('tl_long', ', truncation => ''tail'''), pg_temp.new('tl_cut', ', truncation => ''tail''');
SELECT count(*) AS epochs FROM tfm_train('ht_long', 'SELECT ids, label FROM tlong ORDER BY i', epochs => 2, val_fraction => 0);
SELECT count(*) AS epochs FROM tfm_train('ht_cut', 'SELECT ht_ids, label FROM tcut ORDER BY i', epochs => 2, val_fraction => 0);
SELECT count(*) AS epochs FROM tfm_train('tl_long', 'SELECT ids, label FROM tlong ORDER BY i', epochs => 2, val_fraction => 0);
SELECT count(*) AS epochs FROM tfm_train('tl_cut', 'SELECT tail_ids, label FROM tcut ORDER BY i', epochs => 2, val_fraction => 0);
SELECT pg_temp.same_weights('ht_long', 'ht_cut') AS head_tail, pg_temp.same_weights('tl_long', 'tl_cut') AS tail,
       pg_temp.same_weights('ht_long', 'tl_long') AS head_tail_vs_tail;
SELECT a.accuracy = b.accuracy AND a.loss = b.loss AS evaluated_alike, round(a.accuracy::numeric, 4) AS accuracy
  FROM tfm_evaluate('ht_long', 'SELECT ids, label FROM tlong') a,
       tfm_evaluate('ht_long', 'SELECT ht_ids, label FROM tcut') b;
SELECT bool_and(tfm_classify('tl_long', l.ids) = tfm_classify('tl_long', c.tail_ids)) AS classified_alike
  FROM tlong l JOIN tcut c USING (i);

-- bad values
SELECT pg_temp.err($$SELECT pg_temp.new('bad', ', truncation => ''middle''')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('bad', 'lm', vocab_size => 40, truncation => 'head')$$);
SELECT pg_temp.err($$SELECT pg_temp.new('bad', ', truncation => ''''')$$);
SELECT pg_temp.new('nul', ', truncation => NULL');
SELECT config->>'truncation' AS null_is_the_default FROM tfm.models WHERE name = 'nul';
UPDATE tfm.models SET config = jsonb_set(config, '{truncation}', '"sideways"') WHERE name = 'nul';
SELECT pg_temp.err($$SELECT tfm_classify('nul', ARRAY[6, 7])$$);

-- label smoothing, said in the result rows and tfm.history when there is
-- some: none by default for a classifier (no better on rt_polarity or
-- spamassassin: bench/train_defaults.sh), a given one, seq2seq's 0.1 below
SELECT epoch, note FROM tfm_train('ht', 'SELECT ids, label FROM tlong ORDER BY i', epochs => 1);
SELECT epoch, note FROM tfm_train('hd', 'SELECT ids, label FROM tlong ORDER BY i', epochs => 1, label_smoothing => 0.2);
SELECT h.note FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'hd';

-- seq2seq: pre-LN by default (the recipe of bench/seq2seq), label smoothing 0.1
SELECT model FROM tfm_create_model('s2s', 'seq2seq', vocab_size => 40, d_model => 16, heads => 2,
                                   layers => 1, max_len => 16, seed => 5);
SELECT config->>'norm' AS norm FROM tfm.models WHERE name = 's2s';
SELECT epoch, note FROM tfm_train('s2s', $$SELECT ARRAY[6 + i % 20, 7 + i % 19, 8 + i % 7], ARRAY[9 + i % 20, 6 + i % 7]
                                         FROM generate_series(1, 200) i$$, epochs => 1);

-- the default 8,192-token steps in passes that fit tfm.work_mem: here two
-- passes of 4,096 tokens fit and one of 8,192 does not; the weights are
-- those of batch_tokens => 4096, accumulate => 2 given
CREATE TEMP TABLE s2w_rows AS
SELECT ARRAY(SELECT 6 + (i * k) % 30 FROM generate_series(1, 20 + i % 40) k) AS src,
       ARRAY(SELECT 6 + (i + k) % 30 FROM generate_series(1, 10 + i % 50) k) AS tgt
  FROM generate_series(1, 400) i;
SELECT count(*) FROM (SELECT tfm_create_model(n, 'seq2seq', vocab_size => 40, d_model => 32, heads => 2,
                                              layers => 1, max_len => 64, seed => 5)
                        FROM unnest(ARRAY['s2w', 's2w_given']) n) s;
SELECT tfm_workspace_bytes('s2w', 128, 64, 64, true) > 1.8 * tfm_workspace_bytes('s2w', 64, 64, 64, true) AS halves_fit;
SELECT set_config('tfm.work_mem', (tfm_workspace_bytes('s2w', 64, 64, 64, true) * 11 / 10 / 1024)::text, false)
       IS NOT NULL AS limited;
SELECT epoch, steps, note FROM tfm_train('s2w', 'SELECT src, tgt FROM s2w_rows', epochs => 1, val_fraction => 0);
SELECT epoch, steps FROM tfm_train('s2w_given', 'SELECT src, tgt FROM s2w_rows', epochs => 1, val_fraction => 0,
                                   batch_tokens => 4096, accumulate => 2);
SELECT pg_temp.same_weights('s2w', 's2w_given');
-- a given batch that does not fit is refused, not cut
SELECT pg_temp.err($$SELECT count(*) FROM tfm_train('s2w', 'SELECT src, tgt FROM s2w_rows', epochs => 1,
                                                   val_fraction => 0, batch_tokens => 8192)$$) ~ '^54000' AS given_refused;
RESET tfm.work_mem;

-- a model stored before truncation existed (no key in its config) reads
-- head_tail, as every classifier did (in a new session: a model's row is
-- cached with its weights)
UPDATE tfm.models SET config = config - 'truncation' WHERE name = 'tl';
\c
SELECT tfm_embed('tl', ARRAY[6,7,8,9,10,11,12,13,14,15,16,17,18,19,20])
         = tfm_embed('tl', ARRAY[6,7,8,9,17,18,19,20]) AS absent_is_head_tail;

SELECT count(*) FROM (SELECT tfm_drop_model(name) FROM tfm.models) d;
DROP TABLE tlong, tcut;
