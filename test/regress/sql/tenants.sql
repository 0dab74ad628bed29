-- tenants: what one role can do to another's models, the server and
-- everyone's defaults (issue 23's findings 1, 2, 3 and 7), and the roles'
-- objects after DROP ROLE.  Roles are cluster-wide: names start with tfm_t_
-- and they are dropped at the end.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET tfm.train_chunk_rows = 16;
CREATE ROLE tfm_t_owner;
CREATE ROLE tfm_t_trainer;
CREATE ROLE tfm_t_user;
CREATE ROLE tfm_t_stranger;
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
CREATE TABLE tn_data AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'good film ' || i ELSE 'bad plot ' || i END AS t,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END AS l
FROM generate_series(1, 60) i;
GRANT SELECT ON tn_data TO PUBLIC;
SELECT tfm_tokenizer_train('tn_tok', t, 'bpe', 280) FROM tn_data;
SELECT tfm_grant('tn_tok', 'PUBLIC');

-- 1. Names: one limit, 127 bytes, at every entry point (SQLSTATE 42622).
-- 0.3 kept 128 bytes of a longer name and crashed the server on its lookup.
SELECT model, parameters FROM tfm_create_model(repeat('n', 127), 'classify', 'tn_tok',
       labels => ARRAY['neg', 'pos'], d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT tfm_classify(repeat('n', 127), 'good film') IN ('neg', 'pos') AS longest_name_works;
-- 42 three-byte characters are 126 bytes, 43 are 129
SELECT tfm_copy_model(repeat('n', 127), repeat('€', 42)) > 0 AS copied;
SELECT octet_length(name) AS bytes FROM tfm.models WHERE name LIKE '€%';
SELECT name FROM (VALUES
  ($$SELECT tfm_create_model(repeat('x', 127) || 'y', 'classify', 'tn_tok', labels => ARRAY['neg', 'pos'])$$),
  ($$SELECT tfm_classify(repeat('x', 127) || 'y', 'good film')$$),
  ($$SELECT tfm_classify(repeat('x', 127) || 'y', ARRAY['good film'])$$),
  ($$SELECT tfm_generate(repeat('x', 200), 'the')$$),
  ($$SELECT * FROM tfm_train(repeat('x', 128), 'SELECT t, l FROM tn_data')$$),
  ($$SELECT tfm_copy_model(repeat('n', 127), repeat('€', 43))$$),
  ($$SELECT tfm_rename_model(repeat('n', 127), repeat('n', 128))$$),
  ($$SELECT tfm_drop_model(repeat('n', 128))$$),
  ($$SELECT tfm_import(repeat('i', 128), '{}', '\x00')$$),
  ($$SELECT tfm_tokenizer_import(repeat('t', 128), '{}')$$),
  ($$SELECT tfm_tokenizer_import(repeat('t', 128), 'bpe', '{}', '')$$),
  ($$SELECT tfm_tokenizer_train(repeat('t', 128), t) FROM tn_data$$),
  ($$SELECT tfm_tokenize(repeat('t', 128), 'good')$$),
  ($$SELECT tfm_grant(repeat('n', 128), 'PUBLIC')$$),
  ($$SELECT tfm_deploy(repeat('n', 127), repeat('a', 128))$$)
) v(q), LATERAL (SELECT pg_temp.err(q) AS name) e;
SELECT tfm_drop_model(repeat('€', 42));

-- 2. A resume runs nothing of the interrupted run before it has compared the
-- query given and the role resuming.  The owner's run reads through a
-- function that counts its calls (a trojan could do anything there with the
-- rights of whoever runs it) and stops at row 45 of the first epoch (the
-- first read of row 45 counts the rows, the second trains on it).
CREATE SEQUENCE tn_calls;
CREATE SEQUENCE tn_row45;
GRANT USAGE ON SEQUENCE tn_calls, tn_row45 TO PUBLIC;
CREATE FUNCTION tn_counted(i integer, l text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('tn_calls');
    IF i = 45 AND current_setting('tn.stop', true) = 'on' AND nextval('tn_row45') = 2 THEN
        RAISE EXCEPTION 'the connection is lost';
    END IF;
    RETURN l;
END $$;
SET ROLE tfm_t_owner;
SELECT model FROM tfm_create_model('tn_m', 'classify', 'tn_tok', labels => ARRAY['neg', 'pos'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT tfm_grant('tn_m', 'tfm_t_trainer', 'train');
SELECT tfm_grant('tn_m', 'tfm_t_user', 'use');
SET tn.stop = on;
CALL tfm_fit('tn_m', 'SELECT t, tn_counted(i, l) FROM tn_data ORDER BY i', epochs => 2,
             batch_size => 5, val_fraction => 0, checkpoint_every => '1 microsecond');
RESET tn.stop;
RESET ROLE;
SELECT epoch, rows_done, started_by FROM tfm.checkpoints;
SELECT last_value AS calls_before FROM tn_calls;
-- the trainer, with its own query, and with none: refused, and nothing ran
SET ROLE tfm_t_trainer;
CALL tfm_fit('tn_m', 'SELECT t, l FROM tn_data', resume => true);
CALL tfm_fit('tn_m', resume => true);
RESET ROLE;
SELECT last_value AS calls_after_refusals FROM tn_calls;
-- the owner resumes its own run
SET ROLE tfm_t_owner;
CALL tfm_fit('tn_m', resume => true);
RESET ROLE;
SELECT count(*) AS checkpoints_left FROM tfm.checkpoints;

-- 3. Deployments belong to someone.  'default' (what tfm_classify(text)
-- answers with) is the database owner's; other aliases their creator's.
SET ROLE tfm_t_stranger;
SELECT model FROM tfm_create_model('tn_mine', 'classify', 'tn_tok', labels => ARRAY['neg', 'pos'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16, seed => 7);
RESET ROLE;
SELECT tfm_deploy('tn_m');
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_deploy('tn_mine')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_deploy('tn_mine', 'default')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_rollback('default')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_undeploy('default')$$);
-- the user's calls are still answered by tn_m
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_classify('good film 2') = tfm_classify('tn_m', 'good film 2')$$) AS users_model;
SELECT alias, model, task, owner FROM tfm.deployments;
-- an alias of one's own: usable wherever a model name is; others' need a grant
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_deploy('tn_mine', 'tn_live')$$);
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_deploy('tn_m', 'tn_live')$$);
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_classify('tn_live', 'good film')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_grant('tn_live', 'tfm_t_owner', 'use', 'alias')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_grant('tn_mine', 'tfm_t_owner')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_grant('tn_live', 'tfm_t_owner', 'train')$$);
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_deploy('tn_m', 'tn_live')$$);
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_classify('tn_live', 'good film') = tfm_classify('tn_m', 'good film')$$) AS through_alias;
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_rollback('tn_live')$$);
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_rollback('tn_live')$$);
SELECT alias, model, action, by_role FROM tfm.alias_history WHERE alias = 'tn_live' ORDER BY id;
-- an alias stands for its model in every call that takes a model name
SELECT tfm_copy_model('tn_live', 'tn_copy_of_alias') > 0 AS copied_through_alias;
SELECT (SELECT config FROM tfm.models WHERE name = 'tn_copy_of_alias') =
       (SELECT config FROM tfm.models WHERE name = 'tn_mine') AS copy_is_of_the_model;
SELECT tfm_drop_model('tn_copy_of_alias');
SELECT rows, accuracy IS NOT NULL AS evaluated FROM tfm_evaluate('tn_live', 'SELECT t, l FROM tn_data');
SELECT cardinality(tfm_tensor('tn_live', 'enc.0.ln1.g')) AS ln1_values;
SELECT pg_temp.err($$SELECT tfm_drop_model('tn_live')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('tn_live', 'x')$$);
-- models and aliases share one namespace
SELECT pg_temp.err($$SELECT tfm_deploy('tn_m', 'tn_mine')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('tn_live', 'lm', 'tn_tok')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('tn_m', 'default')$$);
SELECT pg_temp.err($$SELECT tfm_deploy('tn_m', '')$$);
SELECT pg_temp.err($$SELECT tfm_deploy(NULL)$$);
SELECT pg_temp.err($$SELECT tfm_deploy('tn_m', NULL)$$);
SELECT pg_temp.err($$SELECT tfm_deploy('no_such_model')$$);
SELECT pg_temp.err($$SELECT tfm_rollback('no_such_alias')$$);
-- renaming the model keeps its aliases; dropping it drops them
SELECT tfm_rename_model('tn_m', 'tn_m2');
SELECT alias, model FROM tfm.deployments;
SELECT tfm_undeploy('tn_live');
SELECT alias, model FROM tfm.deployments;

-- 7. use lets a grantee copy a model, and the copy is the grantee's: a revoke
-- does not reach it (as SELECT lets one copy a table)
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_copy_model('tn_m2', 'tn_users_copy')$$);
SET ROLE tfm_t_owner;
SELECT tfm_revoke('tn_m2', 'tfm_t_user');
RESET ROLE;
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_classify('tn_m2', 'good film')$$);
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_classify('tn_users_copy', 'good film') IN ('neg', 'pos')$$) AS copy_kept;
SELECT name, owner FROM tfm.model_list WHERE name = 'tn_users_copy';

-- DROP ROLE: tfm's equivalents of REASSIGN OWNED and DROP OWNED, and the
-- objects a dropped role leaves behind
SELECT tfm_grant('tn_mine', 'tfm_t_user');
SELECT pg_temp.as_role('tfm_t_owner', $$SELECT tfm_grant('tn_m2', 'tfm_t_stranger')$$);
SELECT pg_temp.as_role('tfm_t_user', $$SELECT tfm_reassign_owned('tfm_t_stranger', 'tfm_t_user')$$);
SELECT pg_temp.as_role('tfm_t_stranger', $$SELECT tfm_drop_owned('tfm_t_owner')$$);
SELECT tfm_reassign_owned('tfm_t_user', 'tfm_t_trainer');
SELECT name, owner FROM tfm.model_list WHERE name LIKE 'tn\_%' ORDER BY name;
DROP ROLE tfm_t_stranger;
SELECT kind, name, what FROM tfm.orphaned ORDER BY kind, name, what;
SELECT pg_temp.as_role('tfm_t_trainer', $$SELECT tfm_drop_owned('1')$$);
SELECT tfm_reassign_owned((SELECT DISTINCT role FROM tfm.orphaned WHERE what = 'owner')::text, 'tfm_t_owner');
SELECT kind, name, what FROM tfm.orphaned ORDER BY kind, name, what;
SELECT tfm_drop_owned((SELECT DISTINCT role FROM tfm.orphaned)::text);
SELECT count(*) AS orphans_left FROM tfm.orphaned;
SELECT tfm_drop_owned('tfm_t_owner'), tfm_drop_owned('tfm_t_trainer');
SELECT name, owner FROM tfm.model_list WHERE name LIKE 'tn\_%' ORDER BY name;
SELECT pg_temp.err($$SELECT tfm_drop_owned('no_such_role')$$);
-- a name longer than a role's is refused before any lookup, quoted short
SELECT pg_temp.err($$SELECT tfm_drop_owned(repeat('r', 1000000))$$);
SELECT pg_temp.err($$SELECT tfm_reassign_owned('tfm_t_owner', repeat('r', 64))$$);
SELECT pg_temp.err($$SELECT tfm_reassign_owned('tfm_t_user', NULL)$$);

-- clean up
SELECT tfm_drop_model(repeat('n', 127));
SELECT tfm_tokenizer_drop('tn_tok');
DROP TABLE tn_data;
DROP FUNCTION tn_counted(integer, text);
DROP SEQUENCE tn_calls, tn_row45;
DROP ROLE tfm_t_owner, tfm_t_trainer, tfm_t_user;
