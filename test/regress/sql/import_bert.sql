-- tfm_import of the BERT family: small random bert, roberta and distilbert
-- encoders saved as Hugging Face saves them (test/reference/hf_bert_reference.py),
-- base models and ...ForSequenceClassification ones, against PyTorch
SET tfm.progress = off;
CREATE TEMP TABLE fx (arch text, cfg jsonb, cfg_cls jsonb, w bytea, w_cls bytea, ref jsonb);
\set cfg `cat test/fixtures/hf_bert/config.json`
\set cfgc `cat test/fixtures/hf_bert/config_cls.json`
\set w `base64 -w0 test/fixtures/hf_bert/model.safetensors`
\set wc `base64 -w0 test/fixtures/hf_bert/model_cls.safetensors`
\set ref `cat test/fixtures/hf_bert/reference.json`
INSERT INTO fx VALUES ('bert', :'cfg', :'cfgc', decode(:'w', 'base64'), decode(:'wc', 'base64'), :'ref');
\set cfg `cat test/fixtures/hf_roberta/config.json`
\set cfgc `cat test/fixtures/hf_roberta/config_cls.json`
\set w `base64 -w0 test/fixtures/hf_roberta/model.safetensors`
\set wc `base64 -w0 test/fixtures/hf_roberta/model_cls.safetensors`
\set ref `cat test/fixtures/hf_roberta/reference.json`
INSERT INTO fx VALUES ('roberta', :'cfg', :'cfgc', decode(:'w', 'base64'), decode(:'wc', 'base64'), :'ref');
\set cfg `cat test/fixtures/hf_distilbert/config.json`
\set cfgc `cat test/fixtures/hf_distilbert/config_cls.json`
\set w `base64 -w0 test/fixtures/hf_distilbert/model.safetensors`
\set wc `base64 -w0 test/fixtures/hf_distilbert/model_cls.safetensors`
\set ref `cat test/fixtures/hf_distilbert/reference.json`
INSERT INTO fx VALUES ('distilbert', :'cfg', :'cfgc', decode(:'w', 'base64'), decode(:'wc', 'base64'), :'ref');
-- every reference input: its ids (with [CLS] ... [SEP] or <s> ... </s>),
-- mean-pooled embedding, logits and probabilities
CREATE TEMP TABLE cases AS
SELECT arch, n, ARRAY(SELECT jsonb_array_elements_text(i)::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(ref->'mean'->(n::int - 1))::real) AS mean,
       ref->'probs'->(n::int - 1) AS probs, ref->'labels' AS labels
  FROM fx, jsonb_array_elements(ref->'ids') WITH ORDINALITY AS t(i, n);

SELECT t.* FROM fx, tfm_import('hf_' || arch, cfg, w) t ORDER BY arch;
SELECT t.* FROM fx, tfm_import('hf_' || arch || '_cls', cfg_cls, w_cls, task => 'classify') t ORDER BY arch;
SELECT name, task, labels, config->>'pooling' AS pooling, config->'pad_id' AS pad_id,
       config->'type_vocab' AS types, config->'pos_offset' AS pos_offset,
       config->>'cls_pre' AS cls_pre, config->'layer_norm_eps' AS eps, config->>'imported_from' AS origin
  FROM tfm.models ORDER BY name;

-- tfm_embed of a base model: the mean over real tokens, within 1e-4 of PyTorch
SELECT arch, count(*) AS inputs,
       max((SELECT max(abs(a - b)) FROM unnest(tfm_embed('hf_' || arch, ids), mean) AS u(a, b))) < 1e-4 AS embed_matches
  FROM cases GROUP BY arch ORDER BY arch;
-- the head: every probability within 1e-4 of PyTorch's softmax(logits)
SELECT arch, count(*) AS inputs,
       max(abs(p.probability - (c.probs->>(array_position(ARRAY(SELECT jsonb_array_elements_text(c.labels)), p.label) - 1))::float8)) < 1e-4 AS probs_match
  FROM cases c, tfm_predict_proba('hf_' || arch || '_cls', c.ids) p
 GROUP BY arch ORDER BY arch;
SELECT arch, n, tfm_classify('hf_' || arch || '_cls', ids) FROM cases WHERE n <= 2 ORDER BY arch, n;

-- fine-tuning an imported classifier: every layer trains; its loss on the rows falls
CREATE TEMP TABLE ft AS
SELECT ids, CASE WHEN n % 2 = 0 THEN 'positive' ELSE 'negative' END AS label
  FROM cases WHERE arch = 'bert';
SELECT loss AS before_loss FROM tfm_evaluate('hf_bert_cls', 'SELECT ids, label FROM ft') \gset
SELECT count(*) AS epochs FROM tfm_train('hf_bert_cls', 'SELECT ids, label FROM ft', epochs => 20,
                                         lr => 1e-3, val_fraction => 0, batch_size => 6);
SELECT loss < :before_loss AS loss_fell FROM tfm_evaluate('hf_bert_cls', 'SELECT ids, label FROM ft');

-- bad inputs, each refused by name
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"position_embedding_type": "relative_key"}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"is_decoder": true}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"add_cross_attention": true}', w)) FROM fx WHERE arch = 'roberta';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"hidden_act": "relu"}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"sinusoidal_pos_embds": true}', w)) FROM fx WHERE arch = 'distilbert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"architectures": ["BertForMaskedLM"]}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg_cls || '{"problem_type": "multi_label_classification"}', w_cls)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg_cls || '{"id2label": {"0": "a", "2": "b"}}', w_cls)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea, task => %L)', 'x', cfg, w, 'lm')) FROM fx WHERE arch = 'bert';
-- shapes that disagree with the config, missing tensors, a head where none is expected
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"max_position_embeddings": 33}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"num_hidden_layers": 3}', w)) FROM fx WHERE arch = 'bert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"n_layers": 1}', w)) FROM fx WHERE arch = 'distilbert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg_cls, w)) FROM fx WHERE arch = 'roberta';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg, w_cls)) FROM fx WHERE arch = 'distilbert';
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea)', 'x', cfg || '{"type_vocab_size": 3}', w)) FROM fx WHERE arch = 'bert';
-- tokenizer.json: WordPiece with BERT's normalizer and pre-tokenizer; the
-- model reads text as the post-processor's [CLS] text [SEP]
\set tok `cat test/fixtures/hf_bert/tokenizer.json`
SELECT t.* FROM fx, tfm_import('hf_bert_text', cfg_cls, w_cls, :'tok') t WHERE arch = 'bert';
SELECT name, kind, vocab_size FROM tfm.tokenizer_list WHERE name = 'hf_bert_text';
CREATE TEMP TABLE texts AS
SELECT n, t, ARRAY(SELECT jsonb_array_elements_text(ref->'text_ids'->(n::int - 1))::int) AS ref_ids
  FROM fx, jsonb_array_elements_text(ref->'texts') WITH ORDINALITY AS a(t, n) WHERE arch = 'bert';
-- tfm_tokenize adds no specials: [CLS] and [SEP] (ids 2 and 3) around it are the reference's ids
SELECT n, ARRAY[2] || tfm_tokenize('hf_bert_text', t) || ARRAY[3] = ref_ids AS ids_match,
       tfm_tokenize('hf_bert_text', t) AS ids
  FROM texts ORDER BY n;
SELECT tfm_detokenize('hf_bert_text', tfm_tokenize('hf_bert_text', 'Unaffable RUNNING, naïve!'));
-- text in, the reference's probabilities out
SELECT count(*) AS probabilities,
       max(abs(p.probability - (c.probs->>(array_position(ARRAY(SELECT jsonb_array_elements_text(c.labels)), p.label) - 1))::float8)) < 1e-4 AS probs_match
  FROM cases c JOIN texts x ON x.ref_ids = c.ids, tfm_predict_proba('hf_bert_text', x.t) p
 WHERE c.arch = 'bert';
-- tfm_import_files: a base model's directory (config.json, model.safetensors,
-- tokenizer.json); tfm_embed on text is the reference's mean-pooled embedding
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixture_dir :abs_srcdir '/../fixtures/hf_bert'
SELECT * FROM tfm_import_files('hf_bert_files', :'fixture_dir');
SELECT count(*) AS texts,
       max((SELECT max(abs(a - b)) FROM unnest(tfm_embed('hf_bert_files', x.t), c.mean) AS u(a, b))) < 1e-4 AS embed_matches
  FROM cases c JOIN texts x ON x.ref_ids = c.ids WHERE c.arch = 'bert';
-- the tokenizer alone
SELECT tfm_tokenizer_import('bert_wp', :'tok');
SELECT tfm_tokenize('bert_wp', 'The lazy dog!');
-- what is refused, by name
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{normalizer,clean_text}', 'false')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{normalizer,strip_accents}', '"yes"')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{normalizer}', '{"type": "NFKC"}')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{pre_tokenizer}', '{"type": "Whitespace"}')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', :'tok'::jsonb - 'post_processor'));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{model,continuing_subword_prefix}', '"@@"')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{model,unk_token}', '"<unk>"')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{model,vocab,dog}', '500')));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L::jsonb)', 'x', jsonb_set(:'tok'::jsonb, '{post_processor,single,0}', '{"Sequence": {"id": "A", "type_id": 0}}')));
SELECT pg_temp.err(format('SELECT tfm_import(%L, %L::jsonb, %L::bytea, %L::jsonb)', 'x', cfg || '{"vocab_size": 50}', w, :'tok')) FROM fx WHERE arch = 'bert';
SELECT tfm_tokenizer_drop('bert_wp');
SELECT count(*) AS models FROM tfm.models;
SELECT count(tfm_drop_model(name)) AS dropped FROM tfm.models
 WHERE config->>'imported_from' IN ('bert', 'roberta', 'distilbert');
SELECT tfm_tokenizer_drop('hf_bert_text');
SELECT tfm_tokenizer_drop('hf_bert_files');
