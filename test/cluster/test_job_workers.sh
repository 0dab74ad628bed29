#!/usr/bin/env bash
# test_job_workers.sh — tfm's own background job workers: a cluster of its
# own with shared_preload_libraries=tfm and tfm.job_workers=2, and no CALL
# tfm_job_run anywhere.  Checks, each against the direct function call on
# the source row (predict_proba: exact):
#   - a new job's backfill fills the destination;
#   - inserts, updates and deletes are followed;
#   - a paused job is left alone, and runs again once resumed;
#   - a job owned by an ordinary role runs with that role's rights (its
#     input sees current_user as the owner; with SELECT on the source
#     revoked the job records a 42501 error instead of reading, and goes on
#     once granted again);
#   - a job whose input sets search_path (and tfm.precision) for whoever
#     runs it, with an operator =(oid, oid) that makes its owner superuser
#     when a superuser calls it: the worker's own queries never run it;
#   - another role's session holding the advisory locks 0.4 took for a
#     job's keys does not stall it, and a job whose code sleeps is ended
#     by tfm.job_batch_timeout while the other jobs go on;
#   - two workers share one job's backfill (both seen on it) with exactly
#     one output per row, also after one of them is cancelled and another
#     terminated;
#   - a job dropped while workers run its batches drops without a deadlock;
#   - a server restart (immediate: a crash) resumes the work;
#   - DROP DATABASE succeeds while a worker is connected to it (and a role
#     that may not drop it does not end the workers by trying);
#   - after a reload with a new tfm.job_naptime the workers go on;
#   - the server log has no crash and no WARNING.
# Every wait is bounded (30 s); no timing is asserted.  Exits non-zero on
# any failure.  Needs PGBIN (or /usr/lib/postgresql/15/bin) and tfm installed there.
set -euo pipefail

cd "$(dirname "$0")/../.."
. scripts/cluster.sh
cluster_start "shared_preload_libraries=tfm" "tfm.job_workers=2" "tfm.job_naptime=200ms" \
              "tfm.precision=fp32" "tfm.threads=1" "tfm.progress=off"
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
DB=tfm_job_workers

fail() {
  echo "FAIL: $*" >&2
  echo "--- server log (last 30 lines)" >&2
  tail -30 "$TFM_PGDATA/server.log" >&2 || true
  exit 1
}
q() { "${PSQL[@]}" -c "$1"; }

# wait_for WHAT SQL: poll (every 0.1 s, up to 30 s) until SQL returns t
wait_for() {
  for _ in $(seq 1 300); do
    [ "$(q "$2" 2>/dev/null || true)" = t ] && return 0
    sleep 0.1
  done
  fail "$1: not within 30 s"
}

psql -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
export PGDATABASE=$DB
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE EXTENSION tfm;
CREATE TABLE jw_docs (id int PRIMARY KEY, body text);
INSERT INTO jw_docs SELECT i, repeat(chr(97 + i % 26) || ' sea ' || i || ' whale ', 1 + i % 4)
  FROM generate_series(1, 300) i;
SELECT tfm_tokenizer_train('jw_chars', body, 'char') FROM jw_docs;
SELECT count(*) FROM tfm_create_model('jw_enc', 'classify', 'jw_chars', labels => ARRAY['a', 'b', 'c'],
                                      d_model => 64, heads => 4, layers => 2, max_len => 96, seed => 5);
-- the direct call a job's output must equal
CREATE FUNCTION jw_proba(t text) RETURNS jsonb LANGUAGE sql STABLE
  AS $$ SELECT jsonb_object_agg(p.label, p.probability) FROM tfm_predict_proba('jw_enc', t) p $$;
SQL

# every row of $1 (source $2, input expression $3 over s) has exactly one
# output, equal to the direct call; no output for a row not in the source
in_step() {
  echo "(SELECT count(*) FROM $2 s FULL JOIN $1 o USING (id)
     WHERE o.id IS NULL OR s.id IS NULL OR o.output IS DISTINCT FROM jw_proba($3)) = 0
   AND (SELECT count(*) = count(DISTINCT id) FROM $1)"
}

echo "  backfill without any CALL"
q "SELECT tfm_job_create('jw_p', 'jw_docs', 'body', 'jw_enc', 'predict_proba', options => '{\"batch\": 16}') IS NOT NULL" >/dev/null
wait_for "the backfill of jw_p" "SELECT $(in_step jw_p jw_docs s.body)"
[ "$(q "SELECT rows_pending FROM tfm.jobs WHERE name = 'jw_p'")" = 0 ] || fail "jw_p: rows still pending"
[ "$(q "SELECT count(*) FROM jw_p")" = 300 ] || fail "jw_p: not 300 outputs"

echo "  inserts, updates and deletes followed"
q "INSERT INTO jw_docs SELECT i, 'new row ' || i FROM generate_series(301, 310) i" >/dev/null
q "UPDATE jw_docs SET body = 'changed ' || body WHERE id IN (1, 2, 3)" >/dev/null
q "DELETE FROM jw_docs WHERE id IN (10, 11)" >/dev/null
wait_for "the changes of jw_docs" "SELECT $(in_step jw_p jw_docs s.body)"
[ "$(q "SELECT count(*) FROM jw_p")" = 308 ] || fail "jw_p: not 308 outputs after the changes"

echo "  a paused job is left alone"
"${PSQL[@]}" >/dev/null <<'SQL'
BEGIN;
SELECT tfm_job_create('jw_paused', 'jw_docs', 'body', 'jw_enc', 'predict_proba');
SELECT tfm_job_pause('jw_paused');
COMMIT;
SQL
q "INSERT INTO jw_docs VALUES (311, 'while paused')" >/dev/null
# the other job follows the insert; by then the workers have looked at the paused one many times
wait_for "jw_p following an insert" "SELECT $(in_step jw_p jw_docs s.body)"
sleep 2
[ "$(q "SELECT count(*) FROM jw_paused")" = 0 ] || fail "jw_paused: a paused job was run"
[ "$(q "SELECT rows_pending FROM tfm.jobs WHERE name = 'jw_paused'")" = 309 ] || fail "jw_paused: not 309 pending"
q "SELECT tfm_job_resume('jw_paused')" >/dev/null
wait_for "the resumed jw_paused" "SELECT $(in_step jw_paused jw_docs s.body)"

echo "  a job owned by an ordinary role runs with that role's rights"
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE ROLE jw_alice;
GRANT SELECT, TRIGGER ON jw_docs TO jw_alice;
GRANT CREATE ON SCHEMA public TO jw_alice;
SELECT tfm_grant('jw_enc', 'jw_alice');
SET ROLE jw_alice;
SELECT tfm_job_create('jw_alice_p', 'jw_docs', $$current_user || ' ' || body$$, 'jw_enc', 'predict_proba');
RESET ROLE;
SQL
wait_for "the backfill of jw_alice_p" "SELECT $(in_step jw_alice_p jw_docs "'jw_alice ' || s.body")"
[ "$(q "SELECT tableowner FROM pg_tables WHERE tablename = 'jw_alice_p'")" = jw_alice ] \
  || fail "jw_alice_p: the destination is not the owner's"
q "REVOKE SELECT ON jw_docs FROM jw_alice" >/dev/null
q "INSERT INTO jw_docs VALUES (312, 'after the revoke')" >/dev/null
wait_for "jw_alice_p's 42501 error" \
  "SELECT last_error LIKE 'permission denied for table jw_docs%SQLSTATE 42501%' FROM tfm.jobs WHERE name = 'jw_alice_p'"
wait_for "jw_p following an insert" "SELECT $(in_step jw_p jw_docs s.body)"
[ "$(q "SELECT count(*) FROM jw_alice_p WHERE id = 312")" = 0 ] || fail "jw_alice_p: read the source without SELECT"
[ "$(q "SELECT rows_pending FROM tfm.jobs WHERE name = 'jw_alice_p'")" = 1 ] || fail "jw_alice_p: the key left the queue"
q "GRANT SELECT ON jw_docs TO jw_alice" >/dev/null
wait_for "jw_alice_p after the grant" "SELECT $(in_step jw_alice_p jw_docs "'jw_alice ' || s.body")"

echo "  a job's code leaves nothing behind in a worker (issue 37: 0.4's workers made mallory superuser)"
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE ROLE jw_mallory;
CREATE SCHEMA jw_mallory AUTHORIZATION jw_mallory;
SELECT tfm_grant('jw_enc', 'jw_mallory');
SET ROLE jw_mallory;
CREATE TABLE jw_mallory.mdocs (id int PRIMARY KEY, body text);
INSERT INTO jw_mallory.mdocs SELECT i, 'sea ' || i FROM generate_series(1, 20) i;
-- an operator =(oid, oid) that makes her superuser when a superuser calls it
CREATE FUNCTION jw_mallory.oideq(a oid, b oid) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE jw_mallory SUPERUSER';
    END IF;
    RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR jw_mallory.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = jw_mallory.oideq);
SELECT tfm_job_create('jw_mallory_p', 'jw_mallory.mdocs',
       $$body || left(set_config('search_path', 'jw_mallory, pg_catalog', false), 0)
              || left(set_config('tfm.precision', 'bf16', false), 0)$$, 'jw_enc', 'predict_proba');
RESET ROLE;
SQL
wait_for "the backfill of jw_mallory_p" "SELECT $(in_step jw_mallory.jw_mallory_p jw_mallory.mdocs s.body)"
# the worker's next rounds: its own catalog queries after her code ran
q "INSERT INTO jw_mallory.mdocs VALUES (21, 'sea 21')" >/dev/null
q "INSERT INTO jw_docs VALUES (314, 'after mallory')" >/dev/null
wait_for "jw_mallory_p following an insert" "SELECT $(in_step jw_mallory.jw_mallory_p jw_mallory.mdocs s.body)"
wait_for "jw_p after mallory's job" "SELECT $(in_step jw_p jw_docs s.body)"
sleep 1
[ "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'jw_mallory'")" = f ] \
  || fail "jw_mallory became superuser through her job in a worker"

echo "  no role stalls another's job: advisory locks on its keys, a job whose code never returns"
jid=$(q "SELECT id FROM tfm.job_defs WHERE name = 'jw_p'")
# the advisory locks 0.4 took for jw_p's keys 1..20, held by mallory's session
psql -X -q -c "SET ROLE jw_mallory" \
  -c "SELECT count(pg_advisory_lock($jid, hashtext(ARRAY[i::text]::text))) FROM generate_series(1, 20) i" \
  -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
locker=$!
wait_for "mallory's advisory locks" "SELECT count(*) >= 20 FROM pg_locks WHERE locktype = 'advisory' AND classid = $jid"
q "UPDATE jw_docs SET body = body || ' locked' WHERE id <= 20" >/dev/null
wait_for "jw_p beside mallory's advisory locks" "SELECT $(in_step jw_p jw_docs s.body)"
kill "$locker" 2>/dev/null || true
# a job whose input sleeps for an hour: tfm.job_batch_timeout ends its batch, the others go on
psql -X -q -d postgres -c "ALTER SYSTEM SET tfm.job_batch_timeout = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
"${PSQL[@]}" >/dev/null <<'SQL'
SET ROLE jw_mallory;
SELECT tfm_job_create('jw_hang', 'jw_mallory.mdocs', $$body || pg_sleep(3600)::text$$, 'jw_enc', 'predict_proba');
RESET ROLE;
SQL
wait_for "jw_hang's run ended by tfm.job_batch_timeout" \
  "SELECT last_error LIKE 'a batch ran longer than tfm.job_batch_timeout%57014%' FROM tfm.jobs WHERE name = 'jw_hang'"
q "INSERT INTO jw_docs VALUES (315, 'beside a hanging job')" >/dev/null
wait_for "jw_p beside a hanging job" "SELECT $(in_step jw_p jw_docs s.body)"
q "SELECT tfm_job_drop('jw_hang', drop_destination => true)" >/dev/null
psql -X -q -d postgres -c "ALTER SYSTEM RESET tfm.job_batch_timeout" -c "SELECT pg_reload_conf()" >/dev/null

echo "  two workers share one job's backfill, one output per row"
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE TABLE jw_big (id int PRIMARY KEY, body text);
INSERT INTO jw_big SELECT i, repeat(chr(97 + i % 26) || ' big ' || i || ' wave ', 2 + i % 5)
  FROM generate_series(1, 12000) i;
SELECT tfm_job_create('jw_big_p', 'jw_big', 'body', 'jw_enc', 'predict_proba', options => '{"batch": 8}') IS NOT NULL;
SQL
wait_for "two workers on jw_big_p" \
  "SELECT count(DISTINCT pid) = 2 FROM tfm.job_workers WHERE job = 'jw_big_p' AND state = 'running'"
# a cancel and a terminate in the middle: the batch in flight rolls back, the work goes on
# (12,000 rows: with 4,000 the two workers once finished within the half
# second between the two signals, and no worker was left to terminate)
# (each signal in the statement that finds a live worker: a pid read first
# may have exited by the time it is signalled, and that warns in the log)
live="FROM tfm.job_workers w JOIN pg_stat_activity a USING (pid) WHERE w.job = 'jw_big_p'"
[ "$(q "SELECT bool_and(s) FROM (SELECT pg_cancel_backend(w.pid) AS s $live ORDER BY w.pid LIMIT 1) c")" = t ] \
  || fail "no live worker of jw_big_p to cancel"
sleep 0.5
[ "$(q "SELECT bool_and(s) FROM (SELECT pg_terminate_backend(w.pid) AS s $live ORDER BY w.pid DESC LIMIT 1) t")" = t ] \
  || fail "no live worker of jw_big_p to terminate"
wait_for "the backfill of jw_big_p" \
  "SELECT $(in_step jw_big_p jw_big s.body) AND (SELECT rows_pending = 0 FROM tfm.jobs WHERE name = 'jw_big_p')"
[ "$(q "SELECT count(*) FROM jw_big_p")" = 12000 ] || fail "jw_big_p: not 12000 outputs"

echo "  a job dropped while the workers run its batches: no deadlock"
# 0.5 before the fix: the drop took the source's lock (DROP TRIGGER) and
# then waited for the queue rows a batch held, which waited for the source
for i in 1 2 3 4 5; do
  q "SELECT tfm_job_create('jw_drop', 'jw_docs', 'body', 'jw_enc', 'predict_proba', options => '{\"batch\": 8}') IS NOT NULL" >/dev/null
  wait_for "a batch of jw_drop ($i)" "SELECT rows_done > 0 FROM tfm.jobs WHERE name = 'jw_drop'"
  q "SELECT tfm_job_drop('jw_drop', true)" >/dev/null || fail "tfm_job_drop during a batch ($i)"
done
if grep -E "deadlock detected" "$TFM_PGDATA/server.log" >&2; then
  fail "a deadlock between tfm_job_drop and a worker"
fi
[ "$(q "SELECT count(*) FROM tfm.job_queue q WHERE NOT EXISTS (SELECT FROM tfm.job_defs j WHERE j.id = q.job_id)")" = 0 ] \
  || fail "queue rows of a dropped job left behind"

echo "  a server restart (a crash) resumes the work"
q "INSERT INTO jw_big SELECT i, 'after ' || i FROM generate_series(12001, 12400) i" >/dev/null
cluster_restart
wait_for "the server after the restart" "SELECT true"
wait_for "jw_big_p after the restart" "SELECT $(in_step jw_big_p jw_big s.body)"
[ "$(q "SELECT count(*) FROM jw_big_p")" = 12400 ] || fail "jw_big_p: not 12400 outputs after the restart"

echo "  DROP DATABASE with a worker connected to it"
psql -X -q -d postgres -c "CREATE DATABASE ${DB}_2" >/dev/null
PGDATABASE=${DB}_2 "${PSQL[@]}" >/dev/null <<'SQL'
CREATE EXTENSION tfm;
CREATE TABLE t (id int PRIMARY KEY, body text);
INSERT INTO t VALUES (1, 'one');
SELECT tfm_tokenizer_train('c', body, 'char') FROM t;
SELECT count(*) FROM tfm_create_model('m', 'classify', 'c', labels => ARRAY['x', 'y'], d_model => 32,
                                      heads => 2, layers => 1, max_len => 16, seed => 1);
SELECT tfm_job_create('t_cls', 't', 'body', 'm', 'classify') IS NOT NULL;
SQL
wait_for "a worker in ${DB}_2" "SELECT count(*) > 0 FROM tfm.job_workers WHERE database = '${DB}_2'"
# a role that may not drop it does not end its workers by trying
pids=$(q "SELECT string_agg(pid::text, ',' ORDER BY pid) FROM tfm.job_workers WHERE database = '${DB}_2'")
psql -X -q -d postgres -c "SET ROLE jw_alice" -c "DROP DATABASE ${DB}_2" >/dev/null 2>&1 \
  && fail "jw_alice dropped ${DB}_2"
[ "$(q "SELECT string_agg(pid::text, ',' ORDER BY pid) FROM tfm.job_workers WHERE database = '${DB}_2'")" = "$pids" ] \
  || fail "a refused DROP DATABASE ended the workers of ${DB}_2"
psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "DROP DATABASE ${DB}_2" >/dev/null || fail "DROP DATABASE ${DB}_2 failed"

# a reload (SIGHUP) of a changed naptime; the workers are still there for this database's jobs
psql -X -q -d postgres -c "ALTER SYSTEM SET tfm.job_naptime = '150ms'" -c "SELECT pg_reload_conf()" >/dev/null
q "INSERT INTO jw_docs VALUES (313, 'at the end')" >/dev/null
wait_for "jw_p at the end" "SELECT $(in_step jw_p jw_docs s.body)"
# no crash, no warning (a snapshot or SPI connection left behind would warn at commit)
if grep -E "terminated by signal|WARNING|PANIC" "$TFM_PGDATA/server.log" >&2; then
  fail "the server log has the lines above"
fi
echo "  job workers: all checks passed"
