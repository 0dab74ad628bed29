#!/usr/bin/env bash
# test.sh — every test of tfm on this machine: installs what is missing,
# builds and installs tfm, runs the core's C unit tests, then pg_regress and
# pgTAP against a throwaway cluster that it starts and stops itself, then
# the hostile-tenant cases (by hand, then generated from the catalog on a
# cluster of their own), dump/restore (with live jobs, and with pgvector),
# a streaming replica, the upgrade from 0.1 and interrupted job runs
# against it; then tfm's background job
# workers on a cluster of their own (shared_preload_libraries=tfm), and
# logical replication between two clusters of their own; on x86-64, the
# AArch64 cross build and its low-precision kernels under qemu-aarch64
# (scripts/test_aarch64.sh --smoke).  Then, for each
# other PostgreSQL major version of TFM_PG_VERSIONS (default "15 17 18";
# their servers build in the background while 15's suite runs),
# scripts/test_pgversion.sh: that server built from Debian's source package
# (cached in /var/cache/tfm), tfm built against it, pg_regress and the
# cluster scripts there (doc/versions.md).  TFM_PG_VERSIONS=15 runs
# PostgreSQL 15 alone; a list without 15 skips its suite.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# PG_CONFIG picks the PostgreSQL 15 installation to build against and test
# with (a relocated copy keeps parallel checkouts' installs apart); PGBIN follows it
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
scripts/setup.sh
# test/regress/sql/vector.sql runs only where the server has pgvector (the
# Makefile adds it then): here it must, so that it is never skipped unseen
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ]; then
  echo "test.sh: pgvector is not installed in $("$PG_CONFIG" --sharedir) (scripts/build_pgvector.sh): the pgvector test would not run" >&2
  exit 1
fi
export PGBIN=${PGBIN:-$("$PG_CONFIG" --bindir)}

echo "== core unit tests"
make -s unittest
echo "== sql/tfm.sql is 0.1's script and every upgrade, byte for byte"
make -s check-install-script

versions=${TFM_PG_VERSIONS:-15 17 18}
# the other versions' servers build in the background (niced) while
# PostgreSQL 15's suite runs; test_pgversion.sh waits for each build
# (build_pg.sh's lock) or finds it built
others=""
for v in $versions; do [ "$v" = 15 ] || others="$others $v"; done
if [ -n "$others" ] && [[ " $versions " = *" 15 "* ]]; then
  scripts/build_pg.sh --deps
  prebuild_log=$(mktemp /tmp/tfm-build-pg.XXXXXX)
  echo "== building PostgreSQL$others in the background (log: $prebuild_log)"
  ( for v in $others; do nice -n 19 scripts/build_pg.sh "$v" || true; done ) >"$prebuild_log" 2>&1 &
fi
other_versions() {
  local v
  for v in $versions; do
    [ "$v" = 15 ] || scripts/test_pgversion.sh "$v"
  done
}
if ! [[ " $versions " = *" 15 "* ]]; then
  other_versions
  echo "== all tests passed (PostgreSQL $versions)"
  exit 0
fi

. scripts/cluster.sh
# fp32 inference: the expected outputs are exact (test/regress/sql/precision.sql sets
# bf16 and int8 itself)
cluster_start "tfm.precision=fp32"
echo "== pg_regress"
if ! make -s installcheck PG_CONFIG="$PG_CONFIG"; then
  [ -f regression.diffs ] && head -200 regression.diffs
  exit 1
fi
echo "== tfm_fit: cancelled, timed-out and killed runs resume bit-identical"
test/cluster/test_fit_cancel.sh
echo "== hostile tenants: no crash, bounded memory, cancels (issue 23's worst cases)"
test/cluster/test_hostile.sh
echo "== hostile tenants, generated from the catalog: every routine and relation of tfm (a cluster of its own, with background workers)"
test/cluster/hostile/run.sh
echo "== pgTAP"
psql -q -X -c "CREATE EXTENSION IF NOT EXISTS pgtap" >/dev/null
if [ -d ../shared/data ]; then
  pg_prove --ext .sql -r test/pgtap
else
  # tokenizers.sql reads the real corpora of ../shared/data
  echo "(no ../shared/data beside the checkout: test/pgtap/tokenizers.sql skipped)"
  pg_prove --ext .sql test/pgtap/storage.sql
fi
echo "== real tokenizer.json files (Llama 2 and 3, Qwen3, Gemma 3, DeepSeek V3, gpt-oss, from npm): Hugging Face's ids on 1,200 texts"
test/cluster/test_hf_tokenizers.sh
echo "== tfm_extract: 2,000 results of a random model validated by python3-jsonschema"
test/cluster/test_extract.sh
echo "== pg_dump / pg_restore keep every model"
test/cluster/test_dump.sh
echo "== pg_dump / pg_restore keep live jobs: triggers, queue, errors; the restored jobs finish the backfill"
test/cluster/test_job_dump.sh
echo "== pg_dump / pg_restore with pgvector: tfm_vector, a job's vector destination and its HNSW index"
test/cluster/test_vector_dump.sh
echo "== a streaming replica runs inference"
test/cluster/test_replica.sh
echo "== ALTER EXTENSION tfm UPDATE from 0.1"
test/cluster/test_upgrade.sh
echo "== tfm_job_run: interrupted runs keep their batches, two runners, no duplicates"
test/cluster/test_job_cancel.sh
echo "== tfm_job_run: a killed backend and a crashed server keep their batches, resume exactly"
test/cluster/test_job_crash.sh
echo "== scaling out: logical replication of the catalog to two shards, postgres_fdw inference and training over them"
test/cluster/test_scaleout.sh
cluster_stop
echo "== background job workers (a cluster of their own with shared_preload_libraries=tfm)"
test/cluster/test_job_workers.sh
echo "== models published by logical replication (a publisher and a subscriber of their own)"
test/cluster/test_logical.sh
# AArch64 from an x86-64 machine: the cross build of the core, its tests and
# tfm.so, the low-precision kernels under qemu on the SDOT, NEON and
# portable paths (TFM_SKIP_AARCH64=1 leaves it out)
if [ "$(uname -m)" = x86_64 ] && [ -z "${TFM_SKIP_AARCH64:-}" ]; then
  echo "== AArch64: the cross build and the low-precision kernels under qemu-aarch64 (scripts/test_aarch64.sh --smoke)"
  scripts/test_aarch64.sh --smoke
fi
other_versions
echo "== all tests passed (PostgreSQL $versions)"
