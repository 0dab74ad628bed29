-- generation: tfm_generate (one prompt and a batch), tfm_generate_tokens,
-- tfm_next_tokens, tfm_score, tfm_evaluate for 'lm', and bad input.
-- Outputs depend on floating-point details of the CPU's kernels, so the
-- checks are properties, not exact texts.
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

CREATE TABLE verse AS
SELECT 'the sea is calm tonight, the tide is full, the moon lies fair upon the straits.' AS t
FROM generate_series(1, 200);
SELECT tfm_tokenizer_train('verse_chars', t, 'char') FROM verse;
SELECT model FROM tfm_create_model('poet', 'lm', 'verse_chars', d_model => 32, heads => 4, layers => 2, max_len => 32);
SELECT model FROM tfm_create_model('poet_sin', 'lm', 'verse_chars', d_model => 32, heads => 4, layers => 1,
                                   max_len => 16, positions => 'sinusoidal', norm => 'post', activation => 'relu');
SELECT (array_agg(train_loss ORDER BY epoch))[3] < (array_agg(train_loss ORDER BY epoch))[1] AS learning
  FROM tfm_train('poet', 'SELECT t FROM verse', epochs => 3, lr => 3e-3);
SELECT count(*) FROM tfm_train('poet_sin', 'SELECT t FROM verse', lr => 3e-3);

-- greedy and seeded sampling repeat; different seeds differ
SELECT tfm_generate('poet', 'the sea', max_tokens => 40, temperature => 0)
     = tfm_generate('poet', 'the sea', max_tokens => 40, temperature => 0) AS greedy_repeats;
SELECT tfm_generate('poet', 'the sea', max_tokens => 40, temperature => 0.8, seed => 7)
     = tfm_generate('poet', 'the sea', max_tokens => 40, temperature => 0.8, seed => 7) AS seed_repeats;
SELECT count(DISTINCT tfm_generate('poet', 'the', max_tokens => 30, temperature => 1.5, seed => s)) > 1 AS seeds_differ
  FROM generate_series(1, 5) s;
-- a char model writes at most max_tokens characters
SELECT length(tfm_generate('poet', 'the moon', max_tokens => 25, temperature => 1, seed => 3)) <= 25 AS bounded;
-- the batch decodes each prompt as a single call would (prompt i uses seed + i)
SELECT g[1] = tfm_generate('poet', 'the sea', max_tokens => 20, temperature => 0.7, seed => 5)
   AND g[2] = tfm_generate('poet', 'moon', max_tokens => 20, temperature => 0.7, seed => 6)
   AND g[3] = tfm_generate('poet', '', max_tokens => 20, temperature => 0.7, seed => 7) AS batch_equals_single
  FROM (SELECT tfm_generate('poet', ARRAY['the sea', 'moon', ''], max_tokens => 20, temperature => 0.7,
                            seed => 5) AS g) s;
SELECT tfm_generate('poet', ARRAY[]::text[]);
-- the stop text ends generation and is not returned
SELECT position('e' IN tfm_generate('poet', 'the sea', max_tokens => 60, temperature => 0, stop => 'e')) = 0 AS stopped;
-- past max_len: learned positions slide, sinusoidal ones continue
SELECT length(tfm_generate('poet', 'the sea', max_tokens => 100, temperature => 0.5, seed => 1)) > 32 AS slides;
SELECT length(tfm_generate('poet_sin', 'the sea', max_tokens => 150, temperature => 0.5, seed => 1)) > 16 AS continues;
-- a prompt longer than the context keeps its last tokens
SELECT tfm_generate('poet', repeat('x', 500) || 'the sea', max_tokens => 20, temperature => 0)
     = tfm_generate('poet', right(repeat('x', 500) || 'the sea', 32), max_tokens => 20, temperature => 0) AS keeps_tail;

-- token by token: the same text, log-probabilities under the model
SELECT string_agg(piece, '' ORDER BY pos) = tfm_generate('poet', 'the tide', max_tokens => 12, temperature => 0)
       AS same_text, count(*) <= 12 AS bounded, bool_and(logprob <= 0) AS logprobs
  FROM tfm_generate_tokens('poet', 'the tide', max_tokens => 12, temperature => 0);
-- the greedy next token is the most likely one
SELECT (SELECT piece FROM tfm_next_tokens('poet', 'the tid', 3) WHERE rank = 1)
     = (SELECT piece FROM tfm_generate_tokens('poet', 'the tid', max_tokens => 1, temperature => 0)) AS argmax;
SELECT count(*) AS k, bool_and(probability > 0) AS positive, sum(probability) <= 1.000001 AS at_most_one
  FROM tfm_next_tokens('poet', 'the tid', 5);
-- scores: every token after the first; a text like the training rows scores higher
SELECT tokens FROM tfm_score('poet', 'the sea');
SELECT (SELECT logprob FROM tfm_score('poet', 'the tide is full'))
     > (SELECT logprob FROM tfm_score('poet', 'eht edit si lluf')) AS ranks;
SELECT loss > 0 AS pos_loss, abs(perplexity - exp(loss)) < 1e-9 AS ppl, nats_per_char > 0 AS npc,
       abs(bits_per_byte - nats_per_char / ln(2)) < 1e-9 AS ascii_bpb, tokens, rows
  FROM tfm_evaluate('poet', 'SELECT t FROM verse LIMIT 3');

-- bad input
SELECT pg_temp.err($$SELECT tfm_generate('nope', 'x')$$);
-- NULL in, NULL out (doc/reference.md, NULLs)
SELECT tfm_generate(NULL, 'x') IS NULL AS null_model, tfm_generate('poet', NULL::text) IS NULL AS null_prompt;
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', max_tokens => 100001)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', temperature => -1)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', top_k => -1)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', top_p => 0)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', top_p => 1.5)$$);
SELECT pg_temp.err($$SELECT tfm_generate('poet', 'x', stop => '')$$);
-- a NULL prompt gives NULL; element i still samples with seed + i
SELECT g[1] = tfm_generate('poet', 'a', max_tokens => 12, temperature => 0.7, seed => 5) AND g[2] IS NULL
   AND g[3] = tfm_generate('poet', 'moon', max_tokens => 12, temperature => 0.7, seed => 7) AS null_element
  FROM (SELECT tfm_generate('poet', ARRAY['a', NULL, 'moon'], max_tokens => 12, temperature => 0.7, seed => 5) AS g) s;
SELECT pg_temp.err($$SELECT tfm_next_tokens('poet', 'x', 0)$$);
SELECT model FROM tfm_create_model('not_lm', 'classify', 'verse_chars', labels => ARRAY['a', 'b'], d_model => 8, heads => 2, layers => 1);
SELECT model FROM tfm_create_model('ids_lm', 'lm', vocab_size => 10, d_model => 8, heads => 2, layers => 1);
SELECT pg_temp.err($$SELECT tfm_generate('not_lm', 'x')$$);
SELECT pg_temp.err($$SELECT tfm_score('not_lm', 'x')$$);
SELECT pg_temp.err($$SELECT tfm_generate('ids_lm', 'x')$$);
SELECT pg_temp.err($$SELECT tfm_train('poet', 'SELECT 1')$$);

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
SELECT tfm_tokenizer_drop('verse_chars');
DROP TABLE verse;
