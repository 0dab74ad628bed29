-- jobs between roles that do not trust each other (issue 37): a job's code
-- leaves no setting behind (the escalation through search_path and an
-- operator), reading tfm.jobs runs no code of a destination's owner with
-- the reader's rights, a job's last error is its owner's, a job runs the
-- model it was created with whatever is renamed or created since, and
-- tfm.max_work_mem bounds what any role sets.  Roles are cluster-wide:
-- tfm_s_ names, dropped at the end.  The same escalation with background
-- workers: test/cluster/test_job_workers.sh.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET client_min_messages = notice;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
CREATE ROLE tfm_s_alice;
CREATE ROLE tfm_s_bob;
CREATE ROLE tfm_s_mallory;
CREATE SCHEMA tfm_s_alice AUTHORIZATION tfm_s_alice;
CREATE SCHEMA tfm_s_bob AUTHORIZATION tfm_s_bob;
CREATE SCHEMA tfm_s_mallory AUTHORIZATION tfm_s_mallory;
SELECT tfm_tokenizer_train('sec_chars', t, 'char')
  FROM (VALUES ('the sea and the whale 0123456789 -/ exp card'), ('NEW row')) s(t);
SELECT tfm_grant('sec_chars', 'PUBLIC');

-- 1. mallory's job sets search_path (and tfm.work_mem) for whoever runs it;
-- her operator =(oid, oid) makes her superuser when a superuser calls it
SET ROLE tfm_s_mallory;
SELECT model FROM tfm_create_model('sec_m', 'classify', 'sec_chars', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 64);
CREATE TABLE tfm_s_mallory.mdocs (id int PRIMARY KEY, body text);
INSERT INTO tfm_s_mallory.mdocs VALUES (1, 'the sea'), (2, 'the whale');
CREATE FUNCTION tfm_s_mallory.oideq(a oid, b oid) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        RAISE NOTICE 'mallory''s operator ran as a superuser';
        EXECUTE 'ALTER ROLE tfm_s_mallory SUPERUSER';
    END IF;
    RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR tfm_s_mallory.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = tfm_s_mallory.oideq);
SELECT tfm_job_create('sec_mjob', 'tfm_s_mallory.mdocs',
       $$body || left(set_config('search_path', 'tfm_s_mallory, pg_catalog', false), 0)
              || left(set_config('tfm.work_mem', '2MB', false), 0)$$, 'sec_m', 'embed');
RESET ROLE;
SHOW search_path;
SHOW tfm.work_mem;
CALL tfm_job_run('sec_mjob');
-- the superuser's session keeps its own settings ...
SHOW search_path;
SHOW tfm.work_mem;
-- ... so its next ordinary query over oids runs pg_catalog's operator
SELECT count(*) > 0 AS catalog_read FROM pg_class c JOIN pg_namespace n ON c.relnamespace = n.oid;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'tfm_s_mallory';
SELECT count(*) AS outputs FROM tfm_s_mallory.sec_mjob;
-- the job's owner running it herself: her settings are hers, and left as they were
SET ROLE tfm_s_mallory;
CALL tfm_job_run('sec_mjob');
SHOW search_path;
RESET ROLE;

-- 2. reading tfm.jobs: mallory's destination has a policy calling her
-- function; alice's read of tfm.jobs must not run it as alice
SET ROLE tfm_s_mallory;
CREATE FUNCTION tfm_s_mallory.spy() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'spy() ran as %', current_user;
    RETURN true;
END $$;
GRANT USAGE ON SCHEMA tfm_s_mallory TO PUBLIC;
GRANT SELECT ON tfm_s_mallory.sec_mjob TO PUBLIC;
ALTER TABLE tfm_s_mallory.sec_mjob ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm_s_mallory.sec_mjob FORCE ROW LEVEL SECURITY;
CREATE POLICY spy ON tfm_s_mallory.sec_mjob USING (tfm_s_mallory.spy());
RESET ROLE;
-- the count runs no code: it reads the rows itself, and a table whose
-- policy could hide rows from the reader is not counted for them
SET ROLE tfm_s_alice;
SELECT name, outputs_by_version IS NOT NULL AS counted FROM tfm.jobs WHERE name = 'sec_mjob';
RESET ROLE;
SELECT name, outputs_by_version = jsonb_build_object(model_version::text, 2) AS counted
  FROM tfm.jobs WHERE name = 'sec_mjob';
-- (the destination turned into a view: test jobs_view_rule)
-- a destination in a private schema fails nobody's read of tfm.jobs
SELECT tfm_grant('sec_m', 'tfm_s_bob');
SET ROLE tfm_s_bob;
CREATE TABLE tfm_s_bob.bdocs (id int PRIMARY KEY, body text);
INSERT INTO tfm_s_bob.bdocs VALUES (1, 'the whale');
SELECT tfm_job_create('sec_bjob', 'tfm_s_bob.bdocs', 'body', 'sec_m', 'embed');
RESET ROLE;
SET ROLE tfm_s_alice;
SELECT name, owner, outputs_by_version FROM tfm.jobs WHERE name IN ('sec_bjob', 'sec_mjob') ORDER BY name;
RESET ROLE;

-- 5. a row's value in an error is the job owner's: alice's job fails on a
-- card number; bob sees that it failed, not the number
SELECT tfm_grant('sec_m', 'tfm_s_alice');
SET ROLE tfm_s_alice;
CREATE TABLE tfm_s_alice.apay (id int PRIMARY KEY, card text);
INSERT INTO tfm_s_alice.apay VALUES (1, '4111-1111-1111-1111 exp 09/29'), (2, '42');
SELECT tfm_job_create('sec_ajob', 'tfm_s_alice.apay', '(card::numeric)::text', 'sec_m', 'embed');
CALL tfm_job_run('sec_ajob');
SELECT name, rows_done, rows_failed, last_error FROM tfm.jobs WHERE name = 'sec_ajob';
SELECT key, message, sqlstate FROM tfm.job_errors;
RESET ROLE;
SET ROLE tfm_s_bob;
SELECT name, rows_done, rows_failed, last_error FROM tfm.jobs WHERE name = 'sec_ajob';
SELECT count(*) AS errors_bob_sees FROM tfm.job_errors;
SELECT pg_temp.err($$SELECT last_error FROM tfm.job_defs$$);
SELECT name, model, state FROM tfm.job_defs WHERE name = 'sec_ajob';
RESET ROLE;

-- 6. a job runs the model it was created with: alice renames hers, mallory
-- creates one of the old name and grants it to all; alice's job goes on
-- with alice's model, and queues nothing again
SET ROLE tfm_s_alice;
SELECT model FROM tfm_create_model('sec_aenc', 'classify', 'sec_chars', labels => ARRAY['x', 'y'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 64);
CREATE TABLE tfm_s_alice.adocs (id int PRIMARY KEY, body text);
INSERT INTO tfm_s_alice.adocs VALUES (1, 'the sea'), (2, 'the whale');
SELECT tfm_job_create('sec_ajob2', 'tfm_s_alice.adocs', 'body', 'sec_aenc', 'embed');
CALL tfm_job_run('sec_ajob2');
SELECT tfm_rename_model('sec_aenc', 'sec_aenc_v1');
RESET ROLE;
SET ROLE tfm_s_mallory;
SELECT model FROM tfm_create_model('sec_aenc', 'classify', 'sec_chars', labels => ARRAY['x', 'y'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 64, seed => 7);
SELECT tfm_grant('sec_aenc', 'PUBLIC');
RESET ROLE;
SET ROLE tfm_s_alice;
INSERT INTO tfm_s_alice.adocs VALUES (3, 'NEW row');
CALL tfm_job_run('sec_ajob2');
SELECT name, model, rows_done, rows_pending FROM tfm.jobs WHERE name = 'sec_ajob2';
SELECT id, output = tfm_embed('sec_aenc_v1', body) AS alices_model,
       output = tfm_embed('sec_aenc', body) AS mallorys_model
  FROM tfm_s_alice.sec_ajob2 JOIN tfm_s_alice.adocs USING (id) ORDER BY id;
-- dropped: the job stops with its own error, not with mallory's model
SELECT tfm_drop_model('sec_aenc_v1');
INSERT INTO tfm_s_alice.adocs VALUES (4, 'the sea');
CALL tfm_job_run('sec_ajob2');
RESET ROLE;

-- 8. tfm.max_work_mem: the ceiling of every role's tfm.work_mem
SET tfm.max_work_mem = '64MB';
SET ROLE tfm_s_bob;
SELECT pg_temp.err($$SET tfm.work_mem = '128MB'$$);
SELECT pg_temp.err($$SELECT set_config('tfm.work_mem', '65MB', false)$$);
SET tfm.work_mem = '32MB';
SHOW tfm.work_mem;
SELECT pg_temp.err($$SET tfm.max_work_mem = '1GB'$$);
RESET ROLE;
RESET tfm.work_mem;
RESET tfm.max_work_mem;

SET client_min_messages = warning;
SELECT tfm_job_drop(name, drop_destination => true) FROM tfm.job_defs
 WHERE name LIKE 'sec\_%' ORDER BY name;
SELECT tfm_drop_model('sec_m');
SELECT tfm_drop_model('sec_aenc');
SELECT tfm_tokenizer_drop('sec_chars');
DROP SCHEMA tfm_s_alice, tfm_s_bob, tfm_s_mallory CASCADE;
DROP ROLE tfm_s_alice, tfm_s_bob, tfm_s_mallory;
