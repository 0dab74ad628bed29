-- the pair tasks of imported classifiers: tfm_rerank with a cross-encoder
-- (BertForSequenceClassification, one logit) and tfm_zero_shot with an NLI
-- model (contradiction, neutral, entailment), small random checkpoints in
-- the published layout against the PyTorch reference
-- (test/reference/hf_tasks_reference.py): [CLS] a [SEP] b [SEP] with token
-- types 0 and 1, longest_first and only_first truncation, the scores
SET tfm.progress = off;
\set tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set cr `cat test/fixtures/hf_tasks/config_rerank.json`
\set wr `base64 -w0 test/fixtures/hf_tasks/model_rerank.safetensors`
\set cn `cat test/fixtures/hf_tasks/config_nli.json`
\set wn `base64 -w0 test/fixtures/hf_tasks/model_nli.safetensors`
\set ref `cat test/fixtures/hf_tasks/reference.json`
CREATE TEMP TABLE ref AS SELECT :'ref'::jsonb AS r;
SELECT * FROM tfm_import('xenc', :'cr', decode(:'wr', 'base64'), :'tok', task => 'classify');
SELECT * FROM tfm_import('nli', :'cn', decode(:'wn', 'base64'), :'tok', task => 'classify');
SELECT name, labels, config->'n_classes' AS n_classes, config->'type_vocab' AS types
  FROM tfm.models WHERE name IN ('xenc', 'nli') ORDER BY name;

-- reranking: every passage's score within 1e-4 of sigmoid(logit) in PyTorch,
-- a passage cut (longest_first) among them
CREATE TEMP TABLE psg AS
SELECT n::int AS ord, p AS passage, (r->'rerank_scores'->>(n::int - 1))::real AS want,
       (r->'rerank_cut'->>(n::int - 1))::boolean AS cut
  FROM ref, jsonb_array_elements_text(r->'passages') WITH ORDINALITY AS t(p, n);
SELECT count(*) AS passages, count(*) FILTER (WHERE cut) AS cut,
       max(abs(s.score - p.want)) < 1e-4 AS scores_match
  FROM ref, tfm_rerank('xenc', r->>'query', ARRAY(SELECT passage FROM psg ORDER BY ord)) s
  JOIN psg p USING (ord);
-- the ranking, best first
SELECT s.ord, p.passage FROM ref, tfm_rerank('xenc', r->>'query', ARRAY(SELECT passage FROM psg ORDER BY ord)) s
  JOIN psg p USING (ord) ORDER BY s.score DESC;
-- one pair at a time: the same scores (within 1e-6 of the batched passes)
SELECT max(abs(tfm_rerank('xenc', r->>'query', p.passage) - s.score)) < 1e-6 AS one_equals_batch
  FROM ref, psg p, tfm_rerank('xenc', r->>'query', ARRAY(SELECT passage FROM psg ORDER BY ord)) s
 WHERE s.ord = p.ord;
-- a NULL passage scores NULL in its place; an empty array gives no rows
SELECT ord, score IS NULL AS is_null FROM tfm_rerank('xenc', 'fox', ARRAY['fox', NULL, 'dog']);
SELECT count(*) FROM tfm_rerank('xenc', 'fox', '{}'::text[]);
-- a classifier of 3 labels as a reranker: the probability of its last label
SELECT max(abs(s.score - (r->'rerank_nli_scores'->>(s.ord - 1))::real)) < 1e-4 AS three_labels_match
  FROM ref, tfm_rerank('nli', r->>'query', ARRAY(SELECT passage FROM psg ORDER BY ord)) s;
-- the cross-encoder's one label: probability 1 as a classifier; not trainable
SELECT * FROM tfm_predict_proba('xenc', 'fox');

-- zero-shot: single-label (softmax over the labels' entailment logits) and
-- multi-label (each label's contradiction/entailment softmax), both templates
CREATE TEMP TABLE zs AS
SELECT z->>'template' AS tmpl, z->>'text' AS input, lab, n::int AS k,
       (z->'single'->>(n::int - 1))::real AS single, (z->'multi'->>(n::int - 1))::real AS multi,
       (z->'cut'->>(n::int - 1))::boolean AS cut
  FROM ref, jsonb_array_elements(r->'zero_shot') z,
       jsonb_array_elements_text(r->'labels') WITH ORDINALITY AS l(lab, n);
SELECT count(DISTINCT (c.tmpl, c.input)) AS cases, count(*) FILTER (WHERE zs.cut) AS cut_pairs,
       max(abs(s.score - zs.single)) < 1e-4 AS single_match
  FROM (SELECT DISTINCT tmpl, input FROM zs) c CROSS JOIN LATERAL
       tfm_zero_shot('nli', c.input, ARRAY(SELECT lab FROM zs WHERE zs.tmpl = c.tmpl AND zs.input = c.input ORDER BY k), c.tmpl) s
  JOIN zs ON zs.tmpl = c.tmpl AND zs.input = c.input AND zs.lab = s.label;
SELECT count(*) AS pairs, max(abs(s.score - zs.multi)) < 1e-4 AS multi_match
  FROM (SELECT DISTINCT tmpl, input FROM zs) c CROSS JOIN LATERAL
       tfm_zero_shot('nli', c.input, ARRAY(SELECT lab FROM zs WHERE zs.tmpl = c.tmpl AND zs.input = c.input ORDER BY k),
                     c.tmpl, multi_label => true) s
  JOIN zs ON zs.tmpl = c.tmpl AND zs.input = c.input AND zs.lab = s.label;
-- rows best first, the default template; single-label scores sum to 1
SELECT label, round(score::numeric, 4) AS score
  FROM ref, tfm_zero_shot('nli', r->'texts'->>0, ARRAY(SELECT jsonb_array_elements_text(r->'labels')));
SELECT round(sum(score)::numeric, 5) AS total FROM tfm_zero_shot('nli', 'a lazy dog', ARRAY['dog', 'fox', 'dog']);

-- NULL in, NULL out (no rows)
SELECT tfm_rerank('xenc', NULL, 'fox') IS NULL AS null_query;
SELECT count(*) FROM tfm_rerank('xenc', 'fox', NULL::text[]);
SELECT count(*) FROM tfm_zero_shot('nli', NULL, ARRAY['a']);
SELECT count(*) FROM tfm_zero_shot('nli', 'text', ARRAY['a'], NULL);
SELECT count(*) FROM tfm_zero_shot('nli', 'text', ARRAY['a'], multi_label => NULL);

-- bad arguments, each refused by name
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('nli', 'a dog', ARRAY['dog'], 'no slot')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('nli', 'a dog', ARRAY['dog'], '{} and {}')$$);
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('nli', 'a dog', '{}'::text[])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('nli', 'a dog', ARRAY['dog', NULL])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('xenc', 'a dog', ARRAY['dog'])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_zero_shot('nli', 'a dog', ARRAY[repeat('dog ', 40)])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_rerank('nope', 'a', ARRAY['b'])$$);
SELECT pg_temp.err($$SELECT * FROM tfm_rerank('xenc', 'a', ARRAY[ARRAY['b']])$$);
SELECT pg_temp.err($$SELECT count(*) FROM tfm_train('xenc', 'SELECT ''fox''::text, ''LABEL_0''::text')$$);
-- a model without a tokenizer, or not a BERT-family import, reads no pairs
SELECT model FROM tfm_import('xenc_ids', :'cr', decode(:'wr', 'base64'), task => 'classify');
SELECT pg_temp.err($$SELECT * FROM tfm_rerank('xenc_ids', 'a', ARRAY['b'])$$);
-- the pairs kept for a pass count against tfm.work_mem
SET tfm.work_mem = '1MB';
SELECT pg_temp.err($$SELECT count(*) FROM tfm_rerank('xenc', 'fox', ARRAY(SELECT 'the quick brown fox jumps over the lazy dog' FROM generate_series(1, 20000)))$$);
RESET tfm.work_mem;
SELECT count(*) AS rows, max(score) - min(score) < 1e-6 AS same_scores
  FROM tfm_rerank('xenc', 'fox', ARRAY(SELECT 'the quick brown fox' FROM generate_series(1, 2000)));
SELECT tfm_drop_model(name) FROM unnest(ARRAY['xenc', 'nli', 'xenc_ids']) AS name;
SELECT tfm_tokenizer_drop(name) FROM unnest(ARRAY['xenc', 'nli']) AS name;
