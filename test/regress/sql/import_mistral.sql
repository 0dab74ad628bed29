-- tfm_import_files of a Mistral past its sliding window: a small random
-- MistralForCausalLM saved as Hugging Face saves it
-- (test/reference/hf_mistral_reference.py: sliding_window 8 under
-- max_position_embeddings 128, inputs to 51 positions) against its PyTorch
-- reference: the window is run (masked), not capped
\set cfg `cat test/fixtures/hf_mistral/config.json`
\set ref `cat test/fixtures/hf_mistral/reference.json`
\set w `base64 -w0 test/fixtures/hf_mistral/model.safetensors`
CREATE TEMP TABLE mfx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref, decode(:'w', 'base64') AS w;
CREATE TEMP TABLE mcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM mfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set m_dir :abs_srcdir '/../fixtures/hf_mistral'
SELECT * FROM tfm_import_files('mistral', :'m_dir');
SELECT name, task, parameters, config->'attn_window' AS attn_window, config->'window_pattern' AS window_pattern,
       config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'mistral';

-- the next-token distribution after every input (cases 3-5 longer than the
-- window): log-probabilities within 1e-5 of PyTorch's
SELECT n, cardinality(ids) AS prompt, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM mcases c, tfm_next_tokens('mistral', c.ids, 1000) t
 GROUP BY n, ids ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('mistral', ids) AS s FROM mcases) x ORDER BY n;
-- greedy generation with the key/value cache, every step past the window: the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('mistral', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM mcases ORDER BY n;

-- without the window (sliding_window null): the same model within 8 tokens (case 2),
-- another past them (case 4)
SELECT * FROM tfm_import('mistral_full', (SELECT jsonb_set(cfg, '{sliding_window}', 'null') FROM mfx), (SELECT w FROM mfx));
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) > 1e-2 AS differs
  FROM mcases c, tfm_next_tokens('mistral_full', c.ids, 1000) t WHERE n IN (2, 4)
 GROUP BY n ORDER BY n;
SELECT tfm_drop_model('mistral_full');

-- fine-tuning one epoch on rows longer than the window: the rows become more likely
CREATE TEMP TABLE mft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] || ARRAY(SELECT 300 + (j * i) % 40 FROM generate_series(1, 10) j) AS ids
  FROM generate_series(1, 16) i;
SELECT (tfm_score('mistral', (SELECT ids FROM mft LIMIT 1))).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('mistral', 'SELECT ids FROM mft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('mistral', (SELECT ids FROM mft LIMIT 1))).logprob > :before AS more_likely;

SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{sliding_window}', '0') FROM mfx), '\x'::bytea);
SELECT tfm_drop_model('mistral');
SELECT tfm_tokenizer_drop('mistral');
