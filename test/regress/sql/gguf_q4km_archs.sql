-- Qwen3, Gemma 3 and Phi-4-mini (phi3) GGUF files of llama.cpp's Q4_K_M
-- mix (test/reference/make_gguf_q4km_archs.py: Q4_K and Q6_K tensors,
-- phi3's fused attn_qkv Q5_K; Gemma 3's local layers with a window of 8
-- and a prompt of 11 ids that runs past it; phi3's partial rotary and
-- longrope) run as the files say: their blocks kept, auto runs them (gguf), the
-- greedy ids and the next-token probabilities those of
-- test/fixtures/gguf/q4km_archs_reference.txt (the dequantized weights,
-- each product's activations quantized to Q8_K as llama.cpp does)
\getenv abs_srcdir PG_ABS_SRCDIR
\set ref `cat test/fixtures/gguf/q4km_archs_reference.txt`
CREATE TEMP TABLE q4ref AS
SELECT split_part(l, ' ', 1) AS file, split_part(l, ' ', 2) AS what,
       string_to_array(substr(l, length(split_part(l, ' ', 1)) + length(split_part(l, ' ', 2)) + 3), ' ') AS v
  FROM regexp_split_to_table(:'ref', E'\n') AS l WHERE l <> '';
SET client_min_messages = warning;
SELECT * FROM tfm_import_gguf_file('q3km', :'abs_srcdir' || '/../fixtures/gguf/qwen3_q4_k_m.gguf');
SELECT * FROM tfm_import_gguf_file('g3km', :'abs_srcdir' || '/../fixtures/gguf/gemma3_q4_k_m.gguf');
SELECT * FROM tfm_import_gguf_file('p3km', :'abs_srcdir' || '/../fixtures/gguf/phi3_q4_k_m.gguf');
RESET client_min_messages;
CREATE TEMP TABLE q4m (model text, file text);
INSERT INTO q4m VALUES ('q3km', 'qwen3_q4_k_m.gguf'), ('g3km', 'gemma3_q4_k_m.gguf'), ('p3km', 'phi3_q4_k_m.gguf');
-- every matrix kept as the file's blocks, stored as them only
SELECT m.model, k.gguf_type, count(*) FILTER (WHERE k.kept) AS kept, count(*) AS tensors, min(k.how) AS how
  FROM q4m m, tfm_gguf_kept(m.model) k GROUP BY 1, 2 ORDER BY 1, 2;
SET tfm.precision = 'auto';
SELECT m.model, p.inference_precision, p.precision_reason FROM q4m m, tfm_model_precision(m.model) p ORDER BY 1;
-- the reference's greedy ids (prefill, then one row a step)
SELECT m.model,
       ARRAY(SELECT id FROM tfm_generate_tokens(m.model, (SELECT v::int[] FROM q4ref WHERE file = m.file AND what = 'ids'),
                                                max_tokens => 8, temperature => 0) ORDER BY pos)
       = (SELECT v::int[] FROM q4ref WHERE file = m.file AND what = 'greedy') AS greedy_ids_equal
  FROM q4m m ORDER BY 1;
-- the next token's probabilities: the reference's softmax within 1e-5
CREATE TEMP TABLE q4p AS
WITH l AS (SELECT r.file, (o - 1)::int AS id, x::float8 AS v
             FROM q4ref r, unnest(r.v) WITH ORDINALITY AS u(x, o) WHERE r.what = 'logits')
SELECT file, id, e / sum(e) OVER (PARTITION BY file) AS p
  FROM (SELECT file, id, exp(v - max(v) OVER (PARTITION BY file)) AS e FROM l) x;
SELECT m.model, count(*) AS tokens, max(abs(n.probability - r.p)) < 1e-5 AS within_1e5
  FROM q4m m,
       tfm_next_tokens(m.model, (SELECT v::int[] FROM q4ref WHERE file = m.file AND what = 'ids'), 376) n
  , q4p r WHERE r.file = m.file AND r.id = n.id
 GROUP BY 1 ORDER BY 1;
-- at fp32 the float32 values made from the blocks run (other probabilities)
SET tfm.precision = 'fp32';
SELECT m.model, max(abs(n.probability - r.p)) > 1e-7 AS fp32_differs
  FROM q4m m,
       tfm_next_tokens(m.model, (SELECT v::int[] FROM q4ref WHERE file = m.file AND what = 'ids'), 376) n
  , q4p r WHERE r.file = m.file AND r.id = n.id
 GROUP BY 1 ORDER BY 1;
RESET tfm.precision;
-- stored at the files' size: the rows of both tables within 0.95 and 1.3 times the file
SELECT m.model,
       ((SELECT sum(pg_column_size(g.*)) FROM tfm.gguf_tensors g JOIN tfm.models x ON x.id = g.model_id WHERE x.name = m.model) +
        (SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM tfm.tensors t JOIN tfm.models x ON x.id = t.model_id WHERE x.name = m.model))
       / (pg_stat_file(:'abs_srcdir' || '/../fixtures/gguf/' || m.file)).size::numeric BETWEEN 0.95 AND 1.3 AS rows_within_1_3x_file
  FROM q4m m ORDER BY 1;
-- the chat template of the metadata (tokenizer.chat_template: Qwen3's and
-- Gemma 3's own) kept for tfm_chat, with the bos and eos texts of the
-- file's ids, the control tokens as added tokens and eos as the stop id
SELECT t.name, length(t.options->'chat'->>'template') AS template_chars, t.options->'chat'->'bos_token' AS bos,
       t.options->'chat'->'eos_token' AS eos, t.options->'chat'->'stop_ids' AS stop_ids,
       jsonb_array_length(t.options->'chat'->'specials') AS specials
  FROM tfm.tokenizers t WHERE t.name IN ('q3km', 'g3km') ORDER BY 1;
SELECT tfm_chat_prompt('g3km', '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]') AS gemma3_prompt;
SELECT tfm_chat_prompt_context('q3km', '{"messages": [{"role": "user", "content": "Hi"}], "enable_thinking": false}') AS qwen3_prompt;
-- tfm_chat's reply: greedy generation from the prompt's ids
SELECT tfm_chat('g3km', c, max_tokens => 4, temperature => 0)
     = tfm_detokenize('g3km', ARRAY(SELECT id FROM tfm_generate_tokens('g3km', tfm_chat_tokens('g3km', c), max_tokens => 4,
                                                                      temperature => 0) ORDER BY pos)) AS gemma3_reply_as_generated
  FROM (SELECT '[{"role": "user", "content": "Hi"}]'::jsonb AS c) x;
-- the same server files imported in slices of 1 kB (tfm.gguf_slice_bytes:
-- each embedding made, checked and given back a slice of rows at a time)
-- and parts of 1 kB (tfm.gguf_row_bytes: each part read again from the
-- file into its row, the tensor's hash checked after its last): the same
-- rows and bytes, the same probabilities at gguf
SET tfm.gguf_slice_bytes = '1kB';
SET tfm.gguf_row_bytes = '1kB';
SET client_min_messages = debug1;
SELECT m.model || '_sl' AS model, (tfm_import_gguf_file(m.model || '_sl', :'abs_srcdir' || '/../fixtures/gguf/' || m.file,
                                                        tokenizer => false)).parameters > 0 AS imported
  FROM q4m m ORDER BY 1;
RESET client_min_messages;
RESET tfm.gguf_row_bytes;
RESET tfm.gguf_slice_bytes;
SELECT m.model, count(*) > count(DISTINCT g.gguf_name) AS in_parts,
       sum(octet_length(g.blocks)) = (SELECT sum(octet_length(h.blocks)) FROM tfm.gguf_tensors h JOIN tfm.models y ON y.id = h.model_id
                                       WHERE y.name = m.model) AS same_bytes,
       (SELECT array_agg(k ORDER BY k.gguf_tensor) FROM tfm_gguf_kept(m.model || '_sl') k)::text
     = (SELECT array_agg(k ORDER BY k.gguf_tensor) FROM tfm_gguf_kept(m.model) k)::text AS same_listing
  FROM q4m m JOIN tfm.models x ON x.name = m.model || '_sl' JOIN tfm.gguf_tensors g ON g.model_id = x.id
 GROUP BY m.model ORDER BY 1;
SET tfm.precision = 'gguf';
SELECT m.model, bool_and(a.probability = b.probability) AS same_at_gguf
  FROM q4m m,
       LATERAL (SELECT v::int[] AS ids FROM q4ref WHERE file = m.file AND what = 'ids') i,
       LATERAL tfm_next_tokens(m.model, i.ids, 50) a
       JOIN LATERAL tfm_next_tokens(m.model || '_sl', i.ids, 50) b USING (id)
 GROUP BY 1 ORDER BY 1;
RESET tfm.precision;
SELECT count(tfm_drop_model(m.model || '_sl')) AS dropped FROM q4m m;
SELECT tfm_drop_model('q3km'), tfm_drop_model('g3km'), tfm_drop_model('p3km');
SELECT tfm_tokenizer_drop('q3km'), tfm_tokenizer_drop('g3km'), tfm_tokenizer_drop('p3km');
