-- tfm 0.2 → 0.3: batched embeddings, sharded checkpoints.
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
