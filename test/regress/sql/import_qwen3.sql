-- tfm_import_files of a Qwen3: a small random Qwen3ForCausalLM saved as
-- Hugging Face saves it (test/reference/hf_qwen3_reference.py: q_norm and
-- k_norm on every query and key head before the rotation, head_dim 16 where
-- hidden_size / heads is 12, rope_theta 1e6, tied head) against its
-- PyTorch reference
\set cfg `cat test/fixtures/hf_qwen3/config.json`
\set ref `cat test/fixtures/hf_qwen3/reference.json`
\set w `base64 -w0 test/fixtures/hf_qwen3/model.safetensors`
CREATE TEMP TABLE q3fx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref, decode(:'w', 'base64') AS w;
CREATE TEMP TABLE q3cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM q3fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set q3_dir :abs_srcdir '/../fixtures/hf_qwen3'
-- max_position_embeddings 40960 (Qwen3's): capped at tfm's 8192 with a notice
SELECT * FROM tfm_import_files('qwen3', :'q3_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->'qk_norm' AS qk_norm,
       config->'head_size' AS head_size, config->'kv_heads' AS kv_heads, config->'rope_theta' AS rope_theta,
       config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'qwen3';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'qwen3' AND t.name LIKE 'dec.0.attn.%' ORDER BY t.name;

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM q3cases c, tfm_next_tokens('qwen3', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('qwen3', ids) AS s FROM q3cases) x ORDER BY n;
-- greedy generation with the key/value cache (keys normalised before they are cached): the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('qwen3', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM q3cases ORDER BY n;
SELECT 'the cat sat on the mat.' || tfm_generate('qwen3', 'the cat sat on the mat.', max_tokens => 10, temperature => 0)
     = tfm_detokenize('qwen3', ids || greedy) AS generate_matches
  FROM q3cases WHERE n = 5;

-- the GGUF twin (qwen3_f32.gguf: qwen3.* metadata, q and k rows as Hugging
-- Face's, attn_q_norm / attn_k_norm): the reference's numbers
SELECT * FROM tfm_import_gguf_file('qwen3_gguf', :'abs_srcdir' || '/../fixtures/gguf/qwen3_f32.gguf', tokenizer => false);
SELECT config->'qk_norm' AS qk_norm, config->'head_size' AS head_size, config->>'imported_from' AS imported_from
  FROM tfm.models WHERE name = 'qwen3_gguf';
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM q3cases c, tfm_next_tokens('qwen3_gguf', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('qwen3_gguf', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM q3cases ORDER BY n;
SELECT tfm_drop_model('qwen3_gguf');

-- the same weights under a Llama config: the norms' tensors are not a Llama's
SELECT * FROM tfm_import('qwen3_as_llama', (SELECT jsonb_set(cfg, '{model_type}', '"llama"') - 'architectures' || '{"max_position_embeddings": 8192}' FROM q3fx), (SELECT w FROM q3fx));

-- fine-tuning one epoch through the q/k norms: their gains change and the rows become more likely
CREATE TEMP TABLE q3ft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 16) i;
SELECT (tfm_score('qwen3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
CREATE TEMP TABLE q3n0 AS SELECT tfm_tensor('qwen3', 'dec.0.attn.k_norm.g') AS v;
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('qwen3', 'SELECT ids FROM q3ft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('qwen3', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;
SELECT tfm_tensor('qwen3', 'dec.0.attn.k_norm.g') <> (SELECT v FROM q3n0) AS k_norm_trained;

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT cfg || '{"use_sliding_window": true}' FROM q3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"attention_bias": true}' FROM q3fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"rope_type": "yarn", "factor": 4.0}') FROM q3fx), '\x'::bytea);
-- head_dim absent: Qwen3Config's 128, which the weights' shapes refuse
SELECT * FROM tfm_import('x', (SELECT cfg - 'head_dim' FROM q3fx), (SELECT w FROM q3fx));
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('qwen3');
SELECT tfm_tokenizer_drop('qwen3');
