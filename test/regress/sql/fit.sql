-- CALL tfm_fit: checkpoints committed as it trains, resume after an
-- interruption with bit-identical weights, keep => 'last' | 'best', and every
-- bad argument.  (A real cancel from another session: test/cluster/test_fit_cancel.sh.)
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
-- small chunks, so an epoch has several chunk boundaries to checkpoint at
SET tfm.train_chunk_rows = 100;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- every tensor of two models equal, bit for bit (shortest exact float text)
CREATE FUNCTION pg_temp.same_weights(x text, y text) RETURNS text LANGUAGE sql AS $$
SELECT count(*) || ' tensors, ' || sum(cardinality(a.data)) || ' values, '
       || CASE WHEN bool_and(a.data::text = b.data::text) THEN 'identical' ELSE 'DIFFERENT' END
  FROM tfm.tensors a JOIN tfm.tensors b USING (name)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = x)
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = y) $$;

CREATE TABLE toy AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       array(SELECT 6 + ((i * 7 + j * 13) % 30) FROM generate_series(1, 4 + i % 9) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[40 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 600) i;
CREATE INDEX ON toy (i);
-- six models of one seed (dropout on: its masks follow the seed and the step)
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                          d_model => 16, heads => 2, layers => 1, max_len => 16, seed => 3)
    FROM unnest(ARRAY['t', 'f1', 'f2', 'f3', 'f4', 'f5']) n) s;

-- tfm_fit trains as tfm_train does: the same weights
SELECT epoch, steps, kept FROM tfm_train('t', 'SELECT ids, label FROM toy ORDER BY i', epochs => 3, lr => 3e-3, keep => 'last');
CALL tfm_fit('f1', 'SELECT ids, label FROM toy ORDER BY i', epochs => 3, lr => 3e-3, keep => 'last',
             checkpoint_every => '1 hour');
SELECT pg_temp.same_weights('t', 'f1') AS train_vs_fit;

-- a checkpoint at every chunk boundary: each is committed, with a history
-- row (checkpoint 1, 2, ... of its epoch); the weights are the same
CALL tfm_fit('f2', 'SELECT ids, label FROM toy ORDER BY i', epochs => 3, lr => 3e-3, keep => 'last',
             checkpoint_every => '1 microsecond');
SELECT pg_temp.same_weights('f1', 'f2') AS checkpointed_vs_not;
SELECT epoch, count(*) FILTER (WHERE checkpoint > 0) AS checkpoints,
       max(rows_done) FILTER (WHERE checkpoint > 0) AS last_rows_done,
       bool_or(kept) AS kept
  FROM tfm.history WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'f2')
 GROUP BY epoch ORDER BY epoch;
-- a finished run leaves no checkpoint
SELECT count(*) AS checkpoints_left FROM tfm.checkpoints;

-- an interrupted run: reading row 450 the third time raises an error (the
-- first read is the row count at the start, the second the pass that reads
-- the held-out rows before training; the third, epoch 1's fifth chunk,
-- after the checkpoints at rows 100 to 400).  The index scan reads
-- rows as training goes, so the error comes in the middle of the epoch.
CREATE SEQUENCE boom_reads;
CREATE FUNCTION boom(i integer, label text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF i = 450 AND nextval('boom_reads') = current_setting('tfm_test.boom_at')::bigint THEN
        RAISE EXCEPTION 'the connection is lost';
    END IF;
    RETURN label;
END $$;
SET enable_sort = off;
SET tfm_test.boom_at = 3;
CALL tfm_fit('f3', 'SELECT ids, boom(i, label) FROM toy ORDER BY i', epochs => 3, lr => 3e-3,
             keep => 'last', checkpoint_every => '1 microsecond');
SET tfm_test.boom_at = 0;
-- what the interruption kept: the checkpoints of epoch 1 up to row 400
SELECT epoch, rows_done, steps, query FROM tfm.checkpoints;
SELECT count(*) AS tensors, bool_and(length(adam_m) > 0 AND best IS NULL) AS moments FROM tfm.checkpoint_tensors;
SELECT epoch, checkpoint, rows_done FROM tfm.history
 WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'f3') ORDER BY saved_at;
-- resume goes on from row 401 with the same query and options, and ends
-- with the same weights as the run that was not interrupted
CALL tfm_fit('f3', resume => true);
SELECT pg_temp.same_weights('f1', 'f3') AS interrupted_and_resumed_vs_not;
SELECT count(*) AS checkpoints_left FROM tfm.checkpoints;

-- keep => 'best' across an interruption in the epoch after the best one:
-- the best epoch's weights are in the checkpoint, and the run ends with them
-- as the uninterrupted one does.  Which epoch is best depends on the CPU's
-- kernels (their sums' order), so b1 runs first and b2 is interrupted in the
-- epoch after b1's best (at lr 1 the toy set is fitted within 2-3 epochs on
-- most kernels, and ties keep the earliest), or in the last epoch when that
-- is the best: the checkpoint then holds the best of the epochs before.  Row 450 is read once by
-- the row count, once by the pass over the held-out rows, then three times in
-- each epoch (its chunk, and the skips after the checkpoints at rows 500 and
-- 600): the (3·e)th read is epoch e's chunk.  NOTICEs off: they name the epochs.
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                          d_model => 16, heads => 2, layers => 1, max_len => 16, seed => 3)
    FROM unnest(ARRAY['b1', 'b2']) n) s;
SET client_min_messages = warning;
CALL tfm_fit('b1', 'SELECT ids, label FROM toy ORDER BY i', epochs => 5, lr => 1.0, schedule => 'constant',
             keep => 'best', checkpoint_every => '1 microsecond');
SELECT epoch AS best FROM tfm.history
 WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'b1') AND kept \gset
SELECT least(:best + 1, 5) AS cut \gset
SELECT setval('boom_reads', 1, false);
SELECT set_config('tfm_test.boom_at', (3 * :cut)::text, false) IS NOT NULL AS armed;
CALL tfm_fit('b2', 'SELECT ids, boom(i, label) FROM toy ORDER BY i', epochs => 5, lr => 1.0,
             schedule => 'constant', keep => 'best', checkpoint_every => '1 microsecond');
SET tfm_test.boom_at = 0;
SELECT epoch = :cut AS in_the_epoch_after_the_best, rows_done FROM tfm.checkpoints;
SELECT count(*) AS tensors, bool_and(best IS NOT NULL) AS best_kept FROM tfm.checkpoint_tensors;
CALL tfm_fit('b2', resume => true);
RESET client_min_messages;
SELECT pg_temp.same_weights('b1', 'b2') AS best_interrupted_and_resumed_vs_not;
SELECT count(*) AS epochs, bool_and(a.val_accuracy = b.val_accuracy) AS same_accuracy,
       bool_and(a.kept = b.kept) AS same_kept, count(*) FILTER (WHERE a.kept) AS kept
  FROM tfm.history a JOIN tfm.history b USING (epoch, checkpoint)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = 'b1')
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = 'b2') AND checkpoint = 0;

-- keep => 'last' interrupted after an evaluation (in epoch 2): the checkpoint
-- holds no best weights, and the resumed run ends as the uninterrupted one
SELECT count(*) FROM (SELECT tfm_create_model('f6', 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                                              d_model => 16, heads => 2, layers => 1, max_len => 16, seed => 3)) s;
SELECT setval('boom_reads', 1, false);
SET tfm_test.boom_at = 6;
CALL tfm_fit('f6', 'SELECT ids, boom(i, label) FROM toy ORDER BY i', epochs => 3, lr => 3e-3,
             keep => 'last', checkpoint_every => '1 microsecond');
SET tfm_test.boom_at = 0;
SELECT epoch, rows_done FROM tfm.checkpoints;
CALL tfm_fit('f6', resume => true);
SELECT pg_temp.same_weights('f1', 'f6') AS last_interrupted_after_an_evaluation_vs_not;

-- interrupted again; training the model otherwise says so and starts afresh
SELECT setval('boom_reads', 1, false);
SET tfm_test.boom_at = 3;
CALL tfm_fit('f4', 'SELECT ids, boom(i, label) FROM toy ORDER BY i', epochs => 2, checkpoint_every => '1 microsecond');
SET tfm_test.boom_at = 0;
SELECT count(*) FROM tfm_train('f4', 'SELECT ids, label FROM toy ORDER BY i');
SELECT count(*) AS checkpoints_left FROM tfm.checkpoints;
-- a resume after a fresh run has nothing to resume
CALL tfm_fit('f4', resume => true);
\echo :LAST_ERROR_SQLSTATE
RESET enable_sort;

-- keep => 'best' (the default): the epoch with the best validation accuracy
-- (ties: the lowest validation loss) is kept and saved; after 3 evaluations
-- without improvement (patience, by default 3) the run stops early
CREATE TEMP TABLE runs AS
SELECT * FROM tfm_train('t', 'SELECT ids, label FROM toy ORDER BY i', epochs => 6, lr => 3e-2);
SELECT count(*) AS epochs, count(*) FILTER (WHERE kept) AS kept_rows,
       (SELECT epoch FROM runs WHERE kept) =
       (SELECT epoch FROM runs ORDER BY val_accuracy DESC, val_loss LIMIT 1) AS kept_the_best
  FROM runs;
SELECT h.epoch = (SELECT epoch FROM runs WHERE kept) AS history_marks_it
  FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id
 WHERE m.name = 't' AND h.kept AND h.run_started = (SELECT max(run_started) FROM tfm.history WHERE model_id = m.id);
-- with keep => 'last' the last epoch is kept
SELECT epoch, kept FROM tfm_train('t', 'SELECT ids, label FROM toy ORDER BY i', epochs => 2, keep => 'last');
-- tfm_fit with keep => 'best' says which epoch it kept
CALL tfm_fit('f5', 'SELECT ids, label FROM toy ORDER BY i', epochs => 2, keep => 'best', val_fraction => 0.2);
-- without held-out rows there is nothing to compare: the last epoch is kept
-- (said when keep => 'best' was asked for; the default is quiet)
SELECT epoch, kept FROM tfm_train('t', 'SELECT ids, label FROM toy ORDER BY i', epochs => 2, val_fraction => 0, keep => 'best');
-- an lm keeps its best epoch too (5 % of its sequences held out by default)
SELECT model FROM tfm_create_model('flm', 'lm', vocab_size => 20, d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT epoch, kept FROM tfm_train('flm', 'SELECT ARRAY[6,7,8,9,10,11,12,13,14,15] FROM generate_series(1, 300)', epochs => 2);
-- an lm through checkpoints (the carry tokens cross chunks): same as tfm_train
SELECT model FROM tfm_create_model('flm2', 'lm', vocab_size => 20, d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT model FROM tfm_create_model('flm3', 'lm', vocab_size => 20, d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT count(*) FROM tfm_train('flm2', 'SELECT ARRAY[6 + i % 5, 7, 8, 9 + i % 3] FROM generate_series(1, 500) i ORDER BY i', epochs => 2);
CALL tfm_fit('flm3', 'SELECT ARRAY[6 + i % 5, 7, 8, 9 + i % 3] FROM generate_series(1, 500) i ORDER BY i', epochs => 2,
             checkpoint_every => '1 microsecond');
SELECT pg_temp.same_weights('flm2', 'flm3') AS lm_train_vs_fit;

-- bad arguments: checked before anything else (so also inside a function)
SELECT pg_temp.err($$CALL tfm_fit(NULL, 'SELECT ids, label FROM toy')$$);
SELECT pg_temp.err($$CALL tfm_fit('t', NULL)$$);
SELECT pg_temp.err($$CALL tfm_fit('t', 'SELECT ids, label FROM toy', checkpoint_every => '0')$$);
SELECT pg_temp.err($$CALL tfm_fit('t', 'SELECT ids, label FROM toy', checkpoint_every => '-5 minutes')$$);
SELECT pg_temp.err($$CALL tfm_fit('t', 'SELECT ids, label FROM toy', keep => 'first')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('t', 'SELECT ids, label FROM toy', keep => 'first')$$);
-- a procedure that commits cannot run in a transaction block or a function
SELECT pg_temp.err($$CALL tfm_fit('t', 'SELECT ids, label FROM toy')$$);
BEGIN;
CALL tfm_fit('t', 'SELECT ids, label FROM toy');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
CALL tfm_fit('nope', 'SELECT ids, label FROM toy');
\echo :LAST_ERROR_SQLSTATE
CALL tfm_fit('t', resume => true);
\echo :LAST_ERROR_SQLSTATE
CALL tfm_fit('t', 'SELECT ids, label FROM toy', epochs => 0);
\echo :LAST_ERROR_SQLSTATE
CALL tfm_fit('t', 'SELECT ids FROM toy');
\echo :LAST_ERROR_SQLSTATE

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
DROP TABLE toy;
DROP FUNCTION boom(integer, text);
DROP SEQUENCE boom_reads;
