-- classification end to end: train_agg, classify (one, batch, deployed),
-- predict_proba, embed, evaluate, parallel plans, NaN stop, bad input
SET extra_float_digits = 0;
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

CREATE TABLE pets (i int, txt text, label text);
INSERT INTO pets
SELECT i, CASE WHEN i % 2 = 0
               THEN (ARRAY['the dog barks', 'a happy dog', 'dogs love walks', 'my dog sleeps'])[1 + i % 4]
               ELSE (ARRAY['the cat purrs', 'a lazy cat', 'cats love boxes', 'my cat hides'])[1 + i % 4] END
          || ' ' || (ARRAY['today', 'at night', 'in the garden', 'again'])[1 + (i / 2) % 4],
       CASE WHEN i % 2 = 0 THEN 'dog' ELSE 'cat' END
FROM generate_series(1, 400) i;
SELECT tfm_tokenizer_train('pets_words', txt, 'word', 50) FROM pets;
SELECT model FROM tfm_create_model('pets', 'classify', 'pets_words', labels => ARRAY['cat', 'dog'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);

-- one epoch per aggregate call, over the rows in the given order
SELECT (r).epoch, (r).steps, (r).train_loss < 0.75 AS sane FROM (
  SELECT tfm_train_agg('pets', txt, label, '{"batch_size": 16, "lr": 0.003}' ORDER BY i) AS r
  FROM pets) s;
-- (agg).* works too: PostgreSQL computes the aggregate once
SELECT (tfm_train_agg('pets', txt, label ORDER BY i)).steps FROM pets;
SELECT (tfm_train_agg('pets', txt, label, '{"batch_size": 16, "lr": 0.003}' ORDER BY md5(i::text))).steps
  FROM pets;
SELECT h.epoch, h.steps FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id WHERE m.name = 'pets' ORDER BY saved_at;
SELECT count(*) FROM tfm_train('pets', 'SELECT txt, label FROM pets ORDER BY i', epochs => 4, lr => 3e-3);

-- inference: one text, many texts in one batched call, the deployed model
SELECT tfm_classify('pets', 'the dog barks again') AS one, tfm_classify('pets', 'a lazy cat today') AS other;
SELECT tfm_classify('pets', ARRAY['the dog barks again', NULL, 'a lazy cat today', 'my dog sleeps at night']);
SELECT tfm_classify('pets', ARRAY[]::text[]);
SELECT pg_temp.err($$SELECT tfm_classify('the dog barks')$$);
SELECT tfm_deploy('pets');
SELECT tfm_classify('the dog barks') AS deployed;
SELECT * FROM tfm.deployed;
SELECT label, probability > 0.5 AS likely FROM tfm_predict_proba('pets', 'cats love boxes');
SELECT round(sum(probability)::numeric, 6) AS total FROM tfm_predict_proba('pets', 'cats love boxes');
SELECT array_length(tfm_embed('pets', 'a happy dog'), 1) AS dims;
-- the batch form gives what one-at-a-time calls give
SELECT tfm_classify('pets', array_agg(txt ORDER BY i)) = array_agg(tfm_classify('pets', txt) ORDER BY i) AS same
  FROM pets;

-- evaluation
SELECT accuracy > 0.95 AS accurate, loss < 0.3 AS low_loss, macro_f1 > 0.95 AS f1, rows, skipped,
       jsonb_object_keys(per_class) AS classes
  FROM tfm_evaluate('pets', 'SELECT txt, CASE WHEN i = 3 THEN NULL ELSE label END FROM pets');
SELECT (confusion->'cat'->>'cat')::int + (confusion->'cat'->>'dog')::int AS cats
  FROM tfm_evaluate('pets', 'SELECT txt, label FROM pets');

-- parallel plans: the function runs in the workers
CREATE TABLE many_pets AS SELECT i, txt FROM pets, generate_series(1, 50) g;
ANALYZE many_pets;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM many_pets WHERE tfm_classify('pets', txt) = 'dog';
SELECT count(*) FROM many_pets WHERE tfm_classify('pets', txt) = 'dog';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- a loss that stops being finite ends training with a warning; nothing bad is saved
SELECT model FROM tfm_create_model('broken', 'classify', 'pets_words', labels => ARRAY['cat', 'dog'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 16);
UPDATE tfm.tensors SET data[1] = 'NaN'
 WHERE name = 'cls.w' AND model_id = (SELECT id FROM tfm.models WHERE name = 'broken');
SELECT version AS vb FROM tfm.models WHERE name = 'broken' \gset
SELECT epoch, steps FROM tfm_train('broken', 'SELECT txt, label FROM pets', epochs => 3);
SELECT steps FROM tfm.models WHERE name = 'broken';

-- bad input
SELECT pg_temp.err($$SELECT tfm_classify('nope', 'x')$$);
-- NULL in, NULL out (doc/reference.md, NULLs)
SELECT tfm_classify(NULL, 'x') IS NULL AS null_model, tfm_classify('pets', NULL::text) IS NULL AS null_input;
SELECT pg_temp.err($$SELECT tfm_classify('pets', '')$$);
SELECT pg_temp.err($$SELECT tfm_classify('pets', '   ')$$);
SELECT pg_temp.err($$SELECT tfm_classify('pets', ARRAY[1, 999])$$);
SELECT tfm_classify('pets', NULL::text[]) IS NULL AS null_inputs;
SELECT pg_temp.err($$SELECT tfm_deploy('nope')$$);
SELECT model FROM tfm_create_model('plm', 'lm', 'pets_words', d_model => 16, heads => 2, layers => 1, max_len => 8);
SELECT pg_temp.err($$SELECT tfm_classify('plm', 'a dog')$$);
SELECT pg_temp.err($$SELECT tfm_embed('plm', 'a dog')$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('plm', txt, label) FROM pets$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('pets', txt, label, '{"lr": -1}') FROM pets$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('pets', txt, label, '{"batch": 3}') FROM pets$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('pets', txt, label, '{"lr": "fast"}') FROM pets$$);
SELECT pg_temp.err($$SELECT tfm_train_agg('pets', txt, 'bird') FROM pets$$);
SELECT tfm_train_agg('pets', txt, label) FROM pets WHERE false;
SELECT pg_temp.err($$SELECT tfm_evaluate('pets', 'SELECT txt FROM pets')$$);
SELECT pg_temp.err($$SELECT tfm_evaluate('pets', 'SELECT txt, label FROM pets WHERE false')$$);
SELECT pg_temp.err($$SELECT tfm_evaluate('pets', 'SELECT txt, ''bird'' FROM pets')$$);
SELECT pg_temp.err($$SELECT tfm_train('pets', 'SELECT txt FROM pets')$$);
SELECT pg_temp.err($$SELECT tfm_tokenizer_drop('pets_words')$$);

SELECT tfm_drop_model(name) FROM tfm.models ORDER BY name;
SELECT count(*) AS deployed_left FROM tfm.deployed;
SELECT tfm_tokenizer_drop('pets_words');
DROP TABLE pets, many_pets;
