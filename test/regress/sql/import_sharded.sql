-- tfm_import_files on sharded checkpoints: model.safetensors.index.json and
-- its shards (test/reference/make_sharded_fixtures.py splits the committed
-- GPT-2 and Llama fixtures) import as the single files do, and a bad index
-- (test/fixtures/hf_sharded_bad/<case>) is refused with its reason
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/../fixtures'
-- every tensor of two models equal, bit for bit, and none on one side only
CREATE FUNCTION pg_temp.same_weights(x text, y text) RETURNS text LANGUAGE sql AS $$
SELECT count(*) || ' tensors, ' || sum(cardinality(a.data)) || ' values, '
       || CASE WHEN bool_and(a.data::text = b.data::text AND a.shape = b.shape) THEN 'identical' ELSE 'DIFFERENT' END
  FROM (SELECT * FROM tfm.tensors WHERE model_id = (SELECT id FROM tfm.models WHERE name = x)) a
  FULL JOIN (SELECT * FROM tfm.tensors WHERE model_id = (SELECT id FROM tfm.models WHERE name = y)) b USING (name) $$;
-- an import's error with the fixtures' directory cut out of its message (it differs between checkouts)
CREATE FUNCTION pg_temp.try_import(root text, dir text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM tfm_import_files('x', root || '/' || dir);
    RETURN 'imported';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || replace(SQLERRM, root, '<fixtures>');
END $$;

-- GPT-2 in 3 shards: the same tensors, the same next-token distributions, the same tokenizer
SELECT * FROM tfm_import_files('gpt2_single', :'fixtures' || '/hf_gpt2');
SELECT * FROM tfm_import_files('gpt2_sharded', :'fixtures' || '/hf_gpt2_sharded');
SELECT pg_temp.same_weights('gpt2_single', 'gpt2_sharded');
SELECT a.name, a.task, a.tokenizer IS NOT NULL AS has_tokenizer, a.parameters = b.parameters AS same_parameters,
       a.config - 'imported_from' = b.config - 'imported_from' AS same_config
  FROM tfm.models a, tfm.models b WHERE a.name = 'gpt2_sharded' AND b.name = 'gpt2_single';
\set ref `cat test/fixtures/hf_gpt2/reference.json`
CREATE TEMP TABLE cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids, c->'last_logprobs' AS logprobs
  FROM jsonb_array_elements(:'ref'::jsonb->'cases') WITH ORDINALITY AS t(c, n);
SELECT n, max(abs(ln(t.probability) - (c.logprobs->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM cases c, tfm_next_tokens('gpt2_sharded', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT count(*) AS differing
  FROM cases c, tfm_next_tokens('gpt2_single', c.ids, 1000) a
  JOIN LATERAL tfm_next_tokens('gpt2_sharded', c.ids, 1000) b ON a.id = b.id
 WHERE a.probability <> b.probability;
SELECT tfm_generate('gpt2_sharded', 'the theme', max_tokens => 8, temperature => 0)
     = tfm_generate('gpt2_single', 'the theme', max_tokens => 8, temperature => 0) AS same_generation,
       tfm_tokenize('gpt2_sharded', 'the theme of the thing') = tfm_tokenize('gpt2_single', 'the theme of the thing') AS same_ids;

-- Llama in 2 shards (an untied lm_head, grouped-query attention)
SELECT * FROM tfm_import_files('llama_single', :'fixtures' || '/hf_llama');
SELECT * FROM tfm_import_files('llama_sharded', :'fixtures' || '/hf_llama_sharded');
SELECT pg_temp.same_weights('llama_single', 'llama_sharded');
SELECT count(*) AS differing
  FROM (VALUES (ARRAY[1, 330, 348]), (ARRAY[1, 259, 272, 331, 316])) c(ids),
       tfm_next_tokens('llama_single', c.ids, 1000) a
  JOIN LATERAL tfm_next_tokens('llama_sharded', c.ids, 1000) b ON a.id = b.id
 WHERE a.probability <> b.probability;
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('llama_sharded', ARRAY[1, 330], max_tokens => 8, temperature => 0) ORDER BY pos)
     = ARRAY(SELECT id FROM tfm_generate_tokens('llama_single', ARRAY[1, 330], max_tokens => 8, temperature => 0) ORDER BY pos)
       AS same_generation;

-- every file a symbolic link out of the directory (a Hugging Face cache snapshot): followed
SELECT * FROM tfm_import_files('gpt2_linked', :'fixtures' || '/hf_gpt2_linked');
SELECT pg_temp.same_weights('gpt2_single', 'gpt2_linked');

-- ---- refusals: one directory each ----------------------------------------------
SELECT c AS "case", pg_temp.try_import(:'fixtures', 'hf_sharded_bad/' || c) AS result
  FROM unnest(ARRAY['wrong_shard', 'missing_shard', 'traversal', 'absent', 'not_in_shard',
                    'total_size', 'malformed', 'duplicate', 'bad_shard', 'unexpected_tensor',
                    'missing_tensor', 'no_weights', 'both', 'weights_dir']) c;
-- nothing of the failed imports was kept
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';
SELECT count(*) AS tokenizers FROM tfm.tokenizers WHERE name = 'x';

SELECT tfm_drop_model(name) FROM tfm.models
 WHERE name IN ('gpt2_single', 'gpt2_sharded', 'gpt2_linked', 'llama_single', 'llama_sharded') ORDER BY name;
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers
 WHERE name IN ('gpt2_single', 'gpt2_sharded', 'gpt2_linked', 'llama_single', 'llama_sharded') ORDER BY name;
