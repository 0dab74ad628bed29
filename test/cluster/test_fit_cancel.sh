#!/usr/bin/env bash
# test_fit_cancel.sh — CALL tfm_fit survives a real interruption: a run
# cancelled from another session (pg_cancel_backend), one stopped by
# statement_timeout (at half the uninterrupted run's time), and one whose backend
# is killed with kill -9 (the server restarts in crash recovery), each
# resumed with resume => true, end with weights bit-identical to a run that
# was never interrupted (same seed, same tfm.threads, rows in ORDER BY).
#
# Runs against the server the PG* variables name (scripts/test.sh's
# throwaway cluster), with tfm installed.  kill -9 needs the right to signal
# the server's processes (root or the server's user); without it that part
# is skipped with a message.  Exits non-zero on any difference.
# TFM_FIT_THREADS sets tfm.threads for all three runs (default 1).
set -euo pipefail

export PGOPTIONS="-c tfm.threads=${TFM_FIT_THREADS:-1} -c tfm.progress=off -c tfm.train_chunk_rows=1000 -c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
DB=tfm_fit_cancel
QUERY='SELECT ids, label FROM fc_rows ORDER BY i'
ARGS="epochs => 3, lr => 3e-3, seed => 11, keep => 'best', checkpoint_every => '200 ms'"

fail() { echo "FAIL: $*" >&2; exit 1; }

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
export PGDATABASE=$DB
"${PSQL[@]}" <<'SQL'
CREATE EXTENSION tfm;
-- a learnable task over token ids, big enough for a run of several seconds
CREATE TABLE fc_rows AS
SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label,
       array(SELECT 6 + ((i * 7 + j * 13) % 90) FROM generate_series(1, 8 + i % 23) j)
       || CASE WHEN i % 2 = 1 THEN ARRAY[100 + i % 5] ELSE ARRAY[]::int[] END AS ids
FROM generate_series(1, 12000) i;
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 128, labels => ARRAY['a', 'b'],
                          d_model => 48, heads => 4, layers => 2, max_len => 32, seed => 5)
    FROM unnest(ARRAY['fc_a', 'fc_b', 'fc_c', 'fc_d']) n) s;
SQL

# every tensor of two models, compared value for value
compare() {
  "${PSQL[@]}" -F ' ' -c "
    WITH a AS (SELECT t.name, t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = '$1'),
         b AS (SELECT t.name, t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = '$2')
    SELECT (SELECT count(*) FROM a), (SELECT sum(cardinality(data)) FROM a),
           (SELECT count(*) FROM ((SELECT * FROM a EXCEPT SELECT * FROM b) UNION ALL
                                  (SELECT * FROM b EXCEPT SELECT * FROM a)) d),
           (SELECT md5(string_agg(name || data::text, ';' ORDER BY name)) FROM a),
           (SELECT md5(string_agg(name || data::text, ';' ORDER BY name)) FROM b)"
}

# wait until model $1's run (background job $2, output in $3) has committed
# a mid-epoch checkpoint in epoch >= 2
wait_for_checkpoint() {
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || { cat "$3"; fail "the run of $1 ended before it could be interrupted"; }
    n=$("${PSQL[@]}" -c "SELECT count(*) FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id
                         WHERE m.name = '$1' AND h.epoch >= 2 AND h.checkpoint > 0")
    [ "$n" -gt 0 ] && return 0
    sleep 0.1
  done
  fail "no checkpoint of $1 in epoch 2 within 60 s"
}

report_checkpoint() {
  "${PSQL[@]}" -F ' ' -c "SELECT 'interrupted run of ' || m.name || ': last checkpoint in epoch ' || c.epoch
                                 || ' after ' || c.rows_done || ' rows of it, step ' || c.steps
                            FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = '$1'"
}

check_same() {
  read -r tensors values differ md5a md5b <<<"$(compare "$1" "$2")"
  echo "$1 vs $2: $tensors tensors, $values values; tensors differing: $differ; md5 $md5a / $md5b"
  [ "$differ" = 0 ] && [ "$md5a" = "$md5b" ] || fail "$2 (interrupted and resumed) differs from $1"
}

echo "== uninterrupted run (fc_a)"
SECONDS=0
"${PSQL[@]}" -c "CALL tfm_fit('fc_a', '$QUERY', $ARGS)"
a_secs=$SECONDS
echo "took ${a_secs} s"

echo "== run cancelled from another session (fc_b), then resumed"
"${PSQL[@]}" -c "CALL tfm_fit('fc_b', '$QUERY', $ARGS)" >/tmp/fc_b.out 2>&1 &
runner=$!
wait_for_checkpoint fc_b $runner /tmp/fc_b.out
# while it runs: tfm.progress shows it, and it cannot be resumed elsewhere
echo "tfm.progress: $("${PSQL[@]}" -c "SELECT status FROM tfm.progress WHERE status LIKE 'tfm_fit fc_b:%'")"
[ "$("${PSQL[@]}" -c "SELECT count(*) FROM tfm.progress WHERE status LIKE 'tfm_fit fc_b:%'")" = 1 ] ||
  fail "tfm.progress does not show the run of fc_b"
if "${PSQL[@]}" -c "CALL tfm_fit('fc_b', resume => true)" 2>/tmp/fc_b2.err; then fail "a running run was resumed"; fi
grep -q 'the run of model "fc_b" is still going' /tmp/fc_b2.err || { cat /tmp/fc_b2.err; fail "resume of a running run"; }
pid=$("${PSQL[@]}" -c "SELECT c.pid FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = 'fc_b'")
"${PSQL[@]}" -c "SELECT pg_cancel_backend($pid)" >/dev/null
if wait $runner; then fail "the run of fc_b was not cancelled (it finished first)"; fi
grep -q "canceling statement due to user request" /tmp/fc_b.out || { cat /tmp/fc_b.out; fail "fc_b ended otherwise"; }
report_checkpoint fc_b
"${PSQL[@]}" -c "CALL tfm_fit('fc_b', resume => true)"
check_same fc_a fc_b

echo "== run stopped by statement_timeout (fc_d), then resumed"
timeout_ms=$(( (a_secs > 2 ? a_secs : 2) * 500 ))
if PGOPTIONS="$PGOPTIONS -c statement_timeout=$timeout_ms" "${PSQL[@]}" \
     -c "CALL tfm_fit('fc_d', '$QUERY', $ARGS)" 2>/tmp/fc_d.out; then
  fail "the run of fc_d was not stopped by statement_timeout = $timeout_ms ms"
fi
grep -q "canceling statement due to statement timeout" /tmp/fc_d.out || { cat /tmp/fc_d.out; fail "fc_d ended otherwise"; }
report_checkpoint fc_d
"${PSQL[@]}" -c "CALL tfm_fit('fc_d', resume => true)"
check_same fc_a fc_d

echo "== run whose backend is killed with kill -9 (fc_c), then resumed"
"${PSQL[@]}" -c "CALL tfm_fit('fc_c', '$QUERY', $ARGS)" >/tmp/fc_c.out 2>&1 &
runner=$!
wait_for_checkpoint fc_c $runner /tmp/fc_c.out
pid=$("${PSQL[@]}" -c "SELECT c.pid FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = 'fc_c'")
if ! kill -0 "$pid" 2>/dev/null; then
  echo "(cannot signal the server's processes: kill -9 part skipped)"
  "${PSQL[@]}" -c "SELECT pg_cancel_backend($pid)" >/dev/null
  wait $runner || true
else
  kill -9 "$pid"
  wait $runner || true
  # the postmaster ends every session and restarts in crash recovery
  for _ in $(seq 1 600); do
    "${PSQL[@]}" -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "${PSQL[@]}" -c "SELECT 1" >/dev/null || fail "the server did not come back after kill -9"
  echo "server back after crash recovery"
  report_checkpoint fc_c
  "${PSQL[@]}" -c "CALL tfm_fit('fc_c', resume => true)"
  check_same fc_a fc_c
fi

psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
echo "== tfm_fit cancel tests passed"
