#!/usr/bin/env bash
# test_pgversion.sh — tfm's tests against another PostgreSQL major version
# (17 or 18; scripts/test.sh runs it for each of TFM_PG_VERSIONS but 15):
#
#   scripts/test_pgversion.sh VERSION
#
# Builds the server from Debian's source package (scripts/build_pg.sh,
# cached in /var/cache/tfm), then tfm against it in build/pg-VERSION, a
# copy of the checkout (PGXS builds in the tree: the checkout's objects
# stay PostgreSQL 15's), installs it into that server, and runs there the
# pg_regress suite and the cluster scripts that need no tooling of one
# version (pgTAP is Debian 12's postgresql-15-pgtap: not run here).  The
# copy's scripts run with PGBIN and PATH pointing at VERSION's programs,
# so psql, pg_dump, pg_restore, pg_basebackup and initdb are its own.
#
# CI's budget (doc/versions.md, Measured): by default the cluster scripts
# whose subject a major version changes — pg_dump and pg_restore,
# streaming and logical replication, the
# background workers (shared memory, latches, shared_preload_libraries);
# TFM_PG_VERSION_SCRIPTS=all runs every one, as on PostgreSQL 15.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: test_pgversion.sh VERSION}
t0=$SECONDS
pgc=$(scripts/build_pg.sh "$version")
echo "== PostgreSQL $("$pgc" --version | sed 's/^PostgreSQL //'): $pgc (ready in $((SECONDS - t0)) s)"

# the copy: every file of the checkout but its build products and build/
copy=build/pg-$version
mkdir -p "$copy"
tar -cf - --exclude=./build --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.d' \
    --exclude='*.bc' --exclude=./results --exclude=./log --exclude=./tmp_check . | tar -xf - -C "$copy"
cd "$copy"
t1=$SECONDS
# the unit tests' binaries are the core's, run once by test.sh: not built here
make -s -j2 PG_CONFIG="$pgc" UNIT_BINS= all
make -s PG_CONFIG="$pgc" UNIT_BINS= install
echo "== tfm built and installed for PostgreSQL $version in $((SECONDS - t1)) s"

export PG_CONFIG=$pgc PGBIN=$("$pgc" --bindir)
export PATH=$PGBIN:$PATH
. scripts/cluster.sh
t2=$SECONDS
cluster_start "tfm.precision=fp32"
echo "== PostgreSQL $version: pg_regress"
rm -f regression.diffs
if ! make -s installcheck PG_CONFIG="$pgc"; then
  [ -f regression.diffs ] && head -200 regression.diffs
  exit 1
fi
echo "   ($((SECONDS - t2)) s)"
# each script with its seconds (CI's budget: doc/versions.md)
step() {
  local t=$SECONDS title=$1; shift
  echo "== PostgreSQL $version: $title"
  "$@"
  echo "   ($((SECONDS - t)) s)"
}
all=${TFM_PG_VERSION_SCRIPTS:-}
[ "$all" = all ] && step "tfm_fit: cancelled, timed-out and killed runs resume bit-identical" test/cluster/test_fit_cancel.sh
[ "$all" = all ] && step "hostile tenants" test/cluster/test_hostile.sh
step "pg_dump / pg_restore keep every model" test/cluster/test_dump.sh
step "pg_dump / pg_restore keep live jobs" test/cluster/test_job_dump.sh
step "a streaming replica runs inference" test/cluster/test_replica.sh
# (not the upgrade from 0.1: no release before 0.5 compiles against 17 or 18 —
# 0.1 reads PGPROC.lxid — so no installation there has an older tfm to update)
[ "$all" = all ] && step "tfm_job_run: interrupted runs keep their batches" test/cluster/test_job_cancel.sh
[ "$all" = all ] && step "tfm_job_run: a killed backend and a crashed server keep their batches" test/cluster/test_job_crash.sh
[ "$all" = all ] && step "scaling out: logical replication to two shards, postgres_fdw" test/cluster/test_scaleout.sh
cluster_stop
[ "$all" = all ] && step "hostile tenants, generated from the catalog" test/cluster/hostile/run.sh
step "background job workers (shared_preload_libraries=tfm)" test/cluster/test_job_workers.sh
step "models published by logical replication" test/cluster/test_logical.sh
echo "== PostgreSQL $version: all tests passed ($((SECONDS - t2)) s of tests, $((SECONDS - t0)) s in all)"
