-- doc/tasks.md's examples, as written there, against the small random
-- checkpoints of test/fixtures/hf_tasks (xenc: one logit; nli; ner: a
-- token classifier; qa: a question-answering model) and
-- test/fixtures/hf_bert (encoder: a BertModel for the embeddings), and the
-- random GPT-2 of test/fixtures/hf_gpt2 (gpt: structured extraction)
SET tfm.progress = off;
\set tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set cr `cat test/fixtures/hf_tasks/config_rerank.json`
\set wr `base64 -w0 test/fixtures/hf_tasks/model_rerank.safetensors`
\set cn `cat test/fixtures/hf_tasks/config_nli.json`
\set wn `base64 -w0 test/fixtures/hf_tasks/model_nli.safetensors`
\set ce `cat test/fixtures/hf_bert/config.json`
\set we `base64 -w0 test/fixtures/hf_bert/model.safetensors`
\set te `cat test/fixtures/hf_bert/tokenizer.json`
SELECT model FROM tfm_import('xenc', :'cr', decode(:'wr', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('nli', :'cn', decode(:'wn', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('encoder', :'ce', decode(:'we', 'base64'), :'te');
\set cner `cat test/fixtures/hf_tasks/config_ner.json`
\set wner `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
\set cqa `cat test/fixtures/hf_tasks/config_qa.json`
\set wqa `base64 -w0 test/fixtures/hf_tasks/model_qa.safetensors`
SELECT model FROM tfm_import('ner', :'cner', decode(:'wner', 'base64'), :'tok', task => 'classify');
SELECT model FROM tfm_import('qa', :'cqa', decode(:'wqa', 'base64'), :'tok', task => 'classify');
CREATE TEMP TABLE docs (id int PRIMARY KEY, body text, embedding real[]);
INSERT INTO docs (id, body)
VALUES (1, 'The quick brown fox jumps over the lazy dog.'), (2, 'Hello, world!'), (3, 'fox'),
       (4, 'a lazy dog is big'), (5, 'running again over the big brown world');
UPDATE docs SET embedding = tfm_embed('encoder', body);

-- rerank passages for a query
SELECT r.ord, p, round(r.score::numeric, 4) AS score
  FROM tfm_rerank('xenc', 'quick brown fox',
                  ARRAY['The quick brown fox jumps over the lazy dog.', 'Hello, world!', 'fox']) r,
       LATERAL (SELECT (ARRAY['The quick brown fox jumps over the lazy dog.', 'Hello, world!', 'fox'])[r.ord]) AS t(p)
 ORDER BY r.score DESC;

-- retrieve with embeddings, then rerank with a cross-encoder, in one statement
WITH q AS (SELECT 'quick brown fox' AS query),
cand AS (
  SELECT d.id, d.body
    FROM docs d, q
   ORDER BY d.embedding <=> tfm_embed('encoder', q.query)
   LIMIT 20),
ranked AS (
  SELECT array_agg(id ORDER BY id) AS ids, array_agg(body ORDER BY id) AS bodies FROM cand)
SELECT ranked.ids[r.ord] AS id, ranked.bodies[r.ord] AS body, round(r.score::numeric, 4) AS score
  FROM ranked, q, tfm_rerank('xenc', q.query, ranked.bodies) r
 ORDER BY r.score DESC
 LIMIT 3;

-- classify without training
SELECT label, round(score::numeric, 3) AS score
  FROM tfm_zero_shot('nli', 'The quick brown fox jumped over the lazy dog again.',
                     ARRAY['dog', 'fox', 'world']);
SELECT label, round(score::numeric, 3) AS score
  FROM tfm_zero_shot('nli', 'hello world, it is big', ARRAY['world', 'big play'],
                     hypothesis_template => 'it is about {}', multi_label => true);
-- structured extraction, with the random GPT-2 of test/fixtures/hf_gpt2
\set cg `cat test/fixtures/hf_gpt2/config.json`
\set tg `cat test/fixtures/hf_gpt2/tokenizer.json`
\set wg `base64 -w0 test/fixtures/hf_gpt2/model.safetensors`
SELECT model FROM tfm_import('gpt', :'cg', decode(:'wg', 'base64'), :'tg');
CREATE TEMP TABLE notes (id int PRIMARY KEY, body text);
INSERT INTO notes VALUES (1, 'Ann is 31 and calm.'), (2, 'Bob, 45, was stormy all day.'), (3, NULL);
SELECT id, jsonb_typeof(fields) AS type, jsonb_typeof(fields -> 'age') AS age,
       fields ->> 'mood' IN ('calm', 'storm') AS mood_ok, length(fields ->> 'name') <= 12 AS name_ok
  FROM (SELECT id, tfm_extract('gpt', body,
                               '{"type": "object",
                                 "properties": {"name": {"type": "string", "maxLength": 12},
                                                "age": {"type": "integer"},
                                                "mood": {"enum": ["calm", "storm"]}},
                                 "required": ["name", "age", "mood"]}') AS fields
          FROM notes) s
 ORDER BY id;

-- tag the entities of a text
SELECT entity, label, round(score::numeric, 3) AS score, start_char, end_char
  FROM tfm_entities('ner', 'Hello world, Jumping Bob runs in Big Paris!', aggregation => 'first');

-- every entity of a table's texts, in one batched call
SELECT a.ids[e.ord] AS id, e.entity, e.label
  FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(body ORDER BY id) AS bodies FROM docs) a,
       tfm_entities('ner', a.bodies, 'max') e
 WHERE e.label = 'LOC'
 ORDER BY id, e.start_char;

-- answer a question from a passage
SELECT answer, round(score::numeric, 4) AS score, start_char, end_char
  FROM tfm_answer('qa', 'what jumped over the dog?',
                  'The quick brown fox jumped over the lazy dog again.');
SELECT answer = '' AS no_answer
  FROM tfm_answer('qa', 'what jumped over the dog?', 'Hello world, it is big.',
                  handle_impossible_answer => true);
SELECT tfm_drop_model(name) FROM unnest(ARRAY['xenc', 'nli', 'encoder', 'gpt', 'ner', 'qa']) AS name;
SELECT tfm_tokenizer_drop(name) FROM unnest(ARRAY['xenc', 'nli', 'encoder', 'gpt', 'ner', 'qa']) AS name;
