-- checkpoint_activations => true: each block's activations are recomputed in
-- the backward pass instead of kept for every layer.  The same losses and
-- weights as without, bit for bit (dropout replays its masks), for every
-- task and through tfm_fit's resume and tfm_train_agg; a smaller workspace
-- (a batch too large for tfm.work_mem fits); NULL is the default, false.
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- every tensor of two models equal, bit for bit (shortest exact float text)
CREATE FUNCTION pg_temp.same_weights(x text, y text) RETURNS text LANGUAGE sql AS $$
SELECT count(*) || ' tensors, '
       || CASE WHEN bool_and(a.data::text = b.data::text) THEN 'identical' ELSE 'DIFFERENT' END
  FROM tfm.tensors a JOIN tfm.tensors b USING (name)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = x)
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = y) $$;
-- two runs of tfm_train over query q, 2 epochs at lr: model x with
-- checkpoint_activations => c1, model y with c2; their result rows (losses,
-- accuracies) and weights compared bit for bit
CREATE FUNCTION pg_temp.train_both(x text, c1 boolean, y text, c2 boolean, q text, lr real)
RETURNS TABLE (evaluations bigint, results text, weights text) LANGUAGE sql AS $$
WITH a AS (SELECT * FROM tfm_train(x, q, epochs => 2, lr => lr, checkpoint_activations => c1)),
     b AS (SELECT * FROM tfm_train(y, q, epochs => 2, lr => lr, checkpoint_activations => c2))
SELECT count(*),
       CASE WHEN bool_and(a.steps = b.steps AND a.train_loss = b.train_loss
                          AND a.val_loss IS NOT DISTINCT FROM b.val_loss
                          AND a.val_accuracy IS NOT DISTINCT FROM b.val_accuracy
                          AND a.train_loss > 0)
            THEN 'identical' ELSE 'DIFFERENT' END,
       pg_temp.same_weights(x, y)
  FROM a JOIN b USING (epoch) $$;

CREATE TABLE ca_toy AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       array(SELECT 6 + ((i * 7 + j * 13) % 30) FROM generate_series(1, 4 + i % 9) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[40 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 400) i;

-- classify, 3 layers, dropout on: plain against checkpointed, and NULL (the
-- default) against false
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'], d_model => 16,
                          heads => 2, layers => 3, max_len => 16, dropout => 0.1,
                          attention_dropout => 0.1, seed => 3)
    FROM unnest(ARRAY['c_plain', 'c_ckpt', 'c_null', 'c_false']) n) s;
SELECT * FROM pg_temp.train_both('c_plain', false, 'c_ckpt', true, 'SELECT ids, label FROM ca_toy ORDER BY i', 3e-3);
SELECT * FROM pg_temp.train_both('c_null', NULL, 'c_false', false, 'SELECT ids, label FROM ca_toy ORDER BY i', 3e-3);

-- lm (pre-LN) and seq2seq (cross-attention), 2 layers, dropout on
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'lm', vocab_size => 20, d_model => 16, heads => 2, layers => 2,
                          max_len => 8, norm => 'pre', dropout => 0.1, attention_dropout => 0.1)
    FROM unnest(ARRAY['l_plain', 'l_ckpt']) n) s;
SELECT * FROM pg_temp.train_both('l_plain', false, 'l_ckpt', true,
  'SELECT ARRAY[6 + i % 5, 7, 8, 9 + i % 3, 10, 11] FROM generate_series(1, 300) i ORDER BY i', 1e-2);
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'seq2seq', vocab_size => 20, d_model => 16, heads => 2, layers => 2,
                          max_len => 8, dropout => 0.1, attention_dropout => 0.1)
    FROM unnest(ARRAY['s_plain', 's_ckpt']) n) s;
SELECT * FROM pg_temp.train_both('s_plain', false, 's_ckpt', true,
  'SELECT ARRAY[6 + i % 5, 7 + i % 7], ARRAY[7 + i % 7, 6 + i % 5] FROM generate_series(1, 300) i ORDER BY i', 1e-2);

-- the memory is real: 4 layers at full length, tfm.work_mem at 60 % of what
-- a plain training batch needs; the plain run is refused, the checkpointed
-- one fits and trains
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'], d_model => 16,
                          heads => 2, layers => 4, max_len => 32)
    FROM unnest(ARRAY['w_plain', 'w_ckpt']) n) s;
SELECT set_config('tfm.work_mem', (tfm_workspace_bytes('w_plain', 32, 32, 0, true) * 6 / 10 / 1024)::text,
                  false) IS NOT NULL AS limited;
SELECT pg_temp.err($$SELECT count(*) FROM tfm_train('w_plain', 'SELECT ids || ids || ids || ids, label FROM ca_toy',
                                                     batch_size => 32, val_fraction => 0)$$) ~ '^54000 training model "w_plain" needs a workspace of' AS plain_refused;
SELECT epoch, steps FROM tfm_train('w_ckpt', 'SELECT ids || ids || ids || ids, label FROM ca_toy',
                                   batch_size => 32, val_fraction => 0, checkpoint_activations => true);
RESET tfm.work_mem;

-- tfm_fit records it in its checkpoint (state and options) and a resume keeps
-- it: interrupted in epoch 1 and resumed, the same weights as tfm_train's
SET tfm.train_chunk_rows = 100;
CREATE SEQUENCE ca_reads;
CREATE FUNCTION ca_boom(i integer, label text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF i = 350 AND nextval('ca_reads') = 3 THEN
        RAISE EXCEPTION 'the connection is lost';
    END IF;
    RETURN label;
END $$;
CREATE INDEX ON ca_toy (i);
SET enable_sort = off;
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'], d_model => 16,
                          heads => 2, layers => 3, max_len => 16, dropout => 0.1,
                          attention_dropout => 0.1, seed => 3)
    FROM unnest(ARRAY['f_plain', 'f_ckpt', 'f_switch', 'f_v3']) n) s;
SELECT count(*) FROM tfm_train('f_plain', 'SELECT ids, label FROM ca_toy ORDER BY i', epochs => 2, lr => 3e-3,
                               keep => 'last');
CALL tfm_fit('f_ckpt', 'SELECT ids, ca_boom(i, label) FROM ca_toy ORDER BY i', epochs => 2, lr => 3e-3,
             keep => 'last', checkpoint_every => '1 microsecond', checkpoint_activations => true);
SELECT epoch, rows_done, options->'checkpoint_activations' AS checkpoint_activations FROM tfm.checkpoints;
CALL tfm_fit('f_ckpt', resume => true);
SELECT pg_temp.same_weights('f_plain', 'f_ckpt') AS fit_resumed;
-- a resume may switch it (the same weights either way)
SELECT setval('ca_reads', 1, false);
CALL tfm_fit('f_switch', 'SELECT ids, ca_boom(i, label) FROM ca_toy ORDER BY i', epochs => 2, lr => 3e-3,
             keep => 'last', checkpoint_every => '1 microsecond');
SELECT options->'checkpoint_activations' AS checkpoint_activations FROM tfm.checkpoints;
CALL tfm_fit('f_switch', resume => true, checkpoint_activations => true);
SELECT pg_temp.same_weights('f_plain', 'f_switch') AS fit_switched_on_resume;
-- a state of version 3 (before this option: its last byte and version 4)
-- is still read, and resumes without checkpointing
SELECT setval('ca_reads', 1, false);
CALL tfm_fit('f_v3', 'SELECT ids, ca_boom(i, label) FROM ca_toy ORDER BY i', epochs => 2, lr => 3e-3,
             keep => 'last', checkpoint_every => '1 microsecond', checkpoint_activations => true);
SELECT substring(state from 5 for 4) AS version, get_byte(state, length(state) - 1) AS checkpoint_activations
  FROM tfm.checkpoints;
UPDATE tfm.checkpoints
   SET state = overlay(substring(state from 1 for length(state) - 1) placing '\x00000003'::bytea from 5 for 4);
CALL tfm_fit('f_v3', resume => true);
SELECT pg_temp.same_weights('f_plain', 'f_v3') AS fit_resumed_from_version_3;
RESET enable_sort;
RESET tfm.train_chunk_rows;

-- tfm_train_agg's option
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'], d_model => 16,
                          heads => 2, layers => 3, max_len => 16, dropout => 0.1, seed => 3)
    FROM unnest(ARRAY['a_plain', 'a_ckpt']) n) s;
SELECT (tfm_train_agg('a_plain', ids, label, '{"batch_size": 16}' ORDER BY i)).steps FROM ca_toy;
SELECT (tfm_train_agg('a_ckpt', ids, label, '{"batch_size": 16, "checkpoint_activations": true}' ORDER BY i)).steps
  FROM ca_toy;
SELECT pg_temp.same_weights('a_plain', 'a_ckpt') AS aggregate;

-- bad values
SELECT pg_temp.err($$SELECT * FROM tfm_train('c_plain', 'SELECT ids, label FROM ca_toy', checkpoint_activations => 'maybe')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('c_plain', 'SELECT ids, label FROM ca_toy', checkpoint_activations => 2)$$);
SELECT pg_temp.err($$CALL tfm_fit('c_plain', 'SELECT ids, label FROM ca_toy', checkpoint_activations => 'yes please')$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('a_plain', ids, label, '{"checkpoint_activations": 1}') FROM ca_toy$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('a_plain', ids, label, '{"checkpoint_activations": "true"}') FROM ca_toy$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('a_plain', ids, label, '{"checkpoint_activation": true}') FROM ca_toy$$);

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
DROP TABLE ca_toy;
DROP FUNCTION ca_boom(integer, text);
DROP SEQUENCE ca_reads;
