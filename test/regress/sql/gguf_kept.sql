-- a GGUF file of llama.cpp's Q4_K_M mix (Q4_K and Q6_K tensors:
-- test/reference/make_gguf_q4km.py) run as the file says: its blocks kept
-- (tfm_gguf_kept), auto runs them (gguf), the next-token probabilities and
-- the greedy ids those of test/fixtures/gguf/q4km_reference.txt (the
-- dequantized weights, each product's activations quantized to Q8_K as
-- llama.cpp does)
\set gkm `base64 -w0 test/fixtures/gguf/llama_q4_k_m.gguf`
\set ref `cat test/fixtures/gguf/q4km_reference.txt`
CREATE TEMP TABLE kmx AS SELECT decode(:'gkm', 'base64') AS f, :'ref'::text AS ref;
SELECT * FROM tfm_import_gguf('g_q4km', (SELECT f FROM kmx));
SELECT gguf_type, count(*) FILTER (WHERE kept) AS kept, count(*) AS tensors, min(how) AS how
  FROM tfm_gguf_kept('g_q4km') GROUP BY gguf_type ORDER BY gguf_type;
SELECT config->>'checkpoint_precision' AS checkpoint_precision FROM tfm.models WHERE name = 'g_q4km';
SET tfm.precision = 'auto';
SELECT * FROM tfm_model_precision('g_q4km');
-- the greedy ids of the reference (prefill, then one row a step)
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('g_q4km', (SELECT string_to_array((regexp_match(ref, 'ids ([0-9 ]+)'))[1], ' ')::int[] FROM kmx),
                                                max_tokens => 8, temperature => 0) ORDER BY pos)
       = (SELECT string_to_array((regexp_match(ref, 'greedy ([0-9 ]+)'))[1], ' ')::int[] FROM kmx) AS greedy_ids_equal;
-- the next token's probabilities: the reference's softmax within 1e-5
CREATE TEMP TABLE kmref AS
WITH l AS (SELECT (o - 1)::int AS id, v::float8 AS v
             FROM kmx, unnest(string_to_array((regexp_match(ref, 'logits ([-0-9. ]+)'))[1], ' ')) WITH ORDINALITY AS u(v, o))
SELECT id, e / sum(e) OVER () AS p FROM (SELECT id, exp(v - max(v) OVER ()) AS e FROM l) x;
SELECT count(*) AS tokens, max(abs(n.probability - r.p)) < 1e-5 AS within_1e5
  FROM tfm_next_tokens('g_q4km', (SELECT string_to_array((regexp_match(ref, 'ids ([0-9 ]+)'))[1], ' ')::int[] FROM kmx), 376) n
  JOIN kmref r USING (id);
-- at fp32 the float32 values run (other probabilities)
SET tfm.precision = 'fp32';
SELECT inference_precision FROM tfm_model_precision('g_q4km');
SELECT max(abs(n.probability - r.p)) > 1e-7 AS fp32_differs
  FROM tfm_next_tokens('g_q4km', (SELECT string_to_array((regexp_match(ref, 'ids ([0-9 ]+)'))[1], ' ')::int[] FROM kmx), 376) n
  JOIN kmref r USING (id);
-- the float32 values fp32, bf16, int8, int4 and training use, made from
-- the blocks at load: every tensor's values (tfm_tensor; the md5 of their
-- text, each float exact) and the greedy ids at fp32, as they were when the
-- import stored float32 rows for all
SELECT count(*) AS tensors, md5(string_agg(n || ':' || tfm_tensor('g_q4km', n)::text, ',' ORDER BY n)) AS values_md5
  FROM (SELECT tensor FROM tfm_gguf_kept('g_q4km') WHERE tensor IS NOT NULL
        UNION SELECT t.name FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_q4km') x(n);
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('g_q4km', (SELECT string_to_array((regexp_match(ref, 'ids ([0-9 ]+)'))[1], ' ')::int[] FROM kmx),
                                                max_tokens => 8, temperature => 0) ORDER BY pos) AS fp32_greedy;
-- the model's own default: gguf
SELECT * FROM tfm_set_precision('g_q4km', 'gguf');
RESET tfm.precision;
SET tfm.precision = 'auto';
SELECT * FROM tfm_model_precision('g_q4km');
SELECT * FROM tfm_set_precision('g_q4km', 'auto');
-- training refuses gguf as it refuses the other inference precisions
SELECT epoch FROM tfm_train('g_q4km', 'SELECT ''the cat'' AS text', epochs => 1, train_precision => 'gguf');
-- stored at the file's size: the kept blocks are the only copy of the
-- matrices (tfm.tensors holds the float32 values of the rest, the 5 F32
-- norms: 1,280 values); the model's rows in both tables take between 0.95
-- and 1.3 times the file
SELECT count(*) AS float32_rows, sum(array_length(t.data, 1)) AS float32_values
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_q4km';
SELECT ((SELECT sum(pg_column_size(g.*)) FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id
          WHERE m.name = 'g_q4km') +
        (SELECT sum(pg_column_size(t.*)) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
          WHERE m.name = 'g_q4km')) / (SELECT octet_length(f) FROM kmx)::numeric BETWEEN 0.95 AND 1.3
       AS rows_within_1_3x_file;
-- counted (tfm_model_footprint): the blocks as the file has them (its
-- matrices' bytes), the 1,280 float32 values stored, and the float32
-- values loading makes from the blocks: the other 1,275,904 parameters
SELECT f.*, f.block_bytes = (SELECT sum(octet_length(g.blocks)) FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id
                              WHERE m.name = 'g_q4km') AS blocks_counted,
       f.made_at_load_bytes = 4 * (1277184 - 1280) AS made_counted
  FROM tfm_model_footprint('g_q4km') f;
-- tfm.max_model_bytes counts the bytes stored: the kept blocks and the float32 values of the rest
SET tfm.max_model_bytes = '512kB';
SELECT * FROM tfm_import_gguf('g_q4km_big', (SELECT f FROM kmx));
RESET tfm.max_model_bytes;
-- a 1 ms statement timeout stops the import, nothing left behind
\set VERBOSITY terse
SET statement_timeout = '1ms';
SELECT * FROM tfm_import_gguf('g_q4km_timeout', (SELECT f FROM kmx));
RESET statement_timeout;
\set VERBOSITY default
SELECT count(*) AS left_behind FROM tfm.models WHERE name = 'g_q4km_timeout';
RESET tfm.precision;
-- loaded for gguf, the model is shared as its blocks and the float32
-- values they do not stand for (the _gguf file: shared_weights.c): the
-- session that loaded it wrote it, a new session maps it, same answers
-- (gguf_loaded counts what a loaded copy holds)
SET tfm.precision = 'gguf';
CREATE TABLE kmprob AS
SELECT n.id, n.probability FROM tfm_next_tokens('g_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n;
SELECT count(*) AS gguf_files FROM pg_ls_tmpdir() f, tfm.models m
 WHERE m.name = 'g_q4km' AND f.size > 0 AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s_gguf',
       (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid, m.id, m.version);
\c
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(n.probability = k.probability) AS same_in_a_new_session
  FROM tfm_next_tokens('g_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n JOIN kmprob k USING (id);
DROP TABLE kmprob;
RESET tfm.precision;
-- renamed, the blocks stay its own; a copy keeps them too (its own rows
-- of tfm.gguf_tensors, of its version): stored as them only, the same
-- float32 values made from them, the same probabilities at gguf
SELECT tfm_rename_model('g_q4km', 'g_q4km_renamed');
SELECT count(*) FILTER (WHERE kept) AS kept FROM tfm_gguf_kept('g_q4km_renamed');
SELECT tfm_rename_model('g_q4km_renamed', 'g_q4km');
SELECT tfm_copy_model('g_q4km', 'g_q4km_copy') AS copied_parameters;
SELECT gguf_type, count(*) FILTER (WHERE kept) AS kept, count(*) AS tensors, min(how) AS how
  FROM tfm_gguf_kept('g_q4km_copy') GROUP BY gguf_type ORDER BY gguf_type;
SELECT count(*) AS float32_rows FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_q4km_copy';
SELECT count(*) AS tensors, md5(string_agg(n || ':' || tfm_tensor('g_q4km_copy', n)::text, ',' ORDER BY n)) AS values_md5
  FROM (SELECT DISTINCT tensor FROM tfm_gguf_kept('g_q4km_copy') WHERE tensor IS NOT NULL) x(n);
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(a.probability = b.probability) AS copy_same_at_gguf
  FROM tfm_next_tokens('g_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) a
  JOIN tfm_next_tokens('g_q4km_copy', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) b USING (id);
RESET tfm.precision;
SELECT tfm_drop_model('g_q4km_copy');
-- a tensor's blocks over tfm.gguf_row_bytes are stored in parts of whole
-- rows (pg_dump writes a bytea as text of twice its bytes, and a value is
-- at most 1 GB: the default, 256 MB, keeps every row dumpable); in parts
-- the model is the same: each tensor listed once, the same float32 values
-- made from the blocks, the same bytes, the same probabilities at gguf (a
-- tensor in llama.cpp's rope order, a small q or k, is never in parts).
-- Under tfm.gguf_slice_bytes the embedding (copied as it is, kept whole)
-- is also made, checked against its blocks and given back a slice of rows
-- at a time (here 1 kB: one row of 256 values), with the same model
SET tfm.gguf_row_bytes = '1kB';
SET tfm.gguf_slice_bytes = '1kB';
SET client_min_messages = debug1;
SELECT * FROM tfm_import_gguf('g_q4km_parts', decode(:'gkm', 'base64'), tokenizer => false);
RESET client_min_messages;
RESET tfm.gguf_slice_bytes;
RESET tfm.gguf_row_bytes;
SELECT count(*) AS rows, count(DISTINCT g.gguf_name) AS gguf_tensors,
       bool_and(octet_length(g.blocks) <= 1024 OR g.columns = 1 OR g.rope_heads > 0) AS within_1kb_but_rope_ordered
  FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id WHERE m.name = 'g_q4km_parts';
SELECT (SELECT array_agg(k ORDER BY k.gguf_tensor) FROM tfm_gguf_kept('g_q4km_parts') k)::text
     = (SELECT array_agg(k ORDER BY k.gguf_tensor) FROM tfm_gguf_kept('g_q4km') k)::text AS same_listing,
       (SELECT block_bytes FROM tfm_model_footprint('g_q4km_parts'))
     = (SELECT block_bytes FROM tfm_model_footprint('g_q4km')) AS same_bytes;
SELECT bool_and(tfm_tensor('g_q4km_parts', n) = tfm_tensor('g_q4km', n)) AS same_values
  FROM (SELECT DISTINCT tensor FROM tfm_gguf_kept('g_q4km') WHERE tensor IS NOT NULL) x(n);
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(a.probability = b.probability) AS parts_same_at_gguf
  FROM tfm_next_tokens('g_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) a
  JOIN tfm_next_tokens('g_q4km_parts', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) b USING (id);
RESET tfm.precision;
SELECT tfm_drop_model('g_q4km_parts');
-- training starts from the float32 values loading makes and saves every
-- tensor as float32: a float32 model from then on, its blocks of an
-- earlier version
SET tfm.precision = 'fp32';
SET client_min_messages = warning;
CREATE TEMP TABLE kmw0 AS SELECT tfm_tensor('g_q4km', 'dec.0.attn.qkv.w') AS w;
SELECT count(*) AS epochs FROM tfm_train('g_q4km', 'SELECT ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331] AS ids',
                                         epochs => 1, lr => 1e-3);
RESET client_min_messages;
SELECT count(*) AS float32_rows, sum(array_length(t.data, 1)) AS float32_values
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_q4km';
SELECT tfm_tensor('g_q4km', 'dec.0.attn.qkv.w') <> (SELECT w FROM kmw0) AS trained,
       array_length(tfm_tensor('g_q4km', 'dec.0.attn.qkv.w'), 1) AS qkv_values;
SELECT gguf_type, count(*) FILTER (WHERE kept) AS kept, min(how) AS how
  FROM tfm_gguf_kept('g_q4km') GROUP BY gguf_type ORDER BY gguf_type;
SELECT * FROM tfm_model_footprint('g_q4km');
SELECT count(*) AS tokens FROM tfm_next_tokens('g_q4km', ARRAY[1, 330, 348, 347, 351], 376);
RESET tfm.precision;
SELECT tfm_drop_model('g_q4km');
SELECT tfm_tokenizer_drop('g_q4km');
