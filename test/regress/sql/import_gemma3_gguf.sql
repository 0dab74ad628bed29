-- A gemma3 GGUF file (src/core/formats/gguf_gemma3.c): gemma3_f32.gguf,
-- written by test/reference/make_gguf_archs.py as llama.cpp's converter
-- writes a Gemma3ForCausalLM (gemma3.* keys, every norm weight stored plus
-- 1, llama.cpp's tensor names, no output.weight), from the weights of
-- test/fixtures/hf_gemma3_gguf (hf_gemma3_reference.py: a Gemma 3 whose
-- config such a file describes whole: 6 layers, layers 0-4 local with
-- sliding_window 8 and base 1e4, layer 5 global with base 1e6 and linear
-- rope scaling 8, query_pre_attn_scalar the head's width 16, q/k norms,
-- four norms a layer, tied head).  The safetensors import of the same
-- weights against the PyTorch reference, then the GGUF import against both.
\set ref `cat test/fixtures/hf_gemma3_gguf/reference.json`
CREATE TEMP TABLE g3fx AS SELECT :'ref'::jsonb AS ref;
CREATE TEMP TABLE g3cases AS
SELECT n, ARRAY(SELECT jsonb_array_elements_text(c->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(c->'greedy')::int) AS greedy,
       (c->>'score')::float8 AS score, c->'logprobs' AS logprobs
  FROM g3fx, jsonb_array_elements(ref->'cases') WITH ORDINALITY AS t(c, n);

\getenv abs_srcdir PG_ABS_SRCDIR
\set g3_dir :abs_srcdir '/../fixtures/hf_gemma3_gguf'
SET client_min_messages = warning;	-- max_position_embeddings 32768: capped at 8192 with a notice
SELECT * FROM tfm_import_files('g3st', :'g3_dir');
SELECT * FROM tfm_import_gguf_file('g3gguf', :'abs_srcdir' || '/../fixtures/gguf/gemma3_f32.gguf');
RESET client_min_messages;

-- the configs: the same in every field but where the model came from
SELECT key, a.value AS safetensors, b.value AS gguf
  FROM tfm.models ma, tfm.models mb, jsonb_each(ma.config) a
  FULL JOIN jsonb_each(mb.config) b USING (key)
 WHERE ma.name = 'g3st' AND mb.name = 'g3gguf' AND a.value IS DISTINCT FROM b.value
 ORDER BY key;
SELECT config->'qk_norm' AS qk_norm, config->'post_norms' AS post_norms, config->'head_size' AS head_size,
       config->'rope_local_theta' AS rope_local_theta, config->>'rope_type' AS rope_type,
       config->'rope_factor' AS rope_factor, config->'attn_window' AS attn_window,
       config->'window_pattern' AS window_pattern, config->'attn_scale' AS attn_scale
  FROM tfm.models WHERE name = 'g3gguf';

-- the safetensors import: the reference's log-probabilities within 1e-5 and greedy ids
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match
  FROM g3cases c, tfm_next_tokens('g3st', c.ids, 1000) t
 GROUP BY n ORDER BY n;
-- the GGUF import: the reference's, and the safetensors import's probabilities within 1e-6
-- (the norm weights come back from w + 1 - 1: exact for gains in [-0.5, 1])
SELECT n, max(abs(ln(t.probability) - (c.logprobs->-1->>(t.id))::float8)) < 1e-5 AS logprobs_match,
       max(abs(t.probability - s.probability)) < 1e-6 AS same_as_safetensors
  FROM g3cases c, tfm_next_tokens('g3gguf', c.ids, 1000) t
  JOIN tfm_next_tokens('g3st', c.ids, 1000) s USING (id)
 GROUP BY n ORDER BY n;
-- greedy generation with the key/value cache, past the window: the reference's ids, both imports
SELECT n, ARRAY(SELECT id FROM tfm_generate_tokens('g3st', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS safetensors_greedy,
          ARRAY(SELECT id FROM tfm_generate_tokens('g3gguf', ids, max_tokens => 10, temperature => 0)
                 ORDER BY pos) = greedy AS gguf_greedy
  FROM g3cases ORDER BY n;
-- the norm weights as Hugging Face's (the converter's + 1 taken off): every tensor equal
SELECT count(*) AS tensors,
       count(*) FILTER (WHERE (SELECT max(abs(x - y)) FROM unnest(tfm_tensor('g3st', t.name), tfm_tensor('g3gguf', t.name)) u(x, y)) = 0) AS equal
  FROM (SELECT DISTINCT t.name FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'g3st') t;
-- the file's tokenizer (tokenizer.ggml.model "llama") gives the tokenizer.json's ids
SELECT tfm_tokenize('g3gguf', 'the cat sat on the mat.') = tfm_tokenize('g3st', 'the cat sat on the mat.') AS same_ids;

-- hostile metadata, refused by name: no sliding_window, another rope scaling
-- (the file's bytes with a key renamed or a value changed in place)
CREATE TEMP TABLE g3file AS
SELECT pg_read_binary_file(:'abs_srcdir' || '/../fixtures/gguf/gemma3_f32.gguf') AS b;
CREATE FUNCTION pg_temp.import_err(b bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM * FROM tfm_import_gguf('x', b);
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
CREATE FUNCTION pg_temp.patched(b bytea, was text, now text) RETURNS bytea LANGUAGE sql AS $$
    SELECT overlay(b PLACING convert_to(now, 'UTF8') FROM position(convert_to(was, 'UTF8') IN b))
$$;
SELECT pg_temp.import_err(pg_temp.patched(b, 'gemma3.attention.sliding_window', 'gemma3.attention.sliding_windoX')) FROM g3file;
SELECT pg_temp.import_err(pg_temp.patched(b, 'linear', 'yarn!!')) FROM g3file;
SELECT tfm_drop_model('g3st'), tfm_drop_model('g3gguf');
