-- demo.sql — a first session with tfm: learn a tokenizer from a table's
-- rows, create a classifier, train it (watch the loss fall) and classify.
\pset footer off
\timing off
CREATE EXTENSION IF NOT EXISTS tfm;
DROP TABLE IF EXISTS demo_reviews;
SELECT tfm_drop_model(name) FROM tfm.models WHERE name = 'demo_sentiment';
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name = 'demo_bpe';

\echo '== tfm, the BLIS kernels it runs on, and its threads'
SELECT * FROM tfm_info();

\echo '== a table of 4000 short reviews (made up from phrase lists)'
CREATE TABLE demo_reviews AS
WITH good(w) AS (SELECT unnest(ARRAY['wonderful', 'a delight', 'moving', 'superb', 'funny and warm',
                                     'beautifully shot', 'a joy', 'gripping', 'touching', 'brilliant'])),
     bad(w)  AS (SELECT unnest(ARRAY['dull', 'a mess', 'tedious', 'awful', 'flat and lifeless',
                                     'badly acted', 'a bore', 'pointless', 'clumsy', 'forgettable'])),
     thing(w) AS (SELECT unnest(ARRAY['the film', 'this movie', 'the story', 'the cast', 'the ending',
                                      'the script', 'the music', 'the director''s work'])),
     r AS (SELECT i, i % 2 = 0 AS positive FROM generate_series(1, 4000) i)
SELECT i,
       (SELECT t.w FROM thing t ORDER BY md5(i::text || t.w) LIMIT 1) || ' was ' ||
       CASE WHEN positive THEN (SELECT w FROM good ORDER BY md5(i::text || w) LIMIT 1)
            ELSE (SELECT w FROM bad ORDER BY md5(i::text || w) LIMIT 1) END ||
       CASE WHEN i % 3 = 0 THEN ', and ' || (SELECT t.w FROM thing t ORDER BY md5(t.w || i::text) LIMIT 1) ||
            ' was ' || CASE WHEN positive THEN (SELECT w FROM good ORDER BY md5(w || i::text) LIMIT 1)
                            ELSE (SELECT w FROM bad ORDER BY md5(w || i::text) LIMIT 1) END
            ELSE '' END || '.' AS review,
       CASE WHEN positive THEN 'pos' ELSE 'neg' END AS label
FROM r;
SELECT review, label FROM demo_reviews ORDER BY i LIMIT 4;

\echo '== learn a byte-level BPE tokenizer from the rows (an aggregate)'
SELECT tfm_tokenizer_train('demo_bpe', review, 'bpe', 400) FROM demo_reviews;
SELECT * FROM tfm_tokens('demo_bpe', 'The film was a delight.');

\echo '== create a small classifier: embeddings, 2 post-LN encoder blocks, mean pooling'
SELECT * FROM tfm_create_model('demo_sentiment', 'classify', 'demo_bpe', labels => ARRAY['neg', 'pos'],
                               d_model => 64, heads => 4, layers => 2, max_len => 64);

\echo '== train it on the table: one row per epoch, the loss falls'
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
       round(val_accuracy::numeric, 3) AS val_accuracy, round(tokens_per_s::numeric) AS tokens_per_s
FROM tfm_train('demo_sentiment', 'SELECT review, label FROM demo_reviews ORDER BY i', epochs => 3);

\echo '== the weights are rows of tfm.tensors; training history is in tfm.history'
SELECT name, task, tokenizer, parameters, steps FROM tfm.model_list;

\echo '== classify'
SELECT txt, tfm_classify('demo_sentiment', txt) AS label
FROM (VALUES ('the cast was superb.'), ('the script was tedious, and the ending was a mess.'),
             ('this movie was gripping.')) AS v(txt);
SELECT * FROM tfm_predict_proba('demo_sentiment', 'the music was brilliant.');
