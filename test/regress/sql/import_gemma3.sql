-- tfm_import_files of a Gemma 3 text model: a small random Gemma3ForCausalLM
-- saved as Hugging Face saves it (test/reference/hf_gemma3_reference.py:
-- q_norm and k_norm with Gemma's 1 + w gains, four norms a layer, layers 0
-- and 1 local (sliding_window 8, rope_local_base_freq 1e4), layer 2 global
-- (rope_theta 1e6, linear rope_scaling factor 8), query_pre_attn_scalar 24,
-- no soft caps, tied head) against its PyTorch reference, inputs to 51
-- positions
\set cfg `cat test/fixtures/hf_gemma3/config.json`
\set ref `cat test/fixtures/hf_gemma3/reference.json`
\set w `base64 -w0 test/fixtures/hf_gemma3/model.safetensors`
CREATE TEMP TABLE g3fx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref, decode(:'w', 'base64') AS w;
CREATE TEMP TABLE g3cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM g3fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set g3_dir :abs_srcdir '/../fixtures/hf_gemma3'
-- max_position_embeddings 32768 (Gemma 3 1B's): capped at tfm's 8192 with a notice
SELECT * FROM tfm_import_files('gemma3', :'g3_dir');
SELECT name, task, parameters, config->'qk_norm' AS qk_norm, config->'post_norms' AS post_norms,
       config->'head_size' AS head_size, config->'kv_heads' AS kv_heads, config->'rope_theta' AS rope_theta,
       config->'rope_local_theta' AS rope_local_theta, config->>'rope_type' AS rope_type,
       config->'rope_factor' AS rope_factor, config->'attn_window' AS attn_window,
       config->'window_pattern' AS window_pattern, config->'attn_softcap' AS attn_softcap,
       config->'final_softcap' AS final_softcap, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'gemma3';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'gemma3' AND t.name LIKE 'dec.0.attn.%' ORDER BY t.name;

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM g3cases c, tfm_next_tokens('gemma3', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('gemma3', ids) AS s FROM g3cases) x ORDER BY n;
-- greedy generation with the key/value cache, past the window: the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('gemma3', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM g3cases ORDER BY n;
SELECT 'the cat sat on the mat.' || tfm_generate('gemma3', 'the cat sat on the mat.', max_tokens => 10, temperature => 0)
     = tfm_detokenize('gemma3', ids || greedy) AS generate_matches
  FROM g3cases WHERE n = 5;

-- sliding_window_pattern alone (no layer_types, as the 1B's config.json): the same model
SELECT * FROM tfm_import('gemma3_pattern', (SELECT cfg - 'layer_types' FROM g3fx), (SELECT w FROM g3fx));
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM g3cases c, tfm_next_tokens('gemma3_pattern', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT tfm_drop_model('gemma3_pattern');
-- each difference matters: every layer's rope base the global one, the global layer unscaled,
-- a window that never binds, on the longest input (case 4)
SELECT * FROM tfm_import('g3_local', (SELECT cfg || '{"rope_local_base_freq": 1000000}' FROM g3fx), (SELECT w FROM g3fx));
SELECT * FROM tfm_import('g3_unscaled', (SELECT jsonb_set(cfg, '{rope_scaling}', 'null') FROM g3fx), (SELECT w FROM g3fx));
SELECT * FROM tfm_import('g3_nowindow', (SELECT cfg || '{"sliding_window": 4096}' FROM g3fx), (SELECT w FROM g3fx));
SELECT m, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) > 1e-3 AS differs
  FROM g3cases c, unnest(ARRAY['g3_local', 'g3_unscaled', 'g3_nowindow']) m, tfm_next_tokens(m, c.ids, 1000) t
 WHERE n = 4 GROUP BY m ORDER BY m;
-- sliding_window null: no window, the local layers still rotating with their own base (as g3_nowindow)
SELECT * FROM tfm_import('g3_nullwindow', (SELECT jsonb_set(cfg, '{sliding_window}', 'null') FROM g3fx), (SELECT w FROM g3fx));
SELECT config->'attn_window' AS attn_window, config->'rope_local_theta' AS rope_local_theta
  FROM tfm.models WHERE name = 'g3_nullwindow';
SELECT max(abs(a.probability - b.probability)) < 1e-6 AS as_nowindow
  FROM g3cases c, tfm_next_tokens('g3_nullwindow', c.ids, 1000) a
  JOIN tfm_next_tokens('g3_nowindow', c.ids, 1000) b ON a.id = b.id
 WHERE n = 4;
SELECT tfm_drop_model(m) FROM unnest(ARRAY['g3_local', 'g3_unscaled', 'g3_nowindow', 'g3_nullwindow']) m;

-- fine-tuning one epoch on rows longer than the window, through the q/k norms:
-- their gains change and the rows become more likely
CREATE TEMP TABLE g3ft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] || ARRAY(SELECT 300 + (j * i) % 40 FROM generate_series(1, 10) j) AS ids
  FROM generate_series(1, 16) i;
SELECT (tfm_score('gemma3', (SELECT ids FROM g3ft LIMIT 1))).logprob AS before \gset
CREATE TEMP TABLE g3n0 AS SELECT tfm_tensor('gemma3', 'dec.2.attn.q_norm.g') AS v;
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('gemma3', 'SELECT ids FROM g3ft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('gemma3', (SELECT ids FROM g3ft LIMIT 1))).logprob > :before AS more_likely;
SELECT tfm_tensor('gemma3', 'dec.2.attn.q_norm.g') <> (SELECT v FROM g3n0) AS q_norm_trained;

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{layer_types}', '["full_attention", "sliding_attention", "full_attention"]') FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{layer_types}', '["sliding_attention", "full_attention"]') FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{layer_types}', '["sliding_attention", "sliding_attention", "global"]') FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg - 'layer_types' || '{"sliding_window_pattern": 0}' FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"use_bidirectional_attention": true}' FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"rope_type": "yarn", "factor": 4.0}') FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"rope_type": "linear", "factor": 0.5}') FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"rope_local_base_freq": 0}' FROM g3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"hidden_activation": "gelu"}' FROM g3fx), '\x'::bytea);
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('gemma3');
SELECT tfm_tokenizer_drop('gemma3');
