-- tfm_import: a small random GPT-2 saved as Hugging Face saves it
-- (test/reference/hf_gpt2_reference.py) against its PyTorch reference
\set cfg `cat test/fixtures/hf_gpt2/config.json`
\set tok `cat test/fixtures/hf_gpt2/tokenizer.json`
\set w `base64 -w0 test/fixtures/hf_gpt2/model.safetensors`
\set wh `base64 -w0 test/fixtures/hf_gpt2/model_half.safetensors`
\set ref `cat test/fixtures/hf_gpt2/reference.json`
CREATE TEMP TABLE fx AS
SELECT :'cfg'::jsonb AS cfg, :'tok'::jsonb AS tok, decode(:'w', 'base64') AS w,
       decode(:'wh', 'base64') AS wh, :'ref'::jsonb AS ref;
CREATE TEMP TABLE cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'last_logprobs' AS logprobs
  FROM fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

SELECT * FROM tfm_import('hf_gpt2', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT tok FROM fx));
-- BF16 and F16 layers, a tied lm_head and the old attn.bias buffers: the same values
SELECT * FROM tfm_import('hf_gpt2_half', (SELECT cfg FROM fx), (SELECT wh FROM fx), task => 'lm');
SELECT name, task, tokenizer, parameters, config->>'activation' AS activation,
       config->'pad_id' AS pad_id, config->'bos_id' AS bos_id, config->'layer_norm_eps' AS eps,
       owner::regrole
  FROM tfm.models ORDER BY name;
SELECT name, kind, vocab_size, merges FROM tfm.tokenizer_list;

-- the next-token distribution after every input: log-probabilities within 1e-4 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM cases c, tfm_next_tokens('hf_gpt2', c.ids, 1000) t
 GROUP BY n ORDER BY n;
-- the same from the BF16/F16 file, bit for bit
SELECT count(*) AS differing
  FROM cases c, tfm_next_tokens('hf_gpt2', c.ids, 1000) a
  JOIN LATERAL tfm_next_tokens('hf_gpt2_half', c.ids, 1000) b ON a.id = b.id
 WHERE a.probability <> b.probability;
SELECT * FROM tfm_generate_tokens('hf_gpt2_half', ARRAY[1, 2], max_tokens => 3, temperature => 0, stop => 'x');
-- tfm_score: the sum of next-token log-probabilities
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('hf_gpt2', ids) AS s FROM cases) x ORDER BY n;
-- greedy generation: the reference's ids (it stops at <|endoftext|> as HF's generate does)
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('hf_gpt2', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM cases ORDER BY n;
-- text in, text out through the imported tokenizer
SELECT tfm_tokenize('hf_gpt2', 'the theme of the thing');
SELECT tfm_detokenize('hf_gpt2', tfm_tokenize('hf_gpt2', 'the theme of the thing'));
SELECT length(tfm_generate('hf_gpt2', 'the', max_tokens => 5, temperature => 0)) > 0 AS generates;
SELECT id, piece FROM tfm_next_tokens('hf_gpt2', 'the', 3) ORDER BY rank;

-- fine-tuning an imported model: its next-token loss on the rows goes down
CREATE TEMP TABLE ft_lines AS SELECT 'the theme of the thing is the thing ' || i AS t FROM generate_series(1, 50) i;
SELECT (tfm_score('hf_gpt2', 'the theme of the thing is the thing 7')).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('hf_gpt2', 'SELECT t FROM ft_lines', epochs => 2, lr => 1e-3);
RESET client_min_messages;
SELECT (tfm_score('hf_gpt2', 'the theme of the thing is the thing 7')).logprob > :before AS more_likely;

-- tfm_import_files: the same directory on the server
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixture_dir :abs_srcdir '/../fixtures/hf_gpt2'
SELECT * FROM tfm_import_files('hf_gpt2_files', :'fixture_dir');
SELECT count(*) AS differing
  FROM cases c, tfm_next_tokens('hf_gpt2_half', c.ids, 1000) a
  JOIN LATERAL tfm_next_tokens('hf_gpt2_files', c.ids, 1000) b ON a.id = b.id
 WHERE a.probability <> b.probability;
SELECT * FROM tfm_import_files('hf_gpt2_x', '/nonexistent');
SELECT * FROM tfm_import_files('hf_gpt2_x', 'relative/dir');
CREATE ROLE tfm_import_nobody;
SET ROLE tfm_import_nobody;
SELECT * FROM tfm_import_files('hf_gpt2_x', :'fixture_dir');
RESET ROLE;
DROP ROLE tfm_import_nobody;

-- ---- bad input, one per line ------------------------------------------------
CREATE FUNCTION pg_temp.hlen(w bytea) RETURNS int LANGUAGE sql
AS $$ SELECT get_byte(w, 0) + get_byte(w, 1) * 256 + get_byte(w, 2) * 65536 $$;
-- the safetensors header text edited in place (same length)
CREATE FUNCTION pg_temp.edit(w bytea, a text, b text) RETURNS bytea LANGUAGE sql
AS $$ SELECT substring(w FROM 1 FOR 8)
          || convert_to(replace(convert_from(substring(w FROM 9 FOR pg_temp.hlen(w)), 'UTF8'), a, b), 'UTF8')
          || substring(w FROM 9 + pg_temp.hlen(w)) $$;
\set VERBOSITY terse
-- NULL arguments
SELECT * FROM tfm_import(NULL, (SELECT cfg FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', NULL, (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), NULL);
SELECT * FROM tfm_import('', (SELECT cfg FROM fx), (SELECT w FROM fx));
-- the name is taken (by a model, by a tokenizer)
SELECT * FROM tfm_import('hf_gpt2_half', (SELECT cfg FROM fx), (SELECT w FROM fx));
SELECT tfm_tokenizer_import('taken', (SELECT tok FROM fx));
SELECT * FROM tfm_import('taken', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT tok FROM fx));
SELECT tfm_tokenizer_drop('taken');
-- config.json
SELECT * FROM tfm_import('x', '[1]', (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg - 'model_type' FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{model_type}', '"llama"') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{model_type}', '"bert"') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{model_type}', '"bart"') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{architectures}', '["GPT2ForSequenceClassification"]') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{activation_function}', '"relu"') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{scale_attn_by_inverse_layer_idx}', 'true') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_head}', '5') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_embd}', '"32"') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_layer}', '2.5') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg - 'vocab_size' FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_ctx}', '32') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{eos_token_id}', '320') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), task => 'classify');
-- shapes that disagree with the config, missing and extra tensors
SELECT * FROM tfm_import('x', (SELECT jsonb_set(jsonb_set(cfg, '{n_positions}', '32'), '{n_ctx}', '32') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_inner}', '64') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{vocab_size}', '300') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg || '{"vocab_size": 300, "bos_token_id": 0, "eos_token_id": 0}' FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_layer}', '3') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{n_layer}', '1') FROM fx), (SELECT w FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT pg_temp.edit(w, 'h.0.attn.c_attn.bias', 'h.0.attn.c_attx.bias') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT pg_temp.edit(w, '"transformer.ln_f.bias"', '"transformer.ln_f.biax"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{tie_word_embeddings}', 'false') FROM fx), (SELECT w FROM fx));
-- wrong dtypes, a truncated or empty file, not a safetensors file, NaN and infinite weights
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT pg_temp.edit(w, '"F32"', '"I32"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT pg_temp.edit(w, '"F32"', '"U32"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT pg_temp.edit(w, '"F32"', '"F16"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT substring(w FROM 1 FOR length(w) - 4) FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT substring(w FROM 1 FOR 100) FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), '\x0102');
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), convert_to('{"not": "safetensors"}', 'UTF8'));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT overlay(w PLACING '\x0000c07f'::bytea FROM 9 + pg_temp.hlen(w) + 8 FOR 4) FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT overlay(w PLACING '\x0000807f'::bytea FROM length(w) - 3 FOR 4) FROM fx));
-- a tied lm_head (the last tensor of model_half.safetensors) that is not the embedding
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT overlay(wh PLACING '\x0000803f'::bytea FROM length(wh) - 3 FOR 4) FROM fx));
-- tokenizer.json: vocabulary beyond the config's, other models and options, malformed
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,vocab,zz}', '400') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,type}', '"WordPiece"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,type}', '"WordLevel"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{normalizer}', '{"type": "NFKC"}') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{pre_tokenizer}', '{"type": "Metaspace"}') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{pre_tokenizer,use_regex}', 'false') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,byte_fallback}', 'true') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,merges,0}', '"Ġ t h"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{model,merges,0}', '"zz q"') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT jsonb_set(tok, '{added_tokens,0,id}', '5') FROM fx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM fx), (SELECT w FROM fx), '"a string"');
\set VERBOSITY default
-- nothing of the failed imports was kept
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';
SELECT count(*) AS tokenizers FROM tfm.tokenizers WHERE name = 'x';
-- token ids out of the model's range
SELECT * FROM tfm_next_tokens('hf_gpt2', ARRAY[320], 1);
SELECT * FROM tfm_score('hf_gpt2', ARRAY[1, -1]);

-- ---- GPT-2's own tokenizer.json: the same tokenizer as the encoder.json + vocab.bpe import
\set enc `zcat test/fixtures/tokenizer/gpt2_encoder.json.gz`
\set bpe `zcat test/fixtures/tokenizer/gpt2_vocab.bpe.gz`
\set tj `/usr/bin/python3 test/reference/make_gpt2_tokenizer_json.py`
\set tjp `/usr/bin/python3 test/reference/make_gpt2_tokenizer_json.py --pairs`
SELECT tfm_tokenizer_import('gpt2_files', 'bpe', :'enc', :'bpe' || E'\n');
SELECT tfm_tokenizer_import('gpt2_json', :'tj'::jsonb);
SELECT tfm_tokenizer_import('gpt2_json_pairs', :'tjp'::jsonb);
SELECT t.name, t.vocab_size, t.options = f.options AS same_options,
       (SELECT array_agg(piece ORDER BY id) FROM tfm.vocab WHERE tokenizer_id = t.id)
         = (SELECT array_agg(piece ORDER BY id) FROM tfm.vocab WHERE tokenizer_id = f.id) AS same_vocab,
       (SELECT array_agg(ARRAY[left_id, right_id] ORDER BY rank) FROM tfm.merges WHERE tokenizer_id = t.id)
         = (SELECT array_agg(ARRAY[left_id, right_id] ORDER BY rank) FROM tfm.merges WHERE tokenizer_id = f.id) AS same_merges
  FROM tfm.tokenizers t, tfm.tokenizers f
 WHERE t.name IN ('gpt2_json', 'gpt2_json_pairs') AND f.name = 'gpt2_files' ORDER BY t.name;
SELECT tfm_tokenize('gpt2_json', s) = tfm_tokenize('gpt2_files', s) AS same_ids, tfm_tokenize('gpt2_json', s)
  FROM (VALUES ('Hello world, it''s 2024!'), ('  multiple   spaces\n\tand tabs'),
               ('naïve café — “quotes” 😀'), ('<|endoftext|>')) v(s);
SELECT tfm_tokenizer_import(NULL, :'tj'::jsonb);
SELECT tfm_tokenizer_import('gpt2_json', :'tj'::jsonb);

SELECT tfm_drop_model('hf_gpt2');
SELECT tfm_drop_model('hf_gpt2_half');
SELECT tfm_drop_model('hf_gpt2_files');
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name IN ('hf_gpt2', 'hf_gpt2_files', 'gpt2_files', 'gpt2_json', 'gpt2_json_pairs');
