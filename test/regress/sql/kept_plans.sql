-- kept_plans: tfm's catalog SQL is prepared once per backend and kept
-- (src/pg/storage/kept_plans.c); the kept plans must follow what changes
-- under them in the same session: the extension dropped and created again
-- (new tables, new OIDs), a column added, the model replaced, another role
-- with other rights.  In a database of its own (it drops the extension).
SET client_min_messages = warning;
SELECT current_database() AS regress_db \gset
CREATE DATABASE tfm_kept_plans_regress;
\c tfm_kept_plans_regress
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.threads = 1;
SET tfm.progress = off;
SET tfm.share_weights = off;  -- a dropped extension's weight files stay until a restart
CREATE TABLE d (t text, l text);
INSERT INTO d SELECT CASE WHEN i % 2 = 0 THEN 'good fine ' ELSE 'bad poor ' END || i,
                     CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END
FROM generate_series(1, 400) i;
CREATE FUNCTION make_model(seed int) RETURNS text LANGUAGE sql AS $$
  SELECT tfm_tokenizer_train('w', t, 'word', 100) FROM d WHERE NOT EXISTS (SELECT FROM tfm.tokenizers WHERE name = 'w');
  SELECT tfm_create_model('m', 'classify', 'w', labels => ARRAY['neg', 'pos'], d_model => 16, heads => 2,
                          layers => 1, max_len => 8, seed => seed);
  SELECT count(*) FROM tfm_train('m', 'SELECT t, l FROM d', epochs => 3, seed => seed);
  SELECT 'made'
$$;
SELECT make_model(1);
SELECT tfm_classify('m', 'good fine 7') AS a, tfm_classify('m', 'bad poor 8') AS b;
SELECT version AS v1 FROM tfm.models WHERE name = 'm' \gset
-- the same statements again: the kept plans, the same answers
SELECT tfm_classify('m', 'good fine 7') AS a, tfm_classify('m', 'bad poor 8') AS b;
-- a column added to the table the model's row is read from: replanned
ALTER TABLE tfm.models ADD COLUMN kept_plans_probe int;
SELECT tfm_classify('m', 'good fine 7') AS a;
ALTER TABLE tfm.models DROP COLUMN kept_plans_probe;
-- the model replaced: its new row, not the old one
SELECT tfm_drop_model('m');
SELECT tfm_classify('m', 'good fine 7');
SELECT make_model(2);
SELECT version > :v1 AS newer FROM tfm.models WHERE name = 'm';
SELECT tfm_classify('m', 'good fine 7') AS a, tfm_classify('m', 'bad poor 8') AS b;
-- another role: its own rights, not the first caller's
CREATE ROLE tfm_kp_role;
GRANT USAGE ON SCHEMA public TO tfm_kp_role;
SET ROLE tfm_kp_role;
SELECT tfm_classify('m', 'good fine 7');
RESET ROLE;
SELECT tfm_grant('m', 'tfm_kp_role', 'use');
SET ROLE tfm_kp_role;
SELECT tfm_classify('m', 'good fine 7') AS a;
RESET ROLE;
-- the extension dropped and created again in this session: every table new
DROP EXTENSION tfm CASCADE;
CREATE EXTENSION tfm;
SELECT tfm_classify('m', 'good fine 7');
SELECT make_model(1);
SELECT tfm_classify('m', 'good fine 7') AS a, tfm_classify('m', 'bad poor 8') AS b;
\c :regress_db
SET client_min_messages = warning;
DROP DATABASE tfm_kept_plans_regress;
DROP ROLE tfm_kp_role;
