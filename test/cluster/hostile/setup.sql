-- setup.sql — the tenants of the generated hostile-tenant suite
-- (test/cluster/hostile/run_hostile_suite.pl), run by a superuser in a fresh
-- database of a throwaway cluster.  Three ordinary roles, alice, bob and
-- mallory, each with a schema, a secret table, a source table, a word
-- tokenizer whose vocabulary holds a secret word, a classifier, a language
-- model, an encoder-decoder, an alias and a job (all paused: the second
-- pass resumes them).  Markers the driver looks for in every result:
--   SECRET-<role>-       rows of <role>.secret
--   zq<role>secret       a word of <role>'s vocabulary (tfm.vocab is RLS)
--   <role>_label_        the labels of <role>'s classifier (reached only by
--                        running the model; tfm.models itself is public)
-- mallory also plants traps: mallory.trap() notes in mallory.trap_log who
-- ran it (and tries to make mallory a superuser when a superuser runs it);
-- her job's destination calls it from a row-level security policy, and her
-- job's input expression changes its session's settings; another of her
-- jobs has a destination everyone may SELECT in a schema no one else may use.
SET client_min_messages = warning;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE EXTENSION tfm;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE mallory LOGIN;
-- a role mallory is a member of, owning nothing (the sane argument of tfm_drop_owned)
CREATE ROLE mallory_sub;
GRANT mallory_sub TO mallory;

-- the harness's own record of what each job's input expression saw
CREATE TABLE public.job_notes (who name, job text, search_path text, work_mem text,
                               statement_timeout text, precision text, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON public.job_notes TO PUBLIC;
-- (no SET clause of its own: it must see the settings its caller runs with)
CREATE FUNCTION public.job_note(job text, body text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO public.job_notes (who, job, search_path, work_mem, statement_timeout, precision)
  VALUES (current_user, job, pg_catalog.current_setting('search_path'),
          pg_catalog.current_setting('tfm.work_mem'), pg_catalog.current_setting('statement_timeout'),
          pg_catalog.current_setting('tfm.precision'));
  RETURN body;
END $$;

DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['alice', 'bob', 'mallory'] LOOP
    EXECUTE format('CREATE SCHEMA %I AUTHORIZATION %I', r, r);
  END LOOP;
END $$;

-- each tenant builds its own objects, as itself
CREATE FUNCTION pg_temp.build(r text, seed int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('SET ROLE %I', r);
  EXECUTE format('CREATE TABLE %I.secret (id int PRIMARY KEY, body text)', r);
  EXECUTE format($$INSERT INTO %I.secret SELECT i, 'SECRET-%s-' || i FROM generate_series(1, 20) i$$, r, r);
  EXECUTE format('CREATE VIEW %I.secret_view AS SELECT * FROM %I.secret', r, r);
  EXECUTE format('CREATE TABLE %I.docs (id int PRIMARY KEY, body text, label text)', r);
  EXECUTE format($$INSERT INTO %I.docs SELECT i, 'the sea and the whale ' || (i %% 7) || ' zq%ssecret', 
                   CASE WHEN i %% 2 = 0 THEN 'a' ELSE 'b' END FROM generate_series(1, 24) i$$, r, r);
  PERFORM tfm_tokenizer_train(r || '_tok', t, 'word')
     FROM (SELECT body FROM pg_catalog.unnest(ARRAY['the sea and the whale 0 1 2 3 4 5 6 hi a b x y',
                                                    'zq' || r || 'secret']) body) s(t);
  PERFORM tfm_create_model(r || '_cls', 'classify', r || '_tok', labels => ARRAY[r || '_label_a', r || '_label_b'],
                           d_model => 16, heads => 2, layers => 1, max_len => 32, seed => seed);
  PERFORM count(*) FROM tfm_train(r || '_cls',
    format($$SELECT body, CASE WHEN label = 'a' THEN %L ELSE %L END FROM %I.docs$$, r || '_label_a', r || '_label_b', r),
    epochs => 1, batch_size => 8, val_fraction => 0);
  PERFORM tfm_create_model(r || '_lm', 'lm', r || '_tok', d_model => 16, heads => 2, layers => 1, max_len => 32, seed => seed);
  PERFORM tfm_create_model(r || '_s2s', 'seq2seq', r || '_tok', d_model => 16, heads => 2, layers => 1, max_len => 32, seed => seed);
  PERFORM tfm_deploy(r || '_cls', r || '_alias');
  RESET ROLE;
END $f$;
-- (seeds of their own: equal weights would look like a copy)
SELECT pg_temp.build('alice', 11);
SELECT pg_temp.build('bob', 22);
SELECT pg_temp.build('mallory', 33);

-- jobs: alice's and bob's inputs note what their sessions look like
SET ROLE alice;
SET search_path = alice, public;
SELECT tfm_job_create('alice_job', 'alice.docs', $$public.job_note('alice_job', body)$$, 'alice_cls', 'classify');
SELECT tfm_job_pause('alice_job');
RESET search_path;
SET ROLE bob;
SELECT tfm_job_create('bob_job', 'bob.docs', $$public.job_note('bob_job', body)$$, 'bob_lm', 'generate',
                      options => '{"max_tokens": 4, "temperature": 0}');
SELECT tfm_job_pause('bob_job');
-- mallory's traps
RESET ROLE;
CREATE SCHEMA mallory_private AUTHORIZATION mallory;
SET ROLE mallory;
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
CREATE TABLE mallory.trap_log (who name, sup boolean, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT, SELECT ON mallory.trap_log TO PUBLIC;
CREATE FUNCTION mallory.trap() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF current_user <> 'mallory' THEN
    INSERT INTO mallory.trap_log (who, sup) SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user;
    BEGIN
      ALTER ROLE mallory SUPERUSER;
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
  END IF;
  RETURN true;
END $$;
GRANT EXECUTE ON FUNCTION mallory.trap() TO PUBLIC;
-- her job's input changes its session's settings (a worker's, a runner's)
-- and runs her trap
SELECT tfm_job_create('mallory_job', 'mallory.docs',
  $$public.job_note('mallory_job', body) || set_config('search_path', 'mallory, pg_catalog, public', false)
    || set_config('tfm.work_mem', '3MB', false) || set_config('statement_timeout', '7s', false)
    || set_config('tfm.precision', 'int8', false) || mallory.trap()::text$$,
  'mallory_cls', 'classify');
SELECT tfm_job_pause('mallory_job');
-- whoever reads her destination (tfm.jobs counts its outputs) runs her policy
ALTER TABLE mallory.mallory_job ENABLE ROW LEVEL SECURITY;
CREATE POLICY trap ON mallory.mallory_job USING (mallory.trap());
GRANT SELECT ON mallory.mallory_job TO PUBLIC;
-- a destination others may SELECT in a schema they may not use (tfm.jobs
-- must still answer them: outputs_by_version is NULL when they cannot read it)
CREATE TABLE mallory_private.docs (id int PRIMARY KEY, body text);
INSERT INTO mallory_private.docs VALUES (1, 'the sea');
SELECT tfm_job_create('mallory_hidden_job', 'mallory_private.docs', 'body', 'mallory_cls', 'classify');
SELECT tfm_job_pause('mallory_hidden_job');
GRANT SELECT ON mallory_private.mallory_hidden_job TO PUBLIC;
-- objects the destructive calls' sane arguments name (the driver recreates them)
SELECT count(*) FROM tfm_create_model('mallory_scratch', 'classify', 'mallory_tok', labels => ARRAY['a', 'b'],
                                      d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT tfm_deploy('mallory_cls', 'mallory_scratch_alias');
-- mallory's cross-encoder and NLI model: what tfm_rerank and tfm_zero_shot read
\set xtok `cat test/fixtures/hf_tasks/tokenizer.json`
\set xcfg `cat test/fixtures/hf_tasks/config_rerank.json`
\set xw `base64 -w0 test/fixtures/hf_tasks/model_rerank.safetensors`
SELECT count(*) FROM tfm_import('mallory_xenc', :'xcfg', decode(:'xw', 'base64'), :'xtok', task => 'classify');
\set xcfg `cat test/fixtures/hf_tasks/config_nli.json`
\set xw `base64 -w0 test/fixtures/hf_tasks/model_nli.safetensors`
SELECT count(*) FROM tfm_import('mallory_nli', :'xcfg', decode(:'xw', 'base64'), :'xtok', task => 'classify');
-- mallory's char-level language model: what tfm_extract and json_schema constrain (a word tokenizer cannot be)
SELECT tfm_tokenizer_train('mallory_chars', t, 'char')
  FROM (SELECT string_agg(chr(c), '') AS t FROM generate_series(32, 126) c, generate_series(1, 3) k GROUP BY k) s;
SELECT count(*) FROM tfm_create_model('mallory_json', 'lm', 'mallory_chars', d_model => 16, heads => 2, layers => 1,
                                      max_len => 64);
-- mallory's token classifier and question-answering model: what tfm_entities and tfm_answer read
\set xcfg `cat test/fixtures/hf_tasks/config_ner.json`
\set xw `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
SELECT count(*) FROM tfm_import('mallory_ner', :'xcfg', decode(:'xw', 'base64'), :'xtok', task => 'classify');
\set xcfg `cat test/fixtures/hf_tasks/config_qa.json`
\set xw `base64 -w0 test/fixtures/hf_tasks/model_qa.safetensors`
SELECT count(*) FROM tfm_import('mallory_qa', :'xcfg', decode(:'xw', 'base64'), :'xtok', task => 'classify');
RESET ROLE;
SELECT tfm_grant('alice_tok', 'bob');  -- a grant between the other two: mallory must not gain from it
