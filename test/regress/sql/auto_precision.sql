-- tfm.precision = auto is the checkpoint's own precision (whatever the CPU):
-- each import records what its matrices were (config checkpoint_precision)
-- and auto runs the imported version at it; tfm_model_precision says what
-- one model runs at and why; tfm.precision and tfm_set_precision still win
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/../fixtures'
\set cfg `cat test/fixtures/hf_llama/config.json`
\set w `base64 -w0 test/fixtures/hf_llama/model.safetensors`
\set ref `cat test/fixtures/hf_llama/reference.json`
\set wb `base64 -w0 test/fixtures/hf_llama/model_bf16.safetensors`
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET client_min_messages = warning;
SELECT * FROM tfm_import('ap_st', :'cfg'::jsonb, decode(:'w', 'base64'));
-- the same saved in bfloat16 (test/reference/make_bf16_safetensors.py)
SELECT * FROM tfm_import('ap_st_bf16', :'cfg'::jsonb, decode(:'wb', 'base64'));
SELECT * FROM tfm_import_gguf_file('ap_f32', :'fixtures' || '/gguf/llama_f32.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_f16', :'fixtures' || '/gguf/llama_f16.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_bf16', :'fixtures' || '/gguf/llama_bf16.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_q8_0', :'fixtures' || '/gguf/llama_q8_0.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_q6_k', :'fixtures' || '/gguf/llama_q6_k.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_q4_0', :'fixtures' || '/gguf/llama_q4_0.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('ap_q4_k', :'fixtures' || '/gguf/llama_q4_k.gguf', tokenizer => false);
-- GPT-2 with BF16 and F16 layers (most of its matrices' values F16): fp32
\set wh `base64 -w0 test/fixtures/hf_gpt2/model_half.safetensors`
\set gcfg `cat test/fixtures/hf_gpt2/config.json`
SELECT * FROM tfm_import('ap_half', :'gcfg'::jsonb, decode(:'wh', 'base64'), task => 'lm');
SELECT model FROM tfm_create_model('ap_own', 'lm', vocab_size => 50, d_model => 16, heads => 2, layers => 1, max_len => 16);
RESET client_min_messages;

-- what each import recorded, and what auto runs it at here
SET tfm.precision = auto;
SELECT inference_precision, precision_reason FROM tfm_info();
SELECT m.name, m.config->>'checkpoint_precision' AS recorded, p.inference_precision, p.precision_reason
  FROM tfm.models m, tfm_model_precision(m.name) p WHERE m.name LIKE 'ap\_%' ORDER BY m.name;

-- a float32 import under auto answers exactly its fp32 results (and the reference's greedy ids)
CREATE TEMP TABLE ap_cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy
  FROM jsonb_array_elements((:'ref'::jsonb)->'cases') WITH ORDINALITY AS t(c, n);
CREATE TEMP TABLE ap_out (how text, model text, n int, id int, p float8);
CREATE FUNCTION pg_temp.collect(how text, model text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO ap_out SELECT how, model, c.n, t.id, t.probability
    FROM ap_cases c, tfm_next_tokens(model, c.ids, 1000) t $$;
SELECT pg_temp.collect('auto', 'ap_st'), pg_temp.collect('auto', 'ap_st_bf16'), pg_temp.collect('auto', 'ap_bf16'),
       pg_temp.collect('auto', 'ap_q8_0');
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('ap_st', ids, max_tokens => 10, temperature => 0) ORDER BY pos) = greedy
       AS greedy_matches_the_reference
  FROM ap_cases ORDER BY n;
SET tfm.precision = fp32;
SELECT pg_temp.collect('fp32', 'ap_st'), pg_temp.collect('fp32', 'ap_st_bf16'), pg_temp.collect('fp32', 'ap_bf16'),
       pg_temp.collect('fp32', 'ap_q8_0');
SET tfm.precision = bf16;
SELECT pg_temp.collect('bf16', 'ap_st_bf16'), pg_temp.collect('bf16', 'ap_bf16');
SET tfm.precision = gguf;
SELECT pg_temp.collect('gguf', 'ap_q8_0');
-- auto's answers are those of the precision it names, bit for bit; gguf
-- (the Q8_0 file's blocks) really differs from fp32 (bf16 may not where its kernel is avx2 emulation)
SET tfm.precision = auto;
SELECT a.model, o.how, count(*) AS compared, count(*) FILTER (WHERE a.p <> o.p) AS differing
  FROM ap_out a JOIN ap_out o ON o.model = a.model AND o.n = a.n AND o.id = a.id AND o.how <> 'auto'
 WHERE a.how = 'auto' GROUP BY a.model, o.how
HAVING o.how = (SELECT inference_precision FROM tfm_model_precision(a.model))
 ORDER BY a.model, o.how;
SELECT count(*) FILTER (WHERE a.p <> o.p) > 0 AS gguf_differs_from_fp32
  FROM ap_out a JOIN ap_out o ON o.model = a.model AND o.n = a.n AND o.id = a.id
 WHERE a.model = 'ap_q8_0' AND a.how = 'auto' AND o.how = 'fp32';

-- explicit settings win: tfm.precision over everything, then the model's own default
SET tfm.precision = fp32;
SELECT * FROM tfm_model_precision('ap_bf16');
SET tfm.precision = int4;
SELECT * FROM tfm_model_precision('ap_st');
SET tfm.precision = auto;
SELECT tfm_set_precision('ap_bf16', 'fp32'), tfm_set_precision('ap_st', 'int8');
SELECT * FROM tfm_model_precision('ap_bf16');
SELECT * FROM tfm_model_precision('ap_st');
SELECT tfm_set_precision('ap_bf16', 'auto');
SELECT * FROM tfm_model_precision('ap_bf16');

-- training makes the weights tfm's own: fp32 from then on
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('ap_q8_0', 'SELECT ARRAY[1, 330, 348, 347, 351] AS ids', epochs => 1, lr => 1e-3);
RESET client_min_messages;
SELECT * FROM tfm_model_precision('ap_q8_0');
-- a model imported before 0.5 (no checkpoint_precision): fp32
UPDATE tfm.models SET config = config - 'checkpoint_precision' WHERE name = 'ap_q4_0';
SELECT * FROM tfm_model_precision('ap_q4_0');
-- a recorded precision that is not one is refused
UPDATE tfm.models SET config = config || '{"checkpoint_precision": "fp8"}' WHERE name = 'ap_q4_k';
SELECT * FROM tfm_model_precision('ap_q4_k');

-- NULL in, NULL out; an unknown model; another role without USE
SELECT * FROM tfm_model_precision(NULL);
SELECT * FROM tfm_model_precision('ap_nope');
CREATE ROLE ap_other;
SET ROLE ap_other;
SELECT * FROM tfm_model_precision('ap_st');
RESET ROLE;
DROP ROLE ap_other;
RESET tfm.precision;

SELECT count(*) FROM (SELECT tfm_drop_model(name) FROM tfm.models WHERE name LIKE 'ap\_%') d;

-- a tensor copied as it is but not kept as blocks (the F16 file's
-- embedding) is loaded a slice of rows at a time over tfm.gguf_slice_bytes
-- (a cancel served between slices): the same values as loaded whole
SELECT * FROM tfm_import_gguf_file('sl_whole', :'fixtures' || '/gguf/llama_f16.gguf', tokenizer => false);
SET tfm.gguf_slice_bytes = '1kB';
SET client_min_messages = debug1;
SELECT * FROM tfm_import_gguf_file('sl_slices', :'fixtures' || '/gguf/llama_f16.gguf', tokenizer => false);
RESET client_min_messages;
RESET tfm.gguf_slice_bytes;
SELECT count(*) AS tensors, bool_and(tfm_tensor('sl_slices', t.name) = tfm_tensor('sl_whole', t.name)) AS same_values
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'sl_whole';
SELECT tfm_drop_model('sl_whole'), tfm_drop_model('sl_slices');
