-- tfm 0.1 → 0.2: owners and privileges, backups, renames.
-- The install script of 0.2 is sql/tfm.sql (0.1) followed by this file, so a
-- fresh install and an upgraded one are the same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- owners and grants.  Every model and tokenizer has an owner; acl_use and
-- acl_train list the roles granted use or train (0, shown as '-', is PUBLIC).
-- Rows made before 0.2 belong to the role that runs the update.

ALTER TABLE tfm.models
    ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole,
    ADD COLUMN acl_use regrole[] NOT NULL DEFAULT '{}',
    ADD COLUMN acl_train regrole[] NOT NULL DEFAULT '{}';
ALTER TABLE tfm.tokenizers
    ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole,
    ADD COLUMN acl_use regrole[] NOT NULL DEFAULT '{}',
    ADD COLUMN acl_train regrole[] NOT NULL DEFAULT '{}';
-- tfm's functions always name the owner
ALTER TABLE tfm.models ALTER COLUMN owner DROP DEFAULT;
ALTER TABLE tfm.tokenizers ALTER COLUMN owner DROP DEFAULT;
COMMENT ON COLUMN tfm.models.owner IS 'the role that created the model: it alone (with its members and superusers) may drop, rename or grant';
COMMENT ON COLUMN tfm.models.acl_use IS 'roles granted use (inference, evaluation, tensors, copy); 0 = PUBLIC';
COMMENT ON COLUMN tfm.models.acl_train IS 'roles granted train (train, overwrite, deploy; implies use); 0 = PUBLIC';
COMMENT ON COLUMN tfm.tokenizers.owner IS 'the role that created the tokenizer';
COMMENT ON COLUMN tfm.tokenizers.acl_use IS 'roles granted use (tokenize, read the vocabulary, build models on it); 0 = PUBLIC';
COMMENT ON COLUMN tfm.tokenizers.acl_train IS 'roles granted train (implies use); 0 = PUBLIC';

-- Does role who hold the privileges of owner or of one of grantees?
CREATE FUNCTION tfm.role_may(who oid, owner regrole, grantees regrole[]) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_has_role(who, owner, 'USAGE')
          OR EXISTS (SELECT FROM unnest(grantees) g WHERE g = 0 OR pg_has_role(who, g, 'USAGE')) $$;

CREATE FUNCTION tfm.may_use_model(model_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.models m WHERE m.id = model_id
                     AND tfm.role_may(who, m.owner, m.acl_use || m.acl_train)) $$;

-- a tokenizer is usable by its own grants or through a model that uses it
CREATE FUNCTION tfm.may_use_tokenizer(tokenizer_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.tokenizers t WHERE t.id = tokenizer_id
                     AND (tfm.role_may(who, t.owner, t.acl_use || t.acl_train)
                          OR EXISTS (SELECT FROM tfm.models m
                                     WHERE t.name IN (m.tokenizer, m.target_tokenizer)
                                       AND tfm.role_may(who, m.owner, m.acl_use || m.acl_train)
                                       -- only while the model's owner may still use it
                                       AND tfm.role_may(m.owner, t.owner, t.acl_use || t.acl_train)))) $$;

CREATE FUNCTION tfm.current_role_oid() RETURNS oid
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT oid FROM pg_roles WHERE rolname = current_user $$;

-- The catalog is read by everyone with USAGE on schema tfm and written only
-- by tfm's functions (as the extension's owner).  Weights, vocabularies and
-- training history are row-level secured: a role sees the rows of the
-- models and tokenizers it may use.
GRANT USAGE ON SCHEMA tfm TO PUBLIC;
GRANT SELECT ON tfm.models, tfm.tokenizers, tfm.deployed, tfm.tensors, tfm.history,
                tfm.vocab, tfm.merges, tfm.model_list, tfm.tokenizer_list, tfm.progress TO PUBLIC;
ALTER TABLE tfm.tensors ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.history ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.vocab ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.merges ENABLE ROW LEVEL SECURITY;
CREATE POLICY tensors_of_usable_models ON tfm.tensors FOR SELECT
    USING (tfm.may_use_model(model_id, tfm.current_role_oid()));
CREATE POLICY history_of_usable_models ON tfm.history FOR SELECT
    USING (tfm.may_use_model(model_id, tfm.current_role_oid()));
CREATE POLICY vocab_of_usable_tokenizers ON tfm.vocab FOR SELECT
    USING (tfm.may_use_tokenizer(tokenizer_id, tfm.current_role_oid()));
CREATE POLICY merges_of_usable_tokenizers ON tfm.merges FOR SELECT
    USING (tfm.may_use_tokenizer(tokenizer_id, tfm.current_role_oid()));

-- A tensor of more than 4,194,304 values is stored in several rows, chunk
-- 0, 1, ... (each row a real[] far below PostgreSQL's 1 GB value limit).
ALTER TABLE tfm.tensors ADD COLUMN chunk integer NOT NULL DEFAULT 0 CHECK (chunk >= 0);
ALTER TABLE tfm.tensors DROP CONSTRAINT tensors_pkey, ADD PRIMARY KEY (model_id, name, chunk);
COMMENT ON COLUMN tfm.tensors.chunk IS 'a large tensor''s values are the concatenation of its rows'' data in chunk order';

-- tfm_tensor checks use instead of returning NULL for a model one may not use
CREATE OR REPLACE FUNCTION tfm_tensor(model text, tensor text) RETURNS real[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mid integer;
BEGIN
    SELECT m.id INTO mid FROM tfm.models m WHERE m.name = model;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT tfm.may_use_model(mid, tfm.current_role_oid()) THEN
        RAISE EXCEPTION 'permission denied for model "%": use privilege required', model
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (SELECT count(*) FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor) > 1 THEN
        RETURN (SELECT array_agg(u.v ORDER BY t.chunk, u.o)
                FROM tfm.tensors t, unnest(t.data) WITH ORDINALITY AS u(v, o)
                WHERE t.model_id = mid AND t.name = tensor);
    END IF;
    RETURN (SELECT t.data FROM tfm.tensors t WHERE t.model_id = mid AND t.name = tensor);
END
$$;

CREATE FUNCTION tfm.grantee_names(grantees regrole[]) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT array_agg(CASE WHEN g = 0 THEN 'PUBLIC' ELSE g::text END ORDER BY g::text)
      FROM unnest(grantees) g $$;

CREATE OR REPLACE VIEW tfm.model_list AS
SELECT m.name, m.task, m.tokenizer, m.parameters,
       (m.config->>'d_model')::int AS d_model,
       (m.config->>'enc_layers')::int + (m.config->>'dec_layers')::int AS layers,
       m.steps, m.version, m.created_at, m.updated_at,
       m.owner, tfm.grantee_names(m.acl_use) AS use_granted,
       tfm.grantee_names(m.acl_train) AS train_granted
FROM tfm.models m ORDER BY m.name;

CREATE OR REPLACE VIEW tfm.tokenizer_list AS
SELECT t.name, t.kind, t.vocab_size, (t.options->>'n_merges')::int AS merges,
       (SELECT array_agg(m.name ORDER BY m.name) FROM tfm.models m
         WHERE m.tokenizer = t.name OR m.target_tokenizer = t.name) AS used_by,
       t.created_at,
       t.owner, tfm.grantee_names(t.acl_use) AS use_granted,
       tfm.grantee_names(t.acl_train) AS train_granted
FROM tfm.tokenizers t ORDER BY t.name;

CREATE FUNCTION tfm_grant(object text, grantee text, privilege text DEFAULT 'use',
                          object_type text DEFAULT NULL) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_grant' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_grant(text, text, text, text) IS
  'grant use or train on a model or tokenizer to a role or PUBLIC (owner only)';
CREATE FUNCTION tfm_revoke(object text, grantee text, privilege text DEFAULT 'use',
                           object_type text DEFAULT NULL) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_revoke' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_revoke(text, text, text, text) IS
  'revoke use (and with it train) or train on a model or tokenizer (owner only)';
CREATE FUNCTION tfm_rename_model(name text, new_name text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_rename_model' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION tfm_rename_model(text, text) IS 'rename a model (owner only)';

-- ---------------------------------------------------------------------------
-- backups: pg_dump keeps every row of the catalog and the sequences' places

SELECT pg_catalog.pg_extension_config_dump('tfm.tokenizers', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.tokenizers_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.vocab', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.merges', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.models', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.version_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.tensors', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.history', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.deployed', '');

-- ---------------------------------------------------------------------------
-- published checkpoints: Hugging Face config.json + model.safetensors (+
-- tokenizer.json) become a tfm model owned by the caller (GPT-2 for now)

CREATE FUNCTION tfm_import(name text, config jsonb, weights bytea,
                           tokenizer jsonb DEFAULT NULL, task text DEFAULT NULL,
                           OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import(text, jsonb, bytea, jsonb, text) IS
  'import a Hugging Face checkpoint (config.json, model.safetensors, tokenizer.json contents) as a model';
CREATE FUNCTION tfm_import_files(name text, directory text, task text DEFAULT NULL,
                                 OUT model text, OUT model_task text, OUT parameters bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_import_files' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_import_files(text, text, text) IS
  'import config.json, model.safetensors and tokenizer.json from a server directory (superuser or pg_read_server_files)';

-- language models on token ids (int[] prompts taken as given, nothing added):
-- a model imported without a tokenizer's text, or a reference's exact ids
CREATE FUNCTION tfm_generate_tokens(model text, prompt integer[], max_tokens integer DEFAULT 200,
                                    temperature real DEFAULT 1.0, top_k integer DEFAULT 0,
                                    top_p real DEFAULT 1.0, seed bigint DEFAULT NULL, stop text DEFAULT NULL,
                                    OUT pos integer, OUT id integer, OUT piece text, OUT logprob double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_generate_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 200;
COMMENT ON FUNCTION tfm_generate_tokens(text, integer[], integer, real, integer, real, bigint, text) IS
  'the tokens generated after a prompt of token ids, one row each, with their log-probability';
CREATE FUNCTION tfm_next_tokens(model text, prompt integer[], k integer DEFAULT 10,
                                OUT rank integer, OUT id integer, OUT piece text, OUT probability double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_next_tokens' LANGUAGE C STABLE PARALLEL SAFE ROWS 10;
COMMENT ON FUNCTION tfm_next_tokens(text, integer[], integer) IS
  'the k most likely next tokens after a prompt of token ids';
CREATE FUNCTION tfm_score(model text, input integer[], OUT logprob double precision, OUT tokens integer)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_score' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_score(text, integer[]) IS
  'the log-probability of a sequence of token ids under a language model (every id after the first)';
CREATE FUNCTION tfm_tokenizer_import(name text, tokenizer jsonb) RETURNS text
AS 'MODULE_PATHNAME', 'tfm_tokenizer_import_json' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_tokenizer_import(text, jsonb) IS
  'import a Hugging Face tokenizer.json (byte-level BPE) as a tokenizer';

-- ---------------------------------------------------------------------------
-- embeddings for search

CREATE FUNCTION tfm_cosine(a real[], b real[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'tfm_cosine' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_cosine(real[], real[]) IS
  'cosine similarity of two vectors of the same length (NULL if either is all zeros)';
CREATE FUNCTION tfm_cosine_distance(a real[], b real[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'tfm_cosine_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tfm_cosine_distance(real[], real[]) IS '1 - tfm_cosine(a, b): the <=> operator';
-- a <=> b: cosine distance, as pgvector spells it, so ORDER BY e <=> q LIMIT k finds the nearest
CREATE OPERATOR <=> (LEFTARG = real[], RIGHTARG = real[], FUNCTION = tfm_cosine_distance,
                     COMMUTATOR = <=>);

-- ---------------------------------------------------------------------------
-- inference precision: tfm.precision (auto, fp32, bf16, int8) and a model's
-- own default; tfm_info says what runs and why

DROP FUNCTION tfm_info();
CREATE FUNCTION tfm_info(OUT version text, OUT blis_kernels text, OUT kernel_choice text,
                         OUT threads integer, OUT inference_precision text, OUT precision_reason text,
                         OUT bf16_kernel text, OUT int8_kernel text, OUT lowp_kernel_choice text)
RETURNS record
AS 'MODULE_PATHNAME', 'tfm_info' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION tfm_info() IS
  'tfm''s version, the BLIS kernel set and why, the thread count, the inference precision tfm.precision gives here and why, and the bf16/int8 kernels this CPU runs';

CREATE FUNCTION tfm_set_precision(model text, setting text) RETURNS void
AS 'MODULE_PATHNAME', 'tfm_set_precision' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL gets an error
COMMENT ON FUNCTION tfm_set_precision(text, text) IS
  'a model''s own inference precision (fp32, bf16, int8; auto removes it), used when tfm.precision is auto';

-- training that survives a cancel: CALL tfm_fit commits a checkpoint at
-- every epoch's end and every checkpoint_every; keep => 'last' | 'best'.

-- a row per checkpoint as well as per epoch: checkpoint 0 is the epoch's end,
-- 1, 2, ... the mid-epoch checkpoints; kept marks the epoch whose weights the
-- run left in the model
ALTER TABLE tfm.history
    ADD COLUMN checkpoint integer NOT NULL DEFAULT 0,
    ADD COLUMN rows_done bigint,
    ADD COLUMN kept boolean NOT NULL DEFAULT false;
ALTER TABLE tfm.history DROP CONSTRAINT history_pkey;
ALTER TABLE tfm.history ADD PRIMARY KEY (model_id, run_started, epoch, checkpoint);
-- runs before 0.2 kept their last epoch
UPDATE tfm.history h SET kept = true
 WHERE epoch = (SELECT max(epoch) FROM tfm.history l
                 WHERE l.model_id = h.model_id AND l.run_started = h.run_started);
COMMENT ON TABLE tfm.history IS 'one row per training epoch saved, and per tfm_fit checkpoint';
COMMENT ON COLUMN tfm.history.checkpoint IS '0: the end of the epoch; n > 0: the n-th checkpoint tfm_fit committed inside it';
COMMENT ON COLUMN tfm.history.rows_done IS 'rows of the query read in the epoch when the row was written';
COMMENT ON COLUMN tfm.history.kept IS 'the model was left with this epoch''s weights (keep => ''last'' or ''best'')';

-- The interrupted (or running) tfm_fit run of a model: what it needs to go
-- on bit for bit from its last checkpoint (the weights are the model's own,
-- at model_version).  state is a versioned binary record (src/pg/checkpoint.c).
CREATE TABLE tfm.checkpoints (
    model_id       integer PRIMARY KEY REFERENCES tfm.models (id) ON DELETE CASCADE,
    run_started    timestamptz NOT NULL,
    model_version  bigint NOT NULL,
    epoch          integer NOT NULL,
    rows_done      bigint NOT NULL,
    steps          bigint NOT NULL,
    query          text NOT NULL,
    options        jsonb NOT NULL,
    state          bytea NOT NULL,
    pid            integer NOT NULL,
    started_by     regrole NOT NULL,
    saved_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE tfm.checkpoints IS 'the last checkpoint of a tfm_fit run that has not finished: CALL tfm_fit(model, resume => true) continues it';
COMMENT ON COLUMN tfm.checkpoints.epoch IS 'the epoch to go on with';
COMMENT ON COLUMN tfm.checkpoints.rows_done IS 'rows of the query that epoch has consumed (0: it starts afresh)';
COMMENT ON COLUMN tfm.checkpoints.pid IS 'the backend that wrote it';
COMMENT ON COLUMN tfm.checkpoints.started_by IS 'the role whose query the run reads: only it resumes without naming the query';

-- Adam's moments per tensor, and (keep => 'best') the best epoch's values,
-- as raw float4 arrays
CREATE TABLE tfm.checkpoint_tensors (
    model_id  integer NOT NULL REFERENCES tfm.checkpoints (model_id) ON DELETE CASCADE,
    name      text NOT NULL,
    adam_m    bytea NOT NULL,
    adam_v    bytea NOT NULL,
    best      bytea,
    PRIMARY KEY (model_id, name)
);
COMMENT ON TABLE tfm.checkpoint_tensors IS 'the optimizer state of a checkpoint, per tensor';

GRANT SELECT ON tfm.checkpoints, tfm.checkpoint_tensors TO PUBLIC;
ALTER TABLE tfm.checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE tfm.checkpoint_tensors ENABLE ROW LEVEL SECURITY;
-- a run's query and optimizer state: for roles that may train the model
CREATE FUNCTION tfm.may_train_model(model_id integer, who oid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT EXISTS (SELECT FROM tfm.models m WHERE m.id = model_id
                     AND tfm.role_may(who, m.owner, m.acl_train)) $$;
CREATE POLICY checkpoints_of_trainable_models ON tfm.checkpoints FOR SELECT
    USING (tfm.may_train_model(model_id, tfm.current_role_oid()));
CREATE POLICY checkpoint_tensors_of_trainable_models ON tfm.checkpoint_tensors FOR SELECT
    USING (tfm.may_train_model(model_id, tfm.current_role_oid()));
SELECT pg_catalog.pg_extension_config_dump('tfm.checkpoints', '');
SELECT pg_catalog.pg_extension_config_dump('tfm.checkpoint_tensors', '');

-- tfm_train gains keep and reports the kept epoch
DROP FUNCTION tfm_train(text, text, integer, integer, real, integer, text, real, real, real,
                        real, bigint, interval, bigint, integer, integer);
CREATE FUNCTION tfm_train(
    model text,
    query text,
    epochs integer DEFAULT 1,
    batch_size integer DEFAULT NULL,
    lr real DEFAULT NULL,
    warmup integer DEFAULT NULL,
    schedule text DEFAULT NULL,
    weight_decay real DEFAULT NULL,
    clip real DEFAULT 1.0,
    label_smoothing real DEFAULT NULL,
    val_fraction real DEFAULT NULL,
    seed bigint DEFAULT 42,
    time_limit interval DEFAULT NULL,
    max_steps bigint DEFAULT NULL,
    accumulate integer DEFAULT 1,
    batch_tokens integer DEFAULT NULL,
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL,
    OUT epoch integer, OUT steps bigint, OUT train_loss double precision,
    OUT val_loss double precision, OUT val_accuracy double precision,
    OUT tokens_per_s double precision, OUT seconds double precision, OUT kept boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_train' LANGUAGE C VOLATILE PARALLEL UNSAFE;  -- not STRICT: NULL means "the default"
COMMENT ON FUNCTION tfm_train IS
  'train a model on the rows of a query in one transaction; one row per epoch, kept marks the epoch the model keeps (keep => ''last'' or ''best''); precision => ''bf16'' trains in mixed precision';

CREATE PROCEDURE tfm_fit(
    model text,
    query text DEFAULT NULL,
    epochs integer DEFAULT 1,
    batch_size integer DEFAULT NULL,
    lr real DEFAULT NULL,
    warmup integer DEFAULT NULL,
    schedule text DEFAULT NULL,
    weight_decay real DEFAULT NULL,
    clip real DEFAULT 1.0,
    label_smoothing real DEFAULT NULL,
    val_fraction real DEFAULT NULL,
    seed bigint DEFAULT 42,
    time_limit interval DEFAULT NULL,
    max_steps bigint DEFAULT NULL,
    accumulate integer DEFAULT 1,
    batch_tokens integer DEFAULT NULL,
    checkpoint_every interval DEFAULT '10 minutes',
    resume boolean DEFAULT false,
    keep text DEFAULT NULL,
    train_precision text DEFAULT NULL)
AS 'MODULE_PATHNAME', 'tfm_fit' LANGUAGE C;  -- not STRICT: NULL means "the default"; query may be NULL to resume
COMMENT ON PROCEDURE tfm_fit IS
  'train like tfm_train, committing a checkpoint every epoch and every checkpoint_every; resume => true continues an interrupted run';

CREATE OR REPLACE VIEW tfm.progress AS
SELECT pid, usename, query_start AS started, state_change AS updated, query AS status
FROM pg_stat_activity
WHERE (query LIKE 'tfm\_train %' OR query LIKE 'tfm\_fit %') AND state = 'active';
