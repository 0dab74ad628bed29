#!/usr/bin/env bash
# test_job_cancel.sh — CALL tfm_job_run survives a real interruption: a run
# stopped by statement_timeout and one cancelled from another session
# (pg_cancel_backend) keep the batches they committed, leave no duplicate
# and no gap (every key is either done or still queued), and a later run
# finishes; two runners draining one job at once (FOR UPDATE SKIP LOCKED)
# end with exactly one output per source row, each equal to the direct
# tfm_embed call on the row; a key another runner is processing is left
# out of a batch and queued again, and done afterwards from its current text.
#
# Runs against the server the PG* variables name (scripts/test.sh's
# throwaway cluster), with tfm installed.  Exits non-zero on any failure.
set -euo pipefail

export PGOPTIONS="-c tfm.threads=1 -c tfm.progress=off -c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
DB=tfm_job_cancel
# enough that the first run, stopped at 1.5 s, leaves the second more than a
# few batches (3,000 once left it 88 rows, done before its cancel came)
ROWS=8000

fail() { echo "FAIL: $*" >&2; exit 1; }

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
export PGDATABASE=$DB
"${PSQL[@]}" >/dev/null <<SQL
CREATE EXTENSION tfm;
CREATE TABLE jc_docs (id int PRIMARY KEY, body text);
INSERT INTO jc_docs SELECT i, repeat(chr(97 + i % 26) || ' sea ' || i || ' whale ', 3 + i % 5)
  FROM generate_series(1, $ROWS) i;
SELECT tfm_tokenizer_train('jc_chars', body, 'char') FROM jc_docs;
SELECT count(*) FROM tfm_create_model('jc_enc', 'classify', 'jc_chars', labels => ARRAY['a', 'b'],
                                      d_model => 128, heads => 4, layers => 2, max_len => 160);
SELECT tfm_job_create('jc_emb', 'jc_docs', 'body', 'jc_enc', 'embed', options => '{"batch": 32}') IS NOT NULL;
SQL

# outputs, distinct keys, keys still queued, keys neither done nor queued (a
# key is queued alone or in one of the backfill's chunks, column keys)
state() {
  "${PSQL[@]}" -F ' ' -c "
    SELECT (SELECT count(*) FROM jc_emb), (SELECT count(DISTINCT id) FROM jc_emb),
           (SELECT rows_pending FROM tfm.jobs WHERE name = 'jc_emb'),
           (SELECT count(*) FROM jc_docs d WHERE NOT EXISTS (SELECT FROM jc_emb e WHERE e.id = d.id)
              AND NOT EXISTS (SELECT FROM tfm.job_queue q JOIN tfm.job_defs j ON j.id = q.job_id
                              WHERE j.name = 'jc_emb'
                                AND (q.key = ARRAY[d.id::text] OR d.id::text = ANY (q.keys))))"
}

check_partial() {
  read -r outputs keys pending gaps <<<"$(state)"
  echo "  after $1: $outputs outputs, $pending pending"
  [ "$outputs" = "$keys" ] || fail "$1: $outputs outputs for $keys keys"
  [ "$gaps" = 0 ] || fail "$1: $gaps rows neither done nor queued"
  [ "$outputs" -gt 0 ] || fail "$1: no batch was committed"
  [ "$pending" -gt 0 ] || fail "$1: the run finished before it was interrupted"
  [ $((outputs + pending)) = "$ROWS" ] || fail "$1: $outputs done + $pending pending is not $ROWS"
}

# 1. statement_timeout in the middle of the backfill
out=$(PGOPTIONS="$PGOPTIONS -c statement_timeout=1500" "${PSQL[@]}" -c "CALL tfm_job_run('jc_emb')" 2>&1) \
  && fail "statement_timeout did not stop the run"
grep -q "statement timeout" <<<"$out" || fail "unexpected error: $out"
check_partial "statement_timeout"

# 2. pg_cancel_backend from another session, after some more batches
PGAPPNAME=jc_runner "${PSQL[@]}" -c "CALL tfm_job_run('jc_emb')" >/tmp/tfm_job_cancel.$$ 2>&1 &
runner=$!
before=$("${PSQL[@]}" -c "SELECT count(*) FROM jc_emb")
for _ in $(seq 1 300); do
  now=$("${PSQL[@]}" -c "SELECT count(*) FROM jc_emb")
  [ "$now" -gt $((before + 64)) ] && break
  sleep 0.05
done
"${PSQL[@]}" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'jc_runner'" >/dev/null
wait "$runner" && fail "the cancelled run ended normally"
grep -q "canceling statement due to user request" /tmp/tfm_job_cancel.$$ || { cat /tmp/tfm_job_cancel.$$; fail "unexpected error"; }
rm -f /tmp/tfm_job_cancel.$$
check_partial "pg_cancel_backend"

# 3. changes while interrupted, then two runners at once finish the job
"${PSQL[@]}" -c "UPDATE jc_docs SET body = body || ' changed' WHERE id % 100 = 0;
                 DELETE FROM jc_docs WHERE id % 250 = 1;
                 INSERT INTO jc_docs SELECT i, 'new row ' || i FROM generate_series($ROWS + 1, $ROWS + 20) i"
"${PSQL[@]}" -c "CALL tfm_job_run('jc_emb')" &
a=$!
"${PSQL[@]}" -c "CALL tfm_job_run('jc_emb')" &
b=$!
wait "$a" || fail "runner 1 failed"
wait "$b" || fail "runner 2 failed"
"${PSQL[@]}" -c "CALL tfm_job_run('jc_emb')"

read -r outputs keys pending gaps <<<"$(state)"
source_rows=$("${PSQL[@]}" -c "SELECT count(*) FROM jc_docs")
[ "$pending" = 0 ] || fail "$pending keys still queued"
[ "$outputs" = "$source_rows" ] || fail "$outputs outputs for $source_rows source rows"
[ "$keys" = "$outputs" ] || fail "duplicates: $outputs outputs for $keys keys"
unequal=$("${PSQL[@]}" -c "
  SELECT count(*) FROM jc_emb e JOIN jc_docs d USING (id)
   WHERE cardinality(e.output) <> 128
      OR e.output <> tfm_embed('jc_enc', d.body)")
[ "$unequal" = 0 ] || fail "$unequal outputs differ from tfm_embed on their row"
orphans=$("${PSQL[@]}" -c "SELECT count(*) FROM jc_emb e WHERE NOT EXISTS (SELECT FROM jc_docs d WHERE d.id = e.id)")
[ "$orphans" = 0 ] || fail "$orphans outputs of deleted rows"
echo "  interrupted twice, finished by two runners: $outputs outputs, one per row, each equal to tfm_embed"

# 4. a key another runner is processing: runner A holds the backfill's one
# chunk (rows 1 and 2, batch 2) and waits inside row 1's input (on an
# advisory lock this session holds); runner B's batch of single keys (row
# 1 changed, row 3 new) skips row 1, queues it again and does row 3; once A
# goes on, the next run does row 1 again from its current text
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE TABLE jk_docs (id int PRIMARY KEY, body text);
INSERT INTO jk_docs VALUES (1, 'the sea'), (2, 'the whale');
CREATE FUNCTION jk_input(id int, body text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF id = 1 THEN PERFORM pg_advisory_lock(4141); PERFORM pg_advisory_unlock(4141); END IF;
  RETURN body;
END $$;
SELECT tfm_job_create('jk_emb', 'jk_docs', 'jk_input(id, body)', 'jc_enc', 'embed', options => '{"batch": 2}') IS NOT NULL;
SQL
coproc HOLDER { "${PSQL[@]}" -f - >/dev/null; }
echo "SELECT pg_advisory_lock(4141);" >&"${HOLDER[1]}"
for _ in $(seq 1 300); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4141 AND granted")" = 1 ] && break
  sleep 0.1
done
PGAPPNAME=jk_runner_a "${PSQL[@]}" -c "CALL tfm_job_run('jk_emb')" >/dev/null &
runner_a=$!
for _ in $(seq 1 300); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'jk_runner_a' AND wait_event_type = 'Lock' AND wait_event = 'advisory'")" = 1 ] && break
  sleep 0.1
done
[ "$("${PSQL[@]}" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'jk_runner_a' AND wait_event = 'advisory'")" = 1 ] ||
  fail "runner A is not waiting inside row 1's input"
"${PSQL[@]}" -c "UPDATE jk_docs SET body = 'the sea changed' WHERE id = 1; INSERT INTO jk_docs VALUES (3, 'a new row')" >/dev/null
# (a runner that waited for row 1's lock instead would wait for A, which waits for this script)
PGOPTIONS="$PGOPTIONS -c statement_timeout=60s" "${PSQL[@]}" -c "CALL tfm_job_run('jk_emb', 1)" >/dev/null ||
  fail "runner B failed or waited for runner A"
[ "$("${PSQL[@]}" -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM jk_emb")" = 3 ] ||
  fail "runner B did not do row 3 alone: $("${PSQL[@]}" -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM jk_emb")"
[ "$("${PSQL[@]}" -c "SELECT string_agg(array_to_string(q.key, ','), ';') FROM tfm.job_queue q JOIN tfm.job_defs j ON j.id = q.job_id
                       WHERE j.name = 'jk_emb' AND q.key IS NOT NULL")" = 1 ] || fail "row 1 was not queued again"
echo "SELECT pg_advisory_unlock(4141);" >&"${HOLDER[1]}"
exec {HOLDER[1]}>&-
wait "$runner_a" || fail "runner A failed"
"${PSQL[@]}" -c "CALL tfm_job_run('jk_emb')" >/dev/null
[ "$("${PSQL[@]}" -c "SELECT count(*) = 3 AND count(*) FILTER (WHERE e.output = tfm_embed('jc_enc', d.body)) = 3
                       FROM jk_emb e JOIN jk_docs d USING (id)")" = t ] || fail "row 1, 2 or 3 is not its row's embedding"
[ "$("${PSQL[@]}" -c "SELECT rows_pending FROM tfm.jobs WHERE name = 'jk_emb'")" = 0 ] || fail "keys left queued"
echo "  a key another runner holds: skipped, queued again, done from its current text"

psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
echo "ok"
