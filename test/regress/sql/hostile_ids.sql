-- Hostile input (issue 23, findings 4 and 5): special ids that do not fit
-- the vocabulary, sizes checked before any memory is taken, and long work
-- that a statement_timeout ends.
\set cfg `cat test/fixtures/hf_gpt2/config.json`
\set tok `cat test/fixtures/hf_gpt2/tokenizer.json`
\set w `base64 -w0 test/fixtures/hf_gpt2/model.safetensors`
CREATE TEMP TABLE fx AS
SELECT :'cfg'::jsonb AS cfg, :'tok'::jsonb AS tok, decode(:'w', 'base64') AS w;
-- a GPT-2 config of vocabulary v, width d, l layers, p positions
CREATE FUNCTION pg_temp.cfg(v int, d int, l int, p int) RETURNS jsonb LANGUAGE sql
AS $$ SELECT (cfg - 'bos_token_id' - 'eos_token_id')
             || jsonb_build_object('vocab_size', v, 'n_embd', d, 'n_head', 1, 'n_layer', l,
                                   'n_positions', p, 'n_ctx', p) FROM fx $$;
-- the tensors of that GPT-2: [[name, [dims]], ...]
CREATE FUNCTION pg_temp.spec(v int, d int, l int, p int) RETURNS jsonb LANGUAGE sql
AS $$ SELECT jsonb_build_array(jsonb_build_array('wte.weight', jsonb_build_array(v, d)),
                               jsonb_build_array('wpe.weight', jsonb_build_array(p, d)),
                               jsonb_build_array('ln_f.weight', jsonb_build_array(d)),
                               jsonb_build_array('ln_f.bias', jsonb_build_array(d)))
          || (SELECT coalesce(jsonb_agg(jsonb_build_array(format('h.%s.%s', i, t), s)), '[]')
                FROM generate_series(0, l - 1) i,
                     (VALUES ('ln_1.weight', jsonb_build_array(d)), ('ln_1.bias', jsonb_build_array(d)),
                             ('attn.c_attn.weight', jsonb_build_array(d, 3 * d)),
                             ('attn.c_attn.bias', jsonb_build_array(3 * d)),
                             ('attn.c_proj.weight', jsonb_build_array(d, d)),
                             ('attn.c_proj.bias', jsonb_build_array(d)),
                             ('ln_2.weight', jsonb_build_array(d)), ('ln_2.bias', jsonb_build_array(d)),
                             ('mlp.c_fc.weight', jsonb_build_array(d, 4 * d)),
                             ('mlp.c_fc.bias', jsonb_build_array(4 * d)),
                             ('mlp.c_proj.weight', jsonb_build_array(4 * d, d)),
                             ('mlp.c_proj.bias', jsonb_build_array(d))) x(t, s)) $$;
-- a safetensors file's length prefix and header for spec (F32), and its data's bytes
CREATE FUNCTION pg_temp.st_head(spec jsonb, OUT head bytea, OUT data bigint) LANGUAGE plpgsql AS $$
DECLARE
  h text := '';
  n bigint;
  e jsonb;
  pre bytea := '\x0000000000000000';
BEGIN
  data := 0;
  FOR e IN SELECT value FROM jsonb_array_elements(spec) LOOP
    SELECT 4 * round(exp(sum(ln(x::numeric)))) INTO n FROM jsonb_array_elements_text(e->1) x;
    h := h || CASE WHEN h = '' THEN '' ELSE ',' END
           || format('%s:{"dtype":"F32","shape":%s,"data_offsets":[%s,%s]}', e->0, e->1, data, data + n);
    data := data + n;
  END LOOP;
  head := convert_to('{' || h || '}', 'UTF8');
  FOR i IN 0..3 LOOP
    pre := set_byte(pre, i, (length(head) >> (8 * i)) & 255);
  END LOOP;
  head := pre || head;
END $$;
-- a whole small file of zeros
CREATE FUNCTION pg_temp.st(spec jsonb) RETURNS bytea LANGUAGE sql
AS $$ SELECT head || decode(repeat('00', data::int), 'hex') FROM pg_temp.st_head(spec) $$;

-- ---- special ids against the vocabulary ---------------------------------------
-- without a tokenizer tfm's specials are ids 0 to 5
SELECT * FROM tfm_create_model('hi_small', 'lm', vocab_size => 3);
-- an imported GPT-2 of vocabulary 1 naming no bos/eos: tfm's <bos> 2 is no row of it
SELECT * FROM tfm_import('hi_v1', pg_temp.cfg(1, 4, 1, 8), pg_temp.st(pg_temp.spec(1, 4, 1, 8)));
-- naming them (id 0) it imports, and its loss can only be 0
SELECT * FROM tfm_import('hi_v1', pg_temp.cfg(1, 4, 1, 8) || '{"bos_token_id": 0, "eos_token_id": 0}',
                         pg_temp.st(pg_temp.spec(1, 4, 1, 8)));
CREATE TEMP TABLE v1_rows AS SELECT ARRAY[0, 0, 0, 0, 0, 0, 0, 0]::int[] AS ids FROM generate_series(1, 3);
SELECT loss, tokens FROM tfm_evaluate('hi_v1', 'SELECT ids FROM v1_rows');
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('hi_v1', 'SELECT ids FROM v1_rows', epochs => 1);
RESET client_min_messages;
SELECT * FROM tfm_score('hi_v1', ARRAY[0, 1]);
SELECT * FROM tfm_generate_tokens('hi_v1', ARRAY[0, 3], max_tokens => 1);
-- a catalog row without them (as a 0.3 import could be) is refused at every use
UPDATE tfm.models SET config = config - 'bos_id' - 'eos_id', version = version + 1000 WHERE name = 'hi_v1';
SELECT loss FROM tfm_evaluate('hi_v1', 'SELECT ids FROM v1_rows');
SELECT count(*) FROM tfm_train('hi_v1', 'SELECT ids FROM v1_rows', epochs => 1);
SELECT * FROM tfm_generate_tokens('hi_v1', ARRAY[0], max_tokens => 1);
SELECT tfm_drop_model('hi_v1');
-- a tokenizer.json whose <bos> and <eos> land past the checkpoint's vocabulary
SELECT * FROM tfm_import('hi_tok', (SELECT cfg - 'bos_token_id' - 'eos_token_id' FROM fx),
                         (SELECT w FROM fx), (SELECT tok FROM fx));
SELECT count(*) AS left_behind FROM tfm.tokenizer_list WHERE name = 'hi_tok';
-- with the config's own bos and eos (319) the same files import
SELECT * FROM tfm_import('hi_tok', (SELECT cfg FROM fx), (SELECT w FROM fx), (SELECT tok FROM fx));
SELECT loss > 0 AS has_loss FROM tfm_evaluate('hi_tok', $$SELECT 'the theme of the thing' AS t$$);
SELECT tfm_drop_model('hi_tok');
SELECT tfm_tokenizer_drop('hi_tok');

-- ---- validate, then allocate ---------------------------------------------------
-- 18 bytes for GPT-2 small's 124M parameters: refused before any model is built
SELECT * FROM tfm_import('hi_big', pg_temp.cfg(50257, 768, 12, 1024) || '{"n_head": 12}',
                         '\x000102030405060708090a0b0c0d0e0f1011'::bytea);
-- the superuser's caps on model size: parameters at create and copy,
-- bytes stored at import
SELECT * FROM tfm_create_model('hi_src', 'lm', vocab_size => 7, d_model => 8, heads => 2, layers => 1, max_len => 8);
SET tfm.max_parameters = 1000;
SHOW tfm.max_parameters;
SELECT * FROM tfm_create_model('hi_cap', 'lm', vocab_size => 1000, d_model => 64, layers => 1);
SET tfm.max_model_bytes = '64kB';
SHOW tfm.max_model_bytes;
SELECT * FROM tfm_import('hi_cap', (SELECT cfg FROM fx), (SELECT w FROM fx));
RESET tfm.max_model_bytes;
SELECT tfm_copy_model('hi_src', 'hi_cap');
SELECT count(*) AS created FROM tfm.models WHERE name = 'hi_cap';
RESET tfm.max_parameters;
SELECT tfm_copy_model('hi_src', 'hi_cap');
SELECT tfm_drop_model('hi_cap');
SELECT tfm_drop_model('hi_src');
-- only a superuser sets it
CREATE ROLE hi_nobody;
SET ROLE hi_nobody;
SET tfm.max_parameters = 3e9;
SET tfm.max_parameters = 100;
SET tfm.max_model_bytes = '1TB';
RESET ROLE;
DROP ROLE hi_nobody;

-- ---- a statement_timeout ends long work ----------------------------------------
SET statement_timeout = '1s';
-- BLEU of two 12 MB texts
SELECT tfm_bleu(repeat('the cat sat on the mat . ', 500000), repeat('a cat sat on a mat ! ', 570000));
-- initialising a 100M-parameter model
SELECT * FROM tfm_create_model('hi_huge', 'lm', vocab_size => 32000, d_model => 768, layers => 12, max_len => 512);
RESET statement_timeout;
-- importing GPT-2 small from a server directory (a sparse file of zeros)
-- (written with COPY TO PROGRAM, commands not echoed: they name the backend's pid)
\set ECHO none
SELECT '/tmp/tfm_hostile_ids_' || pg_backend_pid() AS dir \gset
SELECT head, data FROM pg_temp.st_head(pg_temp.spec(50257, 768, 12, 1024)) \gset
SELECT format('COPY (SELECT %L) TO PROGRAM %L', pg_temp.cfg(50257, 768, 12, 1024) || '{"n_head": 12}',
              format('mkdir -p %s && cat > %s/config.json', :'dir', :'dir')) \gexec
SELECT format('COPY (SELECT %L) TO PROGRAM %L', translate(encode(:'head'::bytea, 'base64'), E'\n', ''),
              format('base64 -d > %s/model.safetensors && truncate -s %s %s/model.safetensors',
                     :'dir', length(:'head'::bytea) + :data, :'dir')) \gexec
\set ECHO all
SET statement_timeout = '1s';
SELECT * FROM tfm_import_files('hi_files', :'dir');
RESET statement_timeout;
\set ECHO none
SELECT format('COPY (SELECT 1) TO PROGRAM %L', format('rm -r %s', :'dir')) \gexec
\set ECHO all
SELECT count(*) AS left_behind FROM tfm.models WHERE name LIKE 'hi\_%';
