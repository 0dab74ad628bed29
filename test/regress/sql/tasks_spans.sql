-- the span tasks of imported encoders with a head on every token:
-- tfm_entities with a token classifier (BertForTokenClassification, BIO
-- labels) and tfm_answer with an extractive question-answering model
-- (BertForQuestionAnswering; DistilBERT's too), small random checkpoints in the published
-- layouts against the PyTorch reference (test/reference/hf_spans_reference.py):
-- the tokens' character offsets, the aggregation strategies none, simple,
-- first and max, the answers' spans and scores over overlapping windows
SET tfm.progress = off;
SET extra_float_digits = 0;
\set tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set cn `cat test/fixtures/hf_tasks/config_ner.json`
\set wn `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
\set cq `cat test/fixtures/hf_tasks/config_qa.json`
\set wq `base64 -w0 test/fixtures/hf_tasks/model_qa.safetensors`
\set ref `cat test/fixtures/hf_tasks/spans_reference.json`
CREATE TEMP TABLE ref AS SELECT :'ref'::jsonb AS r;
SELECT * FROM tfm_import('ner', :'cn', decode(:'wn', 'base64'), :'tok', task => 'classify');
SELECT * FROM tfm_import('qa', :'cq', decode(:'wq', 'base64'), :'tok', task => 'classify');
SELECT name, labels, config->>'token_head' AS token_head, config->>'cls_pre' AS cls_pre
  FROM tfm.models WHERE name IN ('ner', 'qa') ORDER BY name;

-- entities: every text under every strategy, row for row as the reference
-- (the text's characters, label, offsets exact; scores within 1e-5)
CREATE TEMP TABLE want AS
SELECT t.n::int AS k, t.x->>'text' AS input, s.strategy, e.n::int AS row_no,
       e.v->>0 AS entity, e.v->>1 AS label, (e.v->>2)::float8 AS score,
       (e.v->>3)::int AS start_char, (e.v->>4)::int AS end_char
  FROM ref, jsonb_array_elements(r->'ner') WITH ORDINALITY AS t(x, n),
       jsonb_each(t.x->'entities') AS s(strategy, rows),
       jsonb_array_elements(s.rows) WITH ORDINALITY AS e(v, n);
CREATE TEMP TABLE got AS
SELECT w.k, w.input, w.strategy, e.*
  FROM (SELECT DISTINCT k, input, strategy FROM want) w,
       LATERAL tfm_entities('ner', w.input, w.strategy)
         WITH ORDINALITY AS e(entity, label, score, start_char, end_char, row_no);
SELECT strategy, count(*) AS entities, count(DISTINCT k) AS texts FROM want GROUP BY strategy ORDER BY strategy;
SELECT count(*) AS mismatches FROM
  ((SELECT k, strategy, row_no, entity, label, start_char, end_char FROM want
    EXCEPT SELECT k, strategy, row_no, entity, label, start_char, end_char FROM got)
   UNION ALL
   (SELECT k, strategy, row_no, entity, label, start_char, end_char FROM got
    EXCEPT SELECT k, strategy, row_no, entity, label, start_char, end_char FROM want)) d;
SELECT max(abs(g.score - w.score)) < 1e-5 AS scores_match
  FROM want w JOIN got g USING (k, strategy, row_no);
-- the default is simple; a text longer than the model's 32 positions is read in windows
SELECT count(*) AS rows FROM ref, tfm_entities('ner', r->'ner'->0->>'text');
SELECT jsonb_array_length(r->'ner'->4->'ids') AS long_text_tokens FROM ref;
SELECT entity, label, round(score::numeric, 4) AS score, start_char, end_char
  FROM tfm_entities('ner', 'Hello world, Jumping Bob runs in Big Paris!', 'first');
-- the character offsets of a text with multibyte characters
SELECT entity, start_char, end_char, substr('北京 is big, said Zoe', start_char + 1, end_char - start_char) = entity AS substr_same
  FROM tfm_entities('ner', '北京 is big, said Zoe', 'none');
-- the array form: each text's rows with its place, none for a NULL text,
-- the same rows in the same order as one text at a time
SELECT count(*) AS rows, count(DISTINCT a.ord) AS texts,
       bool_and(a.entity = g.entity AND a.label = g.label AND a.start_char = g.start_char
                AND a.end_char = g.end_char AND abs(a.score - g.score) < 1e-6) AS same_as_one_by_one
  FROM (SELECT *, row_number() OVER (PARTITION BY ord ORDER BY n) AS row_no
          FROM tfm_entities('ner', ARRAY(SELECT x->>'text' FROM ref, jsonb_array_elements(r->'ner') x), 'max')
               WITH ORDINALITY AS t(ord, entity, label, score, start_char, end_char, n)) a
  FULL JOIN (SELECT * FROM got WHERE strategy = 'max') g ON g.k = a.ord AND g.row_no = a.row_no;
SELECT ord, entity, label FROM tfm_entities('ner', ARRAY['x', NULL, '', 'x'], 'none');

-- a RoBERTa token classifier over byte-level BPE (its tokenizer's ids those
-- of the tokenizers library): offsets from the tokens' bytes, their spaces
-- trimmed, words by the pipeline's fallback (no space before a token)
\set crb `cat test/fixtures/hf_tasks/config_ner_roberta.json`
\set wrb `base64 -w0 test/fixtures/hf_tasks/model_ner_roberta.safetensors`
\set trb `cat test/fixtures/tokenizer/hf/roberta.json`
SELECT * FROM tfm_import('ner_rb', :'crb', decode(:'wrb', 'base64'), :'trb', task => 'classify');
CREATE TEMP TABLE want_rb AS
SELECT t.n::int AS k, t.x->>'text' AS input, s.strategy, e.n::int AS row_no,
       e.v->>0 AS entity, e.v->>1 AS label, (e.v->>2)::float8 AS score,
       (e.v->>3)::int AS start_char, (e.v->>4)::int AS end_char
  FROM ref, jsonb_array_elements(r->'roberta_ner') WITH ORDINALITY AS t(x, n),
       jsonb_each(t.x->'entities') AS s(strategy, rows),
       jsonb_array_elements(s.rows) WITH ORDINALITY AS e(v, n);
CREATE TEMP TABLE got_rb AS
SELECT w.k, w.input, w.strategy, e.*
  FROM (SELECT DISTINCT k, input, strategy FROM want_rb) w,
       LATERAL tfm_entities('ner_rb', w.input, w.strategy)
         WITH ORDINALITY AS e(entity, label, score, start_char, end_char, row_no);
SELECT count(DISTINCT k) AS texts, count(*) AS entities,
       count(*) FILTER (WHERE input ~ '[^\x01-\x7f]') AS in_non_ascii_texts FROM want_rb;
SELECT count(*) AS mismatches FROM
  ((SELECT k, strategy, row_no, entity, label, start_char, end_char FROM want_rb
    EXCEPT SELECT k, strategy, row_no, entity, label, start_char, end_char FROM got_rb)
   UNION ALL
   (SELECT k, strategy, row_no, entity, label, start_char, end_char FROM got_rb
    EXCEPT SELECT k, strategy, row_no, entity, label, start_char, end_char FROM want_rb)) d;
SELECT max(abs(g.score - w.score)) < 1e-5 AS scores_match
  FROM want_rb w JOIN got_rb g USING (k, strategy, row_no);
SELECT entity, label, start_char, end_char
  FROM ref, tfm_entities('ner_rb', r->'roberta_ner'->2->>'text', 'first') LIMIT 4;

-- answers: every case's span exact, its score within 1e-5
CREATE TEMP TABLE qa_want AS
SELECT n::int AS k, q->>'question' AS question, q->>'context' AS context,
       (q->>'max_answer_len')::int AS max_answer_len, (q->>'doc_stride')::int AS doc_stride,
       (q->>'impossible')::boolean AS impossible, jsonb_array_length(q->'windows') AS windows,
       q->>'answer' AS answer, (q->>'score')::float8 AS score, (q->>'start')::int AS start_char,
       (q->>'end')::int AS end_char
  FROM ref, jsonb_array_elements(r->'qa') WITH ORDINALITY AS t(q, n);
SELECT w.k, w.windows, w.max_answer_len, w.doc_stride, w.impossible, a.answer, a.start_char, a.end_char,
       a.answer = w.answer AND a.start_char = w.start_char AND a.end_char = w.end_char AS span_same,
       abs(a.score - w.score) < 1e-5 AS score_same
  FROM qa_want w,
       LATERAL tfm_answer('qa', w.question, w.context, w.max_answer_len, w.doc_stride, w.impossible) a
 ORDER BY w.k;
-- a DistilBERT question-answering model (no token types): the same answers as its reference
\set cqd `cat test/fixtures/hf_tasks/config_qa_distilbert.json`
\set wqd `base64 -w0 test/fixtures/hf_tasks/model_qa_distilbert.safetensors`
SELECT * FROM tfm_import('qa_db', :'cqd', decode(:'wqd', 'base64'), :'tok', task => 'classify');
SELECT count(*) AS answers,
       bool_and(a.answer = q->>'answer' AND a.start_char = (q->>'start')::int AND a.end_char = (q->>'end')::int) AS spans_same,
       max(abs(a.score - (q->>'score')::float8)) < 1e-5 AS scores_match,
       max(jsonb_array_length(q->'windows')) AS most_windows
  FROM ref, jsonb_array_elements(r->'qa_distilbert') q,
       LATERAL tfm_answer('qa_db', q->>'question', q->>'context', 15, 8) a;
-- the defaults: max_answer_len 15, doc_stride min(128, max_seq_len / 2) = 16 here
SELECT answer, round(score::numeric, 4) AS score, start_char, end_char
  FROM tfm_answer('qa', 'who is big?', 'Hello world, it is big.');
-- an empty context has the empty answer
SELECT * FROM tfm_answer('qa', 'who is big?', '');

-- NULL in, NULL out (no rows)
SELECT count(*) FROM tfm_entities('ner', NULL::text);
SELECT count(*) FROM tfm_entities('ner', 'x', NULL);
SELECT count(*) FROM tfm_entities('ner', NULL::text[]);
SELECT tfm_answer('qa', NULL, 'the dog') IS NULL AS null_question,
       tfm_answer('qa', 'who', NULL) IS NULL AS null_context,
       tfm_answer('qa', 'who', 'the dog', doc_stride => NULL) IS NULL AS null_option;

-- bad arguments and models of another task, each refused by name
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT pg_temp.err($$SELECT * FROM tfm_entities('ner', 'a dog', 'average')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_entities('qa', 'a dog')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('ner', 'a', 'a dog')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_classify('ner', 'a dog')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_rerank('qa', 'a', ARRAY['a dog'])$$);
SELECT pg_temp.err($$SELECT count(*) FROM tfm_train('ner', 'SELECT ''fox''::text, ''O''::text')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('qa', 'a', 'a dog', max_answer_len => 0)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('qa', 'a', 'a dog', doc_stride => -1)$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('qa', repeat('dog ', 29), 'a dog')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('qa', repeat('dog ', 15), repeat('fox ', 40))$$);
SELECT pg_temp.err($$SELECT * FROM tfm_entities('nope', 'a dog')$$);
-- a checkpoint with a question-answering head has two logits a token
SELECT pg_temp.err(format($$SELECT * FROM tfm_import('qa3', %L, decode(%L, 'base64'), %L, task => 'classify')$$,
                          jsonb_set(:'cq'::jsonb, '{id2label}', '{"0": "a", "1": "b", "2": "c"}'), :'wq', :'tok'));
-- what a call keeps counts against tfm.work_mem
SET tfm.work_mem = '1MB';
SELECT pg_temp.err($$SELECT count(*) FROM tfm_entities('ner', repeat('the quick brown fox ', 20000))$$);
SELECT pg_temp.err($$SELECT * FROM tfm_answer('qa', 'who', repeat('the quick brown fox ', 20000), doc_stride => 16)$$);
RESET tfm.work_mem;
-- many windows in one call: as many as the stride asks for
SELECT answer <> '' AS answered FROM tfm_answer('qa', 'who', repeat('the quick brown fox ', 300), doc_stride => 16);
SELECT count(*) > 100 AS many_rows FROM tfm_entities('ner', repeat('the quick brown fox ', 300), 'none');
SELECT tfm_drop_model(name) FROM unnest(ARRAY['ner', 'qa', 'ner_rb', 'qa_db']) AS name;
SELECT tfm_tokenizer_drop(name) FROM unnest(ARRAY['ner', 'qa', 'ner_rb', 'qa_db']) AS name;
