#!/usr/bin/env bash
# test_job_crash.sh — CALL tfm_job_run survives a real crash: the backend
# running it killed with kill -9 (the postmaster ends every session and
# restarts in crash recovery), and the whole server restarted with
# pg_ctl restart -m immediate.  Each time an embedding and a classify job
# are running; the batches they committed before the crash are kept, and
# after a resumed run every source row has exactly one output (no
# duplicate, no gap), each equal to the direct call on its row (exactly).
#
# Runs against the server the PG* variables name (scripts/test.sh's
# throwaway cluster), with tfm installed.  kill -9 needs the right to signal
# the server's processes (root or the server's user), the restart
# TFM_PGDATA and scripts/cluster.sh's cluster_restart (the cluster of
# scripts/test.sh); without them that part is skipped with a message.
# Exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "$0")/../.."
. scripts/cluster.sh
export PGOPTIONS="-c tfm.threads=1 -c tfm.progress=off -c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
DB=tfm_job_crash
ROWS=3000

fail() { echo "FAIL: $*" >&2; exit 1; }

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
export PGDATABASE=$DB
"${PSQL[@]}" >/dev/null <<SQL
CREATE EXTENSION tfm;
CREATE TABLE jk_docs (id int PRIMARY KEY, body text);
INSERT INTO jk_docs SELECT i, repeat(chr(97 + i % 26) || ' sea ' || i || ' whale ', 3 + i % 5)
  FROM generate_series(1, $ROWS) i;
SELECT tfm_tokenizer_train('jk_chars', body, 'char') FROM jk_docs;
SELECT count(*) FROM tfm_create_model('jk_enc', 'classify', 'jk_chars', labels => ARRAY['a', 'b', 'c'],
                                      d_model => 128, heads => 4, layers => 2, max_len => 160, seed => 3);
-- one embedding and one classify job for each crash
SELECT tfm_job_create(n || '_emb', 'jk_docs', 'body', 'jk_enc', 'embed', options => '{"batch": 32}') IS NOT NULL
  FROM unnest(ARRAY['jk_kill', 'jk_restart']) n;
SELECT tfm_job_create(n || '_cls', 'jk_docs', 'body', 'jk_enc', 'classify', options => '{"batch": 32}') IS NOT NULL
  FROM unnest(ARRAY['jk_kill', 'jk_restart']) n;
SQL

wait_for_server() {
  for _ in $(seq 1 600); do
    "${PSQL[@]}" -c "SELECT 1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the server does not accept connections after $1"
}

# start runners of $1_emb and $1_cls; return once both have committed some batches
start_runners() {
  PGAPPNAME=$1_emb "${PSQL[@]}" -c "CALL tfm_job_run('$1_emb')" >/tmp/tfm_job_crash.$$.emb 2>&1 &
  r_emb=$!
  PGAPPNAME=$1_cls "${PSQL[@]}" -c "CALL tfm_job_run('$1_cls')" >/tmp/tfm_job_crash.$$.cls 2>&1 &
  r_cls=$!
  for _ in $(seq 1 600); do
    e=$("${PSQL[@]}" -c "SELECT count(*) FROM $1_emb")
    c=$("${PSQL[@]}" -c "SELECT count(*) FROM $1_cls")
    [ "$e" -ge 96 ] && [ "$c" -ge 96 ] && return 0
    sleep 0.05
  done
  fail "$1: the runners committed no batches within 30 s"
}

# after the crash: both runners ended in error; kept batches, no duplicate
check_crashed() {
  if wait "$r_emb"; then fail "$1: the embedding run ended normally (it finished before the crash)"; fi
  if wait "$r_cls"; then fail "$1: the classify run ended normally (it finished before the crash)"; fi
  rm -f /tmp/tfm_job_crash.$$.emb /tmp/tfm_job_crash.$$.cls
  for t in emb cls; do
    read -r outputs keys pending <<<"$("${PSQL[@]}" -F ' ' -c "
      SELECT (SELECT count(*) FROM $1_$t), (SELECT count(DISTINCT id) FROM $1_$t),
             (SELECT rows_pending FROM tfm.jobs WHERE name = '$1_$t')")"
    echo "  $1_$t after the crash: $outputs outputs kept, $pending pending"
    [ "$outputs" -gt 0 ] || fail "$1_$t: the committed batches were lost"
    [ "$outputs" = "$keys" ] || fail "$1_$t: $outputs outputs for $keys keys"
    [ "$pending" -gt 0 ] || fail "$1_$t: the run finished before the crash"
    [ $((outputs + pending)) = "$ROWS" ] || fail "$1_$t: $outputs done + $pending pending is not $ROWS"
  done
}

# resumed: one output per source row, each equal to the direct call
check_resumed() {
  "${PSQL[@]}" -c "CALL tfm_job_run('$1_emb')"
  "${PSQL[@]}" -c "CALL tfm_job_run('$1_cls')"
  read -r e_out e_keys e_unequal c_out c_keys c_unequal pending failed gaps <<<"$("${PSQL[@]}" -F ' ' -c "
    SELECT (SELECT count(*) FROM $1_emb), (SELECT count(DISTINCT id) FROM $1_emb),
           (SELECT count(*) FROM $1_emb e JOIN jk_docs d USING (id)
             WHERE cardinality(e.output) <> 128
                OR e.output <> tfm_embed('jk_enc', d.body)),
           (SELECT count(*) FROM $1_cls), (SELECT count(DISTINCT id) FROM $1_cls),
           (SELECT count(*) FROM $1_cls c JOIN jk_docs d USING (id)
             WHERE c.output IS DISTINCT FROM tfm_classify('jk_enc', d.body)),
           (SELECT sum(rows_pending) FROM tfm.jobs WHERE name LIKE '$1_%'),
           (SELECT sum(rows_failed) FROM tfm.jobs WHERE name LIKE '$1_%'),
           (SELECT count(*) FROM jk_docs d
             WHERE NOT EXISTS (SELECT FROM $1_emb e WHERE e.id = d.id)
                OR NOT EXISTS (SELECT FROM $1_cls c WHERE c.id = d.id))")"
  [ "$pending" = 0 ] || fail "$1: $pending keys still queued"
  [ "$failed" = 0 ] || fail "$1: $failed rows failed"
  [ "$gaps" = 0 ] || fail "$1: $gaps source rows without an output"
  [ "$e_out" = "$ROWS" ] && [ "$e_keys" = "$ROWS" ] || fail "$1_emb: $e_out outputs, $e_keys keys for $ROWS rows"
  [ "$c_out" = "$ROWS" ] && [ "$c_keys" = "$ROWS" ] || fail "$1_cls: $c_out outputs, $c_keys keys for $ROWS rows"
  [ "$e_unequal" = 0 ] || fail "$1_emb: $e_unequal outputs differ from tfm_embed on their row"
  [ "$c_unequal" = 0 ] || fail "$1_cls: $c_unequal outputs differ from tfm_classify on their row"
  echo "  $1 resumed: $ROWS outputs per job, one per row, each equal to the direct call"
}

echo "- kill -9 of a backend running tfm_job_run"
start_runners jk_kill
pid=$("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'jk_kill_emb'")
[ -n "$pid" ] || fail "no backend runs jk_kill_emb"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "  (cannot signal the server's processes: kill -9 part skipped)"
  "${PSQL[@]}" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'jk_kill_%'" >/dev/null
  wait "$r_emb" || true
  wait "$r_cls" || true
else
  kill -9 "$pid"
  wait_for_server "kill -9"
  check_crashed jk_kill
  check_resumed jk_kill
fi

echo "- pg_ctl restart -m immediate while tfm_job_run runs"
if [ -z "${TFM_PGDATA:-}" ] || [ ! -f "$TFM_PGDATA/postmaster.pid" ]; then
  echo "  (not scripts/test.sh's cluster: restart part skipped)"
else
  start_runners jk_restart
  cluster_restart
  wait_for_server "the restart"
  check_crashed jk_restart
  check_resumed jk_restart
fi

psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
echo "ok"
