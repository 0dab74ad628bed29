-- tfm_import_files of a Qwen2: a small random Qwen2ForCausalLM saved as
-- Hugging Face saves it (test/reference/hf_qwen2_reference.py: Llama with
-- q/k/v biases, rope_theta 1e6, tied head, use_sliding_window false)
-- against its PyTorch reference; and Mistral's config on Llama's weights
\set cfg `cat test/fixtures/hf_qwen2/config.json`
\set ref `cat test/fixtures/hf_qwen2/reference.json`
\set lcfg `cat test/fixtures/hf_llama/config.json`
\set lw `base64 -w0 test/fixtures/hf_llama/model.safetensors`
CREATE TEMP TABLE qfx AS SELECT :'cfg'::jsonb AS cfg, :'ref'::jsonb AS ref;
CREATE TEMP TABLE qcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM qfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set qwen2_dir :abs_srcdir '/../fixtures/hf_qwen2'
SELECT * FROM tfm_import_files('qwen2', :'qwen2_dir');
SELECT name, task, parameters, config->>'arch' AS arch, config->'qkv_bias' AS qkv_bias,
       config->'kv_heads' AS kv_heads, config->'rope_theta' AS rope_theta,
       config->'tie_embeddings' AS tie, config->'max_len' AS max_len
  FROM tfm.models WHERE name = 'qwen2';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'qwen2' AND t.name LIKE 'dec.0.attn.%' ORDER BY t.name;

-- the next-token distribution after every input: log-probabilities within 1e-5 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM qcases c, tfm_next_tokens('qwen2', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('qwen2', ids) AS s FROM qcases) x ORDER BY n;
-- greedy generation with the key/value cache: the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('qwen2', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM qcases ORDER BY n;
-- the GGUF twin (qwen2_f32.gguf, test/reference/make_gguf_archs.py: qwen2.*
-- metadata, attn_q/k/v with their biases, rows as Hugging Face's, tied head,
-- its byte-level BPE in the metadata with pre "qwen2"): the reference's
-- numbers, the safetensors import's probabilities within 1e-6
SELECT * FROM tfm_import_gguf_file('qwen2_gguf', :'abs_srcdir' || '/../fixtures/gguf/qwen2_f32.gguf');
SELECT config->'qkv_bias' AS qkv_bias, config->'tie_embeddings' AS tie, config->'rope_theta' AS rope_theta,
       config->>'imported_from' AS imported_from
  FROM tfm.models WHERE name = 'qwen2_gguf';
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match,
       max(abs(t.probability - s.probability)) < 1e-6 AS same_as_safetensors
  FROM qcases c, tfm_next_tokens('qwen2_gguf', c.ids, 1000) t
  JOIN tfm_next_tokens('qwen2', c.ids, 1000) s USING (id)
 GROUP BY n ORDER BY n;
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('qwen2_gguf', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM qcases ORDER BY n;
-- its tokenizer from the metadata (tokenizer.ggml.pre "qwen2": Qwen2's Split
-- pattern after NFC, as its tokenizer.json): the reference's ids for the
-- mixed text, and the tokenizer.json import's ids on texts that tell
-- pre-tokenizers apart (contractions in any case, digits, runs of spaces
-- and newlines, punctuation runs, a text not in NFC, other scripts)
SELECT options->'splits'->0->>'behavior' AS split, (options->>'flags')::int & (1 << 21) <> 0 AS nfc
  FROM tfm.tokenizers WHERE name = 'qwen2_gguf';
SELECT tfm_tokenize('qwen2_gguf', ref->>'text') = ids AS same_ids FROM qfx, qcases WHERE n = 5;
SELECT count(*) AS texts, count(*) FILTER (WHERE tfm_tokenize('qwen2_gguf', t) = tfm_tokenize('qwen2', t)) AS same_ids
  FROM unnest(ARRAY['I''m here, YOU''RE there; they''ll say it''S done', 'abc123def 4567 ٣٤ 8.9',
                    'a  b   c' || chr(10) || chr(10) || '  d' || chr(13) || chr(10) || chr(9) || 'e   ',
                    '!!??.. ,,;; (x) [y] {z} -- __ ==', 'cafe' || chr(769) || ' caf' || chr(233) || ' A' || chr(778),
                    '你好，世界 こんにちは Привет 😀 👍🏽', ' leading and trailing ', '', ' ', chr(10)]) t;
SELECT tfm_drop_model('qwen2_gguf');

-- Qwen2's own tokenizer (tokenizer.json: NFC, Split with Qwen2's pattern
-- run by PCRE2, ByteLevel): case 5 is the reference's mixed text as
-- Qwen2's tokenizer encodes it; tfm_generate on that text: prompt ||
-- continuation is the reference's ids and greedy ids decoded
SELECT options->'splits'->0->>'behavior' AS split, (options->>'flags')::int & (1 << 21) <> 0 AS nfc
  FROM tfm.tokenizers WHERE name = 'qwen2';
SELECT tfm_tokenize('qwen2', ref->>'text') = ids AS same_ids FROM qfx, qcases WHERE n = 5;
SELECT (ref->>'text') || tfm_generate('qwen2', ref->>'text', max_tokens => 10, temperature => 0)
     = tfm_detokenize('qwen2', ids || greedy) AS generate_matches
  FROM qfx, qcases WHERE n = 5;

-- fine-tuning one epoch: the biases change and the rows become more likely
CREATE TEMP TABLE qft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 16) i;
SELECT (tfm_score('qwen2', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
CREATE TEMP TABLE qb0 AS SELECT t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'qwen2' AND t.name = 'dec.0.attn.qkv.b';
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('qwen2', 'SELECT ids FROM qft', epochs => 1, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('qwen2', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;
SELECT t.data <> (SELECT data FROM qb0) AS bias_trained FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'qwen2' AND t.name = 'dec.0.attn.qkv.b';

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT cfg || '{"use_sliding_window": true}' FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{architectures}', '["Qwen2ForSequenceClassification"]') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "yarn", "factor": 4.0}') FROM qfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{hidden_act}', '"gelu"') FROM qfx), '\x'::bytea);
-- Qwen2.5's 32768 positions: limited to tfm's 8192 (rotary positions have no
-- table, so the first 8192 are exact)
\set qw `base64 -w0 test/fixtures/hf_qwen2/model.safetensors`
SELECT * FROM tfm_import('qwen2_long', (SELECT jsonb_set(cfg, '{max_position_embeddings}', '32768') FROM qfx), decode(:'qw', 'base64'));
SELECT config->'max_len' AS max_len FROM tfm.models WHERE name = 'qwen2_long';
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM qcases c, tfm_next_tokens('qwen2_long', c.ids, 1000) t
 GROUP BY n ORDER BY n;
SELECT tfm_drop_model('qwen2_long');
-- Qwen2's pattern splits digits one by one, where Llama 3's keeps runs of three
SELECT tfm_tokenize('qwen2', '2024') AS qwen2_digits;
-- Llama's weights under a Qwen2 config: the biases are missing
SELECT * FROM tfm_import('x', (SELECT jsonb_set(:'lcfg'::jsonb, '{model_type}', '"qwen2"') - 'architectures'), decode(:'lw', 'base64'));
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

-- Mistral: Llama's tensors; within its sliding_window (64; run as a masked
-- window past it, import_mistral) it computes what the Llama does
SELECT * FROM tfm_import('mistral', jsonb_set(:'lcfg'::jsonb, '{architectures}', '["MistralForCausalLM"]')
                          || '{"model_type": "mistral", "sliding_window": 64}', decode(:'lw', 'base64'));
SELECT * FROM tfm_import('llama', :'lcfg'::jsonb, decode(:'lw', 'base64'));
SELECT m.name, m.config->'max_len' AS max_len, m.config->'qkv_bias' AS qkv_bias
  FROM tfm.models m WHERE m.name IN ('mistral', 'llama') ORDER BY m.name;
SELECT count(*) AS compared, count(*) FILTER (WHERE a.probability <> b.probability) AS differing
  FROM tfm_next_tokens('llama', ARRAY[1, 300, 270, 40, 280], 1000) a
  JOIN tfm_next_tokens('mistral', ARRAY[1, 300, 270, 40, 280], 1000) b ON a.id = b.id;
SELECT * FROM tfm_import('x', jsonb_set(:'lcfg'::jsonb, '{model_type}', '"mistral"') - 'architectures', decode(:'lw', 'base64'));
SELECT m.config->'max_len' AS default_window_max_len FROM tfm.models m WHERE m.name = 'x';
SELECT tfm_drop_model('x');
SELECT * FROM tfm_import('y', jsonb_set(:'lcfg'::jsonb, '{model_type}', '"mistral"') - 'architectures' || '{"sliding_window": 0}', decode(:'lw', 'base64'));
SELECT * FROM tfm_import('y', jsonb_set(:'lcfg'::jsonb, '{model_type}', '"mistral"') - 'architectures' || '{"sliding_window": null}', decode(:'lw', 'base64'));
SELECT m.config->'max_len' AS no_window_max_len FROM tfm.models m WHERE m.name = 'y';
SELECT * FROM tfm_import('z', jsonb_set(:'lcfg'::jsonb, '{architectures}', '["MistralForCausalLM"]'), decode(:'lw', 'base64'));

SELECT tfm_drop_model('y');
SELECT tfm_drop_model('mistral');
SELECT tfm_drop_model('llama');
SELECT tfm_drop_model('qwen2');
SELECT tfm_tokenizer_drop('qwen2');
