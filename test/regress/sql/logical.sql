-- logical: what one database shows of tfm's logical replication
-- (doc/operations.md, "Logical replication"; test/cluster/test_logical.sh runs a
-- real publisher and subscriber): the node and its ids, moving to another
-- node, a replicated model refused every change (its rows faked as another
-- node's), the publication's tables.  In a database of its own, so that
-- node changes touch no other test's models.
SET client_min_messages = warning;
SELECT current_database() AS regress_db \gset
CREATE DATABASE tfm_logical_regress;
\c tfm_logical_regress
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.threads = 1;
SET tfm.progress = off;
SET tfm.share_weights = off;
CREATE ROLE tfm_lg_role;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
CREATE TABLE lg_data AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'good film ' || i ELSE 'bad plot ' || i END AS t,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END AS label
FROM generate_series(1, 40) i;

-- before anything is created the node is not chosen: tfm_node() is the default
SELECT (SELECT count(*) FROM tfm.node) AS stored, tfm_node() = tfm.default_node() AS is_default,
       tfm_node() BETWEEN 1 AND 2047 AS in_range;
SELECT tfm_set_node(7) AS moved;
SELECT tfm_node(), node AS stored FROM tfm.node;

-- ids of node 7: 7 * 2^20 + a count
SELECT tfm_tokenizer_train('lg_chars', t, 'char') FROM lg_data;
SELECT model, parameters FROM tfm_create_model('lg_clf', 'classify', 'lg_chars', labels => ARRAY['neg', 'pos'],
                                               d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT count(*) FROM tfm_train('lg_clf', 'SELECT t, label FROM lg_data', batch_size => 8);
SELECT tfm_deploy('lg_clf', 'lg_alias');
SELECT 'model' AS kind, name, id, origin, id & 1048575 AS count FROM tfm.models
UNION ALL SELECT 'tokenizer', name, id, origin, id & 1048575 FROM tfm.tokenizers
UNION ALL SELECT 'alias', name, id, origin, id & 1048575 FROM tfm.aliases ORDER BY 1;
SELECT id, model_id FROM tfm.alias_history;
CREATE TEMP TABLE lg_before AS SELECT i, tfm_classify('lg_clf', t) AS c FROM lg_data;

-- another node: every id moves, and every row that refers to one
SELECT tfm_set_node(9) AS moved;
SELECT 'model' AS kind, name, id, origin FROM tfm.models
UNION ALL SELECT 'tokenizer', name, id, origin FROM tfm.tokenizers
UNION ALL SELECT 'alias', name, id, origin FROM tfm.aliases ORDER BY 1;
SELECT (SELECT array_agg(DISTINCT model_id) FROM tfm.tensors) AS tensors,
       (SELECT array_agg(DISTINCT model_id) FROM tfm.history) AS history,
       (SELECT array_agg(DISTINCT tokenizer_id) FROM tfm.vocab) AS vocab,
       (SELECT array_agg(ARRAY[id, model_id]) FROM tfm.alias_history) AS alias_history,
       (SELECT array_agg(ARRAY[model_id, history_id::int]) FROM tfm.aliases) AS aliases;
SELECT count(*) AS same_outputs FROM lg_before b JOIN lg_data d USING (i) WHERE tfm_classify('lg_clf', d.t) = b.c;
SELECT count(*) FROM tfm_train('lg_clf', 'SELECT t, label FROM lg_data', batch_size => 8);
SELECT tfm_set_node(9) AS moved_none;
-- a change of node rolls back with its transaction: ids and node together
BEGIN;
SELECT tfm_set_node(8) AS moved;
ROLLBACK;
SELECT tfm_node(), (SELECT origin FROM tfm.models WHERE name = 'lg_clf');
DROP TABLE lg_before;
CREATE TEMP TABLE lg_before AS SELECT i, tfm_classify('lg_clf', t) AS c FROM lg_data;

-- the node's arguments and rights
SELECT pg_temp.err('SELECT tfm_set_node(0)');
SELECT pg_temp.err('SELECT tfm_set_node(2048)');
SELECT pg_temp.err('SELECT tfm_set_node(NULL)');
SET ROLE tfm_lg_role;
SELECT pg_temp.err('SELECT tfm_set_node(3)');
RESET ROLE;

-- a replicated model, faked: its rows as node 12's while this database stays node 9
SELECT tfm.move_node(9, 12) AS moved;
SELECT name, origin, origin = tfm_node() AS local FROM tfm.models;
-- inference runs as on its publisher; every change is refused, naming the origin
SELECT count(*) AS same_outputs FROM lg_before b JOIN lg_data d USING (i) WHERE tfm_classify('lg_alias', d.t) = b.c;
SELECT pg_temp.err($$SELECT count(*) FROM tfm_train('lg_clf', 'SELECT t, label FROM lg_data')$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('lg_clf', t, label) FROM lg_data$$);
SELECT pg_temp.err($$SELECT tfm_drop_model('lg_clf')$$);
SELECT pg_temp.err($$SELECT tfm_rename_model('lg_clf', 'lg_mine')$$);
SELECT pg_temp.err($$SELECT tfm_grant('lg_clf', 'tfm_lg_role')$$);
SELECT pg_temp.err($$SELECT tfm_set_precision('lg_clf', 'bf16')$$);
SELECT pg_temp.err($$SELECT tfm_deploy('lg_clf', 'lg_alias')$$);
SELECT pg_temp.err($$SELECT tfm_undeploy('lg_alias')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('lg_chars')$$);
-- tfm_drop_owned leaves replicated objects alone
SELECT tfm_drop_owned('postgres') AS dropped;
-- a local copy is this node's, and trains
SELECT tfm_copy_model('lg_clf', 'lg_copy') > 0 AS copied;
SELECT name, origin FROM tfm.models ORDER BY name;
SELECT count(*) FROM tfm_train('lg_copy', 'SELECT t, label FROM lg_data', batch_size => 8);
SELECT tfm_deploy('lg_copy', 'lg_local_alias');
-- a node that replicated rows come from is not free
SELECT pg_temp.err('SELECT tfm_set_node(12)');

-- a row replicated with this database's own node (a publisher of the same
-- node) is refused; the apply and initial-copy workers run as replica, as here
SET session_replication_role = replica;
SELECT pg_temp.err($$INSERT INTO tfm.vocab VALUES (9 << 20 | 77, 0, 'x')$$);
SELECT pg_temp.err($$INSERT INTO tfm.vocab VALUES (13 << 20 | 77, 0, 'x')$$);
-- and a publisher's own node (FOR ALL TABLES publishes tfm.node) is skipped
UPDATE tfm.node SET node = 13;
RESET session_replication_role;
SELECT tfm_node();
DELETE FROM tfm.vocab WHERE tokenizer_id = 13 << 20 | 77;
SELECT tgrelid::regclass, tgenabled FROM pg_trigger WHERE tgname = 'refuse_own_node' ORDER BY tgrelid::regclass::text;

-- the publication: its tables, parents first; every catalog table has a primary key
SELECT * FROM tfm_publication_tables();
SELECT c.relname AS without_primary_key FROM pg_class c
 WHERE c.relnamespace = 'tfm'::regnamespace AND c.relkind = 'r'
   AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary);
SET client_min_messages = error;  -- CREATE PUBLICATION warns when wal_level is not logical
SELECT tfm_create_publication('lg_pub');
SET client_min_messages = warning;
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'lg_pub' ORDER BY tablename;
SELECT pg_temp.err($$SELECT tfm_create_publication(NULL)$$);
SELECT pg_temp.err($$SELECT tfm_create_publication('')$$);
SELECT pg_temp.err($$SELECT tfm_create_publication(repeat('p', 64))$$);
SELECT pg_temp.err($$SELECT tfm_create_publication('lg_pub')$$);

-- a node's ids run out with an error, not into the next node's range
SELECT setval('tfm.models_id_seq', 1048575);
SELECT pg_temp.err($$SELECT tfm_create_model('lg_last', 'classify', 'lg_chars', labels => ARRAY['a', 'b'], d_model => 16, heads => 2, layers => 1, max_len => 16)$$);

\c :regress_db
SET client_min_messages = warning;
DROP DATABASE tfm_logical_regress;
DROP ROLE tfm_lg_role;
