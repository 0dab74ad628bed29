-- a job's destination turned into a view by its owner (issue 37):
-- PostgreSQL 15 converts an emptied table into a view with CREATE RULE
-- "_RETURN", keeping its OID, so the job still writes "its" destination;
-- the view's rows pass through the owner's function, and a superuser
-- bypasses row security, not a view.  tfm.jobs does not read it (not a
-- table); a run's read of it (outputs of another version) runs her
-- function as her, never as the superuser who runs her job.  PostgreSQL 16
-- removed the conversion: there the CREATE RULE fails and the job goes on
-- over its table (expected output jobs_view_rule_1.out).
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET client_min_messages = notice;
CREATE ROLE tfm_v_mallory;
CREATE SCHEMA tfm_v_mallory AUTHORIZATION tfm_v_mallory;
SELECT tfm_tokenizer_train('vr_chars', t, 'char') FROM (VALUES ('the sea and the whale')) s(t);
SELECT tfm_grant('vr_chars', 'PUBLIC');
SET ROLE tfm_v_mallory;
SELECT model FROM tfm_create_model('vr_m', 'classify', 'vr_chars', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 64);
CREATE TABLE tfm_v_mallory.mdocs (id int PRIMARY KEY, body text);
INSERT INTO tfm_v_mallory.mdocs VALUES (1, 'the sea');
SELECT tfm_job_create('vr_mjob', 'tfm_v_mallory.mdocs', 'body', 'vr_m', 'embed');
CALL tfm_job_run('vr_mjob');
CREATE FUNCTION tfm_v_mallory.spy() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'spy() ran as %', current_user;
    RETURN true;
END $$;
DELETE FROM tfm_v_mallory.vr_mjob;
ALTER TABLE tfm_v_mallory.vr_mjob DROP CONSTRAINT vr_mjob_pkey;
VACUUM tfm_v_mallory.vr_mjob;  -- clears relhasindex, which the conversion checks
CREATE TABLE tfm_v_mallory.real_out (id int PRIMARY KEY, output real[], model_version bigint,
                                     updated_at timestamptz);
INSERT INTO tfm_v_mallory.real_out VALUES (1, NULL, 0, now());
CREATE RULE "_RETURN" AS ON SELECT TO tfm_v_mallory.vr_mjob DO INSTEAD
    SELECT id, output, model_version, updated_at FROM tfm_v_mallory.real_out WHERE tfm_v_mallory.spy();
RESET ROLE;
SELECT relkind FROM pg_class WHERE oid = 'tfm_v_mallory.vr_mjob'::regclass;
SELECT name, outputs_by_version FROM tfm.jobs WHERE name = 'vr_mjob';
CALL tfm_job_run('vr_mjob');
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'tfm_v_mallory';

SET client_min_messages = warning;
SELECT tfm_job_drop('vr_mjob', drop_destination => false);
SELECT tfm_drop_model('vr_m');
SELECT tfm_tokenizer_drop('vr_chars');
DROP SCHEMA tfm_v_mallory CASCADE;
DROP ROLE tfm_v_mallory;
