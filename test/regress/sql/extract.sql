-- structured extraction (issue 42): tfm_extract and the json_schema option
-- of tfm_generate / tfm_chat.  A small char-level language model is trained
-- to write {"age":..,"mood":..,"name":..} after "Text: ... JSON: "; then
-- over a 1,000-row table every tfm_extract result follows the schema, and
-- with the prompts the model was trained on the constrained greedy text
-- equals the unconstrained one on every row where the unconstrained one was
-- already a value of the schema's language (tfm_json_matches).  Outputs depend on the CPU's kernels, so the checks
-- are properties, not texts.  test/cluster/test_extract.sh checks the same
-- kind of results with an independent validator (python3-jsonschema).
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

CREATE TABLE people AS
SELECT i, (ARRAY['ann', 'bob', 'cy', 'dora', 'eve', 'finn', 'gus', 'hal', 'ida', 'jo'])[1 + i % 10] AS name,
       10 + (i * 7) % 70 AS age, (ARRAY['calm', 'storm'])[1 + (i / 3) % 2] AS mood
FROM generate_series(1, 400) i;
-- the training rows: the tail of tfm_extract's prompt and the compact value
CREATE TABLE train_rows AS
SELECT 'Text: ' || name || ' is ' || age || ', ' || mood || E'\nJSON: {"age":' || age || ',"mood":"' || mood
       || '","name":"' || name || '"}' AS t
  FROM people;
-- the tokenizer also has every printable ASCII character (arrays, other keys)
SELECT tfm_tokenizer_train('json_chars', t, 'char')
  FROM (SELECT t FROM train_rows
        UNION ALL SELECT string_agg(chr(c), '') FROM generate_series(32, 126) c, generate_series(1, 5) k GROUP BY k) r;
SELECT model FROM tfm_create_model('jx', 'lm', 'json_chars', d_model => 48, heads => 4, layers => 2, max_len => 96);
SELECT (array_agg(train_loss ORDER BY epoch))[10] < (array_agg(train_loss ORDER BY epoch))[1] AS learning
  FROM tfm_train('jx', 'SELECT t FROM train_rows', epochs => 10, lr => 3e-3, batch_size => 8);

CREATE TABLE schemas (name text PRIMARY KEY, s jsonb);
INSERT INTO schemas VALUES
  ('person', '{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
               "age": {"type": "integer"}, "mood": {"enum": ["calm", "storm"]}},
               "required": ["name", "age", "mood"], "additionalProperties": false}');

-- 1,000 texts: names seen and unseen, long ones, quotes, backslashes, UTF-8, empty, and one NULL
CREATE TABLE docs AS
SELECT i, CASE WHEN i = 500 THEN NULL
               WHEN i % 50 = 0 THEN ''
               ELSE (ARRAY['ann', 'bob', 'zed', 'maximiliana', 'o"neil', 'back\slash', 'zoë', 'ida', 'x', 'finn'])[1 + i % 10]
                    || ' is ' || (i % 97) || ', ' || (ARRAY['calm', 'storm', 'sunny'])[1 + i % 3] END AS t
  FROM generate_series(1, 1000) i;

-- the prompt tfm_extract builds (doc/reference.md, Structured extraction)
CREATE FUNCTION pg_temp.prompt(t text, s jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT E'Extract the fields of the text below as JSON following this schema.\nSchema: ' || s::text
         || E'\nText: ' || t || E'\nJSON: ' $$;

CREATE TABLE extracted AS
SELECT d.i, d.t, tfm_extract('jx', d.t, s.s) AS j,
       tfm_generate('jx', 'Text: ' || d.t || E'\nJSON: ', max_tokens => 60, temperature => 0) AS free,
       tfm_generate('jx', 'Text: ' || d.t || E'\nJSON: ', max_tokens => 60, temperature => 0, json_schema => s.s) AS constrained
  FROM docs d, schemas s WHERE s.name = 'person';

-- every result parses (jsonb) and follows the schema; the NULL text gives NULL
SELECT count(*) AS rows, count(j) AS results, count(*) FILTER (WHERE t IS NULL AND j IS NULL) AS null_in_null_out
  FROM extracted;
SELECT count(*) FILTER (WHERE jsonb_typeof(j) = 'object'
                          AND (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(j) k) = ARRAY['age', 'mood', 'name']
                          AND jsonb_typeof(j -> 'age') = 'number' AND (j ->> 'age') ~ '^-?[0-9]+$'
                          AND j ->> 'mood' IN ('calm', 'storm')
                          AND jsonb_typeof(j -> 'name') = 'string' AND length(j ->> 'name') <= 8) AS valid
  FROM extracted WHERE j IS NOT NULL;
-- the constrained text is in the schema's language; tfm_extract is tfm_generate of its prompt
SELECT bool_and(tfm_json_matches(s.s, constrained)) AS in_language
  FROM extracted, schemas s WHERE s.name = 'person' AND j IS NOT NULL;
SELECT bool_and(tfm_generate('jx', pg_temp.prompt(t, s.s), max_tokens => 256, temperature => 0, json_schema => s.s)::jsonb = j)
       AS extract_is_generate
  FROM extracted, schemas s WHERE s.name = 'person' AND j IS NOT NULL AND i % 20 = 0;
-- wherever the free text already was a value of the language, the constrained one is the same text;
-- and the model's free text is often not one, which the constraint repairs
SELECT count(*) FILTER (WHERE tfm_json_matches(s.s, free)) >= 50 AS free_often_valid,
       count(*) FILTER (WHERE NOT tfm_json_matches(s.s, free)) >= 10 AS free_sometimes_invalid,
       count(*) FILTER (WHERE tfm_json_matches(s.s, free) AND free IS DISTINCT FROM constrained) AS differ_where_valid
  FROM extracted, schemas s WHERE s.name = 'person' AND j IS NOT NULL;
-- the model learnt something of the task: most moods come out right
SELECT count(*) FILTER (WHERE constrained::jsonb ->> 'mood' = substring(t FROM '(calm|storm)$')) > 300 AS moods
  FROM extracted WHERE j IS NOT NULL;

-- a batch decodes each prompt as a single call would
SELECT g[1] = tfm_generate('jx', E'Text: ann is 3, calm\nJSON: ', max_tokens => 60, temperature => 0, json_schema => s)
   AND g[2] = tfm_generate('jx', E'Text: zed is 71, storm\nJSON: ', max_tokens => 60, temperature => 0, json_schema => s)
       AS batch_equals_single
  FROM schemas, tfm_generate('jx', ARRAY[E'Text: ann is 3, calm\nJSON: ', E'Text: zed is 71, storm\nJSON: '],
                             max_tokens => 60, temperature => 0, json_schema => s) AS g
 WHERE name = 'person';
-- sampling stays in the language too, and a seed repeats
SELECT bool_and(tfm_json_matches(s, tfm_generate('jx', 'Text: ', max_tokens => 120, temperature => 1.5, seed => k,
                                                 json_schema => s))) AS sampled_in_language,
       count(DISTINCT tfm_generate('jx', 'Text: ', max_tokens => 120, temperature => 1.5, seed => k, json_schema => s)) > 1
       AS seeds_differ
  FROM schemas, generate_series(1, 20) k WHERE name = 'person';
SELECT tfm_extract('jx', 'ann is 3, calm', s, temperature => 0.8, seed => 7)
     = tfm_extract('jx', 'ann is 3, calm', s, temperature => 0.8, seed => 7) AS seed_repeats
  FROM schemas WHERE name = 'person';
-- other shapes: arrays with bounds, nested objects, anyOf, numbers, a top-level enum
SELECT tfm_json_matches(sch, tfm_generate('jx', 'Text: ann', max_tokens => 200, temperature => 0, json_schema => sch)) AS ok,
       jsonb_typeof(tfm_generate('jx', 'Text: ann', max_tokens => 200, temperature => 0, json_schema => sch)::jsonb) AS type
  FROM unnest(ARRAY[
    '{"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3}',
    '{"type": "object", "properties": {"p": {"type": "object", "properties": {"q": {"type": ["string", "null"], "maxLength": 3}}, "required": ["q"]}}, "required": ["p"]}',
    '{"anyOf": [{"type": "number"}, {"type": "boolean"}]}',
    '{"enum": ["calm", "storm", 12, null]}']::jsonb[]) WITH ORDINALITY AS x(sch, k) ORDER BY k;
SELECT jsonb_array_length(tfm_generate('jx', 'Text: ', max_tokens => 200, temperature => 0,
       json_schema => '{"type": "array", "items": {"const": "ab"}, "minItems": 4, "maxItems": 4}')::jsonb) AS four_items;
-- tfm_chat takes it too (its stop ids end the reply only after a whole value)
SELECT tfm_chat_template_import('jx', '{"chat_template": "{% for m in messages %}Text: {{ m.content }}\nJSON: {% endfor %}"}');
SELECT tfm_json_matches(s, tfm_chat('jx', '[{"role": "user", "content": "gus is 44, calm"}]', temperature => 0,
                                    json_schema => s)) AS chat_in_language
  FROM schemas WHERE name = 'person';
-- the language: compact, the schema's property order (jsonb's: shorter keys first)
SELECT tfm_json_matches(s, '{"age":3,"mood":"calm","name":"x"}') AS compact,
       tfm_json_matches(s, '{"age": 3, "mood": "calm", "name": "x"}') AS spaced,
       tfm_json_matches(s, '{"name":"x","age":3,"mood":"calm"}') AS reordered,
       tfm_json_matches(s, '{"age":3,"mood":"calm","name":"abcdefghi"}') AS too_long
  FROM schemas WHERE name = 'person';

-- NULL in, NULL out
SELECT tfm_extract(NULL, 'x', '{"type": "null"}') IS NULL AS null_model,
       tfm_extract('jx', NULL, '{"type": "null"}') IS NULL AS null_text,
       tfm_extract('jx', 'x', NULL) IS NULL AS null_schema,
       tfm_generate('jx', 'x', max_tokens => 3, json_schema => NULL) IS NOT NULL AS null_schema_is_free;

-- schemas refused, by name
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "string", "pattern": "a+"}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "number", "minimum": 0}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"$ref": "#"}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "object", "properties": {"a": {"$ref": "#/properties"}}}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "object", "additionalProperties": true}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "object", "properties": {"a": {"type": "null"}}, "required": ["b"]}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "array"}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"anyOf": [{"type": "integer"}, {"type": "number"}]}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '[]')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "string", "enum": ["a", 1]}')$$);
-- hostile: deep nesting, a huge enum, too many schemas
SELECT pg_temp.err(format($$SELECT tfm_extract('jx', 'x', %L)$$,
       repeat('{"type": "array", "items": ', 33) || '{"type": "null"}' || repeat('}', 33)));
SELECT pg_temp.err(format($$SELECT tfm_extract('jx', 'x', %L)$$,
       (SELECT jsonb_build_object('enum', jsonb_agg(i)) FROM generate_series(1, 1025) i)));
SELECT pg_temp.err(format($$SELECT tfm_extract('jx', 'x', %L)$$,
       jsonb_build_object('type', 'object', 'properties',
                          (SELECT jsonb_object_agg('p' || i, '{"type": "null"}'::jsonb) FROM generate_series(1, 5000) i))));
SELECT pg_temp.err(format($$SELECT tfm_extract('jx', 'x', %L)$$, (repeat('[', 5000) || repeat(']', 5000))::jsonb));
-- 32 levels are fine
SELECT tfm_generate('jx', 'x', max_tokens => 100, temperature => 0,
       json_schema => (repeat('{"type": "array", "minItems": 1, "maxItems": 1, "items": ', 32) || '{"type": "null"}'
                       || repeat('}', 32))::jsonb) = repeat('[', 32) || 'null' || repeat(']', 32) AS deep_ok;
-- arguments
SELECT pg_temp.err($$SELECT tfm_generate('jx', 'x', stop => '}', json_schema => '{"type": "null"}')$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "null"}', max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "null"}', temperature => -1)$$);
SELECT pg_temp.err($$SELECT tfm_extract('nope', 'x', '{"type": "null"}')$$);
-- a string without maxLength can outlast max_tokens: an error, never a cut value
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"type": "string"}', max_tokens => 3)$$);
-- a vocabulary that lacks what the schema needs next, and one that joins tokens with spaces
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'x', '{"const": "~"}')$$);
SELECT tfm_tokenizer_train('json_words', t, 'word') FROM train_rows;
SELECT model FROM tfm_create_model('jw', 'lm', 'json_words', d_model => 8, heads => 2, layers => 1, max_len => 16);
SELECT pg_temp.err($$SELECT tfm_extract('jw', 'x', '{"type": "null"}')$$);

-- an ordinary role: its own statement_timeout and tfm.work_mem hold
CREATE ROLE extract_user;
GRANT USAGE ON SCHEMA tfm TO extract_user;
SELECT tfm_grant('jx', 'extract_user');
SET ROLE extract_user;
-- an endless array of a 1,000-value enum of 200-byte strings: cancelled at 1 s
CREATE TEMP TABLE big_schema AS
SELECT jsonb_build_object('type', 'array', 'items',
                          jsonb_build_object('enum', (SELECT jsonb_agg(repeat('ab', 100) || i) FROM generate_series(1, 1000) i))) AS s;
SET statement_timeout = '1s';
\set VERBOSITY terse
SELECT tfm_extract('jx', 'x', s, max_tokens => 100000) FROM big_schema;
\set VERBOSITY default
RESET statement_timeout;
SET tfm.work_mem = '1MB';
SELECT pg_temp.err($$SELECT tfm_extract('jx', 'ann is 3, calm', '{"type": "null"}')$$) AS small_work_mem;
RESET tfm.work_mem;
SELECT tfm_extract('jx', 'ann is 3, calm', '{"type": "boolean"}') IN ('true', 'false') AS as_role;
DROP TABLE big_schema;
RESET ROLE;
SELECT tfm_drop_model(m) FROM unnest(ARRAY['jx', 'jw']) m;
REVOKE USAGE ON SCHEMA tfm FROM extract_user;
DROP ROLE extract_user;
SELECT tfm_tokenizer_drop(t) FROM unnest(ARRAY['json_chars', 'json_words']) t;
DROP TABLE people, train_rows, schemas, docs, extracted;
