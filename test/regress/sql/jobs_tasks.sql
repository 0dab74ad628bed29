-- jobs of the span and extraction tasks: an entities job keeps a token
-- classifier's entities of each row (jsonb, as tfm_entities gives them,
-- with the job's aggregation) and an extract job a language model's fields
-- of each row (jsonb following the job's schema, as tfm_extract), both
-- followed through inserts, updates and deletes; the checks of their
-- models and options
SET extra_float_digits = 3;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
\set tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set cn `cat test/fixtures/hf_tasks/config_ner.json`
\set wn `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
\set cg `cat test/fixtures/hf_gpt2/config.json`
\set tg `cat test/fixtures/hf_gpt2/tokenizer.json`
\set wg `base64 -w0 test/fixtures/hf_gpt2/model.safetensors`
SELECT model FROM tfm_import('jt_ner', :'cn', decode(:'wn', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('jt_gpt', :'cg', decode(:'wg', 'base64'), :'tg');

CREATE TABLE jt_docs (id int PRIMARY KEY, body text);
INSERT INTO jt_docs VALUES (1, 'Hello world, Jumping Bob runs in Big Paris!'), (2, 'the quick brown fox'),
  (3, NULL), (4, ''), (5, 'hello world again, said the lazy dog');

-- entities: the same rows as tfm_entities, in its order; NULL for a NULL text
SELECT tfm_job_create('jt_ents', 'jt_docs', 'body', 'jt_ner', 'entities', options => '{"aggregation": "first"}');
CALL tfm_job_run('jt_ents');
CREATE FUNCTION pg_temp.ents(t text, agg text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE WHEN t IS NOT NULL THEN coalesce(jsonb_agg(jsonb_build_object('entity', e.entity, 'label', e.label,
         'score', e.score, 'start', e.start_char, 'end', e.end_char) ORDER BY e.n), '[]') END
    FROM tfm_entities('jt_ner', t, agg) WITH ORDINALITY AS e(entity, label, score, start_char, end_char, n) $$;
SELECT d.id, jsonb_array_length(o.output) AS entities, o.output IS NOT DISTINCT FROM pg_temp.ents(d.body, 'first') AS same
  FROM jt_docs d JOIN jt_ents o USING (id) ORDER BY d.id;
SELECT e->>'entity' AS entity, e->>'label' AS label, e->'start' AS start, e->'end' AS "end"
  FROM jt_ents, jsonb_array_elements(output) e WHERE id = 1;
-- the default aggregation is simple; a change is followed
SELECT tfm_job_create('jt_ents_simple', 'jt_docs', 'body', 'jt_ner', 'entities');
UPDATE jt_docs SET body = 'Big Paris and Bob' WHERE id = 2;
DELETE FROM jt_docs WHERE id = 5;
CALL tfm_job_run('jt_ents');
CALL tfm_job_run('jt_ents_simple');
SELECT count(*) AS outputs, bool_and(o.output IS NOT DISTINCT FROM pg_temp.ents(d.body, 'first')) AS same
  FROM jt_docs d JOIN jt_ents o USING (id);
SELECT count(*) AS outputs, bool_and(o.output IS NOT DISTINCT FROM pg_temp.ents(d.body, 'simple')) AS same
  FROM jt_docs d JOIN jt_ents_simple o USING (id);

-- extract: each row's fields, as tfm_extract's (greedy: the same value), valid for the schema
SELECT tfm_job_create('jt_fields', 'jt_docs', 'body', 'jt_gpt', 'extract',
                      options => '{"schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "mood": {"enum": ["calm", "storm"]}}, "required": ["name", "mood"]}, "max_tokens": 80}');
CALL tfm_job_run('jt_fields');
SELECT d.id, jsonb_typeof(o.output) AS type, o.output ->> 'mood' IN ('calm', 'storm') AS mood_ok,
       length(o.output ->> 'name') <= 8 AS name_ok,
       o.output IS NOT DISTINCT FROM tfm_extract('jt_gpt', d.body, (SELECT options -> 'schema' FROM tfm.job_defs WHERE name = 'jt_fields'), 80) AS same
  FROM jt_docs d JOIN jt_fields o USING (id) ORDER BY d.id;
SELECT count(*) AS failed FROM tfm.job_errors e JOIN tfm.job_defs j ON j.id = e.job_id WHERE j.name = 'jt_fields';

-- the checks: the model's kind, the aggregation, the schema (required, valid), unknown options
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_gpt', 'entities')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_ner', 'extract', options => '{"schema": {"type": "string"}}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_ner', 'entities', options => '{"aggregation": "average"}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_gpt', 'extract')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_gpt', 'extract', options => '{"max_tokens": 5}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_gpt', 'extract', options => '{"schema": {"type": "tuple"}}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_ner', 'entities', options => '{"stride": 3}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('jt_bad', 'jt_docs', 'body', 'jt_gpt', 'extract', options => '{"schema": {"type": "string"}, "chunk_tokens": 8}')$$);
SELECT count(*) AS bad_jobs FROM tfm.job_defs WHERE name = 'jt_bad';

SELECT tfm_job_drop(name, drop_destination => true) FROM unnest(ARRAY['jt_ents', 'jt_ents_simple', 'jt_fields']) name;
DROP TABLE jt_docs;
SELECT tfm_drop_model(name) FROM unnest(ARRAY['jt_ner', 'jt_gpt']) AS name;
SELECT tfm_tokenizer_drop(name) FROM unnest(ARRAY['jt_ner', 'jt_gpt']) AS name;
