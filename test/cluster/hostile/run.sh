#!/usr/bin/env bash
# run.sh — the hostile-tenant suite generated from tfm's catalog (issue 37;
# doc/operations.md, Security): a throwaway cluster of its own with
# shared_preload_libraries=tfm and tfm.job_workers=2, the tenants of
# setup.sql, then run_hostile_suite.pl twice: pass 1 with every job paused,
# pass 2 while the background workers run the jobs of alice, bob and
# mallory (every 4th generated call, no 100 MB value).  Every call's line (SQLSTATE, seconds, peak MB, message) goes to
# $HOSTILE_LOG_DIR (default: a fresh directory under /tmp, printed).
#
#   test/cluster/hostile/run.sh                      both passes
#   HOSTILE_ONLY='tfm_chat' test/cluster/hostile/run.sh   the routines whose signature matches
#   HOSTILE_BIG=0 test/cluster/hostile/run.sh        without the 100 MB values
# Needs tfm installed in PGBIN's PostgreSQL (scripts/setup.sh) and Perl's
# DBD::Pg (libdbd-pg-perl).  As root the driver resets each backend's peak
# memory between calls (/proc/<pid>/clear_refs); otherwise peaks are per
# session.  Exits non-zero on any violation.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
. scripts/cluster.sh
cluster_start "shared_preload_libraries=tfm" "tfm.job_workers=2" "tfm.job_naptime=200ms" \
              "tfm.threads=1" "tfm.progress=off" "tfm.precision=fp32"
logdir=${HOSTILE_LOG_DIR:-$(mktemp -d /tmp/tfm-hostile.XXXXXX)}
mkdir -p "$logdir"
db=tfm_hostile_suite
psql -X -q -d postgres -c "CREATE DATABASE $db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f test/cluster/hostile/setup.sql >/dev/null
args=(--db "$db" --big "${HOSTILE_BIG:-1}")
[ -n "${HOSTILE_ONLY:-}" ] && args+=(--only "$HOSTILE_ONLY")
fail=0
echo "   pass 1: every routine and relation of extension tfm, as mallory (log: $logdir/pass1.log)"
perl test/cluster/hostile/run_hostile_suite.pl "${args[@]}" --log "$logdir/pass1.log" || fail=1
echo "   pass 2: the same while background workers run jobs of alice, bob and mallory (log: $logdir/pass2.log)"
# (every 4th call and no 100 MB value: the CI budget; HOSTILE_PASS2_EVERY=1 for all)
perl test/cluster/hostile/run_hostile_suite.pl "${args[@]}" --workers --every "${HOSTILE_PASS2_EVERY:-4}" --big 0 \
  --log "$logdir/pass2.log" || fail=1
if grep -q "terminated by signal\|PANIC" "$TFM_PGDATA/server.log"; then
  echo "   the server log shows a crash:" >&2
  grep "terminated by signal\|PANIC" "$TFM_PGDATA/server.log" | head -5 >&2
  fail=1
fi
exit $fail
