-- tfm 0.2 → 0.3: batched embeddings, sharded checkpoints, mixed-precision training.
-- The install script of 0.3 is sql/tfm.sql (0.1) followed by the upgrade
-- scripts up to this one, so a fresh install and an upgraded one are the
-- same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.3'" to load this file. \quit

CREATE FUNCTION tfm_embed(model text, inputs text[], OUT ord integer, OUT embedding real[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tfm_embed_batch' LANGUAGE C STABLE PARALLEL SAFE ROWS 100;
COMMENT ON FUNCTION tfm_embed(text, text[]) IS
  'the pooled representation of each text, (ord, embedding) in the array''s order, through batched forward passes (NULL gives NULL)';

-- sharded checkpoints (model.safetensors.index.json) import from a directory
COMMENT ON FUNCTION tfm_import_files(text, text, text) IS
  'import config.json, model.safetensors (or a sharded model.safetensors.index.json and its shards) and tokenizer.json from a server directory (superuser or pg_read_server_files)';

-- opt-in mixed-precision training: tfm_train and tfm_fit gain train_precision
-- ('fp32', the default, or 'bf16'; "precision" is an SQL keyword that a
-- named argument cannot be called by)
DROP FUNCTION tfm_train(text, text, integer, integer, real, integer, text, real, real, real,
                        real, bigint, interval, bigint, integer, integer, text);
DROP PROCEDURE tfm_fit(text, text, integer, integer, real, integer, text, real, real, real,
                       real, bigint, interval, bigint, integer, integer, interval, boolean, text);
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
