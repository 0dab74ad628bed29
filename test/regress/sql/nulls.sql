-- NULLs as PostgreSQL treats them (doc/reference.md, NULLs; issue 39).
-- 1. From the catalog: every function, aggregate and procedure of the
--    extension with a required text, int[], text[], jsonb or json argument is
--    called once with sane arguments (it must answer) and once with NULL in
--    each such argument (it must answer NULL, or no rows), unless it is a
--    command listed below, which must refuse the NULL.  A new function is
--    called by itself; one that neither answers NULL nor is listed fails here.
-- 2. A 50-row table with one NULL through every inference and tokenizer
--    function row by row and in the array forms: 49 answers and one NULL.
-- 3. Aggregates, training and evaluation skip the NULL row (counted); jobs
--    of every task write a NULL output for it, with no error and no retry.
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;

CREATE TABLE nl_docs (id int PRIMARY KEY, body text, label text);
INSERT INTO nl_docs
SELECT i, CASE WHEN i = 17 THEN NULL
               ELSE (ARRAY['the sea is calm', 'the whale is big', 'a storm at sea', 'the calm moon'])[1 + i % 4]
                    || ' ' || (ARRAY['tonight', 'again', 'at dawn', 'here'])[1 + (i / 4) % 4] END,
       CASE WHEN i % 2 = 0 THEN 'calm' ELSE 'storm' END
FROM generate_series(1, 50) i;
SELECT tfm_tokenizer_train('nl_words', body, 'word') FROM nl_docs;
SELECT model FROM tfm_create_model('nl_cls', 'classify', 'nl_words', labels => ARRAY['calm', 'storm'],
                                   d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT model FROM tfm_create_model('nl_lm', 'lm', 'nl_words', d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT model FROM tfm_create_model('nl_s2s', 'seq2seq', 'nl_words', d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT tfm_chat_template_import('nl_lm', '{"chat_template": "{% for m in messages %}{{ m.content }} {% endfor %}"}');
-- a char-level language model for tfm_extract (a word tokenizer cannot be constrained)
SELECT tfm_tokenizer_train('nl_chars', t, 'char')
  FROM (SELECT body FROM nl_docs UNION ALL SELECT '"{}[],:-.0123456789' FROM generate_series(1, 3)) s(t);
SELECT model FROM tfm_create_model('nl_char_lm', 'lm', 'nl_chars', d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT tfm_deploy('nl_cls');
-- a cross-encoder and an NLI model for the pair functions (tfm_rerank, tfm_zero_shot)
\set nl_tok `cat test/fixtures/hf_tasks/tokenizer.json`
\set nl_cfg `cat test/fixtures/hf_tasks/config_rerank.json`
\set nl_w `base64 -w0 test/fixtures/hf_tasks/model_rerank.safetensors`
SELECT model FROM tfm_import('nl_xenc', :'nl_cfg', decode(:'nl_w', 'base64'), :'nl_tok', task => 'classify');
\set nl_cfg `cat test/fixtures/hf_tasks/config_nli.json`
\set nl_w `base64 -w0 test/fixtures/hf_tasks/model_nli.safetensors`
SELECT model FROM tfm_import('nl_nli', :'nl_cfg', decode(:'nl_w', 'base64'), :'nl_tok', task => 'classify');
-- a token classifier and a question-answering model for the span functions (tfm_entities, tfm_answer)
\set nl_cfg `cat test/fixtures/hf_tasks/config_ner.json`
\set nl_w `base64 -w0 test/fixtures/hf_tasks/model_ner.safetensors`
SELECT model FROM tfm_import('nl_ner', :'nl_cfg', decode(:'nl_w', 'base64'), :'nl_tok', task => 'classify');
\set nl_cfg `cat test/fixtures/hf_tasks/config_qa.json`
\set nl_w `base64 -w0 test/fixtures/hf_tasks/model_qa.safetensors`
SELECT model FROM tfm_import('nl_qa', :'nl_cfg', decode(:'nl_w', 'base64'), :'nl_tok', task => 'classify');

-- ---- 1. every function of the catalog --------------------------------------

-- the decisions: commands refuse NULL (an error, mostly 22004); the row
-- functions, the aggregates' inputs and every function not listed here
-- answer NULL (no rows).  A function added later lands here or answers NULL.
CREATE TEMP TABLE null_refused (fn text, arg text, why text);
INSERT INTO null_refused VALUES
  ('tfm_create_model', '*', 'command'), ('tfm_drop_model', '*', 'command'),
  ('tfm_copy_model', '*', 'command'), ('tfm_rename_model', '*', 'command'),
  ('tfm_set_precision', '*', 'command'), ('tfm_deploy', '*', 'command'),
  ('tfm_undeploy', '*', 'command'), ('tfm_grant', '*', 'command'), ('tfm_revoke', '*', 'command'),
  ('tfm_reassign_owned', '*', 'command'), ('tfm_drop_owned', '*', 'command'),
  ('tfm_import', '*', 'command'), ('tfm_import_files', '*', 'command'),
  ('tfm_import_gguf', '*', 'command'), ('tfm_import_gguf_file', '*', 'command'),
  ('tfm_import_marian', '*', 'command'), ('tfm_tokenizer_import', '*', 'command'),
  ('tfm_tokenizer_drop', '*', 'command'), ('tfm_chat_template_import', '*', 'command'),
  ('tfm_job_create', '*', 'command'), ('tfm_job_run', '*', 'command'),
  ('tfm_job_pause', '*', 'command'), ('tfm_job_resume', '*', 'command'), ('tfm_job_drop', '*', 'command'),
  ('tfm_create_publication', '*', 'command'),
  ('tfm_train', '*', 'command: trains a model over a query'),
  ('tfm_fit', '*', 'command: trains a model over a query'),
  ('tfm_evaluate', '*', 'runs a query: not a function of a row'),
  ('tfm_tokenizer_train', 'name', 'the tokenizer it creates'),
  ('tfm_tokenizer_train', 'kind', 'the tokenizer it creates'),
  ('tfm_train_agg', 'model', 'the model it trains'),
  ('usable_model', '*', 'internal: resolves a name for tfm_tensor and tfm_gguf_kept (STRICT)');
-- required arguments whose NULL means "the default" (aggregates take no
-- defaults, so their options are required): the call answers as without them
CREATE TEMP TABLE null_default (fn text, arg text, why text);
INSERT INTO null_default VALUES ('tfm_train_agg', 'options', 'NULL options are the defaults');
-- options every call of a routine passes (a seed: sampling that may end at
-- once must not make a sane call answer nothing by chance)
CREATE TEMP TABLE null_options (fn text, opts text);
INSERT INTO null_options VALUES ('tfm_generate', 'seed => 1'), ('tfm_generate_tokens', 'seed => 1'),
                                ('tfm_chat', 'seed => 1'), ('tfm_chat_context', 'seed => 1');
-- sane calls that answer nothing, and why
CREATE TEMP TABLE null_sane_empty (fn text, why text);
INSERT INTO null_sane_empty VALUES ('tfm_gguf_kept', 'a model not imported from GGUF keeps no tensor');

-- the input arguments of a routine: position, name, type, required (no default)
CREATE FUNCTION pg_temp.in_args(f oid) RETURNS TABLE (i int, name text, typ regtype, required boolean)
LANGUAGE sql STABLE AS $$
  SELECT (row_number() OVER (ORDER BY a.o))::int - 1, a.n, a.t, false
    FROM pg_proc p,
         unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]),
                coalesce(p.proargnames, array_fill(''::text, ARRAY[p.pronargs])),
                coalesce(p.proargmodes::text[], array_fill('i'::text, ARRAY[p.pronargs])))
           WITH ORDINALITY AS a(t, n, m, o)
   WHERE p.oid = f AND a.m IN ('i', 'b', 'v')
$$;
-- a sane value of an argument (a SQL expression), by its function, name and type
CREATE FUNCTION pg_temp.sane(f text, a text, t regtype) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN t = 'integer[]'::regtype THEN 'ARRAY[5, 6, 7]'
    WHEN t = 'text[]'::regtype THEN $v$ARRAY['the sea is calm', 'the whale']$v$
    WHEN t = 'jsonb'::regtype AND a = 'messages' THEN $v$'[{"role": "user", "content": "the sea"}]'::jsonb$v$
    WHEN t = 'jsonb'::regtype AND a = 'schema' THEN $v$'{"enum": ["calm", "storm"]}'::jsonb$v$
    WHEN t = 'jsonb'::regtype THEN $v$'{}'::jsonb$v$
    WHEN t = 'json'::regtype THEN $v$'{"messages": [{"role": "user", "content": "the sea"}]}'::json$v$
    WHEN t = 'bytea'::regtype THEN $v$'\x00'::bytea$v$
    WHEN t = 'regclass'::regtype THEN $v$'nl_docs'::regclass$v$
    WHEN t = 'boolean'::regtype THEN 'true'
    WHEN t = 'integer'::regtype THEN CASE a WHEN 'chunk_tokens' THEN '4' WHEN 'length' THEN '8'
                                            WHEN 'vocab_size' THEN '100' ELSE '1' END
    WHEN t <> 'text'::regtype THEN 'NULL::' || t::text
    WHEN a = 'model' THEN CASE
      WHEN f IN ('tfm_generate', 'tfm_generate_tokens', 'tfm_next_tokens', 'tfm_score', 'tfm_chat',
                 'tfm_chat_prompt', 'tfm_chat_tokens', 'tfm_chat_prompt_context', 'tfm_chat_context') THEN $v$'nl_lm'$v$
      WHEN f IN ('tfm_translate', 'tfm_translate_nbest', 'tfm_attention') THEN $v$'nl_s2s'$v$
      WHEN f = 'tfm_extract' THEN $v$'nl_char_lm'$v$
      WHEN f = 'tfm_rerank' THEN $v$'nl_xenc'$v$
      WHEN f = 'tfm_zero_shot' THEN $v$'nl_nli'$v$
      WHEN f = 'tfm_entities' THEN $v$'nl_ner'$v$
      WHEN f = 'tfm_answer' THEN $v$'nl_qa'$v$
      ELSE $v$'nl_cls'$v$ END
    WHEN a = 'tokenizer' THEN $v$'nl_words'$v$
    WHEN a IN ('input', 'prompt', 'source', 'hypothesis', 'reference') THEN $v$'the sea is calm'$v$
    WHEN a = 'template' THEN $v$'{% for m in messages %}{{ m.content }}{% endfor %}'$v$
    WHEN a = 'tensor' THEN $v$(SELECT min(t.name) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id
                                WHERE m.name = 'nl_cls')$v$
    WHEN a = 'label' THEN $v$'calm'$v$
    WHEN a = 'kind' THEN $v$'word'$v$
    WHEN a = 'name' AND f = 'tfm_tokenizer_train' THEN $v$'nl_agg_tok'$v$
    ELSE $v$'nl_nothing'$v$ END
$$;
-- what a call answers, inside a subtransaction rolled back (a call that
-- creates, trains or drops leaves nothing behind): NULL / a value for a
-- scalar or an aggregate, no rows / rows for a set, or its error's SQLSTATE
CREATE FUNCTION pg_temp.answer(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r text;
BEGIN
  BEGIN
    IF q LIKE 'CALL %' THEN
      EXECUTE q;
      r := 'done';
    ELSE
      EXECUTE q INTO r;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0100', MESSAGE = coalesce(r, '?');
  EXCEPTION WHEN SQLSTATE 'P0100' THEN
    RETURN SQLERRM;
  END;
EXCEPTION WHEN OTHERS THEN
  RETURN 'error ' || SQLSTATE;
END $$;

-- the routines: the extension's, with a required text/int[]/text[]/jsonb/json
-- argument, callable from SQL (no internal argument; aggregates' support
-- functions are reached through their aggregates)
CREATE TEMP TABLE null_fns AS
SELECT p.oid, p.oid::regprocedure::text AS sig, p.proname::text AS fn, p.prokind, p.proretset,
       CASE WHEN n.nspname = 'public' THEN '' ELSE quote_ident(n.nspname) || '.' END || quote_ident(p.proname) AS qname,
       p.pronargs - p.pronargdefaults AS nreq
  FROM pg_depend d
  JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND e.extname = 'tfm'
  JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE d.deptype = 'e'
   AND NOT 'internal'::regtype = ANY (p.proargtypes::oid[]::regtype[])
   AND p.oid NOT IN (SELECT unnest(ARRAY[aggtransfn, aggfinalfn, aggcombinefn, aggserialfn, aggdeserialfn])::oid
                       FROM pg_aggregate)
   AND EXISTS (SELECT FROM pg_temp.in_args(p.oid) a WHERE a.i < p.pronargs - p.pronargdefaults
                  AND a.typ IN ('text'::regtype, 'integer[]'::regtype, 'text[]'::regtype, 'jsonb'::regtype, 'json'::regtype));

-- the calls: 'sane' (every required argument sane; commands skip it), then
-- one per required text/int[]/text[]/jsonb/json argument, NULL there
CREATE FUNCTION pg_temp.call_sql(f null_fns, null_at int) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN f.prokind = 'p' THEN 'CALL ' || f.qname || '(' || args || ')'
    WHEN f.prokind = 'a' THEN 'SELECT CASE WHEN ' || f.qname || '(' || args || $v$) IS NULL THEN 'NULL' ELSE 'a value' END FROM (VALUES (1)) v$v$
    WHEN f.proretset THEN $v$SELECT CASE WHEN count(*) = 0 THEN 'no rows' ELSE 'rows' END FROM $v$ || f.qname || '(' || args || ')'
    ELSE 'SELECT CASE WHEN ' || f.qname || '(' || args || $v$) IS NULL THEN 'NULL' ELSE 'a value' END$v$ END
  FROM (SELECT string_agg(CASE WHEN a.i = null_at THEN 'NULL::' || a.typ::text ELSE pg_temp.sane(f.fn, a.name, a.typ) END,
                          ', ' ORDER BY a.i)
               || coalesce((SELECT ', ' || o.opts FROM null_options o WHERE o.fn = f.fn), '') AS args
          FROM pg_temp.in_args(f.oid) a WHERE a.i < f.nreq) s
$$;
CREATE TEMP TABLE null_calls AS
SELECT f.sig, f.fn, a.name AS arg, a.i, pg_temp.call_sql(f, a.i) AS q,
       EXISTS (SELECT FROM null_refused r WHERE r.fn = f.fn AND r.arg IN ('*', a.name)) AS refused,
       EXISTS (SELECT FROM null_default r WHERE r.fn = f.fn AND r.arg = a.name) AS defaulted
  FROM null_fns f, pg_temp.in_args(f.oid) a
 WHERE a.i < f.nreq AND a.typ IN ('text'::regtype, 'integer[]'::regtype, 'text[]'::regtype, 'jsonb'::regtype, 'json'::regtype)
UNION ALL
SELECT f.sig, f.fn, 'sane', -1, pg_temp.call_sql(f, -1), false, false
  FROM null_fns f
 WHERE NOT EXISTS (SELECT FROM null_refused r WHERE r.fn = f.fn AND r.arg = '*');
SET client_min_messages = warning;
CREATE TEMP TABLE null_answers AS SELECT c.*, pg_temp.answer(c.q) AS answer FROM null_calls c;
RESET client_min_messages;

-- every routine and argument: what a NULL there (or the sane call) answers
SELECT sig, arg, answer FROM null_answers ORDER BY sig, i;
-- what the rule wants and did not get (none)
SELECT sig, arg, answer, q FROM null_answers
 WHERE CASE WHEN arg = 'sane' THEN answer NOT IN ('a value', 'rows')
                                   AND NOT EXISTS (SELECT FROM null_sane_empty e WHERE e.fn = null_answers.fn)
            WHEN refused THEN answer NOT LIKE 'error %'
            WHEN defaulted THEN answer NOT IN ('a value', 'rows')
            ELSE answer NOT IN ('NULL', 'no rows') END
 ORDER BY sig, i;
-- the decisions name routines that exist (a renamed one must be decided again)
SELECT r.fn FROM (SELECT fn FROM null_refused UNION ALL SELECT fn FROM null_default
                   UNION ALL SELECT fn FROM null_sane_empty) r
 WHERE NOT EXISTS (SELECT FROM null_fns f WHERE f.fn = r.fn);
SELECT count(DISTINCT sig) AS routines, count(*) FILTER (WHERE arg <> 'sane') AS null_calls,
       count(*) FILTER (WHERE arg <> 'sane' AND refused) AS refused FROM null_answers;

-- ---- 2. a table with one NULL row ------------------------------------------

-- row by row: 49 answers and one NULL, in every inference and tokenizer function
SELECT count(tfm_classify('nl_cls', body)) AS classify, count(tfm_classify(body)) AS deployed,
       count(tfm_embed('nl_cls', body)) AS embed, count(tfm_score('nl_lm', body)) AS score,
       count(tfm_generate('nl_lm', body, max_tokens => 3, seed => 1)) AS generate,
       count(tfm_translate('nl_s2s', body, max_tokens => 3)) AS translate,
       count(tfm_tokenize('nl_words', body)) AS tokenize,
       count(tfm_detokenize('nl_words', tfm_tokenize('nl_words', body))) AS detokenize,
       count(tfm_chat('nl_lm', CASE WHEN body IS NOT NULL
                                    THEN jsonb_build_array(jsonb_build_object('role', 'user', 'content', body)) END,
                      max_tokens => 3, seed => 1)) AS chat,
       count(tfm_classify('nl_cls', tfm_tokenize('nl_words', body))) AS classify_ids,
       count(tfm_extract('nl_char_lm', body, '{"enum": ["calm", "storm"]}')) AS extract,
       count(*) FILTER (WHERE tfm_classify('nl_cls', body) IS NULL) AS null_rows,
       count(*) AS all_rows
  FROM nl_docs;
-- set-returning functions: no rows for the NULL one
SELECT count(DISTINCT d.id) AS predict_proba FROM nl_docs d, tfm_predict_proba('nl_cls', d.body);
SELECT count(DISTINCT d.id) AS tokens FROM nl_docs d, tfm_tokens('nl_words', d.body);
SELECT count(DISTINCT d.id) AS next_tokens FROM nl_docs d, tfm_next_tokens('nl_lm', d.body, 2);
-- (a text may end at once, at <eos>: no rows; none comes from the NULL row)
SELECT count(*) FILTER (WHERE d.body IS NULL) AS from_the_null_row, count(DISTINCT d.id) > 0 AS others
  FROM nl_docs d, tfm_generate_tokens('nl_lm', d.body, max_tokens => 2, seed => 1);
SELECT count(DISTINCT d.id) AS nbest, count(*) FILTER (WHERE d.body IS NULL) AS from_the_null_row
  FROM nl_docs d, tfm_translate_nbest('nl_s2s', d.body, 2, max_tokens => 3);
SELECT count(DISTINCT d.id) AS attention FROM nl_docs d, tfm_attention('nl_s2s', d.body);
SELECT count(DISTINCT d.id) AS entities FROM nl_docs d, tfm_entities('nl_ner', d.body, 'none');
SELECT count(a) AS answers, count(*) FILTER (WHERE a IS NULL) AS nulls
  FROM (SELECT tfm_answer('nl_qa', 'what is calm', d.body) AS a FROM nl_docs d) s;
-- the array forms: one answer per element, NULL for the NULL one, each the
-- row-by-row answer
SELECT count(c) AS answers, count(*) FILTER (WHERE c IS NULL) AS nulls,
       bool_and(c IS NOT DISTINCT FROM tfm_classify('nl_cls', body)) AS same
  FROM (SELECT unnest(tfm_classify('nl_cls', array_agg(body ORDER BY id))) AS c,
               unnest(array_agg(body ORDER BY id)) AS body FROM nl_docs) s;
SELECT count(t) AS answers, count(*) FILTER (WHERE t IS NULL) AS nulls,
       bool_and(t IS NOT DISTINCT FROM tfm_translate('nl_s2s', body, max_tokens => 3)) AS same
  FROM (SELECT unnest(tfm_translate('nl_s2s', array_agg(body ORDER BY id), max_tokens => 3)) AS t,
               unnest(array_agg(body ORDER BY id)) AS body FROM nl_docs) s;
SELECT count(g) AS answers, count(*) FILTER (WHERE g IS NULL) AS nulls,
       bool_and(g IS NOT DISTINCT FROM tfm_generate('nl_lm', body, max_tokens => 3, temperature => 0)) AS same
  FROM (SELECT unnest(tfm_generate('nl_lm', array_agg(body ORDER BY id), max_tokens => 3, temperature => 0)) AS g,
               unnest(array_agg(body ORDER BY id)) AS body FROM nl_docs) s;
SELECT count(e.embedding) AS answers, count(*) FILTER (WHERE e.embedding IS NULL) AS nulls,
       bool_and(e.embedding IS NOT DISTINCT FROM tfm_embed('nl_cls', d.body)) AS same
  FROM tfm_embed('nl_cls', (SELECT array_agg(body ORDER BY id) FROM nl_docs)) e
  JOIN nl_docs d ON d.id = e.ord;
SELECT count(DISTINCT ord) AS texts_with_entities, count(*) FILTER (WHERE ord = 17) AS from_the_null_text,
       bool_and(e.entity IS NOT NULL AND e.label IS NOT NULL AND e.start_char IS NOT NULL) AS complete
  FROM tfm_entities('nl_ner', (SELECT array_agg(body ORDER BY id) FROM nl_docs), 'none') e;
SELECT count(DISTINCT ord) AS texts_with_chunks
  FROM tfm_embed_chunks('nl_cls', (SELECT array_agg(body ORDER BY id) FROM nl_docs), 4);

-- ---- 3. aggregates, training and evaluation skip the NULL row ----------------

-- the tokenizer learned from the 49 rows is the one learned without the NULL
SELECT tfm_tokenizer_train('nl_words_49', body, 'word') FROM nl_docs WHERE body IS NOT NULL;
SELECT tfm_tokenizer_train('nl_words_50', body, 'word') FROM nl_docs;
SELECT (SELECT array_agg(v.piece ORDER BY v.id) FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
         WHERE t.name = 'nl_words_49')
     = (SELECT array_agg(v.piece ORDER BY v.id) FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id
         WHERE t.name = 'nl_words_50') AS same_vocabulary;
SELECT tfm_bleu(body, 'the sea is calm tonight') = (SELECT tfm_bleu(body, 'the sea is calm tonight') FROM nl_docs
                                                     WHERE body IS NOT NULL) AS bleu_skips
  FROM nl_docs;
-- training counts the NULL row in a NOTICE and in each result row's note
SELECT epoch, note FROM tfm_train('nl_cls', 'SELECT body, label FROM nl_docs ORDER BY id', epochs => 2,
                                  batch_size => 8, val_fraction => 0);
SELECT (tfm_train_agg('nl_cls', body, label ORDER BY id)).steps FROM nl_docs;
-- only NULL rows are as no rows: NULL, nothing trained, the model as it was
SELECT version AS nl_version FROM tfm.models WHERE name = 'nl_cls' \gset
SELECT tfm_train_agg('nl_cls', body, label) IS NULL AS nothing_trained FROM nl_docs WHERE body IS NULL;
SELECT version = :nl_version AS same_version, tfm_classify('nl_cls', 'the sea') IS NOT NULL AS usable
  FROM tfm.models WHERE name = 'nl_cls';
SELECT rows, skipped FROM tfm_evaluate('nl_cls', 'SELECT body, label FROM nl_docs');

-- ---- 4. jobs: a NULL input writes a NULL output, no error, no retry ---------
SELECT tfm_job_create('nl_' || t, 'nl_docs', 'body', m, t, options => o::jsonb)
  FROM (VALUES ('classify', 'nl_cls', '{}'), ('embed', 'nl_cls', '{}'), ('predict_proba', 'nl_cls', '{}'),
               ('generate', 'nl_lm', '{"max_tokens": 3, "temperature": 0}'),
               ('translate', 'nl_s2s', '{"max_tokens": 3}')) v(t, m, o) ORDER BY t;
CALL tfm_job_run('nl_classify');
CALL tfm_job_run('nl_embed');
CALL tfm_job_run('nl_predict_proba');
CALL tfm_job_run('nl_generate');
CALL tfm_job_run('nl_translate');
SELECT 'classify' AS job, count(*) AS outputs, count(output) AS answers FROM nl_classify
UNION ALL SELECT 'embed', count(*), count(output) FROM nl_embed
UNION ALL SELECT 'predict_proba', count(*), count(output) FROM nl_predict_proba
UNION ALL SELECT 'generate', count(*), count(output) FROM nl_generate
UNION ALL SELECT 'translate', count(*), count(output) FROM nl_translate;
SELECT (SELECT output FROM nl_classify WHERE id = 17) IS NULL AS classify_null,
       (SELECT output FROM nl_embed WHERE id = 17) IS NULL AS embed_null,
       (SELECT output FROM nl_generate WHERE id = 17) IS NULL AS generate_null;
SELECT name, rows_done, rows_pending, rows_failed FROM tfm.jobs WHERE name LIKE 'nl\_%' ORDER BY name;
SELECT count(*) AS errors FROM tfm.job_errors;
-- nothing left to do: the NULL row is not queued again
CALL tfm_job_run('nl_classify');
-- the NULL row gets a text, then loses it again
UPDATE nl_docs SET body = 'the calm sea' WHERE id = 17;
CALL tfm_job_run('nl_classify');
SELECT output IS NOT NULL AS answered FROM nl_classify WHERE id = 17;
UPDATE nl_docs SET body = NULL WHERE id = 17;
CALL tfm_job_run('nl_classify');
SELECT output IS NULL AS null_again FROM nl_classify WHERE id = 17;

SELECT tfm_job_drop(name, drop_destination => true) FROM tfm.job_defs WHERE name LIKE 'nl\_%' ORDER BY name;
SELECT tfm_undeploy('default');
SELECT tfm_drop_model(name) FROM tfm.models WHERE name LIKE 'nl\_%' ORDER BY name;
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name LIKE 'nl\_%' ORDER BY name;
DROP TABLE nl_docs;
