-- tfm_import_files of a Marian (opus-mt) directory: a small random
-- MarianMTModel saved as Hugging Face saves it with its source.spm,
-- target.spm and vocab.json (test/reference/hf_marian_reference.py; the
-- tokens of test/reference/hf_marian_tokens.py, from the sentencepiece
-- module), against its PyTorch reference
\set ref `cat test/fixtures/hf_marian/reference.json`
\set tok `cat test/fixtures/hf_marian/tokens.json`
\set cfg `cat test/fixtures/hf_marian/config.json`
CREATE TEMP TABLE mfx AS SELECT :'ref'::jsonb AS ref, :'tok'::jsonb AS tok, :'cfg'::jsonb AS cfg;
CREATE TEMP TABLE mcases AS
SELECT n, c->>'source' AS source,
       ARRAY(SELECT jsonb_array_elements_text(c->'src')::int) AS src,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       ARRAY(SELECT jsonb_array_elements_text(c->'beam4_lp1.0')::int) AS beam10,
       ARRAY(SELECT jsonb_array_elements_text(c->'beam4_lp0.6')::int) AS beam06
  FROM mfx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set marian_dir :abs_srcdir '/../fixtures/hf_marian'
SELECT * FROM tfm_import_files('marian', :'marian_dir');
SELECT name, task, tokenizer, target_tokenizer, parameters, config->>'activation' AS activation,
       config->'sinus_halves' AS sinus_halves, config->'out_bias' AS out_bias,
       config->>'norm' AS norm, config->'bos_id' AS bos, config->'eos_id' AS eos,
       config->'pad_id' AS pad
  FROM tfm.models WHERE name = 'marian';
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'marian' AND (t.name LIKE 'dec.0.%' OR t.name NOT LIKE '%.%.%') ORDER BY t.name;

-- the tokenizers id for id against MarianTokenizer's (the sentencepiece
-- module's pieces through vocab.json) on mixed texts: the source's texts
-- end with </s>; a character the side's model lacks is an unknown piece
-- whose text vocab.json may still have (the other side's model has "-",
-- "ï", ...): its id then, as MarianTokenizer looks it up, else <unk>
SELECT count(*) AS texts,
       count(*) FILTER (WHERE tfm_tokenize('marian', t, add_eos => true) = ARRAY(SELECT jsonb_array_elements_text(tok->'source'->(n::int - 1))::int)) AS source_equal,
       count(*) FILTER (WHERE tfm_tokenize('marian_target', t) = ARRAY(SELECT jsonb_array_elements_text(tok->'target'->(n::int - 1))::int)) AS target_equal
  FROM mfx, jsonb_array_elements_text(tok->'texts') WITH ORDINALITY AS x(t, n);
SELECT n, tfm_tokenize('marian', source, add_eos => true) = src AS source_ids FROM mcases ORDER BY n;
-- a target-language code as MarianTokenizer takes it: at the start a token
-- (this model's vocab.json has none: <unk>, id 1), anywhere taken out
SELECT tfm_tokenize('marian', '>>fra<< I like the cat.') AS with_code,
       tfm_tokenize('marian', '>>fra<< I like the cat.') = 1 || tfm_tokenize('marian', 'I like the cat.') AS code_then_text,
       tfm_tokenize('marian', 'I like >>fra<< the cat.') = tfm_tokenize('marian', 'I like  the cat.') AS elsewhere_removed;

-- beam search as Hugging Face's generate (num_beams 4, max_length 24 =
-- max_tokens 23 after the start): the reference's ids, start and eos removed
SELECT n, tfm_translate('marian', source, beam => 4, length_penalty => 1.0, max_tokens => 23)
          = tfm_detokenize('marian_target', beam10[2:]) AS beam_lp1_matches,
       tfm_translate('marian', source, beam => 4, length_penalty => 0.6, max_tokens => 23)
          = tfm_detokenize('marian_target', beam06[2:]) AS beam_lp06_matches
  FROM mcases ORDER BY n;
-- tfm_translate_nbest's first hypothesis is the same beam search's
SELECT n, (SELECT translation FROM tfm_translate_nbest('marian', source, 4, 4, length_penalty => 1.0, max_tokens => 23)
            WHERE rank = 1) = tfm_detokenize('marian_target', beam10[2:]) AS nbest_lp1_matches
  FROM mcases ORDER BY n;
-- the options left NULL are the model's generate() settings: its
-- generation_config.json's num_beams 4 and max_length 24, and generate's
-- length_penalty 1.0 (the file states none)
SELECT config->'generation' AS generation FROM tfm.models WHERE name = 'marian';
SELECT n, tfm_translate('marian', source) = tfm_detokenize('marian_target', beam10[2:]) AS defaults_match,
       (SELECT count(*) FROM tfm_translate_nbest('marian', source)) AS nbest_rows
  FROM mcases ORDER BY n;
-- beam 1 is generate's greedy search (num_beams 1): the reference's greedy ids
SELECT n, tfm_translate('marian', source, beam => 1, max_tokens => 23)
          = tfm_detokenize('marian_target', greedy[2:]) AS greedy_matches
  FROM mcases ORDER BY n;
SELECT tfm_translate('marian', ARRAY(SELECT source FROM mcases ORDER BY n), beam => 4,
                     length_penalty => 1.0, max_tokens => 23)
     = ARRAY(SELECT tfm_detokenize('marian_target', beam10[2:]) FROM mcases ORDER BY n) AS batch_matches;

-- fine-tuning: one epoch on a pair makes its target more likely
CREATE TEMP TABLE mft AS SELECT 'I like the cat.'::text AS en, 'J''aime le chat.'::text AS fr
  FROM generate_series(1, 8);
SELECT loss AS before FROM tfm_evaluate('marian', 'SELECT en, fr FROM mft') \gset
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('marian', 'SELECT en, fr FROM mft', epochs => 2, lr => 3e-3,
                                         batch_size => 8, val_fraction => 0);
RESET client_min_messages;
SELECT loss < :before AS loss_fell FROM tfm_evaluate('marian', 'SELECT en, fr FROM mft');

-- what tfm refuses, by name
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{activation_function}', '"tanh"') FROM mfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{decoder_ffn_dim}', '128') FROM mfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{share_encoder_decoder_embeddings}', 'false') FROM mfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{decoder_start_token_id}', '0') FROM mfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT jsonb_set(cfg, '{normalize_before}', 'true') FROM mfx), '\x'::bytea);
SELECT * FROM tfm_import('x', (SELECT cfg FROM mfx), '\x'::bytea, task => 'lm');

-- the same from the files' bytes: tfm_import_marian
\set mw `base64 -w0 test/fixtures/hf_marian/model.safetensors`
\set ms `base64 -w0 test/fixtures/hf_marian/source.spm`
\set mt `base64 -w0 test/fixtures/hf_marian/target.spm`
\set voc `cat test/fixtures/hf_marian/vocab.json`
CREATE TEMP TABLE mbytes AS
SELECT cfg, decode(:'mw', 'base64') AS w, decode(:'ms', 'base64') AS s, decode(:'mt', 'base64') AS t,
       :'voc'::jsonb AS v FROM mfx;
SELECT * FROM tfm_import_marian('marian_b', (SELECT cfg FROM mbytes), (SELECT w FROM mbytes),
                                (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
SELECT count(*) AS beam_matches FROM mcases
 WHERE tfm_translate('marian_b', source, beam => 4, length_penalty => 1.0, max_tokens => 23)
       = tfm_detokenize('marian_b_target', beam10[2:]);
SELECT a.name, b.name, a.vocab_size = b.vocab_size AS same_size, a.options = b.options AS same_options,
       a.model_data = b.model_data AS same_model_data
  FROM tfm.tokenizers a JOIN tfm.tokenizers b
    ON (a.name, b.name) IN (('marian', 'marian_b'), ('marian_target', 'marian_b_target'))
 ORDER BY a.name;
SELECT * FROM tfm_import_marian('marian_c', (SELECT cfg FROM mbytes), (SELECT w FROM mbytes),
                                NULL, (SELECT t FROM mbytes), (SELECT v FROM mbytes));
-- the bytes' import reads generate's keys from config.json
SELECT config->'generation' AS generation FROM tfm.models WHERE name = 'marian_b';
SELECT * FROM tfm_import_marian('marian_gen', (SELECT cfg || '{"num_beams": 2, "length_penalty": 0.8, "max_new_tokens": 5}' FROM mbytes),
                                (SELECT w FROM mbytes), (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
SELECT config->'generation' AS generation FROM tfm.models WHERE name = 'marian_gen';
SELECT tfm_translate('marian_gen', source) = tfm_translate('marian_gen', source, beam => 2, length_penalty => 0.8, max_tokens => 5)
       AS its_defaults, (SELECT count(*) FROM tfm_translate_nbest('marian_gen', source)) AS nbest_rows
  FROM mcases WHERE n = 1;
SELECT * FROM tfm_import_marian('marian_bad', (SELECT cfg || '{"num_beams": 0}' FROM mbytes),
                                (SELECT w FROM mbytes), (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
SELECT * FROM tfm_import_marian('marian_bad', (SELECT cfg || '{"length_penalty": -1}' FROM mbytes),
                                (SELECT w FROM mbytes), (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
SELECT * FROM tfm_import_marian('marian_bad', (SELECT cfg || '{"max_length": 1}' FROM mbytes),
                                (SELECT w FROM mbytes), (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
-- a vocab.json that lacks a piece of the model file, or is not the model's size
SELECT * FROM tfm_import_marian('marian_c', (SELECT cfg FROM mbytes), (SELECT w FROM mbytes),
                                (SELECT s FROM mbytes), (SELECT t FROM mbytes),
                                (SELECT v - '▁' || '{"▁_": 3}' FROM mbytes));
SELECT * FROM tfm_import_marian('marian_c', (SELECT cfg FROM mbytes), (SELECT w FROM mbytes),
                                (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v - '<pad>' FROM mbytes));
-- the model files are read strictly: 300 truncated or altered copies of
-- source.spm are imported or refused with an error of class 22 or 0A,
-- never anything else
CREATE TEMP TABLE fuzz (outcome text);
DO $$
DECLARE
  r record;
  m bytea;
  pos int;
BEGIN
  SELECT * INTO r FROM mbytes;
  FOR i IN 1..300 LOOP
    m := r.s;
    IF i <= 100 THEN
      m := substring(r.s FROM 1 FOR (i * 7919) % length(r.s));
    ELSIF i <= 200 THEN
      pos := (i * 104729) % 4096;          -- the pieces and the specs before the charsmap
      m := set_byte(m, pos, (get_byte(m, pos) + i) % 256);
    ELSE
      pos := (i * 104729) % length(r.s);
      m := set_byte(m, pos, 255 - get_byte(m, pos));
    END IF;
    BEGIN
      PERFORM tfm_import_marian('fz', r.cfg, r.w, m, r.t, r.v);
      RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'imported';
    EXCEPTION WHEN OTHERS THEN
      INSERT INTO fuzz VALUES (CASE WHEN SQLSTATE = 'P0001' THEN 'imported'
                                    WHEN left(SQLSTATE, 2) IN ('22', '0A') THEN 'refused'
                                    ELSE SQLSTATE || ' ' || SQLERRM END);
    END;
  END LOOP;
END $$;
SELECT outcome, count(*) FROM fuzz GROUP BY outcome ORDER BY outcome;
-- an ordinary role imports (its generation settings stored as tfm's own
-- catalog write, not with the caller's rights: 0.4 failed with "permission
-- denied for table models")
CREATE ROLE tfm_r_mimporter;
GRANT SELECT ON mbytes TO tfm_r_mimporter;
SET ROLE tfm_r_mimporter;
SELECT model, model_task FROM tfm_import_marian('marian_role',
       (SELECT cfg || '{"num_beams": 2}' FROM mbytes), (SELECT w FROM mbytes),
       (SELECT s FROM mbytes), (SELECT t FROM mbytes), (SELECT v FROM mbytes));
SELECT config->'generation' AS generation, owner FROM tfm.models WHERE name = 'marian_role';
SELECT tfm_drop_model('marian_role');
SELECT tfm_tokenizer_drop('marian_role');
SELECT tfm_tokenizer_drop('marian_role_target');
RESET ROLE;
DROP TABLE mbytes;
DROP ROLE tfm_r_mimporter;
SELECT tfm_drop_model('marian_gen');
SELECT tfm_tokenizer_drop('marian_gen');
SELECT tfm_tokenizer_drop('marian_gen_target');
SELECT tfm_drop_model('marian_b');
SELECT tfm_tokenizer_drop('marian_b');
SELECT tfm_tokenizer_drop('marian_b_target');
SELECT tfm_drop_model('marian');
SELECT tfm_tokenizer_drop('marian');
SELECT tfm_tokenizer_drop('marian_target');
