-- tfm 0.3 → 0.4: hardening against hostile tenants and runaway work — one
-- limit on names, deployments as owned aliases with history and rollback,
-- bounded workspaces, and the equivalents of REASSIGN OWNED / DROP OWNED.
-- The install script of 0.4 is sql/tfm.sql (0.1) followed by the upgrade
-- scripts up to this one, so a fresh install and an upgraded one are the
-- same objects.
\echo Use "ALTER EXTENSION tfm UPDATE TO '0.4'" to load this file. \quit
