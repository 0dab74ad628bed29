-- tfm_import of a Llama: a small random LlamaForCausalLM saved as Hugging
-- Face saves it (test/reference/hf_llama_reference.py: 2 layers, d 48, 4
-- heads sharing 2 key/value heads, untied head) against its PyTorch reference
\set cfg `cat test/fixtures/hf_llama/config.json`
\set tok `cat test/fixtures/hf_llama/tokenizer.json`
\set w `base64 -w0 test/fixtures/hf_llama/model.safetensors`
\set ref `cat test/fixtures/hf_llama/reference.json`
CREATE TEMP TABLE lfx AS
SELECT :'cfg'::jsonb AS cfg, :'tok'::jsonb AS tok, decode(:'w', 'base64') AS w, :'ref'::jsonb AS ref;
CREATE TEMP TABLE lcases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM lfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

SELECT * FROM tfm_import('llama', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT tok FROM lfx));
SELECT name, task, tokenizer, parameters, config->>'arch' AS arch, config->>'positions' AS positions,
       config->'heads' AS heads, config->'kv_heads' AS kv_heads, config->'rope_theta' AS rope_theta,
       config->'layer_norm_eps' AS eps, config->'tie_embeddings' AS tie,
       config->'bos_id' AS bos_id, config->'eos_id' AS eos_id
  FROM tfm.models WHERE name = 'llama';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'llama' AND (t.name NOT LIKE 'dec._.%' OR t.name LIKE 'dec.0.%') ORDER BY t.name;

-- the next-token distribution after every input: log-probabilities within 1e-4 of PyTorch's
SELECT n, count(*) AS tokens,
       max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM lcases c, tfm_next_tokens('llama', c.ids, 1000) t
 GROUP BY n ORDER BY n;
-- every position of the 5-token input, through growing prefixes
SELECT count(*) AS compared,
       max(abs(ln(t.probability) - (c.logprobs->(p - 1)->>(t.id))::float8)) < 1e-4 AS logprobs_match
  FROM lcases c, generate_series(1, 5) p, tfm_next_tokens('llama', c.ids[1:p], 1000) t
 WHERE array_length(c.ids, 1) = 5;
-- tfm_score: the sum of next-token log-probabilities
SELECT n, (s).tokens, abs((s).logprob - score) < 1e-3 AS score_matches
  FROM (SELECT n, score, tfm_score('llama', ids) AS s FROM lcases) x ORDER BY n;
-- greedy generation with the key/value cache: the reference's ids
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('llama', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS greedy_matches
  FROM lcases ORDER BY n;

-- the SentencePiece-style tokenizer: the reference encoder's ids and HF's decoding on every text
-- (the reference encoder reads "<s>" in a text as characters: split_special_tokens on)
SELECT name, kind, vocab_size, merges FROM tfm.tokenizer_list WHERE name = 'llama';
SET tfm.split_special_tokens = on;
SELECT n, tfm_tokenize('llama', x->>'text') = ARRAY(SELECT jsonb_array_elements_text(x->'ids')::int) AS ids_match,
       tfm_detokenize('llama', tfm_tokenize('llama', x->>'text')) = x->>'decoded' AS decode_match
  FROM lfx, jsonb_array_elements(ref->'texts') WITH ORDINALITY AS t(x, n) ORDER BY n;
SELECT tfm_tokenize('llama', '<s> is plain text here') AS split_specials;
RESET tfm.split_special_tokens;
-- by default (Hugging Face's) the added token <s> in a text is its id, 1
SELECT tfm_tokenize('llama', '<s> is plain text here') AS specials_matched;
SELECT tfm_tokenize('llama', 'Hello world', add_bos => true, add_eos => true);
SELECT * FROM tfm_tokens('llama', 'naïve café');
SELECT tfm_detokenize('llama', ARRAY[1, 358, 345, 2, 0, 376, 198]);
SELECT tfm_detokenize('llama', ARRAY[379]);
-- text in: <s> first, as the file's post-processor puts it (tfm_tokenize adds it when asked)
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('llama', 'the cat sat on the mat.', max_tokens => 10, temperature => 0) ORDER BY pos)
     = ARRAY(SELECT id FROM tfm_generate_tokens('llama', tfm_tokenize('llama', 'the cat sat on the mat.', add_bos => true),
                                                max_tokens => 10, temperature => 0) ORDER BY pos)
       AS text_equals_ids;
SELECT (tfm_score('llama', 'the cat sat')).tokens AS scored,
       abs((tfm_score('llama', 'the cat sat')).logprob
           - (tfm_score('llama', tfm_tokenize('llama', 'the cat sat', add_bos => true))).logprob) < 1e-9 AS same_score;
-- a continuation keeps its first space: prompt || continuation is the whole text decoded
SELECT 'the cat sat' || tfm_generate('llama', 'the cat sat', max_tokens => 6, temperature => 0)
     = tfm_detokenize('llama', tfm_tokenize('llama', 'the cat sat', add_bos => true)
                      || ARRAY(SELECT id FROM tfm_generate_tokens('llama', 'the cat sat', max_tokens => 6, temperature => 0) ORDER BY pos))
       AS continuation_matches;

-- tfm_import_files: the same directory on the server gives the same model and tokenizer
\getenv abs_srcdir PG_ABS_SRCDIR
\set llama_dir :abs_srcdir '/../fixtures/hf_llama'
SELECT * FROM tfm_import_files('llama_files', :'llama_dir');
SELECT count(*) AS differing
  FROM lcases c, tfm_next_tokens('llama', c.ids, 1000) a
  JOIN LATERAL tfm_next_tokens('llama_files', c.ids, 1000) b ON a.id = b.id
 WHERE a.probability <> b.probability;
SELECT tfm_tokenize('llama_files', 'naïve café — 東京 🙂') = tfm_tokenize('llama', 'naïve café — 東京 🙂') AS same_ids;
SELECT tfm_drop_model('llama_files');
SELECT tfm_tokenizer_drop('llama_files');

-- fine-tuning the imported Llama (token-id rows): its log-probability of the rows rises
CREATE TEMP TABLE lft AS
SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, (i % 5) + 300] AS ids FROM generate_series(1, 40) i;
SELECT (tfm_score('llama', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob AS before \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('llama', 'SELECT ids FROM lft', epochs => 2, lr => 1e-3, batch_size => 8);
RESET client_min_messages;
SELECT (tfm_score('llama', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331, 316, 302])).logprob > :before AS more_likely;

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_scaling}', '{"type": "linear", "factor": 2.0}') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg || '{"sliding_window": 4096}' FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg || '{"use_sliding_window": true}' FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{attention_bias}', 'true') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{mlp_bias}', 'true') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{hidden_act}', '"gelu"') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg || '{"head_dim": 16}' FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{num_key_value_heads}', '3') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{num_attention_heads}', '16') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{attention_dropout}', '0.1') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{eos_token_id}', '[2, 3]') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{rope_theta}', '0') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{architectures}', '["LlamaForSequenceClassification"]') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg - 'hidden_size' FROM lfx), (SELECT w FROM lfx));
-- weights that disagree with the config
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{intermediate_size}', '100') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{num_hidden_layers}', '3') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{num_hidden_layers}', '1') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{num_key_value_heads}', '4') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{tie_word_embeddings}', 'true') FROM lfx), (SELECT w FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), substring((SELECT w FROM lfx) FROM 1 FOR 5000));
-- tokenizers that are not Llama 2's kind
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT tok - 'normalizer' FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{normalizer}', '{"type": "NFKC"}') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{normalizer,normalizers,0,prepend}', '"_"') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{pre_tokenizer}', '{"type": "Metaspace", "replacement": "▁"}') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{decoder}', '{"type": "Metaspace"}') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{post_processor}', '{"type": "ByteLevel"}') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,dropout}', '0.1') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,unk_token}', 'null') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT tok #- '{model,vocab,</s>}' FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,vocab,a}', '0') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,vocab,zz}', '5000') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,merges,0}', '"▁t qq"') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT cfg FROM lfx), (SELECT w FROM lfx), (SELECT jsonb_set(tok, '{model,merges,0}', '"▁ a"') FROM lfx));
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{vocab_size}', '300') FROM lfx), (SELECT w FROM lfx), (SELECT tok FROM lfx));
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('llama');
SELECT tfm_tokenizer_drop('llama');
