-- search: tfm_cosine and <=> over stored embeddings; language models over
-- token-id prompts (no tokenizer needed)
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

SELECT tfm_cosine('{1,0}', '{0,1}') AS orthogonal, tfm_cosine('{1,2,3}', '{2,4,6}') AS parallel,
       tfm_cosine('{1,0}', '{-1,0}') AS opposite, round(tfm_cosine('{1,1}', '{1,0}')::numeric, 6) AS diagonal,
       '{1,2,3}'::real[] <=> '{2,4,6}'::real[] AS distance, tfm_cosine('{0,0}', '{1,1}') AS zero_vector,
       tfm_cosine('{}', '{}') AS empty;
SELECT pg_temp.err($$SELECT tfm_cosine('{1,2}', '{1,2,3}')$$);
SELECT pg_temp.err($$SELECT tfm_cosine('{1,NULL}', '{1,2}')$$);
SELECT pg_temp.err($$SELECT tfm_cosine('{{1,2},{3,4}}', '{1,2}')$$);
SELECT pg_temp.err($$SELECT tfm_cosine('{1,NaN}', '{1,2}')$$);
SELECT tfm_cosine(NULL, '{1}') IS NULL AS strict;

-- nearest stored embeddings of a classifier's pooled representation
SELECT model FROM tfm_create_model('srch', 'classify', vocab_size => 30, labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);
CREATE TABLE docs AS SELECT i AS id, tfm_embed('srch', ARRAY[i % 30, (i * 7) % 30, (i * 11) % 30]) AS e
  FROM generate_series(1, 50) i;
-- the query's own row is nearest, and the order agrees with tfm_cosine
SELECT id FROM docs ORDER BY e <=> tfm_embed('srch', ARRAY[17 % 30, (17 * 7) % 30, (17 * 11) % 30]) LIMIT 1;
SELECT bool_and(d1 <= d2) AS ordered FROM (
  SELECT e <=> q AS d1, lead(e <=> q) OVER (ORDER BY e <=> q) AS d2
  FROM docs, (SELECT e AS q FROM docs WHERE id = 5) s) t WHERE d2 IS NOT NULL;
SELECT abs((SELECT 1 - tfm_cosine(a.e, b.e) FROM docs a, docs b WHERE a.id = 1 AND b.id = 2)
         - (SELECT a.e <=> b.e FROM docs a, docs b WHERE a.id = 1 AND b.id = 2)) < 1e-12 AS distance_is_one_minus_cosine;
DROP TABLE docs;
SELECT tfm_drop_model('srch');

-- batched embeddings: tfm_embed(model, text[]) gives (ord, embedding) in the
-- array's order, each the text's own embedding (batches pad to the longest
-- text; the padding is masked), NULL for a NULL element
CREATE TEMP TABLE words AS
SELECT w FROM unnest(ARRAY['sea', 'whale', 'a ship at sea', 'the white whale', 'Ishmael',
                           'harpoon and line', 'q', 'Call me Ishmael. Some years ago']) w;
SELECT tfm_tokenizer_train('srch_chars', w, 'char') FROM words;
SELECT model FROM tfm_create_model('srch_t', 'classify', 'srch_chars', labels => ARRAY['a', 'b'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 40);
WITH a AS (SELECT array_agg(w ORDER BY w) || ARRAY[NULL::text] AS ws FROM words)
SELECT count(*) AS rows, count(b.embedding) AS embedded, bool_and(b.ord = b.n) AS in_order,
       max(CASE WHEN b.embedding IS NOT NULL THEN
             (SELECT max(abs(x - y)) FROM unnest(b.embedding, tfm_embed('srch_t', a.ws[b.ord])) u(x, y)) END)
         < 1e-5 AS same_as_one_by_one,
       bool_and(cardinality(b.embedding) = 16) AS d_model_values,
       bool_and((b.embedding IS NULL) = (a.ws[b.ord] IS NULL)) AS null_for_null
  FROM a, tfm_embed('srch_t', a.ws) WITH ORDINALITY b(ord, embedding, n);
SELECT count(*) AS none FROM tfm_embed('srch_t', ARRAY[]::text[]);
SELECT pg_temp.err($$SELECT * FROM tfm_embed('srch_t', ARRAY['sea', ''])$$);
SELECT count(*) AS null_inputs_no_rows FROM tfm_embed('srch_t', NULL::text[]);
SELECT pg_temp.err($$SELECT * FROM tfm_embed('no_such_model', ARRAY['sea'])$$);
SELECT tfm_drop_model('srch_t');
SELECT tfm_tokenizer_drop('srch_chars');

-- a language model without a tokenizer: prompts are token ids
SELECT model FROM tfm_create_model('ids_lm', 'lm', vocab_size => 40, d_model => 16, heads => 2, layers => 1, max_len => 16);
SELECT count(*) AS tokens, bool_and(piece IS NULL) AS no_pieces, bool_and(id BETWEEN 0 AND 39) AS in_vocab
  FROM tfm_generate_tokens('ids_lm', ARRAY[7, 8, 9], max_tokens => 6, temperature => 0);
-- greedy: the first generated id is the most likely next id
SELECT (SELECT id FROM tfm_generate_tokens('ids_lm', ARRAY[7, 8, 9], max_tokens => 1, temperature => 0))
     = (SELECT id FROM tfm_next_tokens('ids_lm', ARRAY[7, 8, 9], k => 1)) AS greedy_is_top;
SELECT count(*) AS k, abs(sum(probability) - 1) < 1e-5 AS all_k_sum_to_one
  FROM tfm_next_tokens('ids_lm', ARRAY[7], k => 40);
SELECT tokens, logprob < 0 AS negative FROM tfm_score('ids_lm', ARRAY[1, 2, 3, 4, 5]);
-- log-probability of the ids = the sum of next-token log-probabilities
SELECT abs((SELECT logprob FROM tfm_score('ids_lm', ARRAY[3, 4, 5]))
         - (SELECT ln(probability) FROM tfm_next_tokens('ids_lm', ARRAY[3], k => 40) WHERE id = 4)
         - (SELECT ln(probability) FROM tfm_next_tokens('ids_lm', ARRAY[3, 4], k => 40) WHERE id = 5)) < 1e-4 AS score_is_chain;
SELECT pg_temp.err($$SELECT * FROM tfm_generate_tokens('ids_lm', ARRAY[]::int[])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_next_tokens('ids_lm', ARRAY[40])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_score('ids_lm', ARRAY[1, NULL])$$);
SELECT pg_temp.err($$SELECT tfm_generate('ids_lm', 'text')$$);
SELECT tfm_drop_model('ids_lm');
