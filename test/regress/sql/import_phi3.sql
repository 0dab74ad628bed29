-- tfm_import_files of a Phi-3: a small random Phi3ForCausalLM saved as
-- Hugging Face saves it (test/reference/hf_phi3_reference.py: Llama's
-- computation with qkv_proj and gate_up_proj fused, untied head,
-- sliding_window 64 under max_position_embeddings 128) against its
-- PyTorch reference
\set cfg `cat test/fixtures/hf_phi3/config.json`
\set ref `cat test/fixtures/hf_phi3/reference.json`
CREATE TEMP TABLE pfx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref;
CREATE TEMP TABLE pcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM pfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set phi3_dir :abs_srcdir '/../fixtures/hf_phi3'
-- the window is run as a masked one (attn_window; import_mistral tests it past the window)
SELECT * FROM tfm_import_files('phi3', :'phi3_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->'kv_heads' AS kv_heads,
       config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'phi3';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'phi3' AND t.name LIKE 'dec.0.%' ORDER BY t.name;

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM pcases c, tfm_next_tokens('phi3', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('phi3', ids) AS s FROM pcases) x ORDER BY n;
-- greedy generation with the key/value cache: the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('phi3', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM pcases ORDER BY n;
SELECT 'the cat sat on the mat.' || tfm_generate('phi3', 'the cat sat on the mat.', max_tokens => 10, temperature => 0)
     = tfm_detokenize('phi3', ids || greedy) AS generate_matches
  FROM pcases WHERE n = 5;

-- fine-tuning one epoch: the fused projections train and the rows become more likely
CREATE TEMP TABLE pft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 16) i;
SELECT (tfm_score('phi3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
CREATE TEMP TABLE pw0 AS SELECT t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'phi3' AND t.name = 'dec.0.ff1.w';
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('phi3', 'SELECT ids FROM pft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('phi3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;
SELECT t.data <> (SELECT data FROM pw0) AS gate_up_trained FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'phi3' AND t.name = 'dec.0.ff1.w';

-- what tfm refuses: longrope factors that are not one per rotated pair (6 for
-- these 12-wide heads; import_phi4 imports longrope), a rotated width that is odd
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "su", "short_factor": [1.0], "long_factor": [1.0]}') FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}') FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '"su"') FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"partial_rotary_factor": 0.75}' FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"resid_pdrop": 0.1}' FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{hidden_act}', '"gelu"') FROM pfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{architectures}', '["Phi3ForTokenClassification"]') FROM pfx), '\x'::bytea);
-- the Llama fixture's separate q/k/v and gate/up under a Phi-3 config: refused by name
\set lcfg `cat test/fixtures/hf_llama/config.json`
\set lw `base64 -w0 test/fixtures/hf_llama/model.safetensors`
SELECT * FROM tfm_import('x', jsonb_set(:'lcfg'::jsonb, '{model_type}', '"phi3"') - 'architectures', decode(:'lw', 'base64'));
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';
-- without a window (null, Phi3Config's default) max_position_embeddings holds
\set pw `base64 -w0 test/fixtures/hf_phi3/model.safetensors`
SELECT * FROM tfm_import('phi3_nowindow', (SELECT jsonb_set(cfg, '{sliding_window}', 'null') FROM pfx), decode(:'pw', 'base64'));
SELECT config->'max_len' AS max_len FROM tfm.models WHERE name = 'phi3_nowindow';
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM pcases c, tfm_next_tokens('phi3_nowindow', c.ids, 1000) t
 GROUP BY n ORDER BY n;

SELECT tfm_drop_model('phi3_nowindow');
SELECT tfm_drop_model('phi3');
SELECT tfm_tokenizer_drop('phi3');
