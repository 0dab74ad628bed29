-- tfm_import_files of a Phi-4-mini: a small random Phi3ForCausalLM with
-- longrope (short and long factors, original_max_position_embeddings 12),
-- partial_rotary_factor 0.75 and a tied head, saved as Hugging Face saves
-- it (test/reference/hf_phi4_reference.py), against its PyTorch reference:
-- inputs and greedy continuations below and past 12 positions
\set cfg `cat test/fixtures/hf_phi4/config.json`
\set ref `cat test/fixtures/hf_phi4/reference.json`
CREATE TEMP TABLE qfx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref;
CREATE TEMP TABLE qcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM qfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set phi4_dir :abs_srcdir '/../fixtures/hf_phi4'
SELECT * FROM tfm_import_files('phi4', :'phi4_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->'tie_embeddings' AS tie,
       config->>'rope_type' AS rope_type, config->'rope_dim' AS rope_dim,
       config->'rope_orig_max' AS rope_orig_max,
       abs((config->>'rope_attn_factor')::float8 - (SELECT (ref->'rope'->>'attention_factor')::float8 FROM qfx)) < 1e-6 AS attn_factor,
       (SELECT max(abs(a.v::float8 - b.v::float8)) < 1e-6 AND count(*) = 6
          FROM jsonb_array_elements_text(config->'rope_short_factor') WITH ORDINALITY a(v, i)
          JOIN jsonb_array_elements_text((SELECT cfg->'rope_scaling'->'short_factor' FROM qfx)) WITH ORDINALITY b(v, i) USING (i)) AS short_factor,
       (SELECT max(abs(a.v::float8 - b.v::float8)) < 1e-6 AND count(*) = 6
          FROM jsonb_array_elements_text(config->'rope_long_factor') WITH ORDINALITY a(v, i)
          JOIN jsonb_array_elements_text((SELECT cfg->'rope_scaling'->'long_factor' FROM qfx)) WITH ORDINALITY b(v, i) USING (i)) AS long_factor
  FROM tfm.models WHERE name = 'phi4';

-- the next-token distribution after every input (the 41-token one past 12
-- positions: the long factors): log-probabilities within 1e-4 of PyTorch's
-- (measured: at most 7e-6 for the short inputs, 3.2e-5 for the 41 tokens,
-- where the float32 reference itself is 1.4e-5 from a float64 pass; the
-- other factors would be off by 0.1 and more)
SELECT n, cardinality(ids) AS len, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM qcases c, tfm_next_tokens('phi4', c.ids, 1000) t
 GROUP BY n, ids ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('phi4', ids) AS s FROM qcases) x ORDER BY n;
-- greedy generation with the key/value cache, recomputed with the long
-- factors when the sequence passes 12 positions: the reference's ids
SELECT n, cardinality(ids) AS len, cardinality(ids) + 10 > 12 AS crosses,
       ARRAY(SELECT id FROM tfm_generate_tokens('phi4', ids, max_tokens => 10, temperature => 0)
             ORDER BY pos) = greedy AS greedy_matches
  FROM qcases ORDER BY n;

-- the GGUF twin (test/reference/make_gguf_archs.py: phi3.* metadata as
-- llama.cpp's converter writes it, rope_factors_long/short.weight, fused
-- attn_qkv and ffn_up, no output.weight): the reference's numbers, and the
-- safetensors import's own within 1e-6
SELECT * FROM tfm_import_gguf_file('phi4_gguf', :'abs_srcdir' || '/../fixtures/gguf/phi3_f32.gguf', tokenizer => false);
SELECT config->>'rope_type' AS rope_type, config->'rope_dim' AS rope_dim, config->'rope_orig_max' AS rope_orig_max,
       config->'attn_window' AS attn_window, config->'tie_embeddings' AS tie, config->>'imported_from' AS imported_from,
       config->'rope_short_factor' = (SELECT config->'rope_short_factor' FROM tfm.models WHERE name = 'phi4') AS short_factor,
       config->'rope_long_factor' = (SELECT config->'rope_long_factor' FROM tfm.models WHERE name = 'phi4') AS long_factor,
       config->'rope_attn_factor' = (SELECT config->'rope_attn_factor' FROM tfm.models WHERE name = 'phi4') AS attn_factor
  FROM tfm.models WHERE name = 'phi4_gguf';
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-4 AS logprobs_match,
       max(abs(t.probability - s.probability)) < 1e-6 AS same_as_safetensors
  FROM qcases c, tfm_next_tokens('phi4_gguf', c.ids, 1000) t
  JOIN tfm_next_tokens('phi4', c.ids, 1000) s USING (id)
 GROUP BY n ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('phi4_gguf', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM qcases ORDER BY n;
SELECT tfm_drop_model('phi4_gguf');

-- fine-tuning one epoch on rows past 12 tokens: the rows become more likely
CREATE TEMP TABLE qft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 300, 301, 302, 303, (i % 5) + 300] AS ids
  FROM generate_series(1, 16) i;
SELECT (tfm_score('phi4', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 300, 301, 302, 303, 302])).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('phi4', 'SELECT ids FROM qft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('phi4', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 300, 301, 302, 303, 302])).logprob > :before AS more_likely;

-- hostile configs: refused with their reasons
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,short_factor}', '[1, 1, 1]') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,long_factor}', (SELECT jsonb_agg(1) FROM generate_series(1, 100000))) FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,long_factor}', '[1, 2, 3, 4, 5, -6]') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,long_factor}', '[1, 2, 3, 4, 5, "6"]') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,long_factor}', '[1, 2, 3, 4, 5, 1e300]') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,long_factor}', '{"a": 1}') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg #- '{rope_scaling,short_factor}' FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,type}', '"dynamic"') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling,attention_factor}', '0.5') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{original_max_position_embeddings}', '0') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{original_max_position_embeddings}', '12.5') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{partial_rotary_factor}', '1.5') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{partial_rotary_factor}', '0') FROM qfx), '\x'::bytea);
-- 16 · 0.7 rotates 11 values (odd)
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{partial_rotary_factor}', '0.7') FROM qfx), '\x'::bytea);
-- whole heads (partial 1) need 8 factors, the file has 6
SELECT * FROM tfm_import('x', (SELECT cfg - 'partial_rotary_factor' FROM qfx), '\x'::bytea);
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

-- a Phi-3.5-mini's layout (test/fixtures/hf_phi35, the same script):
-- whole heads rotated with 8 factors a list, an untied lm_head,
-- rope_scaling type "su": the reference's numbers, below and past 12 tokens
\set p35_dir :abs_srcdir '/../fixtures/hf_phi35'
\set ref35 `cat test/fixtures/hf_phi35/reference.json`
CREATE TEMP TABLE p35cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy, c->'logprobs' AS logprobs
  FROM jsonb_array_elements(:'ref35'::jsonb->'cases') WITH ORDINALITY AS t(c, n);
SELECT * FROM tfm_import_files('phi35', :'p35_dir');
SELECT config->>'rope_type' AS rope_type, config->'rope_dim' AS rope_dim, config->'tie_embeddings' AS tie,
       jsonb_array_length(config->'rope_long_factor') AS long_factors
  FROM tfm.models WHERE name = 'phi35';
SELECT n, cardinality(ids) AS len,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM p35cases c, tfm_next_tokens('phi35', c.ids, 1000) t
 GROUP BY n, ids ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('phi35', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM p35cases ORDER BY n;
SELECT tfm_drop_model('phi35');
SELECT tfm_tokenizer_drop('phi35');

SELECT tfm_drop_model('phi4');
SELECT tfm_tokenizer_drop('phi4');
