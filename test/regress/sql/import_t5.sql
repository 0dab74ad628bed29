-- tfm_import_files / tfm_import of T5: two small random T5ForConditionalGeneration
-- checkpoints saved as Hugging Face saves them (test/reference/hf_t5_reference.py):
-- hf_t5 (T5 v1.0: relu, tied head scaled by d^-1/2, heads of d_kv 12 while
-- d_model is 32) and hf_t5_v11 (T5 v1.1 / Flan-T5: gated-gelu, untied
-- lm_head, 3 encoder and 2 decoder layers), each with T5's Unigram
-- tokenizer.json (Precompiled normaliser, Metaspace, "$A </s>").  Greedy and
-- beam-search translations are the reference's (Hugging Face's generate
-- rules: num_beams 3, its length penalty and stopping, pad suppressed).
\set ref `cat test/fixtures/hf_t5/reference.json`
\set ref11 `cat test/fixtures/hf_t5_v11/reference.json`
\set cfg11 `cat test/fixtures/hf_t5_v11/config.json`
\set tok11 `cat test/fixtures/hf_t5_v11/tokenizer.json`
\set w11 `base64 -w0 test/fixtures/hf_t5_v11/model.safetensors`
CREATE TEMP TABLE t5ref AS
SELECT m, (r->>'length_penalty')::real AS lp, s - 1 AS src, r->'sources'->>(s - 1) AS source,
       ARRAY(SELECT jsonb_array_elements_text(r->'source_ids'->(s - 1))::int) AS source_ids,
       ARRAY(SELECT jsonb_array_elements_text(r->'greedy'->(s - 1))::int) AS greedy,
       r->'beams'->(s - 1) AS beams, r->'scores'->(s - 1) AS scores
  FROM (VALUES ('t5', :'ref'::jsonb), ('t5_v11', :'ref11'::jsonb)) v(m, r), generate_series(1, 2) s;

\getenv abs_srcdir PG_ABS_SRCDIR
\set t5_dir :abs_srcdir '/../fixtures/hf_t5'
SELECT * FROM tfm_import_files('t5', :'t5_dir');
SELECT * FROM tfm_import('t5_v11', :'cfg11'::jsonb, decode(:'w11', 'base64'), :'tok11'::jsonb);
SELECT name, task, parameters, config->>'arch' AS arch, config->>'positions' AS positions,
       config->'head_size' AS d_kv, config->'rel_buckets' AS buckets,
       config->'rel_max_distance' AS max_distance, config->'ff_gated' AS gated,
       config->>'activation' AS act, config->'tie_embeddings' AS tie,
       config->'enc_layers' AS enc, config->'dec_layers' AS dec, config->'bos_id' AS start,
       config->'eos_id' AS eos
  FROM tfm.models WHERE name LIKE 't5%' ORDER BY name;
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 't5_v11' AND (t.name LIKE 'dec.0.%' OR t.name LIKE '%rel_bias' OR t.name = 'out.w')
 ORDER BY t.name;

-- the tokenizer: T5's "$A </s>" on sources, SentencePiece's ids
SELECT m, src, tfm_tokenize(m, source, add_eos => true) = source_ids AS same_ids FROM t5ref ORDER BY m, src;

-- greedy (beam 1) and beam search: the reference's ids, decoded
SELECT m, src, tfm_translate(m, source, beam => 1, max_tokens => 12) = tfm_detokenize(m, greedy) AS greedy_matches
  FROM t5ref ORDER BY m, src;
SELECT m, src, tfm_translate(m, source, beam => 3, length_penalty => lp, max_tokens => 12)
     = tfm_detokenize(m, ARRAY(SELECT jsonb_array_elements_text(beams->0)::int)) AS beam_matches
  FROM t5ref ORDER BY m, src;
-- both sources decoded together: the same
SELECT m, tfm_translate(m, array_agg(source ORDER BY src), beam => 3, length_penalty => lp, max_tokens => 12)
     = array_agg(tfm_detokenize(m, ARRAY(SELECT jsonb_array_elements_text(beams->0)::int)) ORDER BY src) AS batch_matches
  FROM t5ref GROUP BY m, lp ORDER BY m;
-- the three hypotheses and their scores (t5_v11's length penalty is tfm_translate_nbest's 0.6;
-- source 0's hypotheses end in </s> before 12 tokens, nbest's max_tokens being 2 · 21 + 10)
SELECT r.src, n.rank, n.translation = tfm_detokenize('t5_v11', ARRAY(SELECT jsonb_array_elements_text(r.beams->(n.rank - 1))::int)) AS same,
       abs(n.score - (r.scores->>(n.rank - 1))::float8) < 1e-4 AS same_score
  FROM t5ref r, tfm_translate_nbest('t5_v11', r.source, 3, 3) n
 WHERE r.m = 't5_v11' AND r.src = 0 ORDER BY r.src, n.rank;
-- mT5 (model_type mt5, MT5ForConditionalGeneration) is T5 v1.1's computation: the same beams
SELECT * FROM tfm_import('mt5', jsonb_set(jsonb_set(:'cfg11'::jsonb, '{model_type}', '"mt5"'),
                                          '{architectures}', '["MT5ForConditionalGeneration"]'),
                         decode(:'w11', 'base64'), :'tok11'::jsonb);
SELECT src, tfm_translate('mt5', source, beam => 3, length_penalty => lp, max_tokens => 12)
     = tfm_detokenize('mt5', ARRAY(SELECT jsonb_array_elements_text(beams->0)::int)) AS mt5_matches
  FROM t5ref WHERE m = 't5_v11' ORDER BY src;
SELECT config->>'imported_from' AS imported_from FROM tfm.models WHERE name = 'mt5';
SELECT tfm_drop_model('mt5');
SELECT tfm_tokenizer_drop('mt5');
-- a text-to-text prompt is a source like any other
SELECT length(tfm_translate('t5_v11', 'summarize: The quick brown fox jumps over the lazy dog.', beam => 2)) > 0 AS summarizes;

-- fine-tuning: the pairs are learned, the relative position bias trained too
CREATE TEMP TABLE pairs AS
SELECT * FROM (VALUES ('Hello world', 'Bonjour le monde'), ('The cat', 'Le chat'),
                      ('Good night', 'Bonne nuit'), ('Thank you', 'Merci')) v(s, t);
CREATE TEMP TABLE rb0 AS SELECT t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 't5_v11' AND t.name = 'enc.rel_bias';
SET client_min_messages = warning;
SELECT (array_agg(train_loss ORDER BY epoch))[20] < (array_agg(train_loss ORDER BY epoch))[1] / 2 AS learning
  FROM tfm_train('t5_v11', 'SELECT s, t FROM pairs', epochs => 20, lr => 1e-2, batch_size => 4,
                 val_fraction => 0);
RESET client_min_messages;
SELECT s, tfm_translate('t5_v11', s, beam => 1) = t AS learned FROM pairs ORDER BY s;
SELECT t.data <> (SELECT data FROM rb0) AS rel_bias_trained FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 't5_v11' AND t.name = 'enc.rel_bias';

-- what tfm refuses, by name
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, %L::bytea)', 'x',
       jsonb_set(:'cfg11'::jsonb, '{feed_forward_proj}', '"gated-silu"'), '\x'));
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, %L::bytea)', 'x',
       jsonb_set(:'cfg11'::jsonb, '{decoder_start_token_id}', '5'), '\x'));
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, %L::bytea)', 'x',
       jsonb_set(:'cfg11'::jsonb, '{architectures}', '["T5EncoderModel"]'), '\x'));
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, %L::bytea, task => %L)', 'x',
       :'cfg11'::jsonb, '\x', 'lm'));
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, %L::bytea)', 'x',
       jsonb_set(:'cfg11'::jsonb, '{relative_attention_num_buckets}', '1'), '\x'));
-- the v1.1 weights under a v1.0 config: wi_0 is not a tensor of a relu T5
SELECT pg_temp.err(format('SELECT * FROM tfm_import(%L, %L::jsonb, decode(%L, %L))', 'x',
       jsonb_set(:'cfg11'::jsonb, '{feed_forward_proj}', '"relu"'), :'w11', 'base64'));
SELECT count(*) AS models FROM tfm.models WHERE name = 'x';

SELECT tfm_drop_model('t5'), tfm_drop_model('t5_v11');
SELECT tfm_tokenizer_drop('t5'), tfm_tokenizer_drop('t5_v11');
