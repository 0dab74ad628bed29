-- pgvector beside tfm (run only where the server has pgvector: the Makefile
-- adds this test when vector.control is installed, scripts/test.sh builds
-- pgvector so that CI always runs it): tfm_vector's tfm_embed_vector, a job
-- writing a vector(16) destination, an HNSW index on its 10,000 outputs
-- answering ORDER BY output <=> tfm_embed_vector(model, query) LIMIT k as
-- the exact search does, and the checks of a vector destination.  Roles are
-- cluster-wide: tfm_v_ names, dropped at the end.
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
-- tfm_vector needs pgvector; tfm alone does not (every other test runs without it)
SELECT pg_temp.err('CREATE EXTENSION tfm_vector');
CREATE EXTENSION vector;
CREATE EXTENSION tfm_vector;
SELECT e.extname, array_agg(r.extname ORDER BY r.extname) AS requires
  FROM pg_extension e JOIN pg_depend d ON d.classid = 'pg_extension'::regclass AND d.objid = e.oid
  JOIN pg_extension r ON d.refclassid = 'pg_extension'::regclass AND r.oid = d.refobjid
 WHERE e.extname = 'tfm_vector' GROUP BY e.extname;

-- a small BERT as Hugging Face saves it (16 dimensions, WordPiece
-- tokenizer): test/fixtures/hf_bert, test/reference/hf_bert_reference.py
\set cfg `cat test/fixtures/hf_bert/config.json`
\set w `base64 -w0 test/fixtures/hf_bert/model.safetensors`
\set tok `cat test/fixtures/hf_bert/tokenizer.json`
SELECT model, model_task FROM tfm_import('vec_bert', :'cfg', decode(:'w', 'base64'), :'tok');

-- tfm_embed_vector is tfm_embed as a vector: the same values, NULL for NULL
SELECT vector_dims(tfm_embed_vector('vec_bert', 'the quick brown fox')) AS dims,
       tfm_embed_vector('vec_bert', 'the quick brown fox')::real[] = tfm_embed('vec_bert', 'the quick brown fox') AS same_text,
       tfm_embed_vector('vec_bert', ARRAY[2, 80, 81, 3])::real[] = tfm_embed('vec_bert', ARRAY[2, 80, 81, 3]) AS same_ids,
       tfm_embed_vector('vec_bert', NULL::text) IS NULL AS null_text,
       tfm_embed_vector(NULL, 'the fox') IS NULL AS null_model,
       tfm_embed_vector('vec_bert', NULL::int[]) IS NULL AS null_ids;
SELECT count(*) AS rows, count(v.embedding) AS embedded,
       bool_and(v.embedding::real[] = e.embedding) AS same_as_tfm_embed,
       bool_and((v.embedding IS NULL) = (e.embedding IS NULL)) AS null_for_null
  FROM tfm_embed_vector('vec_bert', ARRAY['the dog', NULL, 'hello world']) v
  JOIN tfm_embed('vec_bert', ARRAY['the dog', NULL, 'hello world']) e USING (ord);
SELECT count(*) AS none FROM tfm_embed_vector('vec_bert', NULL::text[]);
SELECT pg_temp.err($$SELECT tfm_embed_vector('no_such_model', 'the dog')$$);
-- the search_path a caller sets does not redirect the bodies (bound when
-- the extension was created)
CREATE SCHEMA tfm_v_trap;
CREATE FUNCTION tfm_v_trap.tfm_embed(model text, input text) RETURNS real[] LANGUAGE sql
  AS $$ SELECT '{1,2,3}'::real[] $$;
SET search_path = tfm_v_trap, public;
SELECT vector_dims(tfm_embed_vector('vec_bert', 'the dog')) AS dims_with_a_decoy_first;
RESET search_path;
DROP SCHEMA tfm_v_trap CASCADE;

-- 10,000 distinct texts of the tokenizer's words (i's digits in base 15)
CREATE TABLE vdocs (id int PRIMARY KEY, body text);
INSERT INTO vdocs
SELECT i, array_to_string(ARRAY(SELECT (ARRAY['the', 'quick', 'brown', 'fox', 'jump', 'over', 'lazy', 'dog',
                                              'hello', 'world', 'again', 'run', 'is', 'big', 'play'])[(i / 15 ^ k)::int % 15 + 1]
                                 FROM generate_series(0, 3) k), ' ')
  FROM generate_series(1, 10000) i;
SELECT count(DISTINCT body) AS distinct_texts FROM vdocs;

-- a job writing a vector(16) destination: pgvector's assignment cast
-- converts each output; the size must be the model's
CREATE TABLE vdocs_emb (id int PRIMARY KEY, output vector(16), model_version bigint,
                        updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE vdocs_emb8 (id int PRIMARY KEY, output vector(8), model_version bigint,
                         updated_at timestamptz NOT NULL DEFAULT now());
CREATE DOMAIN vec8 AS vector(8);
CREATE TABLE vdocs_dom8 (id int PRIMARY KEY, output vec8, model_version bigint,
                         updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE vdocs_half8 (id int PRIMARY KEY, output halfvec(8), model_version bigint,
                          updated_at timestamptz NOT NULL DEFAULT now());
SELECT pg_temp.err($$SELECT tfm_job_create('vdocs_emb8', 'vdocs', 'body', 'vec_bert', 'embed', destination => 'vdocs_emb8')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('vdocs_dom8', 'vdocs', 'body', 'vec_bert', 'embed', destination => 'vdocs_dom8')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('vdocs_half8', 'vdocs', 'body', 'vec_bert', 'embed',
                                           destination => 'vdocs_half8', options => '{"chunk_tokens": 8}')$$);
-- a vector column and a task whose outputs are not embeddings
SELECT pg_temp.err($$SELECT tfm_job_create('vdocs_cls', 'vdocs', 'body', 'vec_bert', 'generate', destination => 'vdocs_emb')$$);
SELECT count(*) AS no_job_left FROM tfm.jobs;
DROP TABLE vdocs_emb8, vdocs_dom8, vdocs_half8;
DROP DOMAIN vec8;

SET client_min_messages = warning;
SELECT tfm_job_create('vdocs_emb', 'vdocs', 'body', 'vec_bert', 'embed', destination => 'vdocs_emb',
                      options => '{"batch": 500}');
RESET client_min_messages;
CALL tfm_job_run('vdocs_emb');
SELECT rows_done, rows_pending, rows_failed FROM tfm.jobs WHERE name = 'vdocs_emb';
-- every output the text's own embedding (as tfm_embed_vector's batch gives it: within 1e-5), no two alike
SELECT count(*) AS outputs, count(DISTINCT e.output::text) AS distinct_outputs,
       max((SELECT max(abs(x - y)) FROM unnest(e.output::real[], v.embedding::real[]) u(x, y))) < 1e-5 AS own_embedding
  FROM vdocs_emb e
  JOIN tfm_embed_vector('vec_bert', (SELECT array_agg(body ORDER BY id) FROM vdocs)) v ON v.ord = e.id;
-- kept current as the source changes, through the same cast
UPDATE vdocs SET body = 'hello again' WHERE id = 1;
CALL tfm_job_run('vdocs_emb');
SELECT output = tfm_embed_vector('vec_bert', 'hello again') AS updated FROM vdocs_emb WHERE id = 1;

-- an HNSW index on the job's outputs answers the nearest-neighbour query
CREATE INDEX vdocs_emb_hnsw ON vdocs_emb USING hnsw (output vector_cosine_ops);
ANALYZE vdocs_emb;
SET hnsw.ef_search = 100;
EXPLAIN (COSTS OFF)
SELECT id FROM vdocs_emb ORDER BY output <=> tfm_embed_vector('vec_bert', 'the lazy dog') LIMIT 10;
-- tfm_embed itself (real[]) is the trap tfm_vector avoids: pgvector's
-- implicit cast vector -> real[] picks tfm's real[] <=>, which reads every row
EXPLAIN (COSTS OFF)
SELECT id FROM vdocs_emb ORDER BY output <=> tfm_embed('vec_bert', 'the lazy dog') LIMIT 10;
-- the top 10 of 30 queries (texts of the table and new ones) through the
-- index, then exactly (no index scan), then compared
CREATE TEMP TABLE queries AS
SELECT q, tfm_embed_vector('vec_bert', q) AS qv
  FROM (SELECT body FROM vdocs WHERE id % 500 = 7
        UNION ALL VALUES ('the lazy dog'), ('hello world'), ('a quick brown fox is big'),
                         ('play again'), ('run run run'), ('dog over fox'), ('world is big'),
                         ('jump'), ('the the the the'), ('big play over the lazy world')) s(q);
PREPARE knn(text) AS
SELECT id FROM vdocs_emb ORDER BY output <=> tfm_embed_vector('vec_bert', $1) LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE knn('the lazy dog');
CREATE TEMP TABLE by_index AS
SELECT q, ARRAY(SELECT id FROM vdocs_emb ORDER BY output <=> qv LIMIT 10) AS ids FROM queries;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF)
SELECT q, ARRAY(SELECT id FROM vdocs_emb ORDER BY output <=> qv LIMIT 10) AS ids FROM queries;
CREATE TEMP TABLE exact AS
SELECT q, ARRAY(SELECT id FROM vdocs_emb ORDER BY output <=> qv LIMIT 10) AS ids FROM queries;
RESET enable_indexscan;
EXPLAIN (COSTS OFF)
SELECT q, ARRAY(SELECT id FROM vdocs_emb ORDER BY output <=> qv LIMIT 10) AS ids FROM queries;
SELECT count(*) AS queries, count(*) FILTER (WHERE i.ids = x.ids) AS same_top_10,
       bool_and(cardinality(i.ids) = 10) AS ten_each
  FROM by_index i JOIN exact x USING (q);
-- and the exact top 10 is tfm's own cosine distance's
SELECT count(*) FILTER (WHERE x.ids = ARRAY(SELECT id FROM vdocs_emb
                                             ORDER BY tfm_cosine_distance(output::real[], q.qv::real[]) LIMIT 10))
       AS same_as_tfm_cosine
  FROM exact x JOIN queries q USING (q);
-- a halfvec(16) column and its own index: the same query (pgvector casts
-- vector to halfvec implicitly)
CREATE TABLE vdocs_half AS SELECT id, output::halfvec(16) AS output FROM vdocs_emb;
CREATE INDEX vdocs_half_hnsw ON vdocs_half USING hnsw (output halfvec_cosine_ops);
ANALYZE vdocs_half;
EXPLAIN (COSTS OFF)
SELECT id FROM vdocs_half ORDER BY output <=> tfm_embed_vector('vec_bert', 'the lazy dog') LIMIT 10;
-- the prepared query, through the index: the exact top 10 of its text
SELECT ids FROM exact WHERE q = 'the lazy dog';
EXECUTE knn('the lazy dog');
DEALLOCATE knn;

-- another role's vector table: a job writes it only with its owner's
-- INSERT, UPDATE, DELETE and SELECT there, and then through the same cast
CREATE ROLE tfm_v_owner;
CREATE ROLE tfm_v_other;
GRANT SELECT, TRIGGER ON vdocs TO tfm_v_other;
SELECT tfm_grant('vec_bert', 'tfm_v_other');
CREATE TABLE tfm_v_dest (id int PRIMARY KEY, output vector(16), model_version bigint,
                         updated_at timestamptz NOT NULL DEFAULT now());
ALTER TABLE tfm_v_dest OWNER TO tfm_v_owner;
SET ROLE tfm_v_other;
SELECT pg_temp.err($$SELECT tfm_job_create('vdocs_other', 'vdocs', 'body', 'vec_bert', 'embed', destination => 'tfm_v_dest')$$);
RESET ROLE;
GRANT SELECT, INSERT, UPDATE, DELETE ON tfm_v_dest TO tfm_v_other;
SET ROLE tfm_v_other;
SET client_min_messages = warning;
SELECT tfm_job_create('vdocs_other', 'vdocs', 'body', 'vec_bert', 'embed', destination => 'tfm_v_dest',
                      options => '{"batch": 1000}');
RESET client_min_messages;
CALL tfm_job_run('vdocs_other');
RESET ROLE;
SELECT count(*) AS outputs, count(*) FILTER (WHERE d.output = e.output) AS same_as_the_first_job
  FROM tfm_v_dest d JOIN vdocs_emb e USING (id);

SET client_min_messages = warning;
SELECT tfm_job_drop('vdocs_other');
SELECT tfm_job_drop('vdocs_emb');
RESET client_min_messages;
DROP TABLE tfm_v_dest, vdocs_emb, vdocs_half, vdocs, queries, by_index, exact;
SELECT tfm_drop_model('vec_bert');
SELECT tfm_tokenizer_drop('vec_bert');
DROP ROLE tfm_v_owner;
DROP ROLE tfm_v_other;
DROP EXTENSION tfm_vector;
DROP EXTENSION vector;
