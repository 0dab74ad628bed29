-- tfm 0.3 → 0.4: hardening against hostile tenants and runaway work — one
-- limit on names, deployments as owned aliases with history and rollback,
-- bounded workspaces, and the equivalents of REASSIGN OWNED / DROP OWNED.
-- The install script of 0.4 is sql/tfm.sql (0.1) followed by the upgrade
-- scripts up to this one, so a fresh install and an upgraded one are the
-- same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.4'" to load this file. \quit

-- tfm.work_mem bounds the memory of a call's batches; this is what a pass
-- of a shape needs of it (the size its error names)
CREATE FUNCTION tfm_workspace_bytes(model text, batch integer, length integer,
                                    target_length integer DEFAULT 0, training boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'tfm_workspace_bytes' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION tfm_workspace_bytes(text, integer, integer, integer, boolean) IS
  'bytes of tfm.work_mem a pass of batch rows of length tokens (seq2seq: and target_length) needs';
