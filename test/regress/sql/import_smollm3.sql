-- tfm_import_files of a SmolLM3: a small random SmolLM3ForCausalLM saved as
-- Hugging Face saves it (test/reference/hf_smollm3_reference.py: a Llama
-- whose layer 1 of 3 has no rotary positions, no_rope_layer_interval 2,
-- tied head) against its PyTorch reference
\set cfg `cat test/fixtures/hf_smollm3/config.json`
\set ref `cat test/fixtures/hf_smollm3/reference.json`
\set w `base64 -w0 test/fixtures/hf_smollm3/model.safetensors`
CREATE TEMP TABLE s3fx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref, decode(:'w', 'base64') AS w;
CREATE TEMP TABLE s3cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM s3fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set s3_dir :abs_srcdir '/../fixtures/hf_smollm3'
-- max_position_embeddings 65536 (SmolLM3's): capped at tfm's 8192 with a notice
SELECT * FROM tfm_import_files('smollm3', :'s3_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->'nope_interval' AS nope_interval,
       config->'rope_theta' AS rope_theta, config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'smollm3';

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM s3cases c, tfm_next_tokens('smollm3', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('smollm3', ids) AS s FROM s3cases) x ORDER BY n;
-- greedy generation with the key/value cache (layer 1's keys cached unrotated): the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('smollm3', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM s3cases ORDER BY n;

-- every layer rotating (an interval past the layers) is another model
SELECT * FROM tfm_import('smollm3_rope', (SELECT cfg - 'no_rope_layers' || '{"no_rope_layer_interval": 4}' FROM s3fx), (SELECT w FROM s3fx));
SELECT max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) > 1e-2 AS differs
  FROM s3cases c, tfm_next_tokens('smollm3_rope', c.ids, 1000) t WHERE n = 4;
SELECT tfm_drop_model('smollm3_rope');

-- fine-tuning one epoch through the NoPE layer: the rows become more likely
CREATE TEMP TABLE s3ft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 16) i;
SELECT (tfm_score('smollm3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('smollm3', 'SELECT ids FROM s3ft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('smollm3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{no_rope_layers}', '[0, 1, 1]') FROM s3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{no_rope_layers}', '[1, 0]') FROM s3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{no_rope_layers}', '[1, 2, 1]') FROM s3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"no_rope_layer_interval": 0}' FROM s3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"use_sliding_window": true}' FROM s3fx), '\x'::bytea);
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('smollm3');
SELECT tfm_tokenizer_drop('smollm3');
