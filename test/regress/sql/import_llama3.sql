-- tfm_import_files of a Llama 3.2-style model: a small random
-- LlamaForCausalLM with "rope_scaling": {"rope_type": "llama3"} and a tied
-- head (test/reference/hf_llama3_reference.py: original context 32, so the
-- head's frequencies fall in all three bands and the inputs run past it)
-- against its PyTorch reference; its GGUF twin (llama3_rope.gguf, with
-- rope_freqs.weight as llama.cpp's converter writes it) against the same
\set cfg `cat test/fixtures/hf_llama3/config.json`
\set ref `cat test/fixtures/hf_llama3/reference.json`
\set w `base64 -w0 test/fixtures/hf_llama3/model.safetensors`
CREATE TEMP TABLE l3fx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref, decode(:'w', 'base64') AS w;
CREATE TEMP TABLE l3cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM l3fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set l3_dir :abs_srcdir '/../fixtures/hf_llama3'
-- max_position_embeddings 131072 (Llama 3.2's): capped at tfm's 8192 with a notice
SELECT * FROM tfm_import_files('llama3', :'l3_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->>'rope_type' AS rope_type,
       config->'rope_factor' AS factor, config->'rope_low_freq' AS low, config->'rope_high_freq' AS high,
       config->'rope_orig_max' AS orig_max, config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'llama3';

-- the next-token distribution after every input: log-probabilities within
-- 3e-5 of PyTorch's (the reference's own float32 error against float64 is
-- 7.6e-6 on the 41-token input; tfm's measured 1.2e-5)
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 3e-5 AS logprobs_match
  FROM l3cases c, tfm_next_tokens('llama3', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('llama3', ids) AS s FROM l3cases) x ORDER BY n;
-- greedy generation with the key/value cache (positions past the original 32): the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('llama3', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM l3cases ORDER BY n;
SELECT 'the cat sat on the mat.' || tfm_generate('llama3', 'the cat sat on the mat.', max_tokens => 10, temperature => 0)
     = tfm_detokenize('llama3', ids || greedy) AS generate_matches
  FROM l3cases WHERE n = 5;

-- without the scaling the same weights are another model (the 41-token input)
SELECT * FROM tfm_import('llama3_unscaled', (SELECT cfg || '{"rope_scaling": null, "max_position_embeddings": 8192}' FROM l3fx), (SELECT w FROM l3fx));
SELECT max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) > 1e-2 AS differs
  FROM l3cases c, tfm_next_tokens('llama3_unscaled', c.ids, 1000) t WHERE n = 4;
SELECT tfm_drop_model('llama3_unscaled');

-- the GGUF twin: rope_freqs.weight read as the same scaling, the reference's numbers
SELECT * FROM tfm_import_gguf_file('llama3_gguf', :'abs_srcdir' || '/../fixtures/gguf/llama3_rope.gguf', tokenizer => false);
SELECT config->>'rope_type' AS rope_type, config->'rope_factor' AS factor, config->'rope_orig_max' AS orig_max
  FROM tfm.models WHERE name = 'llama3_gguf';
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 3e-5 AS logprobs_match
  FROM l3cases c, tfm_next_tokens('llama3_gguf', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('llama3_gguf', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM l3cases ORDER BY n;
SELECT tfm_drop_model('llama3_gguf');

-- fine-tuning one epoch through the scaled rotation: the rows become more likely
CREATE TEMP TABLE l3ft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] || ARRAY(SELECT 300 + (j * i) % 40 FROM generate_series(1, 30) j) AS ids
  FROM generate_series(1, 16) i;
SELECT (tfm_score('llama3', (SELECT ids FROM l3ft LIMIT 1))).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('llama3', 'SELECT ids FROM l3ft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('llama3', (SELECT ids FROM l3ft LIMIT 1))).logprob > :before AS more_likely;
SELECT config->>'rope_type' AS rope_type_kept FROM tfm.models WHERE name = 'llama3';

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"rope_type": "yarn", "factor": 4.0}') FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "dynamic", "factor": 2.0}') FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg #- '{rope_scaling,factor}' FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,factor}', '0.5') FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,high_freq_factor}', '1.0') FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,original_max_position_embeddings}', '32.5') FROM l3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '"llama3"') FROM l3fx), '\x'::bytea);
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('llama3');
SELECT tfm_tokenizer_drop('llama3');
