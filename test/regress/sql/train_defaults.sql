-- the training defaults that regularise with the budget (issue 29): rows
-- held out by a hash of their tokens (the same ones whatever the order),
-- keep => 'best' restoring the best evaluation's weights, early stopping
-- after patience evaluations, dropout and weight decay from the planned
-- passes unless set, mid-epoch evaluations in a run of one long epoch, and
-- all of it said in the result rows and tfm.history.  (Resuming holds out
-- the same rows: fit.sql's interrupted runs end with the same weights and
-- validation accuracies as uninterrupted ones.)
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
CREATE FUNCTION pg_temp.new(n text, extra text DEFAULT '') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT tfm_create_model(%L, ''classify'', vocab_size => 50, labels => ARRAY[''a'', ''b''],
                    d_model => 16, heads => 2, layers => 1, max_len => 8, seed => 5 %s)', n, extra);
END $$;

-- 400 distinct rows: label 'b' rows contain one of the ids 40..44
CREATE TABLE td AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       ARRAY[6 + i % 31, 6 + (i / 31) % 31, 6 + (i * 7) % 29]
       || CASE WHEN i % 2 = 1 THEN ARRAY[40 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 400) i;

-- the defaults, visible: 10 % held out (a classifier's share), dropout and
-- weight decay from the epochs (none for 1 or 2 passes, more as they grow)
SELECT pg_temp.new('d1'), pg_temp.new('d3'), pg_temp.new('d6');
SELECT epoch, val_rows, dropout, decay, note
  FROM tfm_train('d1', 'SELECT ids, label FROM td ORDER BY i', epochs => 1);
SELECT max(epoch) AS epochs, min(val_rows) AS val_rows, min(dropout) AS dropout, min(decay) AS decay
  FROM tfm_train('d3', 'SELECT ids, label FROM td ORDER BY i', epochs => 3, patience => 0);
SELECT max(epoch) AS epochs, min(dropout) AS dropout, min(decay) AS decay
  FROM tfm_train('d6', 'SELECT ids, label FROM td ORDER BY i', epochs => 6, patience => 0);
-- the same in tfm.history, and the kept row says why
SELECT h.epoch, h.checkpoint, h.val_rows, h.dropout, h.weight_decay, h.kept, h.note
  FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'd1';

-- the held-out rows follow the rows' tokens, not their order: read in the
-- opposite order, the same rows are held out (at a learning rate too small
-- to move the weights, the same validation loss) and as many of them
SELECT pg_temp.new('o1'), pg_temp.new('o2');
SELECT a.val_rows = b.val_rows AS same_count, round(a.val_loss::numeric, 5) = round(b.val_loss::numeric, 5) AS same_rows
  FROM tfm_train('o1', 'SELECT ids, label FROM td ORDER BY i', lr => 1e-9) a,
       tfm_train('o2', 'SELECT ids, label FROM td ORDER BY i DESC', lr => 1e-9) b;
-- a given fraction holds out other rows (more of them)
SELECT val_rows, note FROM tfm_train('o1', 'SELECT ids, label FROM td ORDER BY i', lr => 1e-9, val_fraction => 0.3);

-- explicit settings win: the model's own dropout, a given weight_decay, a
-- given val_fraction (0: none) and keep
SELECT pg_temp.new('x1', ', dropout => 0.3');
SELECT epoch, val_rows, dropout, decay, kept, note
  FROM tfm_train('x1', 'SELECT ids, label FROM td ORDER BY i', epochs => 2, weight_decay => 0.2,
                 val_fraction => 0, keep => 'last');
-- the config says whose dropout it is
SELECT name, config->'dropout' AS dropout, config->'dropout_auto' AS auto
  FROM tfm.models WHERE name IN ('x1', 'd1') ORDER BY name;
-- too few rows for the default: nothing held out, and said so
SELECT pg_temp.new('s1');
SELECT epoch, val_rows, note FROM tfm_train('s1', 'SELECT ids, label FROM td WHERE i <= 60 ORDER BY i');
-- repeated rows are not held out by default either (all 50 copies hash alike)
SELECT epoch, val_rows, note FROM tfm_train('s1', 'SELECT ARRAY[6, 7, 8], ''a'' FROM generate_series(1, 500)');

-- keep => 'best' restores the best evaluation's weights: with a constant
-- schedule and explicit dropout and weight decay the first epochs of a run
-- do not depend on its length, so a model trained for just the kept number
-- of epochs holds the same weights, bit for bit, as the one that kept them
SELECT pg_temp.new('kb', ', dropout => 0.1'), pg_temp.new('kc', ', dropout => 0.1');
CREATE TEMP TABLE kb AS
SELECT * FROM tfm_train('kb', 'SELECT ids, label FROM td ORDER BY i', epochs => 8, lr => 0.05,
                        schedule => 'constant', warmup => 5, weight_decay => 0.01, patience => 0);
SELECT epoch AS kept_epoch FROM kb WHERE kept \gset
SELECT count(*) AS evaluations, count(*) FILTER (WHERE kept) AS kept_rows,
       (SELECT epoch FROM kb ORDER BY val_accuracy DESC, val_loss LIMIT 1) = :kept_epoch AS kept_the_best
  FROM kb;
SELECT count(*) AS rows FROM tfm_train('kc', 'SELECT ids, label FROM td ORDER BY i', epochs => :kept_epoch, lr => 0.05,
                                       schedule => 'constant', warmup => 5, weight_decay => 0.01, keep => 'last');
SELECT pg_temp.same_weights('kb', 'kc') AS kept_vs_trained_to_that_epoch;
SELECT bool_and(tfm_classify('kb', ids) = tfm_classify('kc', ids)) AS same_outputs FROM td;

-- early stopping: patience 2 ends the run 2 evaluations after the best one
-- (its NOTICE names the step it stopped at, which depends on the CPU's
-- kernels' summation order: the result rows are checked instead)
SELECT pg_temp.new('es', ', dropout => 0');
SET client_min_messages = warning;
CREATE TEMP TABLE es AS
SELECT * FROM tfm_train('es', 'SELECT ids, label FROM td ORDER BY i', epochs => 40, lr => 0.1,
                        schedule => 'constant', warmup => 1, patience => 2);
RESET client_min_messages;
SELECT max(epoch) < 40 AS stopped_early, max(epoch) = (SELECT epoch FROM es WHERE kept) + 2 AS two_after_the_best,
       (SELECT note FROM es ORDER BY epoch DESC LIMIT 1) LIKE '%early stop: 2 evaluations without improvement (patience 2)%' AS said
  FROM es;
SELECT count(*) FILTER (WHERE h.note LIKE '%early stop%') AS history_says_so
  FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'es';

-- one long epoch (at least 400 steps) is also evaluated every eighth of its
-- steps: result and history rows inside the epoch (no weights saved for them)
CREATE TABLE td_long AS SELECT * FROM td, generate_series(1, 9) k;
SELECT pg_temp.new('me');
CREATE TEMP TABLE me AS
SELECT * FROM tfm_train('me', 'SELECT ids, label FROM td_long ORDER BY i, k', batch_size => 8, patience => 0);
SELECT count(*) AS evaluations, array_agg(steps ORDER BY steps) AS at_steps,
       count(*) FILTER (WHERE kept) AS kept_rows FROM me;
SELECT count(*) AS history_rows, count(*) FILTER (WHERE checkpoint > 0) AS mid_epoch,
       count(*) FILTER (WHERE kept) AS kept
  FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'me';

-- an lm holds out sequences of max_len tokens, also from one long row, and
-- keeps its best epoch by default
SELECT model FROM tfm_create_model('lm1', 'lm', vocab_size => 40, d_model => 16, heads => 2, layers => 1,
                                   max_len => 8, seed => 5);
SELECT epoch, val_rows, kept, dropout, decay, note
  FROM tfm_train('lm1', $$SELECT array_agg(6 + (i * i + i / 13) % 31 ORDER BY i) FROM generate_series(1, 4000) i$$, epochs => 2);

-- patience's limits
SELECT pg_temp.err($$SELECT * FROM tfm_train('d1', 'SELECT ids, label FROM td', patience => -1)$$);
CALL tfm_fit('d1', 'SELECT ids, label FROM td', patience => 1000001);

SELECT count(*) FROM (SELECT tfm_drop_model(name) FROM tfm.models) d;
DROP TABLE td, td_long;
