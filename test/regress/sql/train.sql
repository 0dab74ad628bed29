-- training over rows: loss falls, saves per epoch, warm start, history,
-- all-or-nothing, and every bad argument
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
-- errors as "SQLSTATE message", so both are pinned
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- a learnable toy task over token ids: label 'b' rows contain the ids 40..44
CREATE TABLE toy AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       array(SELECT 6 + ((i * 7 + j * 13) % 30) FROM generate_series(1, 4 + i % 9) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[40 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 600) i;

SELECT model FROM tfm_create_model('toy', 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16, dropout => 0,
                                   attention_dropout => 0);
SELECT version AS v0 FROM tfm.models WHERE name = 'toy' \gset

SELECT epoch, steps, round(train_loss::numeric, 1) < 0.75 AS first_loss_sane
  FROM tfm_train('toy', 'SELECT ids, label FROM toy ORDER BY i', epochs => 1, lr => 3e-3);
SELECT max(epoch) AS epochs, max(steps) AS steps,
       (array_agg(train_loss ORDER BY epoch))[4] < 0.3 AS learned,
       (array_agg(val_accuracy ORDER BY epoch))[4] > 0.9 AS accurate
  FROM tfm_train('toy', 'SELECT ids, label FROM toy ORDER BY i', epochs => 4, lr => 3e-3);
-- warm start: the second call went on from the first call's weights
SELECT steps, version <> :v0 AS saved FROM tfm.models WHERE name = 'toy';
SELECT h.epoch, h.steps FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id
  WHERE m.name = 'toy' ORDER BY saved_at;

-- the same seed and data give the same weights, bit for bit
SELECT model FROM tfm_create_model('r1', 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT model FROM tfm_create_model('r2', 'classify', vocab_size => 50, labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT count(*) FROM tfm_train('r1', 'SELECT ids, label FROM toy ORDER BY i', seed => 7);
SELECT count(*) FROM tfm_train('r2', 'SELECT ids, label FROM toy ORDER BY i', seed => 7);
SELECT bool_and(a.data = b.data) AS identical
  FROM tfm.tensors a JOIN tfm.tensors b USING (name)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = 'r1')
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = 'r2');

-- a failed statement keeps nothing: the model is as it was
SELECT version AS v1, steps AS s1 FROM tfm.models WHERE name = 'toy' \gset
SELECT count(*) FROM tfm_train('toy', 'SELECT ids, CASE WHEN i = 599 THEN ''c'' ELSE label END FROM toy ORDER BY i');
SELECT version = :v1 AS unchanged, steps = :s1 AS same_steps FROM tfm.models WHERE name = 'toy';

-- statement_timeout (like pg_cancel_backend) stops training; its saves roll back
SELECT version AS v2, steps AS s2 FROM tfm.models WHERE name = 'toy' \gset
-- terse: the cancel may land inside the save's own SQL, which adds a CONTEXT
\set VERBOSITY terse
SET statement_timeout = '1s';
SELECT count(*) FROM tfm_train('toy', 'SELECT ids, label FROM toy', epochs => 1000000);
RESET statement_timeout;
\set VERBOSITY default
SELECT version = :v2 AS unchanged, steps = :s2 AS same_steps FROM tfm.models WHERE name = 'toy';

-- limits end training normally, after a save
SELECT epoch, steps FROM tfm_train('toy', 'SELECT ids, label FROM toy', epochs => 1000000000, max_steps => 3);
-- NULL rows are skipped and counted; long rows truncated and counted
SELECT epoch, steps FROM tfm_train('toy', 'SELECT CASE WHEN i % 3 = 0 THEN NULL ELSE ids || array_fill(7, ARRAY[i % 40]) END, label FROM toy ORDER BY i', batch_size => 64);

-- an lm and a seq2seq model train on id streams and pairs
SELECT model FROM tfm_create_model('tlm', 'lm', vocab_size => 20, d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT epoch, steps, train_loss < 2.5 AS learning FROM tfm_train('tlm', 'SELECT ARRAY[6,7,8,9,10,11,12,13,14,15] FROM generate_series(1, 200)', epochs => 3, lr => 1e-2);
SELECT model FROM tfm_create_model('ts2s', 'seq2seq', vocab_size => 20, d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT (array_agg(train_loss ORDER BY epoch))[1] > (array_agg(train_loss ORDER BY epoch))[4] + 0.5 AS learning
  FROM tfm_train('ts2s', 'SELECT ARRAY[6 + i % 5, 7 + i % 7], ARRAY[7 + i % 7, 6 + i % 5] FROM generate_series(1, 300) i', epochs => 4, lr => 1e-2);

-- bad arguments
SELECT pg_temp.err($$SELECT * FROM tfm_train(NULL, 'SELECT 1')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('nope', 'SELECT ids, label FROM toy')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELEC ids')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids FROM toy')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT i, label FROM toy')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy WHERE false')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ARRAY[1, 99], ''a''')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ''some text'', ''a''')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ARRAY[1, NULL], ''a''')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', epochs => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', batch_size => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', batch_size => 100000)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', lr => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', lr => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', warmup => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', schedule => 'sawtooth')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', weight_decay => 2)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', clip => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', label_smoothing => 1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', val_fraction => 1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', time_limit => '-1 second')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', max_steps => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'SELECT ids, label FROM toy', accumulate => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_train('toy', 'INSERT INTO toy VALUES (1)')$$);

-- time_limit ends a run of many epochs (the schedule is refitted to the time
-- as it goes) with a save; how many steps fit depends on the machine
SET client_min_messages = warning;
SELECT count(*) >= 1 AS returned, sum(steps) > 0 AS trained
FROM tfm_train('toy', 'SELECT ids, label FROM toy', epochs => 1000000, time_limit => '1 second');
RESET client_min_messages;

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
DROP TABLE toy;
