#!/usr/bin/env bash
# job_latency.sh — what a job costs and how fast it follows its source, with
# tfm's background job workers (a throwaway cluster with
# shared_preload_libraries=tfm; no CALL tfm_job_run anywhere):
#
#   1. insert-to-output latency on an idle server: N single-row inserts,
#      each committed, spaced 0.2-1.7 s apart (at random, so they fall
#      anywhere in a worker's nap); the time from the insert's commit until
#      a new snapshot sees its output (polled every 2 ms from the same
#      session), median, p90 and max;
#   2. steady-stream throughput: ROWS rows inserted 10 per transaction as
#      fast as one session can, the time from the first insert until every
#      output is there (rows/s); a backfill of ROWS rows by the workers;
#      then, the server restarted with tfm.job_workers = 0, the same by one
#      CALL tfm_job_run and by the one statement CREATE TABLE AS SELECT
#      tfm_classify;
#   3. the trigger's cost per insert: INSERT_N rows inserted (one statement,
#      and one statement per row) into a table without a job and into one
#      with a (paused) job, whose trigger queues every key.
#
#   bench/job_latency.sh            # defaults: N=50 ROWS=2000 INSERT_N=20000
#   NAPTIME=100ms WORKERS=2 bench/job_latency.sh
#
# The model is a small classifier (d_model 128, 2 layers, 4 heads, a
# character tokenizer), the task classify, one BLIS thread per process.
# Needs PG_CONFIG (or PGBIN) naming the PostgreSQL 15 where tfm is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PGBIN=${PGBIN:-$("$PG_CONFIG" --bindir)}
N=${N:-50}
ROWS=${ROWS:-2000}
INSERT_N=${INSERT_N:-20000}
NAPTIME=${NAPTIME:-1s}
WORKERS=${WORKERS:-2}

. scripts/cluster.sh
cluster_start "shared_preload_libraries=tfm" "tfm.threads=1" "tfm.progress=off"
# the workers' settings in postgresql.auto.conf, so that part 2 can restart without them
psql -X -q -c "ALTER SYSTEM SET tfm.job_workers = $WORKERS" -c "ALTER SYSTEM SET tfm.job_naptime = '$NAPTIME'"
restart() { cluster_run "$PGBIN/pg_ctl" -D "$TFM_PGDATA" -l "$TFM_PGDATA/server.log" -m fast -w restart >/dev/null; }
restart
export PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "settings: tfm.job_workers=$WORKERS tfm.job_naptime=$NAPTIME tfm.threads=1"

"${PSQL[@]}" >/dev/null <<'SQL'
CREATE EXTENSION tfm;
CREATE TABLE b_src (id int PRIMARY KEY, body text);
INSERT INTO b_src SELECT i, repeat(chr(97 + i % 26) || ' sea ' || i || ' whale ', 3 + i % 5)
  FROM generate_series(1, 2000) i;
SELECT tfm_tokenizer_train('b_chars', body, 'char') FROM b_src;
SELECT count(*) FROM tfm_create_model('b_enc', 'classify', 'b_chars', labels => ARRAY['a', 'b', 'c'],
                                      d_model => 128, heads => 4, layers => 2, max_len => 160, seed => 3);
TRUNCATE b_src;
SELECT tfm_job_create('b_cls', 'b_src', 'body', 'b_enc', 'classify') IS NOT NULL;
CREATE TABLE b_lat (i int, seconds float8);

-- 1: one row at a time, waiting for its output
CREATE PROCEDURE b_latency(n int) LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz;
BEGIN
  FOR i IN 1..n LOOP
    INSERT INTO b_src VALUES (1000000 + i, repeat(chr(97 + i % 26) || ' probe ' || i || ' whale ', 3 + i % 5));
    COMMIT;
    t0 := clock_timestamp();
    LOOP
      EXIT WHEN EXISTS (SELECT FROM b_cls WHERE id = 1000000 + i);
      PERFORM pg_sleep(0.002);
    END LOOP;
    INSERT INTO b_lat VALUES (i, extract(epoch FROM clock_timestamp() - t0));
    COMMIT;
    PERFORM pg_sleep(0.2 + random() * 1.5);
  END LOOP;
END $$;

-- 2: a stream of inserts, 10 rows per transaction
CREATE PROCEDURE b_stream(first int, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 0..n / 10 - 1 LOOP
    INSERT INTO b_src SELECT first + i * 10 + k, repeat(chr(97 + k) || ' stream ' || (i * 10 + k) || ' sea ', 3 + k % 5)
      FROM generate_series(0, 9) k;
    COMMIT;
  END LOOP;
END $$;
SQL
# the model loaded in the workers before measuring (the first output of a worker loads it)
"${PSQL[@]}" -c "INSERT INTO b_src VALUES (0, 'warm up')"
for _ in $(seq 1 300); do [ "$("${PSQL[@]}" -c "SELECT count(*) FROM b_cls")" = 1 ] && break; sleep 0.1; done
sleep 2

echo "== 1. insert-to-output latency, $N single-row inserts on an idle server"
"${PSQL[@]}" -c "CALL b_latency($N)"
"${PSQL[@]}" -F ' ' -c "SELECT 'median ' || round((percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) * 1000)::numeric, 1) || ' ms, '
  || 'p90 ' || round((percentile_cont(0.9) WITHIN GROUP (ORDER BY seconds) * 1000)::numeric, 1) || ' ms, '
  || 'min ' || round((min(seconds) * 1000)::numeric, 1) || ' ms, max ' || round((max(seconds) * 1000)::numeric, 1) || ' ms' FROM b_lat"

echo "== 2. steady stream: $ROWS rows, 10 per transaction"
t0=$(date +%s.%N)
"${PSQL[@]}" -c "CALL b_stream(2000001, $ROWS)"
t1=$(date +%s.%N)
for _ in $(seq 1 6000); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM b_cls WHERE id > 2000000")" = "$ROWS" ] && break
  sleep 0.05
done
t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$ROWS" 'BEGIN {
  printf "inserts took %.2f s (%.0f rows/s); every output %.2f s after the first insert: %.0f rows/s; last output %.2f s after the last insert\n",
         b - a, n / (b - a), c - a, n / (c - a), c - b }'
# a backfill by the workers: rows queued while the job is paused, then resumed
"${PSQL[@]}" -c "SELECT tfm_job_pause('b_cls')" >/dev/null
"${PSQL[@]}" -c "INSERT INTO b_src SELECT 3000000 + i, repeat(chr(97 + i % 26) || ' again ' || i || ' sea ', 3 + i % 5) FROM generate_series(1, $ROWS) i"
t0=$(date +%s.%N)
"${PSQL[@]}" -c "SELECT tfm_job_resume('b_cls')" >/dev/null
for _ in $(seq 1 6000); do
  [ "$("${PSQL[@]}" -c "SELECT count(*) FROM b_cls WHERE id > 3000000")" = "$ROWS" ] && break
  sleep 0.05
done
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v n="$ROWS" 'BEGIN { printf "backfill of %d rows by the workers: %.2f s, %.0f rows/s\n", n, b - a, n / (b - a) }'
# the same without workers: one CALL, and the one-statement form
psql -X -q -c "ALTER SYSTEM SET tfm.job_workers = 0"
restart
"${PSQL[@]}" -c "INSERT INTO b_src SELECT 4000000 + i, repeat(chr(97 + i % 26) || ' third ' || i || ' sea ', 3 + i % 5) FROM generate_series(1, $ROWS) i"
t0=$(date +%s.%N)
"${PSQL[@]}" -c "CALL tfm_job_run('b_cls')"
t1=$(date +%s.%N)
"${PSQL[@]}" -c "CREATE TABLE b_one AS SELECT id, tfm_classify('b_enc', body) AS output FROM b_src WHERE id > 4000000"
t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$ROWS" 'BEGIN {
  printf "the same %d rows by CALL tfm_job_run (no workers, one session): %.2f s, %.0f rows/s; by CREATE TABLE AS SELECT tfm_classify: %.2f s, %.0f rows/s\n",
         n, b - a, n / (b - a), c - b, n / (c - b) }'

echo "== 3. the trigger's cost per insert ($INSERT_N rows; no workers now, the trigger queues every key)"
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE TABLE b_plain (id int PRIMARY KEY, body text);
CREATE PROCEDURE b_rows(tab regclass, first int, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN first..first + n - 1 LOOP
    EXECUTE format('INSERT INTO %s VALUES ($1, $2)', tab) USING i, 'row ' || i;
  END LOOP;
END $$;
SQL
for round in 1 2 3; do
  for tab in b_plain b_src; do
    base=$((10000000 * round))
    ms_bulk=$("${PSQL[@]}" -c "\\timing on" -c "INSERT INTO $tab SELECT $base + i, 'row ' || i FROM generate_series(1, $INSERT_N) i" \
              | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    ms_rows=$("${PSQL[@]}" -c "\\timing on" -c "CALL b_rows('$tab', $((base + 5000000)), $INSERT_N)" \
              | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    awk -v t="$tab" -v b="$ms_bulk" -v r="$ms_rows" -v n="$INSERT_N" 'BEGIN {
      printf "round %s %-8s one statement %7.1f ms (%5.2f us/row); a statement per row %7.1f ms (%5.2f us/row)\n",
             "'"$round"'", t, b, b * 1000 / n, r, r * 1000 / n }'
  done
done
cluster_stop
