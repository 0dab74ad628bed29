-- tfm_import_files of a Gemma: a small random GemmaForCausalLM saved as
-- Hugging Face saves it (test/reference/hf_gemma_reference.py: GeGLU with
-- gelu_pytorch_tanh, embeddings times √hidden_size, RMSNorm x·(1 + w),
-- one key/value head, tied head) against its PyTorch reference
\set cfg `cat test/fixtures/hf_gemma/config.json`
\set ref `cat test/fixtures/hf_gemma/reference.json`
CREATE TEMP TABLE gfx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref;
CREATE TEMP TABLE gcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM gfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set gemma_dir :abs_srcdir '/../fixtures/hf_gemma'
SELECT * FROM tfm_import_files('gemma', :'gemma_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->>'gated_act' AS gated_act,
       config->'scale_embeddings' AS scale_embeddings, config->'kv_heads' AS kv_heads,
       config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'gemma';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'gemma' AND t.name LIKE 'dec.0.%' ORDER BY t.name;
-- the norm weights are stored plus 1: the file's w (around 0) became gains around 1
SELECT round(avg(v)::numeric, 1) AS mean_gain, min(v) > 0.5 AS all_near_1
  FROM unnest(tfm_tensor('gemma', 'dec.ln_f.g')) v;

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM gcases c, tfm_next_tokens('gemma', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('gemma', ids) AS s FROM gcases) x ORDER BY n;
-- greedy generation with the key/value cache (embeddings scaled there too): the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('gemma', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM gcases ORDER BY n;
SELECT 'the cat sat on the mat.' || tfm_generate('gemma', 'the cat sat on the mat.', max_tokens => 10, temperature => 0)
     = tfm_detokenize('gemma', ids || greedy) AS generate_matches
  FROM gcases WHERE n = 5;

-- fine-tuning one epoch through GeGLU: the rows become more likely
CREATE TEMP TABLE gft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 16) i;
SELECT (tfm_score('gemma', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('gemma', 'SELECT ids FROM gft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('gemma', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;

-- what tfm refuses, by name
\set gw `base64 -w0 test/fixtures/hf_gemma/model.safetensors`
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{hidden_activation}', '"gelu"') FROM gfx), '\x'::bytea);
-- a head_dim other than the weights': their shapes say so
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{head_dim}', '16') FROM gfx), decode(:'gw', 'base64'));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "linear", "factor": 2.0}') FROM gfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{architectures}', '["GemmaForSequenceClassification"]') FROM gfx), '\x'::bytea);
-- hidden_activation absent: gelu_pytorch_tanh whatever hidden_act says (as Hugging Face does)
SELECT * FROM tfm_import('gemma_act', (SELECT cfg - 'hidden_activation' FROM gfx), decode(:'gw', 'base64'));
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM gcases c, tfm_next_tokens('gemma_act', c.ids, 1000) t
 GROUP BY n ORDER BY n;
-- the same weights as a Llama (gains w, SwiGLU, no scaling) are another model
SELECT * FROM tfm_import('gemma_as_llama', (SELECT jsonb_set(cfg, '{model_type}', '"llama"') - 'architectures' - 'hidden_act' - 'hidden_activation' - 'head_dim' || '{"tie_word_embeddings": true}' FROM gfx), decode(:'gw', 'base64'));
SELECT max(abs(ln(a.probability) - ln(b.probability))) > 0.1 AS differs
  FROM tfm_next_tokens('gemma_act', ARRAY[1, 300, 270, 40, 280], 1000) a
  JOIN tfm_next_tokens('gemma_as_llama', ARRAY[1, 300, 270, 40, 280], 1000) b ON a.id = b.id;

SELECT tfm_drop_model('gemma_as_llama');
SELECT tfm_drop_model('gemma_act');
SELECT tfm_drop_model('gemma');
SELECT tfm_tokenizer_drop('gemma');

-- Gemma 2 (test/reference/hf_gemma2_reference.py): four norms a layer,
-- scores scaled by query_pre_attn_scalar^-0.5 and soft-capped, logits
-- soft-capped (both caps 1 here, so they bind), sliding_window 64 under
-- max_position_embeddings 128 on layers 0, 2, ...: run as a masked window
-- (attn_window, window_pattern 2); every input here is shorter
\set cfg2 `cat test/fixtures/hf_gemma2/config.json`
\set ref2 `cat test/fixtures/hf_gemma2/reference.json`
CREATE TEMP TABLE g2fx AS SELECT :'cfg2'::jsonb AS cfg, :'ref2'::jsonb AS ref;
CREATE TEMP TABLE g2cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM g2fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);
\set gemma2_dir :abs_srcdir '/../fixtures/hf_gemma2'
SELECT * FROM tfm_import_files('gemma2', :'gemma2_dir');
-- heads 16 wide, not hidden_size / heads = 12: q|k|v 64 + 2·32 columns, attn.out.w 64 rows
SELECT config->'head_size' AS head_size, config->'post_norms' AS post_norms, config->'attn_scale' AS attn_scale,
       config->'attn_softcap' AS attn_softcap, config->'final_softcap' AS final_softcap,
       config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'gemma2';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'gemma2' AND t.name LIKE 'dec.0.%' ORDER BY t.name;
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM g2cases c, tfm_next_tokens('gemma2', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('gemma2', ids) AS s FROM g2cases) x ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('gemma2', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM g2cases ORDER BY n;
-- the capped logits: every log-probability of the last position of case 4 is
-- within 2 of the others' (|logit| < 1)
SELECT max(ln(probability)) - min(ln(probability)) < 2 AS capped
  FROM tfm_next_tokens('gemma2', (SELECT ids FROM g2cases WHERE n = 4), 1000);

-- fine-tuning one epoch through the caps and the post-norms
SELECT (tfm_score('gemma2', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before2 \gset
CREATE TEMP TABLE g2n0 AS SELECT tfm_tensor('gemma2', 'dec.0.post_ff.g') AS v;
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('gemma2', 'SELECT ids FROM gft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('gemma2', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before2 AS more_likely;
SELECT tfm_tensor('gemma2', 'dec.0.post_ff.g') <> (SELECT v FROM g2n0) AS post_norm_trained;

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT cfg || '{"attn_logit_softcapping": -1}' FROM g2fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg || '{"query_pre_attn_scalar": 0}' FROM g2fx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{head_dim}', '4097') FROM g2fx), '\x'::bytea);
-- Gemma's weights under a Gemma 2 config: its extra norms are missing
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{model_type}', '"gemma2"') - 'architectures' FROM gfx), decode(:'gw', 'base64'));
-- caps null: none (the model then differs from the capped one)
\set g2w `base64 -w0 test/fixtures/hf_gemma2/model.safetensors`
SELECT * FROM tfm_import('gemma2_nocap', (SELECT cfg || '{"attn_logit_softcapping": null, "final_logit_softcapping": null}' FROM g2fx), decode(:'g2w', 'base64'));
SELECT config ? 'attn_softcap' AS attn_capped, config ? 'final_softcap' AS final_capped
  FROM tfm.models WHERE name = 'gemma2_nocap';
SELECT max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) > 1e-2 AS differs
  FROM g2cases c, tfm_next_tokens('gemma2_nocap', c.ids, 1000) t WHERE n = 4;

SELECT tfm_drop_model('gemma2_nocap');
SELECT tfm_drop_model('gemma2');
SELECT tfm_tokenizer_drop('gemma2');
