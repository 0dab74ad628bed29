-- privileges: owners, use and train grants, PUBLIC, and a stranger who must
-- not reach a model's weights by any route.  Roles are cluster-wide, so
-- their names start with tfm_r_ and they are dropped at the end.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE ROLE tfm_r_owner;
CREATE ROLE tfm_r_user;
CREATE ROLE tfm_r_trainer;
CREATE ROLE tfm_r_stranger;
CREATE ROLE tfm_r_team;			-- a group: its members act as the owner
CREATE ROLE tfm_r_member IN ROLE tfm_r_team;
GRANT tfm_r_owner TO tfm_r_team;
-- errors as "SQLSTATE message"; as_role runs a statement as a role
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
-- training rows everyone may read, and rows only the owner may read
CREATE TABLE priv_data (t text, l text);
INSERT INTO priv_data VALUES ('good film', 'pos'), ('great fun', 'pos'), ('bad plot', 'neg'),
  ('dull film', 'neg'), ('good fun', 'pos'), ('bad acting', 'neg');
GRANT SELECT ON priv_data TO PUBLIC;
CREATE TABLE priv_secret (t text, l text);
INSERT INTO priv_secret SELECT * FROM priv_data;
ALTER TABLE priv_secret OWNER TO tfm_r_owner;

-- the owner builds a tokenizer and a model: no superuser needed
SET ROLE tfm_r_owner;
SELECT tfm_tokenizer_train('ptok', t, 'bpe', 280) FROM priv_data;
SELECT * FROM tfm_create_model('pm', 'classify', 'ptok', labels => ARRAY['neg', 'pos'],
                               d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT epoch FROM tfm_train('pm', 'SELECT t, l FROM priv_secret', epochs => 1, batch_size => 4,
                            val_fraction => 0);
RESET ROLE;
SELECT name, owner, use_granted, train_granted FROM tfm.model_list WHERE name = 'pm';
SELECT name, owner, use_granted FROM tfm.tokenizer_list WHERE name = 'ptok';
SELECT tfm_grant('pm', 'tfm_r_user', 'use');
SELECT tfm_grant('pm', 'tfm_r_trainer', 'train');
-- a trainer may train, but reads rows with its own rights
SELECT pg_temp.as_role('tfm_r_trainer', $$SELECT count(*) FROM tfm_train('pm', 'SELECT t, l FROM priv_secret')$$);
SELECT name, owner, use_granted, train_granted FROM tfm.model_list WHERE name = 'pm';

-- the database's owner deploys pm as 'default' (tfm_classify(text)); the
-- matrix's owner makes its own alias pm_live, which the member may replace
-- (it acts as the owner) and no one else may
SELECT tfm_deploy('pm');
-- every function × every role: 'ok' or the SQLSTATE; the stranger's
-- message in full
SELECT q AS statement,
       split_part(pg_temp.as_role('tfm_r_owner', q), ' ', 1) AS owner,
       split_part(pg_temp.as_role('tfm_r_member', q), ' ', 1) AS member,
       split_part(pg_temp.as_role('tfm_r_trainer', q), ' ', 1) AS trainer,
       split_part(pg_temp.as_role('tfm_r_user', q), ' ', 1) AS "user",
       pg_temp.as_role('tfm_r_stranger', q) AS stranger
FROM (VALUES
  ($$SELECT tfm_classify('pm', 'good film')$$),
  ($$SELECT tfm_classify('pm', ARRAY['good', 'bad'])$$),
  ($$SELECT tfm_classify('pm', ARRAY[1, 2, 3])$$),
  ($$SELECT count(*) FROM tfm_predict_proba('pm', 'good')$$),
  ($$SELECT tfm_embed('pm', 'good')$$),
  ($$SELECT count(*) FROM tfm_attention('pm', 'good')$$),
  ($$SELECT * FROM tfm_evaluate('pm', 'SELECT t, l FROM priv_data')$$),
  ($$SELECT tfm_tensor('pm', 'enc.0.ln1.g')$$),
  ($$SELECT tfm_tokenize('ptok', 'good')$$),
  ($$SELECT tfm_detokenize('ptok', ARRAY[5, 6])$$),
  ($$SELECT count(*) FROM tfm_tokens('ptok', 'good')$$),
  ($$SELECT tfm_copy_model('pm', 'copy_' || current_user)$$),
  ($$SELECT tfm_create_model('new_' || current_user, 'classify', 'ptok', labels => ARRAY['a', 'b'], d_model => 16, heads => 2, layers => 1)$$),
  ($$SELECT count(*) FROM tfm_train('pm', 'SELECT t, l FROM priv_data', batch_size => 4, val_fraction => 0)$$),
  ($$SELECT count(*) FROM tfm_train('pm', 'SELECT t, l FROM priv_secret', batch_size => 4, val_fraction => 0)$$),
  ($$SELECT (tfm_train_agg('pm', t, l, '{"batch_size": 4}')).steps FROM priv_data$$),
  ($$SELECT tfm_deploy('pm', 'pm_live')$$),
  ($$SELECT tfm_classify('pm_live', 'good')$$),
  ($$SELECT tfm_deploy('pm')$$),
  ($$SELECT tfm_classify('good')$$),
  ($$SELECT tfm_grant('pm', 'tfm_r_stranger'), tfm_revoke('pm', 'tfm_r_stranger')$$),
  ($$SELECT tfm_rename_model('pm', 'pm_renamed'), tfm_rename_model('pm_renamed', 'pm')$$),
  ($$SELECT tfm_drop_model('no_such_model')$$),
  ($$UPDATE tfm.models SET steps = 0 WHERE name = 'pm'$$),
  ($$DELETE FROM tfm.tensors$$),
  ($$INSERT INTO tfm.aliases (name, model_id, owner) SELECT 'mine', id, owner FROM tfm.models$$),
  ($$TRUNCATE tfm.history$$),
  ($$SELECT nextval('tfm.version_seq')$$)
) AS v(q);

-- what each role sees of the catalog: weights, history and vocabulary rows
-- only of what it may use; model rows (like pg_class) of every model
SELECT r AS role,
       pg_temp.as_role(r, $q$DO $x$ BEGIN IF (SELECT count(*) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'pm') = 0 THEN RAISE EXCEPTION 'none'; END IF; END $x$$q$) AS tensors,
       pg_temp.as_role(r, $q$DO $x$ BEGIN IF (SELECT count(*) FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'pm') = 0 THEN RAISE EXCEPTION 'none'; END IF; END $x$$q$) AS history,
       pg_temp.as_role(r, $q$DO $x$ BEGIN IF (SELECT count(*) FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id WHERE t.name = 'ptok') = 0 THEN RAISE EXCEPTION 'none'; END IF; END $x$$q$) AS vocab,
       pg_temp.as_role(r, $q$DO $x$ BEGIN IF (SELECT count(*) FROM tfm.merges v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id WHERE t.name = 'ptok') = 0 THEN RAISE EXCEPTION 'none'; END IF; END $x$$q$) AS merges,
       pg_temp.as_role(r, $q$DO $x$ BEGIN IF (SELECT count(*) FROM tfm.models WHERE name = 'pm') = 0 THEN RAISE EXCEPTION 'none'; END IF; END $x$$q$) AS model_row
FROM unnest(ARRAY['tfm_r_owner', 'tfm_r_trainer', 'tfm_r_user', 'tfm_r_stranger']) AS r;

-- models made by the roles above belong to them
SELECT name, owner FROM tfm.model_list WHERE name LIKE 'copy\_%' OR name LIKE 'new\_%' ORDER BY name;
SELECT pg_temp.as_role('tfm_r_user', $$SELECT tfm_drop_model('copy_tfm_r_trainer')$$);
SELECT pg_temp.as_role('tfm_r_trainer', $$SELECT tfm_drop_model('copy_tfm_r_trainer')$$);

-- PUBLIC: a grant reaches every role, and its revoke takes it back
SELECT tfm_grant('pm', 'public');
SELECT pg_temp.as_role('tfm_r_stranger', $$SELECT tfm_classify('pm', 'good film')$$) AS stranger_with_public;
SELECT tfm_revoke('pm', 'PUBLIC');
SELECT pg_temp.as_role('tfm_r_stranger', $$SELECT tfm_classify('pm', 'good film')$$) AS stranger_after_revoke;
-- revoking use takes train with it; revoking train leaves use
SELECT tfm_grant('pm', 'tfm_r_stranger', 'train');
SELECT tfm_revoke('pm', 'tfm_r_stranger', 'train');
SELECT tfm_grant('pm', 'tfm_r_stranger', 'use');
SELECT tfm_grant('pm', 'tfm_r_stranger', 'train');
SELECT tfm_revoke('pm', 'tfm_r_stranger', 'use');
SELECT pg_temp.as_role('tfm_r_stranger', $$SELECT tfm_classify('pm', 'good film')$$) AS after_revoking_use;
-- a tokenizer granted on its own
SELECT tfm_grant('ptok', 'tfm_r_stranger');
SELECT pg_temp.as_role('tfm_r_stranger', $$SELECT tfm_tokenize('ptok', 'good')$$) AS tokenizer_granted;
SELECT pg_temp.as_role('tfm_r_stranger', $$SELECT tfm_classify('pm', 'good film')$$) AS model_still_not;
SELECT tfm_revoke('ptok', 'tfm_r_stranger', 'use', 'tokenizer');

-- the caller's search_path cannot stand in for the operators tfm's SQL uses
CREATE SCHEMA priv_evil AUTHORIZATION tfm_r_user;
SET ROLE tfm_r_user;
CREATE FUNCTION priv_evil.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$;
CREATE OPERATOR priv_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = priv_evil.texteq);
SET search_path = priv_evil, pg_catalog, public;
SELECT tfm_classify('pm', 'good film') IS NOT NULL AS not_hijacked;
SELECT tfm_tensor('pm', 'enc.0.ln1.g') IS NOT NULL AS tensor_not_hijacked;
RESET search_path;
RESET ROLE;
DROP SCHEMA priv_evil CASCADE;

-- bad arguments
SELECT pg_temp.err($$SELECT tfm_grant('pm', 'tfm_r_nobody')$$);
SELECT pg_temp.err($$SELECT tfm_grant('pm', 'tfm_r_user', 'delete')$$);
SELECT pg_temp.err($$SELECT tfm_grant('no_such', 'tfm_r_user')$$);
SELECT pg_temp.err($$SELECT tfm_grant('pm', 'tfm_r_user', 'use', 'table')$$);
SELECT pg_temp.err($$SELECT tfm_grant('pm', 'tfm_r_user', 'use', 'tokenizer')$$);
SELECT pg_temp.err($$SELECT tfm_grant(NULL, 'tfm_r_user')$$);
SELECT pg_temp.err($$SELECT tfm_grant('pm', NULL)$$);
SELECT pg_temp.err($$SELECT tfm_grant('pm', 'tfm_r_user', NULL)$$);
SELECT pg_temp.err($$SELECT tfm_revoke('pm', 'tfm_r_stranger')$$);
SELECT pg_temp.err($$SELECT tfm_revoke('pm', 'tfm_r_user', 'train')$$);
SELECT pg_temp.err($$SELECT tfm_revoke('pm', 'public')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('pm', '')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('pm', 'pm')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('no_such', 'x')$$);
-- writes in a read-only transaction are refused up front
BEGIN READ ONLY;
SELECT pg_temp.err($$SELECT * FROM tfm_train('pm', 'SELECT t, l FROM priv_data')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('ro', 'lm', 'ptok')$$);
SELECT pg_temp.err($$SELECT tfm_drop_model('pm')$$);
ROLLBACK;
-- renaming keeps the deployment
SELECT tfm_rename_model('pm', 'pm_final');
SELECT model FROM tfm.deployed WHERE task = 'classify';

-- clean up: the owner drops what it made
SET ROLE tfm_r_owner;
SELECT tfm_drop_model('pm_final');
SELECT tfm_drop_model('copy_tfm_r_owner');
SELECT tfm_drop_model('new_tfm_r_owner');
RESET ROLE;
SELECT tfm_drop_model(name) FROM tfm.models WHERE name LIKE 'copy\_%' OR name LIKE 'new\_%';
SELECT pg_temp.as_role('tfm_r_user', $$SELECT tfm_tokenizer_drop('ptok')$$);
SET ROLE tfm_r_owner;
SELECT tfm_tokenizer_drop('ptok');
RESET ROLE;
DROP TABLE priv_data, priv_secret;
DROP ROLE tfm_r_member, tfm_r_team, tfm_r_owner, tfm_r_user, tfm_r_trainer, tfm_r_stranger;
