-- pgTAP: weights in tables.  Save/load round trips bit-exact; the model
-- cache re-reads nothing on repeated calls, sees another session's
-- committed save at the next statement and never a rolled-back one.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS tfm;
CREATE EXTENSION IF NOT EXISTS dblink;
SET tfm.progress = off;
SET tfm.threads = 1;

SELECT plan(12);

CREATE TABLE tap_rows AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'x' ELSE 'y' END AS label,
       array(SELECT 6 + ((i * 5 + j * 3) % 20) FROM generate_series(1, 3 + i % 7) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[30] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 300) i;

SELECT lives_ok($$SELECT tfm_create_model('tap_m', 'classify', vocab_size => 32, labels => ARRAY['x', 'y'],
                  d_model => 16, heads => 2, layers => 1, max_len => 16)$$, 'a classifier is created');
SELECT lives_ok($$SELECT * FROM tfm_train('tap_m', 'SELECT ids, label FROM tap_rows ORDER BY i', lr => 3e-3)$$,
                'it trains on rows');

-- save and load round-trip bit-exact: copy = load + save
SELECT is(tfm_copy_model('tap_m', 'tap_copy'),
          (SELECT parameters FROM tfm.models WHERE name = 'tap_m'), 'a copy has every parameter');
SELECT is((SELECT count(*) FROM tfm.tensors a JOIN tfm.tensors b USING (name)
            WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = 'tap_m')
              AND b.model_id = (SELECT id FROM tfm.models WHERE name = 'tap_copy')
              AND a.data = b.data AND a.shape = b.shape),
          (SELECT count(*) FROM tfm.tensors WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'tap_m')),
          'every tensor survives load and save bit for bit');
SELECT is((SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_copy', ARRAY[6, 7, 30])),
          (SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])),
          'the copy predicts exactly what the original does');

-- repeated calls read the tables once
CREATE TEMP TABLE p_before AS
SELECT array_agg(probability ORDER BY label) AS p FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30]);
BEGIN;
SELECT tfm_classify('tap_m', ids) FROM tap_rows LIMIT 1 \g /dev/null
CREATE TEMP TABLE scans AS SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS n
  FROM pg_stat_xact_user_tables WHERE relid = 'tfm.tensors'::regclass;
SELECT tfm_classify('tap_m', ids) FROM tap_rows LIMIT 50 \g /dev/null
SELECT tfm_classify('tap_m', ids) FROM tap_rows LIMIT 50 \g /dev/null
SELECT is((SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
            WHERE relid = 'tfm.tensors'::regclass),
          (SELECT n FROM scans), '100 more calls in two statements read no tensor from the tables');
COMMIT;

-- another session's committed save is seen by the next statement
SELECT dblink_connect('other', format('dbname=%s host=%s port=%s user=%s', current_database(),
       current_setting('unix_socket_directories'), current_setting('port'), current_user));
SELECT dblink_exec('other', 'SET tfm.progress = off');
SELECT * FROM dblink('other', $$SELECT count(*) FROM tfm_train('tap_m', 'SELECT ids, label FROM tap_rows', lr => 1e-2, seed => 3)$$) AS t(n bigint) \g /dev/null
CREATE TEMP TABLE p_other AS
SELECT p FROM dblink('other', $$SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])$$)
  AS t(p float8[]);
SELECT isnt((SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])),
            (SELECT p FROM p_before), 'the committed save changed the prediction here');
SELECT is((SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])),
          (SELECT p FROM p_other), 'this session now predicts exactly what the other does');

-- a rolled-back save is never seen
SELECT dblink_exec('other', 'BEGIN');
SELECT * FROM dblink('other', $$SELECT count(*) FROM tfm_train('tap_m', 'SELECT ids, label FROM tap_rows', lr => 1e-2, seed => 4)$$) AS t(n bigint) \g /dev/null
SELECT isnt((SELECT p FROM dblink('other', $$SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])$$) AS t(p float8[])),
            (SELECT p FROM p_other), 'inside its transaction the other session sees its new weights');
SELECT is((SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])),
          (SELECT p FROM p_other), 'an uncommitted save is not seen here');
SELECT dblink_exec('other', 'ROLLBACK');
SELECT is((SELECT p FROM dblink('other', $$SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])$$) AS t(p float8[])),
          (SELECT p FROM p_other), 'after the rollback the other session is back to the committed weights');
SELECT is((SELECT array_agg(probability ORDER BY label) FROM tfm_predict_proba('tap_m', ARRAY[6, 7, 30])),
          (SELECT p FROM p_other), 'and so is this one');
SELECT dblink_disconnect('other');

SELECT * FROM finish();
SELECT tfm_drop_model('tap_m');
SELECT tfm_drop_model('tap_copy');
DROP TABLE tap_rows;
