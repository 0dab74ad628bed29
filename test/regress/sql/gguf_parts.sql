-- gguf_parts: a model's tfm.gguf_tensors rows in parts (tfm.gguf_row_bytes)
-- written inconsistently (as a superuser or a restore may): loading the
-- model is a clean error (XX001) for parts that overlap, even when they
-- leave a gap of as many rows (the count of values still the tensor's),
-- and for a part past the tensor's rows or without its tensor; never
-- values left unset, never a read out of bounds.  Each
-- load in a new session, weights not shared (a model loaded is cached)
\set gkm `base64 -w0 test/fixtures/gguf/llama_q4_k_m.gguf`
SET tfm.share_weights = off;
SET tfm.gguf_row_bytes = '1kB';
SELECT parameters > 0 AS imported FROM tfm_import_gguf('gp', decode(:'gkm', 'base64'), tokenizer => false);
RESET tfm.gguf_row_bytes;
-- a tensor of 3 parts or more, not in rope order
CREATE TABLE gp_t AS
SELECT g.gguf_name, min(g.tensor) AS tensor, max(g.columns) AS part
  FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id
 WHERE m.name = 'gp' AND g.rope_heads = 0 AND g.first_column IS NOT NULL
 GROUP BY g.gguf_name HAVING count(*) >= 3 ORDER BY g.gguf_name LIMIT 1;
SELECT count(*) AS chosen FROM gp_t;
CREATE FUNCTION gp_err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
CREATE FUNCTION gp_load() RETURNS TABLE (fp32 text, gguf text) LANGUAGE plpgsql AS $$
BEGIN
    SET tfm.share_weights = off;
    SET tfm.precision = 'fp32';
    fp32 := gp_err(format('SELECT tfm_tensor(%L, %L)', 'gp', (SELECT tensor FROM gp_t)));
    SET tfm.precision = 'gguf';
    gguf := gp_err('SELECT count(*) FROM tfm_next_tokens(''gp'', ARRAY[1, 330, 348], 5)');
    RESET tfm.precision;
    RETURN NEXT;
END $$;
SELECT * FROM gp_load() AS consistent;
-- the second part moved to overlap the first by all but one row
UPDATE tfm.gguf_tensors g SET first_row = 1
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = (SELECT part FROM gp_t);
\c
SELECT * FROM gp_load() AS overlapping;
-- a part past the tensor's rows (first_column + first_row past int32)
UPDATE tfm.gguf_tensors g SET first_row = 2147483000
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = 1;
\c
SELECT * FROM gp_load() AS past;
-- a negative first_row
UPDATE tfm.gguf_tensors g SET first_row = -1
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = 2147483000;
\c
SELECT * FROM gp_load() AS negative;
-- a kept row without its tensor (or columns, or inputs)
UPDATE tfm.gguf_tensors g SET first_row = 7
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = -1;
\c
SELECT * FROM gp_load() AS restored;
UPDATE tfm.gguf_tensors g SET tensor = NULL
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = 7;
\c
SELECT * FROM gp_load() AS tensor_null;
-- a part of a tensor in llama.cpp's rope order (its order is over the whole tensor)
UPDATE tfm.gguf_tensors g SET tensor = (SELECT tensor FROM gp_t)
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = 7;
UPDATE tfm.gguf_tensors g SET rope_heads = 1
  FROM tfm.models m WHERE m.id = g.model_id AND m.name = 'gp'
   AND g.gguf_name = (SELECT gguf_name FROM gp_t) AND g.first_row = 7;
\c
SELECT * FROM gp_load() AS rope_part;
SELECT tfm_drop_model('gp');
DROP FUNCTION gp_load();
DROP FUNCTION gp_err(text);
DROP TABLE gp_t;
