-- jobs_chunks: embedding jobs that cut long texts into token windows
-- (chunk_tokens, chunk_overlap), and tfm_embed_chunks under them: chunk
-- offsets that rebuild the text, each chunk's embedding equal to tfm_embed
-- of its tokens, chunks following updates (a shorter text keeps no stale
-- chunk) and deletes, the options' errors.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

CREATE TABLE cdocs (id int PRIMARY KEY, body text);
INSERT INTO cdocs SELECT i, left(repeat('the whale and the sea; ', 6), i * 7) FROM generate_series(1, 12) i;
INSERT INTO cdocs VALUES (20, 'été à la mer, où l''œil voit loin, déjà'), (21, 'x'), (22, NULL), (23, '');
SELECT tfm_tokenizer_train('chunk_chars', body, 'char') FROM cdocs;
SELECT tfm_tokenizer_train('chunk_bpe', body, 'bpe', 300) FROM cdocs;
SELECT tfm_tokenizer_train('chunk_words', body, 'word') FROM cdocs;
SELECT model FROM tfm_create_model('chunk_enc', 'classify', 'chunk_chars', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 24);

-- a job that chunks: the destination has chunk, chunk_start, chunk_end and
-- is keyed by (key, chunk)
SELECT tfm_job_create('cdocs_emb', 'cdocs', 'body', 'chunk_enc', 'embed',
                      options => '{"chunk_tokens": 10, "chunk_overlap": 4, "batch": 5}');
SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
 WHERE attrelid = 'cdocs_emb'::regclass AND attnum > 0 ORDER BY attnum;
SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'cdocs_emb'::regclass;
CALL tfm_job_run('cdocs_emb');
-- the empty text is an error; the NULL one has no chunks (no error); every
-- other row has its chunks
SELECT e.key, e.message, e.sqlstate FROM tfm.job_errors e ORDER BY 1;

-- chunks of a character tokenizer: window k is characters [6k, 6k + 10),
-- the last one ending at the text's end; numbered 0.. without a gap
CREATE VIEW pg_temp.expect AS
SELECT d.id, k AS chunk, 6 * k AS chunk_start, least(6 * k + 10, length(d.body)) AS chunk_end
  FROM cdocs d, generate_series(0, greatest(0, (length(d.body) - 10 + 5) / 6)) k
 WHERE d.body <> '';
SELECT count(*) AS chunks, count(*) FILTER (WHERE x.id IS NOT NULL) AS as_expected,
       (SELECT count(*) FROM pg_temp.expect) AS expected
  FROM cdocs_emb c LEFT JOIN pg_temp.expect x USING (id, chunk, chunk_start, chunk_end);
SELECT id, count(*) AS chunks, min(chunk_start) AS first_start, max(chunk_end) AS last_end,
       (SELECT length(body) FROM cdocs d WHERE d.id = c.id) AS length
  FROM cdocs_emb c WHERE id IN (1, 2, 12, 20, 21) GROUP BY id ORDER BY id;

-- the offsets rebuild the text: each chunk from where the one before ended
-- (overlaps consistent: a chunk starts inside the one before it), and each
-- chunk's characters are its tokens
CREATE VIEW pg_temp.rebuilt AS
SELECT id, string_agg(substr(body, from_char + 1, chunk_end - from_char), '' ORDER BY chunk) AS text,
       bool_and(chunk = 0 OR chunk_start < prev_end) AS overlapping,
       bool_and(chunk_start = 0 OR chunk > 0) AS starts_at_0
  FROM (SELECT c.id, c.chunk, c.chunk_start, c.chunk_end, d.body,
               lag(c.chunk_end) OVER w AS prev_end,
               coalesce(lag(c.chunk_end) OVER w, 0) AS from_char
          FROM cdocs_emb c JOIN cdocs d USING (id) WINDOW w AS (PARTITION BY c.id ORDER BY c.chunk)) s
 GROUP BY id;
SELECT count(*) AS texts, count(*) FILTER (WHERE r.text = d.body) AS rebuilt,
       bool_and(overlapping) AS overlapping, bool_and(starts_at_0) AS starts_at_0
  FROM pg_temp.rebuilt r JOIN cdocs d USING (id);
SELECT count(*) FILTER (WHERE substr(d.body, c.chunk_start + 1, c.chunk_end - c.chunk_start)
                              = tfm_detokenize('chunk_chars', (tfm_tokenize('chunk_chars', d.body))[6 * c.chunk + 1 : 6 * c.chunk + 10]))
         AS chunk_text_is_its_tokens,
       count(*) AS chunks
  FROM cdocs_emb c JOIN cdocs d USING (id);
-- every chunk's embedding is tfm_embed of its tokens, exactly
SELECT count(*) FILTER (WHERE c.output = tfm_embed('chunk_enc', (tfm_tokenize('chunk_chars', d.body))[6 * c.chunk + 1 : 6 * c.chunk + 10]))
         AS equal_to_tfm_embed,
       count(*) AS chunks
  FROM cdocs_emb c JOIN cdocs d USING (id);
-- a text within one window is one chunk whose embedding is tfm_embed(text)
SELECT c.id, c.chunk, c.output = tfm_embed('chunk_enc', d.body) AS equal
  FROM cdocs_emb c JOIN cdocs d USING (id) WHERE c.id IN (1, 21) ORDER BY 1;

-- kept current: a shorter text drops its extra chunks, a longer one gains
-- chunks, a deleted row loses them all, a fixed row gets its chunks
SELECT id, count(*) FROM cdocs_emb WHERE id IN (3, 12) GROUP BY id ORDER BY id;
UPDATE cdocs SET body = 'now short' WHERE id = 12;
UPDATE cdocs SET body = repeat('a longer text ', 5) WHERE id = 3;
DELETE FROM cdocs WHERE id = 11;
UPDATE cdocs SET body = 'no longer null' WHERE id = 22;
CALL tfm_job_run('cdocs_emb');
SELECT id, count(*) AS chunks, max(chunk) AS last, max(chunk_end) AS last_end FROM cdocs_emb
 WHERE id IN (3, 11, 12, 22) GROUP BY id ORDER BY id;
SELECT count(*) AS chunks, count(*) FILTER (WHERE x.id IS NOT NULL) AS as_expected,
       (SELECT count(*) FROM pg_temp.expect) AS expected,
       count(*) FILTER (WHERE c.output = tfm_embed('chunk_enc', (tfm_tokenize('chunk_chars', d.body))[6 * c.chunk + 1 : 6 * c.chunk + 10]))
         AS equal_to_tfm_embed
  FROM cdocs_emb c JOIN cdocs d USING (id) LEFT JOIN pg_temp.expect x USING (id, chunk, chunk_start, chunk_end);
SELECT key, sqlstate FROM tfm.job_errors ORDER BY 1;

-- a new model version: every chunk computed again
SELECT count(*) AS epochs FROM tfm_train('chunk_enc', $$SELECT body, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END
                                          FROM cdocs WHERE body <> '' ORDER BY id$$, epochs => 1, val_fraction => 0);
SELECT outputs_by_version ? model_version::text AS has_current FROM tfm.jobs WHERE name = 'cdocs_emb';
CALL tfm_job_run('cdocs_emb');
SELECT outputs_by_version = jsonb_build_object(model_version::text, (SELECT count(*) FROM cdocs_emb)) AS all_current
  FROM tfm.jobs WHERE name = 'cdocs_emb';
SELECT count(*) FILTER (WHERE c.output = tfm_embed('chunk_enc', (tfm_tokenize('chunk_chars', d.body))[6 * c.chunk + 1 : 6 * c.chunk + 10]))
         = count(*) AS all_equal
  FROM cdocs_emb c JOIN cdocs d USING (id);

-- tfm_embed_chunks itself: overlap 0 tiles the text; a BPE tokenizer's
-- tokens tile it too (a chunk may end inside a character a byte-level
-- token splits: then both chunks hold it); a word tokenizer leaves the
-- spaces between words out of every chunk
SELECT model FROM tfm_create_model('chunk_bpe_enc', 'classify', 'chunk_bpe', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 24);
SELECT model FROM tfm_create_model('chunk_word_enc', 'classify', 'chunk_words', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 24, pooling => 'cls');
SELECT c.ord, c.chunk, c.chunk_start, c.chunk_end, substr(t, c.chunk_start + 1, c.chunk_end - c.chunk_start) AS text
  FROM (VALUES ('été à la mer, où l''œil voit loin')) v(t), tfm_embed_chunks('chunk_enc', ARRAY[t], 8) c;
SELECT string_agg(substr(t, c.chunk_start + 1, c.chunk_end - c.chunk_start), '' ORDER BY c.chunk) = t AS tiles,
       count(*) AS chunks
  FROM (VALUES ('the whale and the sea; été à la mer, où l''œil voit loin')) v(t),
       tfm_embed_chunks('chunk_bpe_enc', ARRAY[t], 3) c GROUP BY t;
SELECT count(*) FILTER (WHERE c.embedding = tfm_embed('chunk_bpe_enc', (tfm_tokenize('chunk_bpe', t))[2 * c.chunk + 1 : 2 * c.chunk + 3]))
         AS equal_to_tfm_embed, count(*) AS chunks
  FROM (VALUES ('the whale and the sea; été à la mer, où l''œil voit loin')) v(t),
       tfm_embed_chunks('chunk_bpe_enc', ARRAY[t], 3, 1) c;
SELECT c.chunk, c.chunk_start, c.chunk_end, substr(t, c.chunk_start + 1, c.chunk_end - c.chunk_start) AS text,
       c.embedding = tfm_embed('chunk_word_enc', (tfm_tokenize('chunk_words', t))[3 * c.chunk + 1 : 3 * c.chunk + 4]) AS equal
  FROM (VALUES ('  the whale   and the sea;  the whale ')) v(t), tfm_embed_chunks('chunk_word_enc', ARRAY[t], 4, 1) c;
-- several texts at once, a NULL among them (no rows)
SELECT ord, count(*) AS chunks FROM tfm_embed_chunks('chunk_enc', ARRAY['the whale and the sea', NULL, 'x'], 10, 4)
 GROUP BY ord ORDER BY ord;

-- refused: bad chunk options, chunking a job of another task, NULLs
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_tokens": 0}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_tokens": 25}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_word_enc', 'embed', options => '{"chunk_tokens": 24}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_tokens": 8, "chunk_overlap": 8}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_tokens": 8, "chunk_overlap": -1}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_overlap": 2}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', options => '{"chunk_tokens": "many"}')$$);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'classify', options => '{"chunk_tokens": 8}')$$);
-- (NULL arguments: no rows, doc/reference.md, NULLs)
SELECT (SELECT count(*) FROM tfm_embed_chunks('chunk_enc', ARRAY['x'], NULL)) AS null_chunk_tokens,
       (SELECT count(*) FROM tfm_embed_chunks('chunk_enc', ARRAY['x'], 4, NULL)) AS null_chunk_overlap,
       (SELECT count(*) FROM tfm_embed_chunks('chunk_enc', NULL, 4)) AS null_inputs;
SELECT pg_temp.err($$SELECT * FROM tfm_embed_chunks('chunk_enc', ARRAY[''], 4)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_embed_chunks('no_such_model', ARRAY['x'], 4)$$);
-- a destination given by the user must be keyed by (key, chunk)
CREATE TABLE cdocs_mine (id int PRIMARY KEY, chunk int, chunk_start int, chunk_end int, output real[],
                         model_version bigint, updated_at timestamptz);
SELECT pg_temp.err($$SELECT tfm_job_create('x', 'cdocs', 'body', 'chunk_enc', 'embed', 'cdocs_mine', '{"chunk_tokens": 8}')$$);
SELECT count(*) AS no_job_x FROM tfm.job_defs WHERE name = 'x';

-- a text that becomes NULL loses its chunks, without an error; one that
-- gets a value back has them again
SELECT count(*) AS chunks_before FROM cdocs_emb WHERE id = 3;
UPDATE cdocs SET body = NULL WHERE id = 3;
CALL tfm_job_run('cdocs_emb');
SELECT (SELECT count(*) FROM cdocs_emb WHERE id = 3) AS chunks_after,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.key = '{3}') AS errors;
UPDATE cdocs SET body = 'the whale and the sea; the whale' WHERE id = 3;
CALL tfm_job_run('cdocs_emb');
SELECT count(*) AS chunks_again FROM cdocs_emb WHERE id = 3;

DROP VIEW pg_temp.expect, pg_temp.rebuilt;
SELECT tfm_job_drop('cdocs_emb', drop_destination => true);
DROP TABLE cdocs, cdocs_mine;
SELECT tfm_drop_model('chunk_enc');
SELECT tfm_drop_model('chunk_bpe_enc');
SELECT tfm_drop_model('chunk_word_enc');
SELECT tfm_tokenizer_drop('chunk_chars');
SELECT tfm_tokenizer_drop('chunk_bpe');
SELECT tfm_tokenizer_drop('chunk_words');
