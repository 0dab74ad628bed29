-- jobs: a source table kept embedded / classified in a destination table
-- (backfill, inserts, updates, deletes, truncate, errors, model versions,
-- rights, pause, resume, drop).  Roles are cluster-wide: tfm_r_ names,
-- dropped at the end.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
CREATE FUNCTION pg_temp.as_role(r text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    res text;
BEGIN
    EXECUTE format('SET ROLE %I', r);
    res := pg_temp.err(q);
    RESET ROLE;
    RETURN res;
END $$;
-- the job's embeddings equal the single call bit for bit (one text a pass)
CREATE FUNCTION pg_temp.same(a real[], b real[]) RETURNS boolean LANGUAGE sql AS $$
    SELECT a = b
$$;

CREATE TABLE jdocs (id int PRIMARY KEY, title text, body text);
INSERT INTO jdocs SELECT i, 'title ' || i, 'the sea and the whale, number ' || i
  FROM generate_series(1, 40) i;
UPDATE jdocs SET body = NULL WHERE id = 7;
SELECT tfm_tokenizer_train('jobs_chars', t, 'char')
  FROM (SELECT title || ': ' || coalesce(body, '') FROM jdocs UNION ALL SELECT 'NEW!?0123456789') s(t);
SELECT model FROM tfm_create_model('jobs_enc', 'classify', 'jobs_chars', labels => ARRAY['calm', 'storm'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 64);

-- an embedding job: destination created beside the source, every row queued
SELECT tfm_job_create('jdocs_emb', 'jdocs', $$title || ': ' || body$$, 'jobs_enc', 'embed',
                      options => '{"batch": 16}');
SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
 WHERE attrelid = 'jdocs_emb'::regclass AND attnum > 0 ORDER BY attnum;
SELECT tgname, tgtype FROM pg_trigger WHERE tgrelid = 'jdocs'::regclass ORDER BY tgname;
SELECT name, owner, source, destination, task, model, state, rows_done, rows_pending, rows_failed
  FROM tfm.jobs;
CALL tfm_job_run('jdocs_emb');
-- exactly one output per row, each equal to the direct call (row 7's
-- input is NULL: its output is NULL, and no error)
SELECT count(*) AS outputs, count(DISTINCT id) AS keys,
       count(*) FILTER (WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', d.title || ': ' || d.body))) AS equal
  FROM jdocs_emb e JOIN jdocs d USING (id);
SELECT key, message, sqlstate FROM tfm.job_errors;
SELECT name, rows_done, rows_pending, rows_failed, rows_deleted,
       outputs_by_version = jsonb_build_object(model_version::text, 40) AS all_current
  FROM tfm.jobs;
-- a second run has nothing to do
CALL tfm_job_run('jdocs_emb');

-- kept current: inserts, an update of the text, an update of the key, a
-- delete, and the NULL row fixed
INSERT INTO jdocs VALUES (41, 'NEW', 'a new row'), (42, 'NEW', 'another');
UPDATE jdocs SET body = 'changed body' WHERE id = 3;
UPDATE jdocs SET id = 100 WHERE id = 5;
DELETE FROM jdocs WHERE id IN (8, 9);
UPDATE jdocs SET body = 'no longer null' WHERE id = 7;
SELECT rows_pending FROM tfm.jobs WHERE name = 'jdocs_emb';
CALL tfm_job_run('jdocs_emb');
SELECT count(*) AS outputs, count(DISTINCT id) AS keys,
       count(*) FILTER (WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', d.title || ': ' || d.body))) AS equal,
       (SELECT count(*) FROM jdocs) AS source_rows,
       (SELECT count(*) FROM jdocs_emb WHERE id IN (5, 8, 9)) AS gone
  FROM jdocs_emb e JOIN jdocs d USING (id);
SELECT count(*) AS errors FROM tfm.job_errors;
-- a row whose input becomes NULL gets a NULL output (no error)
UPDATE jdocs SET title = NULL WHERE id = 2;
CALL tfm_job_run('jdocs_emb');
SELECT (SELECT count(*) FROM jdocs_emb WHERE id = 2 AND output IS NULL) AS null_output,
       (SELECT count(*) FROM tfm.job_errors) AS errors;
UPDATE jdocs SET title = 'title 2' WHERE id = 2;

-- batches: one batch of 16 keys, committed; the rest stays queued
UPDATE jdocs SET body = body || '!' WHERE id <= 20;
CALL tfm_job_run('jdocs_emb', batches => 1);
SELECT rows_pending FROM tfm.jobs WHERE name = 'jdocs_emb';
CALL tfm_job_run('jdocs_emb');
SELECT count(*) FILTER (WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', d.title || ': ' || d.body))) AS equal,
       count(*) AS outputs
  FROM jdocs_emb e JOIN jdocs d USING (id);

-- a new model version: the outputs of the old one are computed again
SELECT count(*) AS epochs FROM tfm_train('jobs_enc', $$SELECT body, CASE WHEN id % 2 = 0 THEN 'calm' ELSE 'storm' END
                                         FROM jdocs WHERE body IS NOT NULL ORDER BY id$$, epochs => 1, val_fraction => 0);
SELECT outputs_by_version ? model_version::text AS has_current, rows_pending FROM tfm.jobs WHERE name = 'jdocs_emb';
CALL tfm_job_run('jdocs_emb');
SELECT outputs_by_version = jsonb_build_object(model_version::text, (SELECT count(*) FROM jdocs_emb)) AS all_current FROM tfm.jobs WHERE name = 'jdocs_emb';
SELECT count(*) FILTER (WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', d.title || ': ' || d.body))) AS equal
  FROM jdocs_emb e JOIN jdocs d USING (id);

-- a classify job over the same rows, with an input expression that fails on
-- some rows (division by zero): those go to the errors table, the rest on
SELECT tfm_job_create('jdocs_cls', 'jdocs', $$body || (100 / (id % 10))::text$$, 'jobs_enc', 'classify');
CALL tfm_job_run('jdocs_cls');
SELECT count(*) AS outputs,
       count(*) FILTER (WHERE c.output = tfm_classify('jobs_enc', d.body || (100 / (d.id % 10))::text)) AS equal
  FROM jdocs_cls c JOIN jdocs d USING (id);
SELECT j.name, e.key, e.message, e.sqlstate FROM tfm.job_errors e JOIN tfm.job_defs j ON j.id = e.job_id
 ORDER BY 1, 2;
-- probabilities as jsonb, equal to tfm_predict_proba
SELECT tfm_job_create('jdocs_p', 'jdocs', 'body', 'jobs_enc', 'predict_proba', options => '{"batch": 7}');
CALL tfm_job_run('jdocs_p');
-- (a job's floats reach jsonb with extra_float_digits 3, whoever runs it)
SET extra_float_digits = 3;
SELECT count(*) AS outputs,
       count(*) FILTER (WHERE p.output = (SELECT jsonb_object_agg(label, probability)
                                           FROM tfm_predict_proba('jobs_enc', d.body))) AS equal
  FROM jdocs_p p JOIN jdocs d USING (id);
SET extra_float_digits = 0;

-- an UPDATE queues a key only for the jobs whose input reads a column it
-- sets, or that sets the key: the triggers fire on UPDATE OF those columns
-- (an input reading the whole row: on every UPDATE)
SELECT tfm_job_create('jdocs_row', 'jdocs', $$jdocs::text$$, 'jobs_enc', 'classify');
SELECT j.name, (SELECT string_agg(a.attname, ', ' ORDER BY a.attnum) FROM pg_attribute a
                 WHERE a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr::int2[])) AS update_of
  FROM pg_trigger t JOIN tfm.job_defs j ON t.tgname = 'tfm_job_' || j.id ORDER BY 1;
SELECT tfm_job_drop('jdocs_row', drop_destination => true);
UPDATE jdocs SET title = title || '!' WHERE id = 10;
SELECT name, rows_pending FROM tfm.jobs ORDER BY name;
UPDATE jdocs SET body = body || '!' WHERE id = 11;
UPDATE jdocs SET id = 111 WHERE id = 12;
SELECT name, rows_pending FROM tfm.jobs ORDER BY name;
CALL tfm_job_run('jdocs_emb');
CALL tfm_job_run('jdocs_cls');
CALL tfm_job_run('jdocs_p');
SET extra_float_digits = 3;
SELECT (SELECT count(*) FROM jdocs) AS source_rows,
       (SELECT count(*) FROM jdocs_emb e JOIN jdocs d USING (id)
         WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', d.title || ': ' || d.body))) AS emb_equal,
       (SELECT count(*) FROM jdocs_p p JOIN jdocs d USING (id)
         WHERE p.output = (SELECT jsonb_object_agg(label, probability) FROM tfm_predict_proba('jobs_enc', d.body))) AS p_equal,
       (SELECT count(*) FROM jdocs_p WHERE id = 12) + (SELECT count(*) FROM jdocs_cls WHERE id = 12) AS old_key;
SET extra_float_digits = 0;

-- generation and translation jobs take their function's options
SELECT model FROM tfm_create_model('jobs_lm', 'lm', 'jobs_chars', d_model => 16, heads => 2, layers => 1, max_len => 64);
SELECT tfm_job_create('jdocs_gen', 'jdocs', 'title', 'jobs_lm', 'generate',
                      options => '{"max_tokens": 4, "temperature": 0, "batch": 8}');
CALL tfm_job_run('jdocs_gen');
SELECT count(*) AS outputs,
       count(*) FILTER (WHERE g.output = tfm_generate('jobs_lm', d.title, max_tokens => 4, temperature => 0)) AS equal
  FROM jdocs_gen g JOIN jdocs d USING (id);
SELECT model FROM tfm_create_model('jobs_s2s', 'seq2seq', 'jobs_chars', d_model => 16, heads => 2, layers => 1, max_len => 64);
SELECT tfm_job_create('jdocs_tr', 'jdocs', 'title', 'jobs_s2s', 'translate',
                      options => '{"max_tokens": 4, "beam": 2}');
CALL tfm_job_run('jdocs_tr');
SELECT count(*) AS outputs,
       count(*) FILTER (WHERE t.output = tfm_translate('jobs_s2s', d.title, beam => 2, max_tokens => 4)) AS equal
  FROM jdocs_tr t JOIN jdocs d USING (id);
SELECT tfm_job_drop('jdocs_gen', drop_destination => true);
SELECT tfm_job_drop('jdocs_tr', drop_destination => true);
SELECT tfm_drop_model('jobs_lm');
SELECT tfm_drop_model('jobs_s2s');

-- paused: the triggers go on queueing, a run does nothing until resumed
SELECT tfm_job_pause('jdocs_p');
INSERT INTO jdocs VALUES (43, 'NEW', 'while paused');
CALL tfm_job_run('jdocs_p');
SELECT name, state, rows_pending FROM tfm.jobs ORDER BY name;
SELECT tfm_job_resume('jdocs_p');
CALL tfm_job_run('jdocs_p');
SELECT count(*) AS outputs FROM jdocs_p WHERE id = 43;

-- truncate: the outputs go
TRUNCATE jdocs;
INSERT INTO jdocs VALUES (1, 'after', 'truncate');
CALL tfm_job_run('jdocs_p');
SELECT id FROM jdocs_p;

-- refused: a job name taken, an unknown task, options, a table without a
-- primary key, an input that is not one expression or names no column, a
-- model of another task, inside a transaction block
SELECT pg_temp.err($$SELECT tfm_job_create('jdocs_p', 'jdocs', 'body', 'jobs_enc', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'summarize')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'embed', options => '{"chunk_tokens": 256}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'embed', options => '{"batch": 0}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'embed', options => '{"beam": 2}')$$);
CREATE TABLE jnokey (t text);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jnokey', 't', 'jobs_enc', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body) FROM jdocs; SELECT (1', 'jobs_enc', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body) FROM jdocs --', 'jobs_enc', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'no_such_column', 'jobs_enc', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'generate')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'no_such_model', 'embed')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'jdocs', 'body', 'jobs_enc', 'embed', 'jdocs')$$);
BEGIN;
CALL tfm_job_run('jdocs_p');
ROLLBACK;
SELECT count(*) AS no_job_x FROM tfm.job_defs WHERE name = 'x';
DROP TABLE jnokey;

-- rights: a stranger can neither create a job on the table nor run, pause
-- or drop another's; a role with SELECT and TRIGGER but no use of the model
-- is refused naming the model
CREATE ROLE tfm_r_jstranger;
CREATE ROLE tfm_r_jreader;
CREATE ROLE tfm_r_jowner;
GRANT SELECT, TRIGGER ON jdocs TO tfm_r_jreader;
SELECT pg_temp.as_role('tfm_r_jstranger', $$SELECT tfm_job_create('s', 'jdocs', 'body', 'jobs_enc', 'embed')$$);
SELECT pg_temp.as_role('tfm_r_jreader', $$SELECT tfm_job_create('s', 'jdocs', 'body', 'jobs_enc', 'embed')$$);
SET ROLE tfm_r_jstranger;
CALL tfm_job_run('jdocs_p');
RESET ROLE;
SELECT pg_temp.as_role('tfm_r_jstranger', $$SELECT tfm_job_pause('jdocs_p')$$);
SELECT pg_temp.as_role('tfm_r_jstranger', $$SELECT tfm_job_drop('jdocs_p')$$);
SELECT pg_temp.as_role('tfm_r_jstranger', $$SELECT count(*) FROM tfm.job_errors$$);

-- a job runs with its owner's rights, whoever runs it: the input sees
-- current_user as the owner, and the destination belongs to the owner
CREATE SCHEMA jobown AUTHORIZATION tfm_r_jowner;
SELECT tfm_grant('jobs_enc', 'tfm_r_jowner');
SET ROLE tfm_r_jowner;
CREATE TABLE jobown.notes (k text, n int, body text, PRIMARY KEY (k, n));
INSERT INTO jobown.notes VALUES ('a', 1, 'one'), ('a', 2, 'two'), ('b', 1, 'three');
SELECT tfm_job_create('notes_emb', 'jobown.notes', $$current_user || ' ' || body$$, 'jobs_enc', 'embed');
RESET ROLE;
SELECT tableowner FROM pg_tables WHERE schemaname = 'jobown' AND tablename = 'notes_emb';
CALL tfm_job_run('notes_emb');
SELECT k, n, output = tfm_embed('jobs_enc', 'tfm_r_jowner ' || body) AS as_owner
  FROM jobown.notes_emb JOIN jobown.notes USING (k, n) ORDER BY k, n;
-- revoking use stops the job (the run fails, the keys stay queued)
INSERT INTO jobown.notes VALUES ('c', 1, 'four');
SELECT tfm_revoke('jobs_enc', 'tfm_r_jowner');
CALL tfm_job_run('notes_emb');
SELECT rows_pending FROM tfm.jobs WHERE name = 'notes_emb';
SELECT tfm_grant('jobs_enc', 'tfm_r_jowner');
SET ROLE tfm_r_jowner;
CALL tfm_job_run('notes_emb');
SELECT count(*) FROM jobown.notes_emb;
SELECT tfm_job_drop('notes_emb', drop_destination => true);
RESET ROLE;
SELECT to_regclass('jobown.notes_emb') AS dropped_destination;

-- drop: triggers, queue and errors go; the destination stays
UPDATE jdocs SET body = 'queued' WHERE id = 1;
SELECT tfm_job_drop('jdocs_emb');
SELECT tfm_job_drop('jdocs_cls');
SELECT tfm_job_drop('jdocs_p');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'jdocs'::regclass;
SELECT count(*) AS queued FROM tfm.job_queue;
SELECT count(*) AS errors FROM tfm.job_errors;
SELECT count(*) AS jobs FROM tfm.jobs;
SELECT count(*) AS kept FROM jdocs_emb;
CALL tfm_job_run('jdocs_emb');

-- a partitioned source: its rows' triggers fire on the partitions, and
-- their changes are queued as the parent's
CREATE TABLE jparts (id int PRIMARY KEY, body text) PARTITION BY RANGE (id);
CREATE TABLE jparts_low PARTITION OF jparts FOR VALUES FROM (0) TO (100);
CREATE TABLE jparts_high PARTITION OF jparts FOR VALUES FROM (100) TO (1000);
INSERT INTO jparts VALUES (1, 'the sea'), (150, 'the whale');
SELECT tfm_job_create('jparts_emb', 'jparts', 'body', 'jobs_enc', 'embed');
CALL tfm_job_run('jparts_emb');
INSERT INTO jparts VALUES (2, 'a new row'), (151, 'another');
UPDATE jparts SET body = 'the sea again' WHERE id = 1;
DELETE FROM jparts WHERE id = 150;
SELECT rows_pending FROM tfm.jobs WHERE name = 'jparts_emb';
CALL tfm_job_run('jparts_emb');
SELECT id, output = tfm_embed('jobs_enc', body) AS current FROM jparts_emb JOIN jparts USING (id) ORDER BY id;
SELECT count(*) AS outputs FROM jparts_emb;
SELECT tfm_job_drop('jparts_emb', drop_destination => true);
DROP TABLE jparts;

-- a backfill is queued in chunks, one queue row per batch of keys (here a
-- two-column key, batch 3); a batch takes one chunk, and the queue row a
-- trigger added for a key of that chunk goes with it
CREATE TABLE jpairs (a int, b text, body text, PRIMARY KEY (a, b));
INSERT INTO jpairs SELECT i % 4, 'k' || i, 'the sea ' || i FROM generate_series(1, 7) i;
SELECT tfm_job_create('jpairs_emb', 'jpairs', 'body', 'jobs_enc', 'embed', options => '{"batch": 3}') IS NOT NULL AS created;
SELECT q.key, q.keys FROM tfm.job_queue q JOIN tfm.job_defs j ON j.id = q.job_id
 WHERE j.name = 'jpairs_emb' ORDER BY q.id;
UPDATE jpairs SET body = 'changed' WHERE b = 'k1';
SELECT rows_pending FROM tfm.jobs WHERE name = 'jpairs_emb';
CALL tfm_job_run('jpairs_emb', 1);
SELECT rows_pending FROM tfm.jobs WHERE name = 'jpairs_emb';
SELECT count(q.key) AS single_keys, count(q.keys) AS chunks FROM tfm.job_queue q JOIN tfm.job_defs j ON j.id = q.job_id
 WHERE j.name = 'jpairs_emb';
CALL tfm_job_run('jpairs_emb');
SELECT count(*) AS outputs, count(DISTINCT (a, b)) AS keys,
       count(*) FILTER (WHERE pg_temp.same(e.output, tfm_embed('jobs_enc', p.body))) AS equal
  FROM jpairs_emb e JOIN jpairs p USING (a, b);
SELECT tfm_job_drop('jpairs_emb', drop_destination => true);
DROP TABLE jpairs;

DROP TABLE jdocs, jdocs_emb, jdocs_cls, jdocs_p, jobown.notes;
DROP SCHEMA jobown;
SELECT tfm_drop_model('jobs_enc');
SELECT tfm_tokenizer_drop('jobs_chars');
DROP ROLE tfm_r_jstranger, tfm_r_jreader, tfm_r_jowner;
