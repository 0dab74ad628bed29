-- a GGUF model loaded to run at gguf holds its blocks and not the float32
-- values of the matrices they run (tfm_model_leave_absent): counted by
-- tfm_model_footprint's loaded_* columns; the values are made from the
-- blocks when the model leaves gguf (fp32, training, tfm_tensor), the same
-- values, ids and probabilities as before
\set gkm `base64 -w0 test/fixtures/gguf/llama_q4_k_m.gguf`
\set ref `cat test/fixtures/gguf/q4km_reference.txt`
CREATE TABLE lmx AS SELECT decode(:'gkm', 'base64') AS f, :'ref'::text AS ref;
SELECT count(*) AS imported FROM tfm_import_gguf('g_load', (SELECT f FROM lmx));
SET tfm.precision = 'gguf';
-- nothing loaded yet
SELECT loaded_precision IS NULL AS not_loaded FROM tfm_model_footprint('g_load');
SELECT ARRAY(SELECT id FROM tfm_generate_tokens('g_load', (SELECT string_to_array((regexp_match(ref, 'ids ([0-9 ]+)'))[1], ' ')::int[] FROM lmx),
                                                max_tokens => 8, temperature => 0) ORDER BY pos)
       = (SELECT string_to_array((regexp_match(ref, 'greedy ([0-9 ]+)'))[1], ' ')::int[] FROM lmx) AS greedy_ids_equal;
-- loaded for gguf: the blocks (as stored) and the 1,280 float32 values of
-- the norms, no float32 value of a matrix or of the embedding: every value
-- the blocks stand for left to them; together about the file's size
SELECT f.loaded_precision, f.loaded_block_bytes = f.block_bytes AS blocks_held,
       f.loaded_float32_bytes, f.loaded_float32_bytes = f.float32_bytes AS only_stored_float32,
       f.left_to_blocks_bytes = f.made_at_load_bytes AS matrices_left_to_blocks,
       f.made_from_blocks_bytes,
       (f.loaded_block_bytes + f.loaded_float32_bytes) / (SELECT octet_length(f) FROM lmx)::numeric
         BETWEEN 0.95 AND 1.3 AS loaded_within_1_3x_file
  FROM tfm_model_footprint('g_load') f;
-- the next token's probabilities at gguf, kept to compare
CREATE TABLE lprob AS
SELECT n.id, n.probability FROM tfm_next_tokens('g_load', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n;
-- tfm_tensor makes a tensor's values from the blocks for the call: the
-- model stays as it was loaded
CREATE TABLE lvals AS
SELECT md5(string_agg(n || ':' || tfm_tensor('g_load', n)::text, ',' ORDER BY n)) AS values_md5
  FROM (SELECT tensor FROM tfm_gguf_kept('g_load') WHERE tensor IS NOT NULL
        UNION SELECT t.name FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_load') x(n);
SELECT loaded_precision, left_to_blocks_bytes > 0 AS still_left FROM tfm_model_footprint('g_load');
-- a new session maps the shared copy written for gguf (the _gguf file:
-- the blocks and the values made, holes for the rest): the same
-- probabilities, the same footprint
\c
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(n.probability = k.probability) AS same_in_a_new_session
  FROM tfm_next_tokens('g_load', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n JOIN lprob k USING (id);
SELECT f.loaded_precision, f.loaded_block_bytes = f.block_bytes AS blocks_held, f.loaded_float32_bytes,
       f.left_to_blocks_bytes = f.made_at_load_bytes AS matrices_left_to_blocks
  FROM tfm_model_footprint('g_load') f;
SELECT count(*) AS gguf_files FROM pg_ls_tmpdir() f, tfm.models m
 WHERE m.name = 'g_load' AND f.size > 0 AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s_gguf',
       (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid, m.id, m.version);
-- away from gguf the model is loaded whole: every parameter as float32,
-- none left to the blocks, the same values as tfm_tensor made
SET tfm.precision = 'fp32';
SELECT count(*) AS tokens FROM tfm_next_tokens('g_load', ARRAY[1, 330, 348, 347, 351], 376);
SELECT f.loaded_precision, f.loaded_float32_bytes = 4 * 1277184 AS every_parameter_float32,
       f.left_to_blocks_bytes
  FROM tfm_model_footprint('g_load') f;
SELECT md5(string_agg(n || ':' || tfm_tensor('g_load', n)::text, ',' ORDER BY n)) = (SELECT values_md5 FROM lvals) AS same_values
  FROM (SELECT tensor FROM tfm_gguf_kept('g_load') WHERE tensor IS NOT NULL
        UNION SELECT t.name FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g_load') x(n);
-- and back at gguf: loaded for gguf again, the same probabilities
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(n.probability = k.probability) AS same_at_gguf_again
  FROM tfm_next_tokens('g_load', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n JOIN lprob k USING (id);
SELECT loaded_precision, loaded_float32_bytes FROM tfm_model_footprint('g_load');
-- private copies (tfm.share_weights off): the same, and the values made in
-- place when the model leaves gguf within a session (a copy loaded for
-- gguf taken for training makes them too: counted)
\c
SET tfm.share_weights = off;
SET tfm.precision = 'gguf';
SELECT count(*) AS tokens, bool_and(n.probability = k.probability) AS same_private
  FROM tfm_next_tokens('g_load', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331], 376) n JOIN lprob k USING (id);
SELECT loaded_precision, loaded_float32_bytes, left_to_blocks_bytes > 0 AS left FROM tfm_model_footprint('g_load');
SET client_min_messages = warning;
SELECT epoch FROM tfm_train('g_load', 'SELECT ''the cat sat'' AS text', epochs => 1);
RESET client_min_messages;
SELECT loaded_precision, loaded_float32_bytes = 4 * 1277184 AS every_parameter_float32,
       left_to_blocks_bytes, made_from_blocks_bytes
  FROM tfm_model_footprint('g_load');
RESET tfm.share_weights;
DROP TABLE lmx;
DROP TABLE lprob;
DROP TABLE lvals;
RESET tfm.precision;
SELECT tfm_drop_model('g_load');
SELECT count(tfm_tokenizer_drop(name)) AS dropped FROM tfm.tokenizer_list WHERE name = 'g_load';
