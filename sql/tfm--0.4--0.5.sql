\echo Use "ALTER EXTENSION tfm UPDATE TO '0.5'" to load this file. \quit
-- tfm 0.4 -> 0.5: no role can turn a job, a worker or a template against
-- another (doc/operations.md, Security).

-- a job runs the model it was created with: by id, or through the alias it
-- was named by (which its owner may move); renames, drops and other roles'
-- models of the same name never change what it runs
ALTER TABLE tfm.job_defs
    ADD COLUMN model_id integer,
    ADD COLUMN alias_id integer;
COMMENT ON COLUMN tfm.job_defs.model IS 'the model or alias the job was created with, as named then';
COMMENT ON COLUMN tfm.job_defs.model_id IS 'the model (tfm.models.id) the job runs, whatever its name now';
COMMENT ON COLUMN tfm.job_defs.alias_id IS 'the alias (tfm.aliases.id) the job was created through, if any: it runs the model the alias deploys now';
UPDATE tfm.job_defs j
   SET model_id = (SELECT m.id FROM tfm.models m WHERE m.name = j.model),
       alias_id = (SELECT a.id FROM tfm.aliases a WHERE a.name = j.model
                    AND NOT EXISTS (SELECT FROM tfm.models m WHERE m.name = j.model));
UPDATE tfm.job_defs j SET model_id = (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id)
 WHERE j.alias_id IS NOT NULL;

-- a row's value never reaches another role: the last error of a job (a
-- run's error may quote the row it stopped at) is its owner's to read;
-- every other column of tfm.job_defs stays readable by all
REVOKE SELECT ON tfm.job_defs FROM PUBLIC;
GRANT SELECT (id, name, owner, source, key_columns, key_types, input, model, task, destination,
              options, search_path, state, rows_done, rows_deleted, rows_failed, last_error_at,
              last_run_at, run_started_at, run_rows, created_at, model_id, alias_id)
    ON tfm.job_defs TO PUBLIC;

-- outputs by model version, counted by reading the destination's rows in
-- C (src/pg/sql/jobs/job_versions.c): reading tfm.jobs runs no code of another
-- role, and waits for no other session's lock
CREATE OR REPLACE FUNCTION tfm.job_versions(job_id integer) RETURNS jsonb
AS 'MODULE_PATHNAME', 'tfm_job_versions' LANGUAGE C STABLE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm.job_versions(integer) IS
  'a job''s outputs by model version; NULL when you may not read all of its destination, it is not a table, or it is locked';

CREATE OR REPLACE VIEW tfm.jobs AS
SELECT j.name, j.owner, j.source, j.destination, j.task,
       CASE WHEN j.alias_id IS NULL
            THEN coalesce((SELECT m.name FROM tfm.models m WHERE m.id = j.model_id), j.model)
            ELSE coalesce((SELECT a.name FROM tfm.aliases a WHERE a.id = j.alias_id), j.model) END AS model,
       j.state,
       j.rows_done,
       (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id) AS rows_pending,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.job_id = j.id) AS rows_failed,
       j.rows_deleted,
       (SELECT m.version FROM tfm.models m
         WHERE m.id = CASE WHEN j.alias_id IS NULL THEN j.model_id
                           ELSE (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id) END)
         AS model_version,
       tfm.job_versions(j.id) AS outputs_by_version,
       round((j.run_rows / nullif(extract(epoch FROM j.last_run_at - j.run_started_at), 0))::numeric, 1)
         AS rows_per_second,
       CASE WHEN j.run_rows > 0 AND j.last_run_at > j.run_started_at THEN
         (SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
           * ((j.last_run_at - j.run_started_at) / j.run_rows) END AS eta,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.last_error END AS last_error,
       j.last_error_at, j.run_started_at, j.last_run_at, j.options, j.input, j.created_at
FROM tfm.job_defs j
ORDER BY j.name;
COMMENT ON VIEW tfm.jobs IS
  'every job: source, destination, task, model (by its name now), state; rows done (outputs written), pending (keys queued), failed (keys in tfm.job_errors), deleted; the model''s current version and the destination''s outputs by model version (NULL if you cannot read it); the last run''s rows per second and the time the pending rows would take at that speed; last_error for the job''s owner (and members, and superusers) only';

-- a publication's name is an identifier: longer than one can be is refused
-- before it is quoted into a command (a 100 MB name took 2.5 s to refuse)
CREATE OR REPLACE FUNCTION tfm_create_publication(name text) RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sql text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'a publication name must not be empty or NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(name) > 63 THEN
        RAISE EXCEPTION 'publication name "%..." is longer than 63 bytes', left(name, 32)
            USING ERRCODE = 'name_too_long';
    END IF;
    sql := format('CREATE PUBLICATION %I FOR TABLE %s', name,
                  array_to_string(tfm.publication_tables(), ', '));
    EXECUTE sql;
    RETURN sql;
END
$$;

-- a backfill's keys go into the queue in chunks, one row per batch of keys
-- (column keys: a two-dimensional text[], a key a row; key NULL), so that a
-- batch claims and deletes one queue row, not one per key (issue 41); a
-- truncate marker is now key and keys NULL.  rows_pending counts a key
-- queued both in a chunk and on its own twice until a batch takes it.
ALTER TABLE tfm.job_queue ADD COLUMN keys text[];
CREATE INDEX job_queue_job_chunks ON tfm.job_queue (job_id, id) WHERE keys IS NOT NULL;
COMMENT ON TABLE tfm.job_queue IS
  'keys of source rows a job must (re)process: key, one key (written by the triggers), or keys, a backfill''s chunk of keys (one a row of the two-dimensional array); both NULL: the source was truncated';

CREATE OR REPLACE VIEW tfm.jobs AS
SELECT j.name, j.owner, j.source, j.destination, j.task,
       CASE WHEN j.alias_id IS NULL
            THEN coalesce((SELECT m.name FROM tfm.models m WHERE m.id = j.model_id), j.model)
            ELSE coalesce((SELECT a.name FROM tfm.aliases a WHERE a.id = j.alias_id), j.model) END AS model,
       j.state,
       j.rows_done,
       ((SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
        + (SELECT coalesce(sum(array_length(q.keys, 1)), 0) FROM tfm.job_queue q
            WHERE q.job_id = j.id AND q.keys IS NOT NULL)) AS rows_pending,
       (SELECT count(*) FROM tfm.job_errors e WHERE e.job_id = j.id) AS rows_failed,
       j.rows_deleted,
       (SELECT m.version FROM tfm.models m
         WHERE m.id = CASE WHEN j.alias_id IS NULL THEN j.model_id
                           ELSE (SELECT a.model_id FROM tfm.aliases a WHERE a.id = j.alias_id) END)
         AS model_version,
       tfm.job_versions(j.id) AS outputs_by_version,
       round((j.run_rows / nullif(extract(epoch FROM j.last_run_at - j.run_started_at), 0))::numeric, 1)
         AS rows_per_second,
       CASE WHEN j.run_rows > 0 AND j.last_run_at > j.run_started_at THEN
         ((SELECT count(DISTINCT q.key) FROM tfm.job_queue q WHERE q.job_id = j.id)
        + (SELECT coalesce(sum(array_length(q.keys, 1)), 0) FROM tfm.job_queue q
            WHERE q.job_id = j.id AND q.keys IS NOT NULL))
           * ((j.last_run_at - j.run_started_at) / j.run_rows) END AS eta,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.last_error END AS last_error,
       j.last_error_at, j.run_started_at, j.last_run_at, j.options, j.input, j.created_at
FROM tfm.job_defs j
ORDER BY j.name;
COMMENT ON VIEW tfm.jobs IS
  'every job: source, destination, task, model (by its name now), state; rows done (outputs written), pending (keys queued), failed (keys in tfm.job_errors), deleted; the model''s current version and the destination''s outputs by model version (NULL if you cannot read it); the last run''s rows per second and the time the pending rows would take at that speed; last_error for the job''s owner (and members, and superusers) only';

-- NULLs as PostgreSQL treats them (doc/reference.md, NULLs): a function of
-- a text or int[] input answers NULL for a NULL input (a set-returning one,
-- no rows), so one NULL row no longer stops a query.  These are STRICT:
-- none of their arguments takes NULL for "the default".  tfm_tokenize,
-- tfm_generate, tfm_generate_tokens, tfm_next_tokens, tfm_translate,
-- tfm_translate_nbest, tfm_attention and the chat functions have such
-- options, so they stay non-strict and answer a NULL model or input in C
-- the same way; commands (create, train, import, drop, grant, deploy,
-- jobs) still refuse a NULL name with 22004.
ALTER FUNCTION tfm_classify(text, text) STRICT;
ALTER FUNCTION tfm_classify(text, integer[]) STRICT;
ALTER FUNCTION tfm_classify(text) STRICT;
ALTER FUNCTION tfm_classify(text, text[]) STRICT;
ALTER FUNCTION tfm_embed(text, text) STRICT;
ALTER FUNCTION tfm_embed(text, integer[]) STRICT;
ALTER FUNCTION tfm_embed(text, text[]) STRICT;
ALTER FUNCTION tfm_predict_proba(text, text) STRICT;
ALTER FUNCTION tfm_predict_proba(text, integer[]) STRICT;
ALTER FUNCTION tfm_score(text, text) STRICT;
ALTER FUNCTION tfm_score(text, integer[]) STRICT;
ALTER FUNCTION tfm_detokenize(text, integer[]) STRICT;
ALTER FUNCTION tfm_tokens(text, text) STRICT;
ALTER FUNCTION tfm_embed_chunks(text, text[], integer, integer) STRICT;
ALTER FUNCTION tfm_workspace_bytes(text, integer, integer, integer, boolean) STRICT;
ALTER FUNCTION tfm_gguf_kept(text) STRICT;

-- ---------------------------------------------------------------------------
-- tasks of imported classifiers that read two texts together (doc/tasks.md)

CREATE FUNCTION tfm_rerank(model text, query text, passage text) RETURNS real
AS 'MODULE_PATHNAME', 'tfm_rerank_one' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_rerank(text, text, text) IS
  'a cross-encoder''s relevance of a passage to a query, read together as one pair (sigmoid of its one logit, or the probability of its last label)';
CREATE FUNCTION tfm_rerank(model text, query text, passages text[], OUT ord integer, OUT score real)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_rerank' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 20;
COMMENT ON FUNCTION tfm_rerank(text, text, text[]) IS
  'a cross-encoder''s relevance of each passage to a query, (ord, score) in the array''s order, through batched forward passes (a NULL passage scores NULL)';
CREATE FUNCTION tfm_zero_shot(model text, input text, labels text[],
                              hypothesis_template text DEFAULT 'This example is {}.',
                              multi_label boolean DEFAULT false,
                              OUT label text, OUT score real)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_zero_shot' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION tfm_zero_shot(text, text, text[], text, boolean) IS
  'zero-shot classification with an NLI model: how far the text entails the template filled with each label, best first (single-label: softmax over the labels; multi_label: each label on its own)';

-- tfm.precision = auto is the checkpoint's own precision: an import records
-- what its weights were (config checkpoint_precision: fp32 for float32 and
-- float16 weights, bf16 for BF16, int8 for GGUF Q8_0/Q6_K, int4 for
-- Q4_0/Q4_K) and auto runs the imported version at it; tfm's own models,
-- models trained since their import and models imported before 0.5 (which
-- have no checkpoint_precision) run fp32.  tfm_info() says "auto" for it;
-- tfm_model_precision says what one model runs at now, and why.

CREATE FUNCTION tfm_model_precision(model text, OUT inference_precision text, OUT precision_reason text)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_model_precision_info' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_model_precision(text) IS
  'the precision the model''s inference runs at now (fp32, bf16, int8, int4) and why: tfm.precision, the model''s own default (tfm_set_precision), or auto''s choice (the checkpoint''s own precision; fp32 for tfm''s own models)';

-- Structured extraction (issue 42): decoding constrained by a JSON schema.
-- tfm_generate and tfm_chat take json_schema (the same functions with one
-- more optional argument, so every existing call keeps working); with it
-- each token that would leave the schema's language is masked, the text
-- ends when the value does, and it always parses and follows the schema.
-- tfm_extract builds a prompt from a text and a schema and returns jsonb.

DROP FUNCTION tfm_generate(text, text, integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_generate(model text, prompt text, max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                             json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_generate' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_generate(text, text, integer, real, integer, real, bigint, text, jsonb) IS
  'the continuation of a prompt by a language model (temperature 0 = greedy; a seed repeats; json_schema: constrained to a JSON value of the schema)';

DROP FUNCTION tfm_generate(text, text[], integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_generate(model text, prompts text[], max_tokens integer DEFAULT 200,
                             temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                             top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                             json_schema jsonb DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'tfm_generate_batch' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_generate(text, text[], integer, real, integer, real, bigint, text, jsonb) IS
  'the continuations of many prompts, decoded together (prompt i samples with seed + i; json_schema: each constrained to a JSON value of the schema)';

DROP FUNCTION tfm_chat(text, jsonb, integer, real, integer, real, bigint, text);
CREATE FUNCTION tfm_chat(model text, messages jsonb, max_tokens integer DEFAULT 200,
                         temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                         top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                         json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_chat(text, jsonb, integer, real, integer, real, bigint, text, jsonb) IS
  'the assistant''s reply to a conversation [{"role": ..., "content": ...}]: the model''s chat template applied, then generation (as tfm_generate) until one of its stop ids (json_schema: the reply a JSON value of the schema)';

CREATE FUNCTION tfm_extract(model text, input text, schema jsonb, max_tokens integer DEFAULT 256,
                            temperature real DEFAULT 0, seed bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'tfm_extract' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_extract(text, text, jsonb, integer, real, bigint) IS
  'the fields of a text as jsonb following a JSON schema: a language model''s decoding constrained to the schema''s language (greedy by default), from a prompt of the schema and the text';
CREATE FUNCTION tfm_json_matches(schema jsonb, value text) RETURNS boolean
AS 'MODULE_PATHNAME', 'tfm_json_matches' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_json_matches(jsonb, text) IS
  'whether a text is a whole value of a JSON schema''s language as constrained generation writes it (compact, properties in the schema''s order)';
-- ---------------------------------------------------------------------------
-- tasks of imported encoders with a head on every token (doc/tasks.md):
-- entities from a token classifier, answers from an extractive
-- question-answering model

CREATE FUNCTION tfm_entities(model text, input text, aggregation text DEFAULT 'simple',
                             OUT entity text, OUT label text, OUT score real,
                             OUT start_char integer, OUT end_char integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_entities' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 5;
COMMENT ON FUNCTION tfm_entities(text, text, text) IS
  'the entities a token classifier tags in the text, as transformers'' TokenClassificationPipeline groups them (aggregation none, simple, first or max; O left out): the text''s characters, label, mean score, start and end characters (0-based, end exclusive)';
CREATE FUNCTION tfm_entities(model text, inputs text[], aggregation text DEFAULT 'simple',
                             OUT ord integer, OUT entity text, OUT label text, OUT score real,
                             OUT start_char integer, OUT end_char integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_entities_array' LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 20;
COMMENT ON FUNCTION tfm_entities(text, text[], text) IS
  'the entities of each text (ord: its place in the array, from 1) through batched forward passes; a NULL text has no rows';
CREATE FUNCTION tfm_answer(model text, question text, context text,
                           max_answer_len integer DEFAULT 15, doc_stride integer DEFAULT 128,
                           handle_impossible_answer boolean DEFAULT false,
                           OUT answer text, OUT score real, OUT start_char integer, OUT end_char integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_answer' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_answer(text, text, text, integer, integer, boolean) IS
  'the answer to a question found in the context by an extractive question-answering model, as transformers'' QuestionAnsweringPipeline: the span of the best start and end probabilities (at most max_answer_len tokens, widened to words), long contexts in windows overlapping by doc_stride tokens; its score and characters (0-based, end exclusive)';
-- ---------------------------------------------------------------------------
-- GGUF blocks run as they are (issue 40): a GGUF import keeps the file's
-- Q8_0, Q4_K, Q5_K and Q6_K tensors as their blocks too (as it kept Q4_0
-- for int4), and the inference precision gguf runs them with llama.cpp's
-- dot products (the activations quantized to Q8_K / Q8_0 per row); auto
-- runs a GGUF model of those types at gguf.  (What the import keeps of each
-- tensor, tfm_gguf_kept, is defined below with the blocks stored alone.)

COMMENT ON TABLE tfm.gguf_tensors IS
  'per tensor of an imported GGUF file: converted to float32 only (blocks NULL), or also kept as the file''s blocks (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf)';
COMMENT ON COLUMN tfm.gguf_tensors.first_column IS 'kept: its rows are the matrix''s output columns first_column .. first_column + columns - 1';
COMMENT ON FUNCTION tfm_model_precision(text) IS
  'the precision the model''s inference runs at now (fp32, bf16, int8, int4, gguf) and why: tfm.precision, the model''s own default (tfm_set_precision), or auto''s choice (the checkpoint''s own precision; fp32 for tfm''s own models)';
-- ---------------------------------------------------------------------------
-- jobs of the tasks issue 42 added (doc/reference.md, Jobs): entities keeps
-- a token classifier's entities of each row (jsonb, as tfm_entities gives
-- them; option aggregation), extract a language model's fields of each row
-- (jsonb following the option schema, as tfm_extract)
ALTER TABLE tfm.job_defs DROP CONSTRAINT job_defs_task_check;
ALTER TABLE tfm.job_defs ADD CONSTRAINT job_defs_task_check
  CHECK (task IN ('embed', 'classify', 'predict_proba', 'generate', 'translate', 'entities', 'extract'));
COMMENT ON FUNCTION tfm_job_create(text, regclass, text, text, text, regclass, jsonb) IS
  'a job that keeps a destination table of model outputs (task embed, classify, predict_proba, generate, translate, entities or extract) for the rows of a source table; creates the destination and the triggers, queues every existing row; returns the destination';


-- chat templates for a whole context (issue 40): messages with tool calls,
-- tool responses and reasoning, tools, enable_thinking and any other name,
-- as apply_chat_template's arguments; json (not jsonb) so that the keys
-- keep their order, as Python's dicts do (tojson writes them in it)
CREATE FUNCTION tfm_chat_render_context(template text, context json)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_render_context_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_chat_render_context(text, json) IS
  'a Jinja chat template rendered for a context {"messages": [...], "tools": [...], "enable_thinking": ..., ...} as transformers'' apply_chat_template renders it (add_generation_prompt true unless given)';
CREATE FUNCTION tfm_chat_prompt_context(model text, context json)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_prompt_context' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_chat_prompt_context(text, json) IS
  'the model''s chat template rendered for a context {"messages": [...], "tools": [...], ...}, with the model''s bos and eos texts (add_generation_prompt true unless given)';
CREATE FUNCTION tfm_chat_context(model text, context json, max_tokens integer DEFAULT 200,
                                 temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                                 top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                                 json_schema jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'tfm_chat_context' LANGUAGE C STABLE PARALLEL SAFE;  -- not STRICT: NULL options mean defaults
COMMENT ON FUNCTION tfm_chat_context(text, json, integer, real, integer, real, bigint, text, jsonb) IS
  'the assistant''s reply to a whole context {"messages": [...], "tools": [...], "enable_thinking": ..., ...} (tool calls, tool responses, reasoning): tfm_chat_prompt_context''s prompt, then generation as tfm_chat';
-- GGUF blocks stored at their own size (issue 40): a tensor of an imported
-- GGUF file that the kept blocks cover wholly (each value their exact
-- dequantization) is stored as those blocks only, with no float32 rows in
-- tfm.tensors; its float32 values are made from the blocks when the model
-- is loaded (for fp32, bf16, int8, int4 and training), and by tfm_tensor.
-- Training then saves every tensor as float32 (a float32 model).

-- A tensor's blocks over tfm.gguf_row_bytes (256 MB) are stored in parts of
-- whole rows, so that pg_dump can write each row (a bytea's text is twice
-- its bytes, and a value is at most 1 GB): Gemma 3 4B's embedding is 551 MB.
ALTER TABLE tfm.gguf_tensors ADD COLUMN first_row integer NOT NULL DEFAULT 0;
ALTER TABLE tfm.gguf_tensors DROP CONSTRAINT gguf_tensors_pkey;
ALTER TABLE tfm.gguf_tensors ADD PRIMARY KEY (model_id, gguf_name, first_row);
COMMENT ON COLUMN tfm.gguf_tensors.first_row IS 'kept: the first of the file''s rows of the tensor these blocks hold (a tensor over tfm.gguf_row_bytes is stored in parts of whole rows; columns: this part''s rows)';
COMMENT ON TABLE tfm.gguf_tensors IS
  'per tensor of an imported GGUF file: converted to float32 only (blocks NULL), or kept as the file''s blocks (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf), a tensor they cover wholly stored as them only (no tfm.tensors rows)';
COMMENT ON COLUMN tfm.gguf_tensors.blocks IS 'kept: the file''s bytes of the tensor, as they are; NULL: converted to float32 only';
COMMENT ON COLUMN tfm.gguf_tensors.first_column IS 'kept: its rows are the matrix''s output columns first_column .. first_column + columns - 1; NULL: its rows are the tensor''s rows, kept for storage only (an untied embedding)';
CREATE FUNCTION tfm.tensor_values(model text, tensor text) RETURNS real[]
AS 'MODULE_PATHNAME', 'tfm_tensor_values' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm.tensor_values(text, text) IS
  'internal: the float32 values of a tensor stored as a GGUF file''s blocks only, made from them (tfm_tensor)';
CREATE OR REPLACE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
    mid integer := m.model_id;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor) THEN
        -- stored as a GGUF file's blocks only: the values loading makes from them
        IF EXISTS (SELECT 1 FROM tfm.gguf_tensors g
                    WHERE g.model_id = mid AND g.version = m.model_version
                      AND g.tensor = tfm_tensor.tensor AND g.blocks IS NOT NULL) THEN
            RETURN tfm.tensor_values(model, tfm_tensor.tensor);
        END IF;
        RETURN NULL;
    END IF;
    IF (SELECT count(*) FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor) > 1 THEN
        RETURN (SELECT array_agg(u.v ORDER BY t.chunk, u.o)
                FROM tfm.tensors t, unnest(t.data) WITH ORDINALITY AS u(v, o)
                WHERE t.model_id = mid AND t.name = tfm_tensor.tensor);
    END IF;
    RETURN (SELECT t.data FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tfm_tensor.tensor);
END
$$;
COMMENT ON FUNCTION tfm_tensor(text, text) IS
  'the values of one tensor of a model (an imported GGUF model''s tensor stored as the file''s blocks only: their float32 values, made from them)';
CREATE OR REPLACE FUNCTION tfm_gguf_kept(model text)
RETURNS TABLE (gguf_tensor text, gguf_type text, tensor text, kept boolean, how text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
BEGIN
    RETURN QUERY
    SELECT g.gguf_name, g.gguf_type, g.tensor, g.blocks IS NOT NULL AND g.version = m.model_version,
           CASE WHEN g.blocks IS NULL THEN 'converted to float32 at import'
                WHEN g.version <> m.model_version
                THEN 'converted to float32 at import (its kept blocks were of an earlier version)'
                WHEN g.first_column IS NULL
                THEN g.gguf_type || ' blocks kept as in the file, stored as them only (no matrix runs them: looked up as float32 made at load)'
                ELSE g.gguf_type || ' blocks kept as in the file for '
                     || CASE WHEN g.gguf_type = 'Q4_0' THEN 'int4' ELSE 'gguf' END
                     || CASE WHEN EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = m.model_id AND t.name = g.tensor)
                             THEN ' (float32 stored too)' ELSE ' (stored as them only)' END END
      FROM tfm.gguf_tensors g WHERE g.model_id = m.model_id AND g.first_row = 0
     ORDER BY g.gguf_name;
END
$$;
COMMENT ON FUNCTION tfm_gguf_kept(text) IS
  'what the GGUF import did with each tensor of a model: blocks kept as they are (Q4_0 for int4; Q8_0, Q4_K, Q5_K, Q6_K for gguf), stored as them only or with float32 values too, or converted to float32';
CREATE FUNCTION tfm.loaded_footprint(model text, OUT loaded_precision text, OUT loaded_block_bytes bigint,
                                      OUT loaded_float32_bytes bigint, OUT left_to_blocks_bytes bigint,
                                      OUT made_from_blocks_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_loaded_footprint' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm.loaded_footprint(text) IS
  'internal: this session''s loaded copy of a model (NULL: not loaded; nothing is loaded): its precision, the bytes of its GGUF blocks, of the float32 values it holds, of those it left to the blocks (loaded for gguf) and of those it made from the blocks (at its load or on demand since)';
CREATE FUNCTION tfm_model_footprint(model text, OUT block_bytes bigint, OUT float32_bytes bigint,
                                    OUT made_at_load_bytes bigint, OUT loaded_precision text,
                                    OUT loaded_block_bytes bigint, OUT loaded_float32_bytes bigint,
                                    OUT left_to_blocks_bytes bigint, OUT made_from_blocks_bytes bigint)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL RESTRICTED SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m record := tfm.usable_model(model);
BEGIN
    -- the kept blocks of the current version, as stored (their bytes)
    SELECT coalesce(sum(octet_length(g.blocks)), 0) INTO block_bytes
      FROM tfm.gguf_tensors g
     WHERE g.model_id = m.model_id AND g.version = m.model_version AND g.blocks IS NOT NULL;
    -- the float32 values stored as rows (4 bytes a value)
    SELECT coalesce(sum(4 * cardinality(t.data)::bigint), 0) INTO float32_bytes
      FROM tfm.tensors t WHERE t.model_id = m.model_id;
    -- the float32 values a load for another precision than gguf (fp32, bf16,
    -- int8, int4, training) makes from the blocks of the tensors stored as
    -- them only; a load for gguf leaves those its blocks run to them
    SELECT coalesce(sum(4 * g.inputs::bigint * g.columns), 0) INTO made_at_load_bytes
      FROM tfm.gguf_tensors g
     WHERE g.model_id = m.model_id AND g.version = m.model_version AND g.blocks IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM tfm.tensors t WHERE t.model_id = m.model_id AND t.name = g.tensor);
    -- this session's loaded copy, if any (NULLs: not loaded)
    SELECT l.loaded_precision, l.loaded_block_bytes, l.loaded_float32_bytes, l.left_to_blocks_bytes,
           l.made_from_blocks_bytes
      INTO loaded_precision, loaded_block_bytes, loaded_float32_bytes, left_to_blocks_bytes,
           made_from_blocks_bytes
      FROM tfm.models x, tfm.loaded_footprint(x.name) l WHERE x.id = m.model_id;
END
$$;
COMMENT ON FUNCTION tfm_model_footprint(text) IS
  'a model''s weights as stored (the bytes of its kept GGUF blocks and of its float32 rows, 4 a value), the float32 bytes a load for another precision than gguf makes from the blocks, and what this session''s loaded copy holds: its precision, blocks, float32 values, values left to the blocks (loaded for gguf) and values it made from them (at its load or on demand since)';
-- ---------------------------------------------------------------------------
-- the GGUF imports' descriptions as they are now (issue 40)
COMMENT ON FUNCTION tfm_import_gguf(text, bytea, boolean) IS
  'import a GGUF file''s contents (architectures llama, qwen2, qwen3, gemma3, phi3, gpt2; F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K tensors, the kept types stored as their blocks) as a model, with the tokenizer and chat template of its metadata';
COMMENT ON FUNCTION tfm_import_gguf_file(text, text, boolean) IS
  'import a GGUF file of the server (superuser or pg_read_server_files) as tfm_import_gguf imports its contents';
-- ---------------------------------------------------------------------------
-- a GGUF file's kept blocks are stored out of line without compression: a
-- quantized tensor does not compress, and trying (pglz over each value,
-- its output buffer as large as the value) cost an import the memory and
-- the time of another copy of its largest tensor
ALTER TABLE tfm.gguf_tensors ALTER COLUMN blocks SET STORAGE EXTERNAL;
