#!/usr/bin/env bash
# bench/jobs_backfill.sh — a job's backfill of short rows with a small model
# against the one statement that computes the same outputs, on the same
# server in the same run (issue 41: "jobs at one statement's speed"):
#
#   CREATE TABLE ... AS SELECT id, tfm_embed(model, body) FROM src   (one statement)
#   tfm_job_create(..., 'embed') and its backfill drained by:
#     - one CALL tfm_job_run in the creating session (1 runner);
#     - tfm's background workers, tfm.job_workers = 1, then 2 (the time
#       from the create until the queue is empty, polled every 20 ms;
#       it includes the start of a worker that had left the database).
#
# ROWS short rows (6000; "row <i> the sea <i mod 97>", ~20 characters), a
# character tokenizer and an encoder of d_model D_MODEL (64), 2 layers, 4
# heads, fp32, one BLIS thread per process.  Paired runs: each repetition
# (REPS, 5) times the one statement and the job back to back, in turn first,
# and the ratio is taken within the pair (one-statement seconds / job
# seconds, > 1: the job is faster), so that a machine loaded by others
# slows both sides of a pair alike; medians over the pairs.  Prints the
# machine's load; nothing here is a test.
#
#   bench/jobs_backfill.sh
#   ROWS=20000 REPS=3 D_MODEL=128 bench/jobs_backfill.sh
#
# Needs PG_CONFIG (or PGBIN) naming the PostgreSQL 15 where tfm is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PGBIN=${PGBIN:-$("$PG_CONFIG" --bindir)}
ROWS=${ROWS:-6000}
REPS=${REPS:-5}
D_MODEL=${D_MODEL:-64}

. scripts/cluster.sh
cluster_start "shared_preload_libraries=tfm" "tfm.threads=1" "tfm.progress=off" "tfm.precision=fp32"
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
workers() {
  "${PSQL[@]}" -c "ALTER SYSTEM SET tfm.job_workers = $1" -c "ALTER SYSTEM SET tfm.job_naptime = '200ms'"
  cluster_run "$PGBIN/pg_ctl" -D "$TFM_PGDATA" -l "$TFM_PGDATA/server.log" -m fast -w restart >/dev/null
}
workers 0

"${PSQL[@]}" >/dev/null <<SQL
CREATE EXTENSION tfm;
CREATE TABLE src (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO src SELECT i, 'row ' || i || ' the sea ' || i % 97 FROM generate_series(1, $ROWS) i;
SELECT tfm_tokenizer_train('bf_chars', body, 'char') FROM src;
SELECT count(*) FROM tfm_create_model('bf_enc', 'classify', 'bf_chars', labels => ARRAY['a', 'b'],
                                      d_model => $D_MODEL, heads => 4, layers => 2, max_len => 64, seed => 7);
SQL
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "rows $ROWS (avg $("${PSQL[@]}" -c "SELECT round(avg(length(body)), 1) FROM src") characters), d_model $D_MODEL, 2 layers, fp32, 1 thread; $REPS pairs per line"

# timed PRELUDE SQL: seconds of SQL (its lines on stdin) in a new session,
# after PRELUDE (not timed)
timed() {
  {
    echo "$1"
    echo "\\set t0 \`date +%s.%N\`"
    cat
    echo "\\set t1 \`date +%s.%N\`"
    echo "\\setenv T0 :t0"
    echo "\\setenv T1 :t1"
    echo "\\! awk -v a=\"\$T0\" -v b=\"\$T1\" 'BEGIN { printf \"%.3f\\n\", b - a }' > $TMP/s"
  } > "$TMP/run.sql"
  "${PSQL[@]}" -f "$TMP/run.sql" >/dev/null
  cat "$TMP/s"
}
LOAD="SELECT tfm_embed('bf_enc', 'load') IS NOT NULL;"
# the one statement, in a session that has loaded the model
one_statement() {
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS bf_ctas" >/dev/null
  echo "CREATE TABLE bf_ctas AS SELECT id, tfm_embed('bf_enc', body) AS output FROM src;" | timed "$LOAD"
}
check_job() {
  [ "$("${PSQL[@]}" -c "SELECT count(*) = $ROWS AND count(DISTINCT id) = $ROWS FROM bf_job")" = t ] ||
    { echo "the job left rows out or wrote one twice" >&2; exit 1; }
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM bf_job j JOIN bf_ctas c USING (id) WHERE j.output IS DISTINCT FROM c.output")" = 0 ] ||
    { echo "the job's outputs differ from the one statement's" >&2; exit 1; }
  "${PSQL[@]}" -c "SELECT tfm_job_drop('bf_job', drop_destination => true)" >/dev/null
}
CREATE_JOB="SELECT tfm_job_create('bf_job', 'src', 'body', 'bf_enc', 'embed') IS NOT NULL;"
# a job's create and run to the end by CALL in one session that has loaded the model
job_call() {
  printf '%s\n' "$CREATE_JOB" "CALL tfm_job_run('bf_job');" | timed "$LOAD"
  check_job
}
# from the create until the background workers have written every output:
# the queue is empty once the last batch has committed (a batch deletes its
# queue rows in its own transaction); one session polls it every 20 ms,
# each statement with a new snapshot
job_workers() {
  timed "" <<SQL
$CREATE_JOB
DO \$\$ BEGIN
  LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM tfm.job_queue q JOIN tfm.job_defs d ON d.id = q.job_id
                           WHERE d.name = 'bf_job');
    PERFORM pg_sleep(0.02);
  END LOOP;
END \$\$;
SQL
  check_job
}
TMP=$(mktemp -d /tmp/tfm-bench-backfill.XXXXXX)
trap 'rm -rf "$TMP"; cluster_stop' EXIT
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# one line: LABEL JOBFUNCTION
pairs() {
  local label=$1 fn=$2 s j r S=() J=() R=()
  for i in $(seq 1 "$REPS"); do
    if [ $((i % 2)) = 1 ]; then s=$(one_statement); j=$($fn); else j=$($fn); s=$(one_statement); fi
    r=$(awk -v s="$s" -v j="$j" 'BEGIN { printf "%.3f", s / j }')
    S+=("$s"); J+=("$j"); R+=("$r")
  done
  printf '%-22s one statement %6.3f s (%5.0f rows/s)  job %6.3f s (%5.0f rows/s)  job/one-statement speed %s  [pairs: %s]  load %s\n' \
    "$label" "$(median "${S[@]}")" "$(awk -v n="$ROWS" -v s="$(median "${S[@]}")" 'BEGIN { print n / s }')" \
    "$(median "${J[@]}")" "$(awk -v n="$ROWS" -v s="$(median "${J[@]}")" 'BEGIN { print n / s }')" \
    "$(median "${R[@]}")" "${R[*]}" "$(cut -d' ' -f1 /proc/loadavg)"
}

pairs "1 runner (CALL)" job_call
workers 1
pairs "1 background worker" job_workers
workers 2
pairs "2 background workers" job_workers
# what the workers met (a run that stopped on an ERROR waits its back-off)
echo "server log: $(grep -c 'ERROR' "$TFM_PGDATA/server.log" || true) ERRORs"
grep 'ERROR' "$TFM_PGDATA/server.log" | sed 's/^.*ERROR: *//' | sort | uniq -c | sort -rn | head -5 || true
