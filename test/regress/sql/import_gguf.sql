-- tfm_import_gguf and tfm_import_gguf_file: llama GGUF files of every type
-- tfm reads (test/reference/make_gguf_fixtures.py) against their
-- safetensors twins: test/fixtures/hf_llama (F32, F16, BF16) and
-- test/fixtures/gguf/q (Q8_0, Q4_0, Q4_K, Q6_K, whose rows are whole
-- blocks); gpt2 files against test/fixtures/hf_gpt2
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/../fixtures'
\set cfg `cat test/fixtures/hf_llama/config.json`
\set tok `cat test/fixtures/hf_llama/tokenizer.json`
\set w `base64 -w0 test/fixtures/hf_llama/model.safetensors`
\set ref `cat test/fixtures/hf_llama/reference.json`
\set g32 `base64 -w0 test/fixtures/gguf/llama_f32.gguf`
\set g16 `base64 -w0 test/fixtures/gguf/llama_f16.gguf`
\set gb16 `base64 -w0 test/fixtures/gguf/llama_bf16.gguf`
\set gq4 `base64 -w0 test/fixtures/gguf/llama_q4_0.gguf`
CREATE TEMP TABLE gfx AS
SELECT decode(:'g32', 'base64') AS g32, decode(:'g16', 'base64') AS g16,
       decode(:'gb16', 'base64') AS gb16, decode(:'gq4', 'base64') AS gq4, :'ref'::jsonb AS ref;

SELECT * FROM tfm_import('st_llama', :'cfg'::jsonb, decode(:'w', 'base64'), :'tok'::jsonb);
SELECT * FROM tfm_import_gguf('g_f32', (SELECT g32 FROM gfx));
SELECT name, task, tokenizer, parameters, config->>'arch' AS arch, config->'heads' AS heads,
       config->'kv_heads' AS kv_heads, config->'max_len' AS max_len, config->'rope_theta' AS rope_theta,
       config->'layer_norm_eps' AS eps, config->'tie_embeddings' AS tie, config->'bos_id' AS bos_id,
       config->'eos_id' AS eos_id, config->>'imported_from' AS imported_from
  FROM tfm.models WHERE name IN ('st_llama', 'g_f32') ORDER BY name;
-- F32: every tensor equal to the safetensors twin's
SELECT count(*) AS tensors, bool_and(a.shape = b.shape AND a.data = b.data) AS all_equal
  FROM tfm.tensors a JOIN tfm.models ma ON ma.id = a.model_id AND ma.name = 'g_f32'
  JOIN tfm.tensors b ON b.name = a.name
  JOIN tfm.models mb ON mb.id = b.model_id AND mb.name = 'st_llama';
-- the tokenizer of the metadata (merges from its scores): tokenizer.json's ids on every text
SELECT name, kind, vocab_size FROM tfm.tokenizer_list WHERE name = 'g_f32';
SELECT count(*) AS texts,
       bool_and(tfm_tokenize('g_f32', x->>'text') = ARRAY(SELECT jsonb_array_elements_text(x->'ids')::int)) AS ids_match,
       bool_and(tfm_detokenize('g_f32', tfm_tokenize('g_f32', x->>'text')) = x->>'decoded') AS decode_match
  FROM gfx, jsonb_array_elements(ref->'texts') AS t(x);
SELECT tfm_tokenize('g_f32', 'the cat sat', add_bos => true) = tfm_tokenize('st_llama', 'the cat sat', add_bos => true) AS same_with_bos;
-- greedy generation from text: the twin's ids
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('g_f32', 'the cat sat on the mat.', max_tokens => 10, temperature => 0) ORDER BY pos)
     = ARRAY(SELECT id FROM tfm_generate_tokens('st_llama', 'the cat sat on the mat.', max_tokens => 10, temperature => 0) ORDER BY pos)
       AS greedy_matches;
-- a "gpt2" (byte-level BPE) tokenizer in the metadata (test/fixtures/tokenizer/hf/llama3.json
-- as llama.cpp's converter writes it): the same ids as that tokenizer.json
\set l3 `cat test/fixtures/tokenizer/hf/llama3.json`
\set l3e `cat test/fixtures/tokenizer/hf/llama3.expected.json`
SELECT * FROM tfm_import_gguf_file('g_llama3_tok', :'fixtures' || '/gguf/llama3_tok.gguf');
SELECT tfm_tokenizer_import('l3_json', :'l3'::jsonb);
SELECT name, kind, vocab_size FROM tfm.tokenizer_list WHERE name IN ('g_llama3_tok', 'l3_json') ORDER BY name;
SELECT count(*) AS texts,
       bool_and(tfm_tokenize('g_llama3_tok', t) = tfm_tokenize('l3_json', t)) AS ids_match,
       bool_and(tfm_tokenize('g_llama3_tok', t, add_bos => true) = tfm_tokenize('l3_json', t, add_bos => true)) AS with_bos_match,
       bool_and(tfm_detokenize('g_llama3_tok', tfm_tokenize('g_llama3_tok', t)) = t) AS decode_match
  FROM jsonb_array_elements_text((:'l3e'::jsonb)->'texts') AS x(t);
SELECT tfm_tokenize('g_llama3_tok', 'Hello world', add_bos => true);
SELECT tfm_tokenizer_drop('l3_json');
-- a pre-tokenizer tfm does not run
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g PLACING 'qwen2-bpe'::bytea
          FROM position('tokenizer.ggml.pre'::bytea IN g) + 18 + 12)
   FROM pg_read_binary_file(:'fixtures' || '/gguf/llama3_tok.gguf') AS g));

-- the other types: next-token log-probabilities within the bounds test_gguf
-- states (about 1.5 times the measured gaps), tokenizer not imported
SELECT * FROM tfm_import_gguf('g_f16', (SELECT g16 FROM gfx), tokenizer => false);
SELECT * FROM tfm_import_gguf('g_bf16', (SELECT gb16 FROM gfx), tokenizer => false);
SELECT * FROM tfm_import_files('q_twin', :'fixtures' || '/gguf/q');
SELECT * FROM tfm_import_gguf('g_q4_0', (SELECT gq4 FROM gfx), tokenizer => false);
SELECT * FROM tfm_import_gguf_file('g_q8_0', :'fixtures' || '/gguf/llama_q8_0.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('g_q4_k', :'fixtures' || '/gguf/llama_q4_k.gguf', tokenizer => false);
SELECT * FROM tfm_import_gguf_file('g_q6_k', :'fixtures' || '/gguf/llama_q6_k.gguf');
SELECT name, tokenizer, parameters FROM tfm.models WHERE name LIKE 'g\_%' ORDER BY name;
CREATE TEMP TABLE bounds (model text, twin text, bound float8);
INSERT INTO bounds VALUES ('g_f16', 'st_llama', 0.02), ('g_bf16', 'st_llama', 0.15),
  ('g_q8_0', 'q_twin', 0.1), ('g_q4_0', 'q_twin', 1.8), ('g_q4_k', 'q_twin', 1.5), ('g_q6_k', 'q_twin', 0.3);
SELECT b.model, count(*) AS compared, max(abs(ln(x.probability) - ln(y.probability))) <= b.bound AS within_bound
  FROM bounds b,
       LATERAL tfm_next_tokens(b.model, ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) x
       JOIN LATERAL tfm_next_tokens(b.twin, ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) y ON x.id = y.id
 GROUP BY b.model, b.bound ORDER BY b.model;
-- Q4_0 tensors kept as the file's blocks for int4 (tfm_gguf_kept): every
-- matrix's (q and k as columns of the fused qkv, the embedding as the tied
-- head), each byte for byte a part of the file; norms, and every tensor of
-- the other types, converted to float32 only
SELECT * FROM tfm_gguf_kept('g_q4_0');
SELECT count(*) AS kept, bool_and(position(g.blocks IN x.gq4) > 0) AS the_file_bytes
  FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id AND m.name = 'g_q4_0', gfx x
 WHERE g.blocks IS NOT NULL;
SELECT gguf_type, count(*) FILTER (WHERE kept) AS kept, count(*) AS tensors
  FROM tfm_gguf_kept('g_q8_0') GROUP BY gguf_type ORDER BY gguf_type;
SELECT count(*) AS rows FROM tfm_gguf_kept('st_llama');  -- not from a GGUF file: none
SELECT * FROM tfm_gguf_kept('no_such_model');
SELECT * FROM tfm_gguf_kept(NULL);  -- NULL in, no rows out (reference.md, NULLs)
-- a block no ggml quantizer writes: scale 1, every value +1 (requantized
-- from its float32 values it would become scale -1/8, every nibble 0)
SELECT * FROM tfm_import_gguf('g_q4_0_odd',
  (SELECT overlay(x.gq4 PLACING '\x003c99999999999999999999999999999999'::bytea FROM position(g.blocks IN x.gq4))
     FROM gfx x, tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id AND m.name = 'g_q4_0'
    WHERE g.gguf_name = 'blk.0.ffn_down.weight'), tokenizer => false);
-- at int4, the packed copies (the file other sessions map) hold every kept
-- block as the file has it, moved into the interleaved layout of
-- include/tfm/lowp.h: per group of 16 columns and block, the columns'
-- nibble bytes 4i .. 4i + 3 side by side for i = 0 .. 3, and the 16
-- scales apart (q and k rows back in Hugging Face's order, as their
-- float32 values are; a column past the tensor's last, zeros)
SET tfm.precision = 'int4';
SELECT count(*) AS next_tokens FROM tfm_next_tokens('g_q4_0', ARRAY[1, 330, 348], 3);
SELECT count(*) AS next_tokens FROM tfm_next_tokens('g_q4_0_odd', ARRAY[1, 330, 348], 3);
CREATE TEMP TABLE packed AS
SELECT m.id, pg_read_binary_file('base/pgsql_tmp/' || t.name) AS f
  FROM pg_ls_tmpdir() t, tfm.models m
 WHERE m.name IN ('g_q4_0', 'g_q4_0_odd')
   AND t.name LIKE 'pgsql\_tmp\_tfm\_%\_' || m.id || '\_' || m.version || '\_int4';
CREATE FUNCTION pg_temp.interleaved(blocks bytea, columns int, rope_heads int, scales bool)
RETURNS bytea LANGUAGE sql AS $$
  WITH d AS (SELECT length(blocks) / columns / 18 AS kb, columns / greatest(rope_heads, 1) AS hd),
  -- Hugging Face's row x is the file's row h·hd + 2i + j (x = h·hd + j·hd/2 + i)
  c AS (SELECT x, CASE WHEN rope_heads = 0 THEN x
                       ELSE x / hd * hd + 2 * (x % hd % (hd / 2)) + x % hd / (hd / 2) END AS f
          FROM d, generate_series(0, (columns + 15) / 16 * 16 - 1) x)
  SELECT string_agg(CASE WHEN c.x >= columns THEN CASE WHEN scales THEN '\x0000' ELSE '\x00000000' END::bytea
                         WHEN scales THEN substr(blocks, (c.f * d.kb + b) * 18 + 1, 2)
                         ELSE substr(blocks, (c.f * d.kb + b) * 18 + 3 + 4 * i, 4) END, ''::bytea
                    ORDER BY c.x / 16, b, i, c.x % 16)
    FROM d, c, generate_series(0, d.kb - 1) b, generate_series(0, CASE WHEN scales THEN 0 ELSE 3 END) i
$$;
SELECT m.name, count(*) AS tensors,
       bool_and(position(pg_temp.interleaved(g.blocks, g.columns, g.rope_heads, false) IN p.f) > 0 AND
                position(pg_temp.interleaved(g.blocks, g.columns, g.rope_heads, true) IN p.f) > 0)
         AS in_the_int4_copies,
       count(*) FILTER (WHERE g.rope_heads > 0) AS rope_rows
  FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id JOIN packed p ON p.id = m.id
 WHERE g.blocks IS NOT NULL GROUP BY m.name ORDER BY m.name;
RESET tfm.precision;
-- training makes new weights: the kept blocks no longer describe them
SET client_min_messages = warning;
SELECT count(*) AS epochs FROM tfm_train('g_q4_0', 'SELECT ARRAY[1, 330, 348, 347, 351, 330, 259] AS ids',
                                         epochs => 1, lr => 1e-3);
RESET client_min_messages;
SELECT kept, how, count(*) AS tensors FROM tfm_gguf_kept('g_q4_0') GROUP BY kept, how ORDER BY kept, how;

-- GPT-2 as llama.cpp converts it: gpt2_f32.gguf (tied) has hf_gpt2's tensors,
-- gpt2_q8_0.gguf (output.weight repeating the head: untied) its distribution
-- within test_gguf's bound; the "gpt2" tokenizer gives tokenizer.json's ids
\set gcfg `cat test/fixtures/hf_gpt2/config.json`
\set gtok `cat test/fixtures/hf_gpt2/tokenizer.json`
\set gw `base64 -w0 test/fixtures/hf_gpt2/model.safetensors`
SELECT * FROM tfm_import('st_gpt2', :'gcfg'::jsonb, decode(:'gw', 'base64'), :'gtok'::jsonb);
SELECT * FROM tfm_import_gguf_file('g_gpt2_f32', :'fixtures' || '/gguf/gpt2_f32.gguf');
SELECT * FROM tfm_import_gguf_file('g_gpt2_q8_0', :'fixtures' || '/gguf/gpt2_q8_0.gguf', tokenizer => false);
SELECT name, config->>'arch' AS arch, config->>'activation' AS activation, config->'tie_embeddings' AS tie,
       config->'max_len' AS max_len, config->'d_ff' AS d_ff, config->>'imported_from' AS imported_from
  FROM tfm.models WHERE name IN ('st_gpt2', 'g_gpt2_f32', 'g_gpt2_q8_0') ORDER BY name;
SELECT count(*) AS tensors, bool_and(a.shape = b.shape AND a.data = b.data) AS all_equal
  FROM tfm.tensors a JOIN tfm.models ma ON ma.id = a.model_id AND ma.name = 'g_gpt2_f32'
  JOIN tfm.tensors b ON b.name = a.name
  JOIN tfm.models mb ON mb.id = b.model_id AND mb.name = 'st_gpt2';
SELECT count(*) AS compared, max(abs(ln(x.probability) - ln(y.probability))) <= 0.07 AS within_bound
  FROM tfm_next_tokens('g_gpt2_q8_0', ARRAY[1, 30, 48, 47, 51, 30, 259, 272, 31], 320) x
  JOIN tfm_next_tokens('st_gpt2', ARRAY[1, 30, 48, 47, 51, 30, 259, 272, 31], 320) y ON x.id = y.id;
-- its untied embedding and its position table (Q8_0) are only looked up,
-- no matrix runs them: stored as their blocks only all the same, their
-- float32 values made at load row by row; the embedding's are those of
-- output.weight (the same values, quantized alike, kept as the head's
-- columns), transposed; at gguf the matrices run their blocks beside them
SELECT gguf_tensor, gguf_type, tensor, kept, how FROM tfm_gguf_kept('g_gpt2_q8_0')
 WHERE gguf_type <> 'F32' ORDER BY gguf_tensor;
SELECT t.name, t.shape FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
 WHERE m.name = 'g_gpt2_q8_0' AND t.shape[2] IS NOT NULL ORDER BY t.name;
WITH v AS (SELECT tfm_tensor('g_gpt2_q8_0', 'tok_emb') AS e, tfm_tensor('g_gpt2_q8_0', 'out.w') AS o,
                  (config->>'d_model')::int AS d, (config->>'vocab')::int AS n
             FROM tfm.models WHERE name = 'g_gpt2_q8_0')
SELECT count(*) AS values, bool_and(v.e[r * v.d + c + 1] = v.o[c * v.n + r + 1]) AS embedding_is_head_transposed
  FROM v, generate_series(0, v.n - 1) r, generate_series(0, v.d - 1) c;
SET tfm.precision = 'gguf';
SELECT count(*) AS compared, max(abs(ln(x.probability) - ln(y.probability))) <= 0.07 AS gguf_within_bound
  FROM tfm_next_tokens('g_gpt2_q8_0', ARRAY[1, 30, 48, 47, 51, 30, 259, 272, 31], 320) x
  JOIN tfm_next_tokens('st_gpt2', ARRAY[1, 30, 48, 47, 51, 30, 259, 272, 31], 320) y ON x.id = y.id;
RESET tfm.precision;
SELECT count(*) AS texts, bool_and(tfm_tokenize('g_gpt2_f32', t) = tfm_tokenize('st_gpt2', t)) AS ids_match
  FROM jsonb_array_elements_text((:'l3e'::jsonb)->'texts') AS x(t);
SELECT tfm_generate('g_gpt2_f32', 'the cat', max_tokens => 8, temperature => 0)
     = tfm_generate('st_gpt2', 'the cat', max_tokens => 8, temperature => 0) AS same_generation;

-- the same file from a bytea and from the server: the same tensors
SELECT * FROM tfm_import_gguf_file('g_f32_file', :'fixtures' || '/gguf/llama_f32.gguf');
SELECT bool_and(a.data = b.data) AS same_tensors
  FROM tfm.tensors a JOIN tfm.models ma ON ma.id = a.model_id AND ma.name = 'g_f32_file'
  JOIN tfm.tensors b ON b.name = a.name JOIN tfm.models mb ON mb.id = b.model_id AND mb.name = 'g_f32';

-- hostile and wrong input: clean errors, nothing stored
SELECT * FROM tfm_import_gguf('bad', NULL);
SELECT * FROM tfm_import_gguf(NULL, (SELECT g32 FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT g32 FROM gfx), NULL);
SELECT * FROM tfm_import_gguf('g_f32', (SELECT g32 FROM gfx));
SELECT * FROM tfm_import_gguf('bad', '\x47475546'::bytea);
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING 'GGML'::bytea FROM 1) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING '\x01'::bytea FROM 5) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING '\xffffffffffffffff'::bytea FROM 9) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING '\x00000000ffffffff'::bytea FROM 25) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT substr(g32, 1, 5000) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT substr(g32, 1, length(g32) - 1) FROM gfx));
-- another architecture; a tokenizer model tfm does not read
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING 'gemma'::bytea
          FROM position('general.architecture'::bytea IN g32) + 20 + 12) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING 'bert '::bytea
          FROM position('tokenizer.ggml.model'::bytea IN g32) + 20 + 12) FROM gfx));
-- the metadata disagrees with the tensors: 3 layers, 3 kv heads
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING '\x03'::bytea
          FROM position('llama.block_count'::bytea IN g32) + 17 + 4) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(g32 PLACING '\x03'::bytea
          FROM position('llama.attention.head_count_kv'::bytea IN g32) + 29 + 4) FROM gfx));
-- a tensor of a type tfm does not read (Q2_K), one overlapping another, one past the end
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(gq4 PLACING '\x0a'::bytea
          FROM position('blk.0.attn_q.weight'::bytea IN gq4) + 19 + 4 + 16) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(gq4 PLACING '\x0000000000000000'::bytea
          FROM position('blk.0.attn_q.weight'::bytea IN gq4) + 19 + 4 + 16 + 4) FROM gfx));
SELECT * FROM tfm_import_gguf('bad', (SELECT overlay(gq4 PLACING '\x0000000000000040'::bytea
          FROM position('blk.0.attn_q.weight'::bytea IN gq4) + 19 + 4 + 16 + 4) FROM gfx));
-- the files form: paths and privileges (the fixtures' directory cut out of
-- the messages: it differs between checkouts)
CREATE FUNCTION pg_temp.try_file(root text, file text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM tfm_import_gguf_file('bad', root || file);
    RETURN 'imported';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || replace(SQLERRM, root, '<fixtures>');
END $$;
SELECT * FROM tfm_import_gguf_file('bad', 'test/fixtures/gguf/llama_f32.gguf');
SELECT pg_temp.try_file(:'fixtures', '/gguf/none.gguf');
SELECT pg_temp.try_file(:'fixtures', '/gguf');
SELECT pg_temp.try_file(:'fixtures', '/hf_llama/model.safetensors');
CREATE ROLE tfm_gguf_user;
GRANT USAGE ON SCHEMA tfm TO tfm_gguf_user;
SET ROLE tfm_gguf_user;
SELECT * FROM tfm_import_gguf_file('bad', :'fixtures' || '/gguf/llama_f32.gguf');
RESET ROLE;
REVOKE USAGE ON SCHEMA tfm FROM tfm_gguf_user;
DROP ROLE tfm_gguf_user;
SELECT count(*) AS bad_models FROM tfm.models WHERE name = 'bad';
SELECT count(*) AS bad_tokenizers FROM tfm.tokenizer_list WHERE name = 'bad';

SELECT count(tfm_drop_model(name)) AS dropped FROM tfm.models WHERE name LIKE 'g\_%' OR name IN ('st_llama', 'q_twin', 'st_gpt2');
SELECT count(tfm_tokenizer_drop(name)) AS dropped FROM tfm.tokenizer_list WHERE name LIKE 'g\_%' OR name IN ('st_llama', 'st_gpt2');
