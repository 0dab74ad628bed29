-- tokenizers: every kind trained on a few rows with exact outputs, import,
-- tokenize / detokenize / tokens, drop, the catalog, and every bad input
SET tfm.threads = 1;
SET tfm.progress = off;
-- errors as "SQLSTATE message", so both are pinned
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- a tokenizer's vocabulary as (id, piece) rows: the piece as text where it
-- is UTF-8, else its bytes in hex
CREATE FUNCTION pg_temp.piece(b bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN convert_from(b, 'UTF8');
EXCEPTION WHEN OTHERS THEN
    RETURN '\x' || encode(b, 'hex');
END $$;
CREATE FUNCTION pg_temp.vocab(tok text) RETURNS TABLE (id int, piece text) LANGUAGE sql AS $$
    SELECT v.id, pg_temp.piece(v.piece)
    FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
    WHERE t.name = tok ORDER BY v.id $$;

-- what other tests left in the catalog, to check at the end that this one leaves nothing
SELECT (SELECT count(*) FROM tfm.tokenizers) AS tokenizers0, (SELECT count(*) FROM tfm.vocab) AS vocab0,
       (SELECT count(*) FROM tfm.merges) AS merges0 \gset

CREATE TABLE tk_rows (i int PRIMARY KEY, t text);
INSERT INTO tk_rows VALUES
  (1, 'the cat sat on the mat'),
  (2, NULL),
  (3, 'the dog sat on the log'),
  (4, 'Café naïve café'),
  (5, 'walking talking'),
  (6, '');

-- ---------------------------------------------------------------------------
-- every kind on these rows (the NULL row is skipped)
SELECT tfm_tokenizer_train('tk_byte', t, 'byte') FROM tk_rows;
SELECT tfm_tokenizer_train('tk_char', t, 'char') FROM tk_rows;
SELECT tfm_tokenizer_train('tk_word', t, 'word') FROM tk_rows;
SELECT tfm_tokenizer_train('tk_bpe', t, 'bpe', 275) FROM tk_rows;
SELECT tfm_tokenizer_train('tk_wp', t, 'wordpiece', 60) FROM tk_rows;
-- defaults: bpe with 8000 ids (stops early: no pair occurs twice any more)
SELECT tfm_tokenizer_train('tk_default', t) FROM tk_rows;
SELECT name, kind, vocab_size, merges, used_by FROM tfm.tokenizer_list WHERE name LIKE 'tk\_%';
SELECT name, options - 'format_version' AS options FROM tfm.tokenizers WHERE name LIKE 'tk\_%' ORDER BY name;

-- the vocabularies, readable in tfm.vocab: six specials first
SELECT * FROM pg_temp.vocab('tk_byte') WHERE id < 8 OR id > 259;
SELECT count(*) AS ids, count(DISTINCT piece) AS distinct_pieces,
       bool_and(octet_length(piece) = 1) FILTER (WHERE id >= 6) AS one_byte_each
  FROM tfm.vocab WHERE tokenizer_id = (SELECT id FROM tfm.tokenizers WHERE name = 'tk_byte');
-- char: most frequent first, ties by bytes
SELECT * FROM pg_temp.vocab('tk_char');
-- word: runs of letters, most frequent first
SELECT * FROM pg_temp.vocab('tk_word');
-- wordpiece: the alphabet ("x" word-initial, "##x" inside) in byte order, then merges
SELECT * FROM pg_temp.vocab('tk_wp');
-- bpe: 256 bytes, then one piece per merge in rank order (tfm.merges)
SELECT * FROM pg_temp.vocab('tk_bpe') WHERE id >= 262;
SELECT m.rank, m.left_id, m.right_id, l.piece AS left_piece, r.piece AS right_piece
  FROM tfm.merges m
  JOIN tfm.tokenizers t ON t.id = m.tokenizer_id
  JOIN pg_temp.vocab('tk_bpe') l ON l.id = m.left_id
  JOIN pg_temp.vocab('tk_bpe') r ON r.id = m.right_id
 WHERE t.name = 'tk_bpe' ORDER BY m.rank;
-- the default one learned the same first merges
SELECT (SELECT array_agg(piece ORDER BY id) FROM pg_temp.vocab('tk_default') WHERE id < 275)
     = (SELECT array_agg(piece ORDER BY id) FROM pg_temp.vocab('tk_bpe')) AS same_prefix;

-- NULL rows are skipped: the same vocabulary without them
SELECT tfm_tokenizer_train('tk_bpe_nn', t, 'bpe', 275) FROM tk_rows WHERE t IS NOT NULL;
SELECT (SELECT array_agg(piece ORDER BY id) FROM pg_temp.vocab('tk_bpe'))
     = (SELECT array_agg(piece ORDER BY id) FROM pg_temp.vocab('tk_bpe_nn')) AS nulls_skipped;
SELECT tfm_tokenizer_drop('tk_bpe_nn');
-- zero rows (or only NULL rows): NULL, nothing stored, the name not even checked
SELECT tfm_tokenizer_train('tk_none', t) IS NULL AS is_null FROM tk_rows WHERE false;
SELECT tfm_tokenizer_train('tk_none', t, 'char') IS NULL AS is_null FROM tk_rows WHERE t IS NULL;
SELECT tfm_tokenizer_train('tk_byte', t, 'byte') IS NULL AS is_null FROM tk_rows WHERE false;
SELECT count(*) AS stored FROM tfm.tokenizers WHERE name = 'tk_none';
-- one statement may train several (GROUP BY), each stored when the plan ends
SELECT tfm_tokenizer_train('tk_g' || (i % 2), t, 'char') FROM tk_rows GROUP BY i % 2 ORDER BY 1;
SELECT * FROM pg_temp.vocab('tk_g0');
SELECT tfm_tokenizer_drop('tk_g0'), tfm_tokenizer_drop('tk_g1');
-- a rolled-back statement or savepoint stores nothing
BEGIN;
SAVEPOINT s;
SELECT tfm_tokenizer_train('tk_rolled_back', t, 'byte') FROM tk_rows;
ROLLBACK TO s;
COMMIT;
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_rolled_back', t), 1 / (count(*) - 6) FROM tk_rows$$);
SELECT count(*) AS stored FROM tfm.tokenizers WHERE name = 'tk_rolled_back';

-- ---------------------------------------------------------------------------
-- tfm_tokenize, tfm_detokenize, tfm_tokens on every kind
SELECT k, tfm_tokenize(k, 'the cat sat') AS ids,
       tfm_detokenize(k, tfm_tokenize(k, 'the cat sat')) AS text
  FROM unnest(ARRAY['tk_byte', 'tk_char', 'tk_word', 'tk_bpe', 'tk_wp', 'tk_default']) k;
-- unseen text: byte and bpe encode any bytes; char, word and wordpiece give <unk> (1),
-- which detokenizes to U+FFFD; word and wordpiece join words with one space
SELECT k, tfm_tokenize(k, 'The Cat, zebra! ☃') AS ids,
       tfm_detokenize(k, tfm_tokenize(k, 'The Cat, zebra! ☃')) AS text
  FROM unnest(ARRAY['tk_byte', 'tk_char', 'tk_word', 'tk_bpe', 'tk_wp']) k;
SELECT * FROM tfm_tokens('tk_bpe', 'the cat sat on the mat');
SELECT * FROM tfm_tokens('tk_wp', 'walking talking cats');
SELECT * FROM tfm_tokens('tk_word', 'Café, the cat!');
SELECT * FROM tfm_tokens('tk_char', 'naïve');
-- bytes that are not UTF-8 on their own show as \xNN
SELECT * FROM tfm_tokens('tk_byte', 'é☃');
SELECT * FROM tfm_tokens('tk_bpe', 'café');
-- specials are never produced by text; add_bos / add_eos add them (ids 2 and 3)
SELECT tfm_tokenize('tk_char', '<pad><unk><bos>') AS ids;
SELECT tfm_tokenize('tk_bpe', 'the cat', add_bos => true) AS bos,
       tfm_tokenize('tk_bpe', 'the cat', add_eos => true) AS eos,
       tfm_tokenize('tk_bpe', 'the cat', add_bos => true, add_eos => true) AS both;
-- max_length counts bos and eos and keeps them: the text is cut, eos stays last
SELECT n, tfm_tokenize('tk_byte', 'abcdef', max_length => n) AS plain,
       tfm_tokenize('tk_byte', 'abcdef', add_bos => true, max_length => n) AS with_bos,
       CASE WHEN n >= 2 THEN tfm_tokenize('tk_byte', 'abcdef', add_bos => true, add_eos => true,
                                          max_length => n) END AS with_both
  FROM unnest(ARRAY[1, 2, 3, 6, 7, 8, 100, 2147483647]) n;
-- NULL options mean the defaults
SELECT tfm_tokenize('tk_byte', 'ab', NULL, NULL, NULL) AS ids;
-- detokenize drops specials, writes <unk> as U+FFFD and replaces invalid UTF-8 by U+FFFD
SELECT tfm_detokenize('tk_byte', ARRAY[0, 2, 103, 104, 1, 3, 4, 5]) AS specials_dropped,
       tfm_detokenize('tk_byte', ARRAY[103, 6 + 195, 104]) AS cut_sequence,
       tfm_detokenize('tk_byte', ARRAY[6 + 255, 6 + 254]) AS invalid_bytes,
       tfm_detokenize('tk_byte', ARRAY[6 + 226, 6 + 152, 6 + 131]) AS snowman_in_bytes;
SELECT tfm_detokenize('tk_word', ARRAY[6, 7, 1, 8]) AS words;
SELECT tfm_detokenize('tk_byte', '{}') = '' AS empty,
       tfm_detokenize('tk_byte', '[5:6]={103,104}') AS lower_bound_5;
-- empty and whitespace-only text: '' gives '{}'; spaces are tokens like others
-- (word and wordpiece drop them)
SELECT k, tfm_tokenize(k, '') AS empty, tfm_tokenize(k, '   ') AS spaces,
       tfm_tokenize(k, E' \t\n') AS whitespace,
       tfm_detokenize(k, tfm_tokenize(k, '   ')) = '   ' AS spaces_round_trip
  FROM unnest(ARRAY['tk_byte', 'tk_char', 'tk_word', 'tk_bpe', 'tk_wp']) k;
SELECT count(*) AS rows_for_empty_text FROM tfm_tokens('tk_bpe', '');
SELECT pos, id, to_json(piece) AS piece FROM tfm_tokens('tk_bpe', E'  \t');

-- a 10 MB row, tokenized and round-tripped (lengths and equality, not printed)
CREATE TABLE tk_big AS SELECT repeat('abc ', 2621440) AS t;
SELECT octet_length(t) AS bytes FROM tk_big;
SELECT tfm_tokenizer_train('tk_big_bpe', t, 'bpe', 270) FROM tk_big;
SELECT tfm_tokenizer_train('tk_big_char', t, 'char') FROM tk_big;
SELECT tfm_tokenizer_train('tk_big_word', t, 'word') FROM tk_big;
SELECT tfm_tokenizer_train('tk_big_wp', t, 'wordpiece', 100) FROM tk_big;
SELECT k, cardinality(tfm_tokenize(k, t)) AS ids,
       octet_length(tfm_detokenize(k, tfm_tokenize(k, t))) AS bytes,
       tfm_detokenize(k, tfm_tokenize(k, t)) = t AS round_trip
  FROM tk_big, unnest(ARRAY['tk_byte', 'tk_big_bpe', 'tk_big_char']) k;
-- a char tokenizer that lacks "b": 2621440 <unk> of 3 bytes each
SELECT cardinality(tfm_tokenize('tk_char', t)) AS ids, octet_length(tfm_detokenize('tk_char', tfm_tokenize('tk_char', t))) AS bytes
  FROM tk_big;
-- word and wordpiece: the words come back joined by single spaces
SELECT k, cardinality(tfm_tokenize(k, t)) AS ids,
       tfm_detokenize(k, tfm_tokenize(k, t)) = rtrim(t) AS round_trip_but_last_space
  FROM tk_big, unnest(ARRAY['tk_big_word', 'tk_big_wp']) k;
SELECT count(*) AS tokens, max(pos) AS last_pos, count(DISTINCT id) AS distinct_ids
  FROM tk_big, tfm_tokens('tk_big_bpe', t);
SELECT cardinality(tfm_tokenize('tk_big_bpe', t, add_bos => true, add_eos => true, max_length => 5)) AS cut
  FROM tk_big;

-- ---------------------------------------------------------------------------
-- import: a small vocabulary in GPT-2's file formats (GPT-2's printable byte
-- mapping: 256 byte pieces, "Ġ" is the space), with three merges
CREATE TEMP TABLE gpt2_pieces AS
WITH b AS (SELECT b, (b BETWEEN 33 AND 126 OR b BETWEEN 161 AND 172 OR b >= 174) AS printable
           FROM generate_series(0, 255) b)
SELECT (row_number() OVER (ORDER BY NOT printable, b) - 1)::int AS id,
       CASE WHEN printable THEN chr(b)
            ELSE chr(255 + (row_number() OVER (PARTITION BY printable ORDER BY b))::int) END AS piece
FROM b;
INSERT INTO gpt2_pieces VALUES (256, 'Ġt'), (257, 'he'), (258, 'Ġthe'), (259, '<|endoftext|>');
SELECT '{' || string_agg(to_json(piece)::text || ': ' || id, ', ' ORDER BY id) || '}' AS enc
  FROM gpt2_pieces \gset
SELECT tfm_tokenizer_import('tk_gpt', 'bpe', :'enc', E'#version: 0.2\nĠ t\nh e\nĠt he\n');
SELECT name, kind, vocab_size, merges FROM tfm.tokenizer_list WHERE name = 'tk_gpt';
-- its own ids are kept, the specials come after them (260..265)
SELECT options->'specials' AS specials FROM tfm.tokenizers WHERE name = 'tk_gpt';
SELECT * FROM pg_temp.vocab('tk_gpt') WHERE id >= 255;
SELECT m.rank, m.left_id, m.right_id FROM tfm.merges m JOIN tfm.tokenizers t ON t.id = m.tokenizer_id
 WHERE t.name = 'tk_gpt' ORDER BY m.rank;
SELECT tfm_tokenize('tk_gpt', ' the then') AS ids, tfm_tokenize('tk_gpt', 'the') AS no_space,
       tfm_tokenize('tk_gpt', 'hi', add_bos => true, add_eos => true) AS with_specials;
SELECT * FROM tfm_tokens('tk_gpt', 'the then ☃');
SELECT tfm_detokenize('tk_gpt', tfm_tokenize('tk_gpt', ' the then ☃')) AS round_trip,
       tfm_detokenize('tk_gpt', ARRAY[260, 258, 265]) AS specials_dropped;
-- like the reference, what follows the last newline of vocab.bpe is ignored
SELECT tfm_tokenizer_import('tk_gpt_cut', 'bpe', :'enc', E'#version: 0.2\nĠ t\nh e\nĠt he');
SELECT tfm_tokenizer_drop('tk_gpt_cut');
-- malformed files
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L, %L, %L)', 'tk_bad', 'bpe', e, m))
  FROM (VALUES
    ('{"a": 0', E'#version: 0.2\n'),                       -- bad JSON
    ('[1, 2]', E'#version: 0.2\n'),                         -- not an object
    ('', E'#version: 0.2\n'),                               -- empty
    ('{}', E'#version: 0.2\n'),                             -- no pieces
    ('{"a": 0}', E'#version: 0.2\n'),                       -- lacks byte pieces
    (:'enc' || ' x', E'#version: 0.2\n'),                   -- trailing garbage
    (replace(:'enc', '"he": 257', '"he": 256'), E'#version: 0.2\n'),   -- two pieces, one id
    (replace(:'enc', '"he": 257', '"he": -1'), E'#version: 0.2\n'),    -- negative id
    (replace(:'enc', '"he": 257', '"he": 9000'), E'#version: 0.2\n'),  -- id not dense
    (replace(:'enc', '"he": 257', '"he": "x"'), E'#version: 0.2\n'),   -- id not a number
    (replace(:'enc', '"he": 257', '"Ġt": 257'), E'#version: 0.2\n'),   -- a piece twice
    (:'enc', ''),                                           -- no version line
    (:'enc', E'#version: 0.2\nĠ zz\n'),                     -- merge of an unknown piece
    (:'enc', E'#version: 0.2\nĠ q\n'),                      -- merge making an unknown piece
    (:'enc', E'#version: 0.2\nĠ t x\n')                     -- three pieces on a line
  ) v(e, m);
-- a kind other than bpe
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L, %L, %L)', 'tk_bad', 'wordpiece', :'enc', E'#version: 0.2\n'));
SELECT count(*) AS stored FROM tfm.tokenizers WHERE name = 'tk_bad';

-- more tokenizers in one statement than the session caches (8): each call
-- still gets its own
SELECT count(DISTINCT k) AS tokenizers,
       (array_agg(ids ORDER BY o))[1:11] = (array_agg(ids ORDER BY o))[12:22] AS same_twice
  FROM (SELECT k, o, tfm_tokenize(k, 'the cat ☃')::text AS ids
          FROM unnest(ARRAY['tk_byte', 'tk_char', 'tk_word', 'tk_bpe', 'tk_wp', 'tk_default', 'tk_gpt',
                            'tk_big_bpe', 'tk_big_char', 'tk_big_word', 'tk_big_wp',
                            'tk_byte', 'tk_char', 'tk_word', 'tk_bpe', 'tk_wp', 'tk_default', 'tk_gpt',
                            'tk_big_bpe', 'tk_big_char', 'tk_big_word', 'tk_big_wp']) WITH ORDINALITY AS u(k, o)) s;

-- ---------------------------------------------------------------------------
-- bad inputs to training
-- duplicate names (train and import)
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_byte', t, 'byte') FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_gpt', t) FROM tk_rows$$);
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L, %L, %L)', 'tk_bpe', 'bpe', :'enc', E'#version: 0.2\n'));
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L, %L, %L)', 'tk_gpt', 'bpe', :'enc', E'#version: 0.2\n'));
-- the same name twice in one statement
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_twice', t), tfm_tokenizer_train('tk_twice', t, 'byte') FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_twice', t) FROM tk_rows GROUP BY i % 2$$);
SELECT pg_temp.err(format('SELECT tfm_tokenizer_import(%L, %L, %L, %L), tfm_tokenizer_import(%L, %L, %L, %L)',
                          'tk_twice', 'bpe', :'enc', E'#version: 0.2\n', 'tk_twice', 'bpe', :'enc', E'#version: 0.2\n'));
SELECT count(*) AS stored FROM tfm.tokenizers WHERE name = 'tk_twice';
-- names: NULL, empty, varying across rows
SELECT pg_temp.err($$SELECT tfm_tokenizer_train(NULL, t) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('', t) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x' || i, t) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train(CASE WHEN i < 4 THEN 'tk_x' END, t) FROM tk_rows$$);
-- kinds: unknown, NULL, varying across rows
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'sentencepiece') FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, '') FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, NULL) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, CASE WHEN i < 4 THEN 'bpe' ELSE 'byte' END) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, CASE WHEN i < 4 THEN 'bpe' END) FROM tk_rows$$);
-- vocab_size: too small for the specials plus the base alphabet, negative, absurd, NULL, varying
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', 261) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'byte', 261) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'wordpiece', 20) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'char', 6) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', 0) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', -1) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', 4194305) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', 2147483647) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', NULL) FROM tk_rows$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t, 'bpe', 300 + i) FROM tk_rows$$);
-- at the limits: bpe at 262 learns nothing; char at 7 keeps the most frequent character
SELECT tfm_tokenizer_train('tk_x262', t, 'bpe', 262) FROM tk_rows;
SELECT tfm_tokenizer_train('tk_x7', t, 'char', 7) FROM tk_rows;
SELECT * FROM pg_temp.vocab('tk_x7') WHERE id >= 6;
SELECT tfm_tokenizer_drop('tk_x262'), tfm_tokenizer_drop('tk_x7');
-- not a window function
SELECT pg_temp.err($$SELECT tfm_tokenizer_train('tk_x', t) OVER (ORDER BY i) FROM tk_rows$$);
SELECT count(*) AS stored FROM tfm.tokenizers WHERE name LIKE 'tk\_x%';

-- ---------------------------------------------------------------------------
-- bad inputs to the other functions
SELECT pg_temp.err($$SELECT tfm_tokenize('tk_nope', 'x')$$);
-- NULL in, NULL out (no rows) (doc/reference.md, NULLs)
SELECT tfm_tokenize(NULL, 'x') IS NULL AS null_tokenizer, tfm_tokenize('tk_byte', NULL) IS NULL AS null_input;
SELECT pg_temp.err($$SELECT tfm_tokenize('tk_byte', 'x', max_length => 0)$$);
SELECT pg_temp.err($$SELECT tfm_tokenize('tk_byte', 'x', max_length => -3)$$);
SELECT pg_temp.err($$SELECT tfm_tokenize('tk_byte', 'x', add_bos => true, add_eos => true, max_length => 1)$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_nope', ARRAY[6])$$);
SELECT tfm_detokenize(NULL, ARRAY[6]) IS NULL AS null_tokenizer, tfm_detokenize('tk_byte', NULL) IS NULL AS null_ids;
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_byte', ARRAY[6, 262])$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_byte', ARRAY[-1])$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_word', ARRAY[6, 7, 2147483647])$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_gpt', ARRAY[266])$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_byte', ARRAY[6, NULL])$$);
SELECT pg_temp.err($$SELECT tfm_detokenize('tk_byte', ARRAY[[6, 7], [8, 9]])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_tokens('tk_nope', 'x')$$);
SELECT (SELECT count(*) FROM tfm_tokens(NULL, 'x')) AS null_tokenizer_rows, (SELECT count(*) FROM tfm_tokens('tk_byte', NULL)) AS null_input_rows;
SELECT pg_temp.err($$SELECT tfm_tokenizer_import(NULL, 'bpe', '{}', '')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_import('', 'bpe', '{}', '')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_import('tk_x', NULL, '{}', '')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_import('tk_x', 'bpe', NULL, '')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_import('tk_x', 'bpe', '{}', NULL)$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop(NULL)$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('tk_nope')$$);

-- ---------------------------------------------------------------------------
-- a tokenizer a model uses cannot be dropped
SELECT model, model_task FROM tfm_create_model('tk_model', 'classify', 'tk_word', labels => ARRAY['a', 'b'],
                                               d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT name, tokenizer FROM tfm.model_list WHERE name = 'tk_model';
SELECT name, used_by FROM tfm.tokenizer_list WHERE name = 'tk_word';
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('tk_word')$$);
-- also as the target tokenizer of an encoder-decoder
SELECT model, model_task FROM tfm_create_model('tk_s2s', 'seq2seq', 'tk_char', target_tokenizer => 'tk_bpe',
                                               d_model => 16, heads => 2, encoder_layers => 1,
                                               decoder_layers => 1, max_len => 16);
SELECT name, used_by FROM tfm.tokenizer_list WHERE used_by IS NOT NULL;
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('tk_bpe')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('tk_char')$$);
SELECT tfm_drop_model('tk_model'), tfm_drop_model('tk_s2s');
SELECT tfm_tokenizer_drop('tk_word');
SELECT pg_temp.err($$SELECT tfm_tokenize('tk_word', 'the cat')$$);
-- a name trained again after a drop is a new tokenizer (the session's cache sees it)
SELECT tfm_tokenize('tk_char', 'cat') AS before;
SELECT tfm_tokenizer_drop('tk_char');
SELECT tfm_tokenizer_train('tk_char', 'tac', 'char');
SELECT tfm_tokenize('tk_char', 'cat') AS after;

-- dropping removes the vocabulary and merges
SELECT count(tfm_tokenizer_drop(name)) AS dropped FROM tfm.tokenizers WHERE name LIKE 'tk\_%';
SELECT (SELECT count(*) FROM tfm.tokenizers) - :tokenizers0 AS tokenizers_left,
       (SELECT count(*) FROM tfm.vocab) - :vocab0 AS vocab_left, (SELECT count(*) FROM tfm.merges) - :merges0 AS merges_left;
DROP TABLE tk_rows, tk_big;
