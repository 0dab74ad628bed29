-- training the task heads of imported encoders on small labelled tables
-- (tfm_train over rows of each kind; task_rows.c): a cross-encoder on
-- (query, passage, relevance) pairs, a token classifier on (text, spans),
-- an extractive question-answering model on (question, context,
-- answer_start, answer), and an NLI model on (premise, hypothesis, label);
-- the small random checkpoints of test/fixtures/hf_tasks (d_model 16, 2
-- layers, 32 positions).  Each run's loss falls and a held-out measure read
-- through the inference functions improves: the relevant passage first
-- (tfm_rerank), the entities' exact spans (tfm_entities), the answers'
-- exact match (tfm_answer).  Then the errors of each kind of rows.
SET tfm.progress = off;
-- one thread: these models are tiny, and runs are bit for bit the same for a thread count
SET tfm.threads = 1;
\set tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set cr `cat test/fixtures/hf_tasks/config_rerank.json`
\set wr `base64 -w0 test/fixtures/hf_tasks/model_rerank.safetensors`
\set cl `cat test/fixtures/hf_tasks/config_nli.json`
\set wl `base64 -w0 test/fixtures/hf_tasks/model_nli.safetensors`
\set cn `cat test/fixtures/hf_tasks/config_ner.json`
\set wn `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
\set cq `cat test/fixtures/hf_tasks/config_qa.json`
\set wq `base64 -w0 test/fixtures/hf_tasks/model_qa.safetensors`
SELECT model FROM tfm_import('xenc_t', :'cr', decode(:'wr', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('nli_t', :'cl', decode(:'wl', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('ner_t', :'cn', decode(:'wn', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('qa_t', :'cq', decode(:'wq', 'base64'), :'tok', task => 'classify');

-- ---- reranking: a query word, four passages of three words, the first
-- holding the query's word and the others another query word
CREATE TEMP TABLE rr_rows AS
WITH p AS (SELECT ARRAY['fox', 'dog', 'world', 'play'] AS q,
                  ARRAY['the', 'jumped', 'over', 'again', 'is', 'big', 'running'] AS f),
g AS (SELECT r, c, q[1 + r % 4] AS query, q[1 + (r + c) % 4] AS other
        FROM generate_series(1, 240) r, generate_series(0, 3) c, p)
SELECT r, c, query,
       f[1 + abs(hashint4(r * 8 + c)) % 7] || ' ' || CASE WHEN c = 0 THEN query ELSE other END
         || ' ' || f[1 + abs(hashint4(r * 8 + c + 4)) % 7] AS passage,
       (c = 0) AS relevant
  FROM g, p;
SELECT query, passage, relevant FROM rr_rows WHERE r = 1 ORDER BY c;
-- the share of the held-out queries (201 to 240) whose relevant passage scores first
CREATE FUNCTION rr_top1() RETURNS float8 LANGUAGE sql AS $$
  SELECT avg((s.ord = 1)::int)
    FROM (SELECT r, query, array_agg(passage ORDER BY c) AS ps FROM rr_rows WHERE r > 200 GROUP BY r, query) x,
         LATERAL (SELECT ord FROM tfm_rerank('xenc_t', x.query, x.ps) ORDER BY score DESC LIMIT 1) s $$;
CREATE TEMP TABLE rr_before AS SELECT rr_top1() AS top1;
-- binary cross-entropy on the one logit (a boolean is 0 or 1); patience 0:
-- the first epochs only learn that most passages are irrelevant
CREATE TEMP TABLE rr_run AS
SELECT * FROM tfm_train('xenc_t', 'SELECT query, passage, relevant FROM rr_rows WHERE r <= 200 ORDER BY r, c',
                        epochs => 20, lr => 5e-3, batch_size => 16, val_fraction => 0.1, seed => 7,
                        patience => 0);
SELECT count(*) AS epochs, min(val_rows) AS val_rows,
       (SELECT train_loss FROM rr_run WHERE epoch = 1) > 3 * (SELECT train_loss FROM rr_run WHERE epoch = 20) AS loss_falls,
       max(val_accuracy) >= 0.95 AS val_accuracy_high
  FROM rr_run;
SELECT b.top1 <= 0.5 AS before_at_chance, a.top1 >= 0.9 AS after_first, a.top1 - b.top1 >= 0.4 AS improved
  FROM rr_before b, (SELECT rr_top1() AS top1) a;
SELECT ord FROM tfm_rerank('xenc_t', 'fox', ARRAY['the dog is', 'over fox again', 'big play the'])
 ORDER BY score DESC LIMIT 1;
-- a score between 0 and 1 is a soft target; a number outside is refused
SELECT count(*) AS epochs FROM tfm_train('xenc_t', 'SELECT query, passage, CASE WHEN relevant THEN 0.9 ELSE 0.1 END FROM rr_rows WHERE r <= 20', lr => 1e-4);
SELECT * FROM tfm_train('xenc_t', 'SELECT query, passage, 2 FROM rr_rows WHERE r <= 20');
SELECT * FROM tfm_train('xenc_t', 'SELECT query, passage, ''yes''::text FROM rr_rows');
SELECT * FROM tfm_train('xenc_t', 'SELECT query, 42, 1 FROM rr_rows');

-- ---- pairs with labels: an NLI model's (premise, hypothesis, label)
SELECT count(*) AS epochs FROM tfm_train('nli_t', $$SELECT query, passage, CASE WHEN relevant THEN 'entailment' ELSE 'contradiction' END FROM rr_rows WHERE r <= 40$$, lr => 1e-4);
SELECT * FROM tfm_train('nli_t', $$SELECT query, passage, 'maybe' FROM rr_rows$$);

-- ---- entities: phrases of the fixture's words; fox is a PER, world a
-- LOC, "lazy dog" an ORG (B-ORG I-ORG); "jumped" and "running" are two
-- tokens each (jump ##ed, run ##ning: the second ignored)
CREATE TEMP TABLE ner_rows AS
WITH p AS (SELECT ARRAY['the', 'quick', 'fox', 'jumped', 'over', 'lazy dog', 'hello', 'world', 'again', 'is', 'big', 'play', 'running'] AS ph,
                  ARRAY[NULL, NULL, 'PER', NULL, NULL, 'ORG', NULL, 'LOC', NULL, NULL, NULL, NULL, NULL] AS lab),
w AS (SELECT r, i, 1 + (r * 7919 + i * i * 104729 + i * 13) % 13 AS k
        FROM generate_series(1, 260) r, generate_series(1, 6) i),
o AS (SELECT r, i, ph[k] AS word, lab[k] AS label,
             coalesce(sum(length(ph[k]) + 1) OVER (PARTITION BY r ORDER BY i
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::int AS start
        FROM w, p)
SELECT r, string_agg(word, ' ' ORDER BY i) AS body,
       coalesce(jsonb_agg(jsonb_build_object('start', start, 'end', start + length(word), 'label', label) ORDER BY i)
                FILTER (WHERE label IS NOT NULL), '[]') AS spans
  FROM o GROUP BY r;
SELECT body, spans FROM ner_rows WHERE r <= 3 ORDER BY r;
-- F1 of the exact (start, end, label) entities of the held-out texts
CREATE FUNCTION ner_f1() RETURNS float8 LANGUAGE sql AS $$
  WITH gold AS (SELECT r, (s->>'start')::int AS s, (s->>'end')::int AS e, s->>'label' AS l
                  FROM ner_rows, jsonb_array_elements(spans) s WHERE r > 200),
       got AS (SELECT r, e.start_char, e.end_char, e.label
                 FROM ner_rows, tfm_entities('ner_t', body, 'first') e WHERE r > 200),
       tp AS (SELECT count(*) AS n FROM (SELECT * FROM gold INTERSECT SELECT * FROM got) x)
  SELECT coalesce(2.0 * tp.n / nullif((SELECT count(*) FROM gold) + (SELECT count(*) FROM got), 0), 0) FROM tp $$;
CREATE TEMP TABLE ner_before AS SELECT ner_f1() AS f1;
CREATE TEMP TABLE ner_run AS
SELECT * FROM tfm_train('ner_t', 'SELECT body, spans FROM ner_rows WHERE r <= 200 ORDER BY r',
                        epochs => 10, lr => 3e-3, batch_size => 16, val_fraction => 0.1, seed => 7,
                        patience => 0);
SELECT count(*) AS epochs, min(val_rows) AS val_rows,
       (SELECT train_loss FROM ner_run WHERE epoch = 1) > 5 * (SELECT min(train_loss) FROM ner_run) AS loss_falls,
       max(val_accuracy) >= 0.95 AS token_accuracy_high
  FROM ner_run;
SELECT b.f1 < 0.2 AS before_low, a.f1 >= 0.9 AS after_high FROM ner_before b, (SELECT ner_f1() AS f1) a;
SELECT entity, label, start_char, end_char FROM tfm_entities('ner_t', 'the world is big', 'first');
-- a text longer than the 32 positions trains in windows, as tfm_entities reads it;
-- a label given as the model's own (B-PER) and a row of NULLs (skipped)
SELECT count(*) AS epochs FROM tfm_train('ner_t', $$SELECT repeat('the quick fox ', 20), '[{"start": 10, "end": 13, "label": "B-PER"}]'::jsonb
                                                   UNION ALL SELECT NULL, NULL$$, lr => 1e-5);
-- errors: spans outside the text, overlapping, of an unknown type, not an
-- array, covering no word's start; the columns' number and types
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4, "end": 9, "label": "PER"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4, "end": 4, "label": "PER"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 0, "end": 7, "label": "PER"}, {"start": 4, "end": 7, "label": "LOC"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4, "end": 7, "label": "ANIMAL"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4, "end": 7, "label": "O"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '{"start": 4, "end": 7, "label": "PER"}'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4.5, "end": 7, "label": "PER"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 4, "end": 7}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[4]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', '[{"start": 5, "end": 7, "label": "PER"}]'::jsonb$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox', 'PER'$$);
SELECT * FROM tfm_train('ner_t', $$SELECT 'the fox'$$);

-- ---- answers: "who?" asks for the fox's phrase, "where?" for the
-- world's, in contexts of up to 35 tokens: those longer than a window's
-- 27 context tokens train in two windows, the one without the whole
-- answer pointing at [CLS]
CREATE TEMP TABLE qa_rows AS
WITH p AS (SELECT ARRAY['the', 'quick', 'jumped', 'over', 'dog', 'again', 'is', 'play', 'running'] AS ph),
w AS (SELECT r, i, 1 + (r * 7919 + i * i * 104729 + i * 13) % 9 AS k
        FROM generate_series(1, 300) r, generate_series(1, 5 + r % 17) i),
c AS (SELECT r, string_agg(ph[k], ' ' ORDER BY i) AS filler FROM w, p GROUP BY r),
x AS (SELECT r, filler, (ARRAY['brown fox', 'lazy fox'])[1 + r % 2] AS who,
             (ARRAY['big world', 'hello world'])[1 + (r / 2) % 2] AS where_ FROM c),
y AS (SELECT *, CASE WHEN r % 2 = 0 THEN who || ' ' || filler || ' ' || where_
                     ELSE where_ || ' ' || filler || ' ' || who END AS context,
             CASE WHEN r % 3 = 0 THEN where_ ELSE who END AS answer FROM x)
SELECT r, CASE WHEN r % 3 = 0 THEN 'where?' ELSE 'who?' END AS question, context,
       strpos(context, answer) - 1 AS answer_start, answer
  FROM y;
SELECT question, context, answer_start, answer FROM qa_rows WHERE r <= 3 ORDER BY r;
SELECT count(*) FILTER (WHERE array_length(tfm_tokenize('qa_t', context), 1) > 27) AS two_windows FROM qa_rows WHERE r <= 240;
-- exact match of the held-out answers
CREATE FUNCTION qa_em() RETURNS float8 LANGUAGE sql AS $$
  SELECT avg((a.answer = q.answer)::int) FROM qa_rows q, tfm_answer('qa_t', q.question, q.context) a WHERE r > 240 $$;
CREATE TEMP TABLE qa_before AS SELECT qa_em() AS em;
CREATE TEMP TABLE qa_run AS
SELECT * FROM tfm_train('qa_t', 'SELECT question, context, answer_start, answer FROM qa_rows WHERE r <= 240 ORDER BY r',
                        epochs => 15, lr => 3e-3, batch_size => 16, val_fraction => 0.1, seed => 7,
                        patience => 0);
SELECT count(*) AS epochs, min(val_rows) AS val_rows,
       (SELECT train_loss FROM qa_run WHERE epoch = 1) > 5 * (SELECT min(train_loss) FROM qa_run) AS loss_falls,
       max(val_accuracy) >= 0.9 AS windows_exact
  FROM qa_run;
SELECT b.em < 0.2 AS before_low, a.em >= 0.9 AS after_high FROM qa_before b, (SELECT qa_em() AS em) a;
SELECT answer, start_char, end_char FROM tfm_answer('qa_t', 'who?', 'the quick brown fox jumped over the big world');
-- the answer's end as an integer; an empty answer (no answer: [CLS])
SELECT count(*) AS epochs FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', 4, 13$$, lr => 1e-5);
SELECT count(*) AS epochs FROM tfm_train('qa_t', $$SELECT 'where?', 'the brown fox', 0, ''$$, lr => 1e-5);
-- errors: an answer that is not the context's characters there, outside
-- the context, an end before the start, a question too long, the columns
SELECT * FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', 4, 'fox'$$);
SELECT * FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', 14, ''$$);
SELECT * FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', 10, 9$$);
SELECT * FROM tfm_train('qa_t', $$SELECT repeat('who ', 40), 'the brown fox', 4, 'brown fox'$$);
SELECT * FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', '4', 'brown fox'$$);
SELECT * FROM tfm_train('qa_t', $$SELECT 'who?', 'the brown fox', 4$$);

-- activation checkpointing recomputes the blocks: the same weights, bit for bit
SELECT tfm_copy_model('qa_t', 'qa_c1') > 0 AS copied_1, tfm_copy_model('qa_t', 'qa_c2') > 0 AS copied_2;
SELECT count(*) AS epochs FROM tfm_train('qa_c1', 'SELECT question, context, answer_start, answer FROM qa_rows WHERE r <= 60 ORDER BY r', lr => 1e-3, val_fraction => 0);
SELECT count(*) AS epochs FROM tfm_train('qa_c2', 'SELECT question, context, answer_start, answer FROM qa_rows WHERE r <= 60 ORDER BY r', lr => 1e-3, val_fraction => 0,
                                         checkpoint_activations => true);
SELECT bool_and(tfm_tensor('qa_c1', t.name) = tfm_tensor('qa_c2', t.name)) AS same_weights,
       bool_or(tfm_tensor('qa_c1', t.name) <> tfm_tensor('qa_t', t.name)) AS trained
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'qa_t';
SELECT tfm_drop_model(n) FROM unnest(ARRAY['qa_c1', 'qa_c2']) n;
-- tfm_fit trains the same rows, committing a checkpoint every epoch
CALL tfm_fit('qa_t', 'SELECT question, context, answer_start, answer FROM qa_rows WHERE r <= 40 ORDER BY r', epochs => 2, lr => 1e-5);
SELECT count(*) AS checkpoints_left FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = 'qa_t';

-- ---- what reads these rows and what does not
SELECT * FROM tfm_evaluate('ner_t', 'SELECT body, spans FROM ner_rows');
SELECT * FROM tfm_evaluate('xenc_t', 'SELECT query, passage, relevant FROM rr_rows');
SELECT (r).epoch FROM (SELECT tfm_train_agg('qa_t', context, 'x') AS r FROM qa_rows) s;
CREATE TABLE tt_texts (body text);
INSERT INTO tt_texts SELECT body FROM ner_rows;
SELECT tfm_tokenizer_train('tt_char', body, 'char') FROM tt_texts;
SELECT model FROM tfm_create_model('tt_cls', 'classify', 'tt_char', labels => ARRAY['a', 'b'], d_model => 8, heads => 2, layers => 1, max_len => 16);
SELECT * FROM tfm_train('tt_cls', $$SELECT body, body, 'a' FROM tt_texts$$);
SELECT * FROM tfm_train('tt_cls', $$SELECT body, 0.5 FROM tt_texts$$);

SELECT tfm_drop_model(name) FROM unnest(ARRAY['xenc_t', 'nli_t', 'ner_t', 'qa_t', 'tt_cls']) AS name;
SELECT tfm_tokenizer_drop(name) FROM unnest(ARRAY['xenc_t', 'nli_t', 'ner_t', 'qa_t', 'tt_char']) AS name;
DROP TABLE tt_texts;
DROP FUNCTION rr_top1(), ner_f1(), qa_em();
