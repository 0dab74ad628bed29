#!/usr/bin/env bash
# bench/jobs.sh — a job's backfill beside the one-statement form, on the
# same rows, in the same run: rows per second of
#
#   INSERT INTO dst SELECT id, tfm_embed(model, body) FROM src    (one statement)
#   tfm_job_create(...) + CALL tfm_job_run(...)                     (a job, committed batches)
#
# for ROWS rows (2000) of 20-60 words, a BPE tokenizer and a classifier of
# d_model 128 (2 layers, max_len 128) on THREADS threads (1), REPS times
# (3), alternating which form goes first.  Each form runs in a new session
# (both load the model once).  Also a job that chunks (chunk_tokens 32,
# overlap 8) for what chunking costs, and the plain job drained by two
# runners at once (two sessions; wall clock only), which the one statement
# cannot do.  Prints one line per run and the medians; nothing here is a
# test.  On a loaded machine the CPU figures are the ones to compare.
#
#   bench/jobs.sh                 # against a throwaway cluster it starts
#   ROWS=5000 REPS=5 bench/jobs.sh
#
# Needs tfm installed for the PostgreSQL that PG_CONFIG (or PGBIN) names.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROWS=${ROWS:-2000}
REPS=${REPS:-3}
THREADS=${THREADS:-1}
BATCH=${BATCH:-}
export PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
. "$ROOT/scripts/cluster.sh"
cluster_start "tfm.precision=fp32" "tfm.threads=$THREADS"
PSQL="psql -X -q -v ON_ERROR_STOP=1"

$PSQL >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION tfm;
CREATE TABLE src (id int PRIMARY KEY, body text NOT NULL);
-- 20 to 60 words of a small vocabulary, fixed by the row's id
INSERT INTO src
SELECT i, (SELECT string_agg((ARRAY['the','whale','sea','ship','captain','white','long','voyage','storm',
                                    'harpoon','deck','crew','ocean','wind','night','moby','dick','sailed',
                                    'through','waves'])[1 + (i * 7 + k * 13) % 20], ' ')
           FROM generate_series(1, 20 + (i % 41)) k)
  FROM generate_series(1, $ROWS) i;
SELECT tfm_tokenizer_train('bench_bpe', body, 'bpe', 400) FROM src;
SELECT tfm_create_model('bench_enc', 'classify', 'bench_bpe', labels => ARRAY['a', 'b'],
                        d_model => 128, heads => 4, layers => 2, max_len => 128);
CREATE TABLE dst (id int PRIMARY KEY, output real[]);
SQL
echo "rows $ROWS, threads $THREADS, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tokens per row: $($PSQL -At -c "SELECT round(avg(cardinality(tfm_tokenize('bench_bpe', body))), 1) FROM src")"

# one session's work, timed: wall clock and the backend's CPU time (utime +
# stime from /proc, in clock ticks), so that a loaded machine's waiting shows
# apart from the work; prints "wall_seconds cpu_seconds"
TMP=$(mktemp -d /tmp/tfm-bench-jobs.XXXXXX)
trap 'rm -rf "$TMP"; cluster_stop' EXIT
HZ=$(getconf CLK_TCK)
timed() {
  {
    echo "SET client_min_messages = warning;"
    echo "SELECT pg_backend_pid() AS pid \\gset"
    echo "\\setenv BPID :pid"
    echo "SELECT tfm_embed('bench_enc', 'load the model');"
    echo "\\! awk '{ print \$14 + \$15 }' /proc/\$BPID/stat > $TMP/c0; date +%s.%N > $TMP/t0"
    cat
    echo "\\! date +%s.%N > $TMP/t1; awk '{ print \$14 + \$15 }' /proc/\$BPID/stat > $TMP/c1"
  } > "$TMP/run.sql"
  $PSQL -f "$TMP/run.sql" >/dev/null
  awk -v hz="$HZ" -v t0="$(cat "$TMP/t0")" -v t1="$(cat "$TMP/t1")" -v c0="$(cat "$TMP/c0")" -v c1="$(cat "$TMP/c1")" \
    'BEGIN { printf "%.3f %.3f", t1 - t0, (c1 - c0) / hz }'
}
# "rows/s wall, rows per CPU second"
rates() { awk -v n="$ROWS" -v w="$1" -v c="$2" 'BEGIN { printf "%5.0f %5.0f", n / w, n / c }'; }

one_statement() {
  $PSQL -c "TRUNCATE dst"
  rates $(echo "INSERT INTO dst SELECT id, tfm_embed('bench_enc', body) FROM src;" | timed)
}

# a job over all rows: create (queues every key) and run to the end
job() {
  local r
  r=$(rates $(printf '%s\n' "SELECT tfm_job_create('bench_job', 'src', 'body', 'bench_enc', 'embed', options => '$1');" \
                             "CALL tfm_job_run('bench_job');" | timed))
  [ "$($PSQL -At -c "SELECT count(DISTINCT id) FROM bench_job")" = "$ROWS" ] || { echo "job left rows out" >&2; exit 1; }
  $PSQL -c "SET client_min_messages = warning" -c "SELECT tfm_job_drop('bench_job', drop_destination => true)" >/dev/null
  echo "$r"
}

# the same job drained by two runners at once (two sessions' CALL
# tfm_job_run; their batches never collide): wall clock only
job_two_runners() {
  local t0 t1
  $PSQL -c "SET client_min_messages = warning" -c "SELECT tfm_embed('bench_enc', 'load')" \
        -c "SELECT tfm_job_create('bench_job', 'src', 'body', 'bench_enc', 'embed', options => '$1')" >/dev/null
  t0=$(date +%s.%N)
  for k in 1 2; do $PSQL -c "SET client_min_messages = warning" -c "CALL tfm_job_run('bench_job')" >/dev/null & done
  wait
  t1=$(date +%s.%N)
  [ "$($PSQL -At -c "SELECT count(*) = count(DISTINCT id) AND count(*) = $ROWS FROM bench_job")" = t ] ||
    { echo "two runners: a duplicate or a gap" >&2; exit 1; }
  $PSQL -c "SET client_min_messages = warning" -c "SELECT tfm_job_drop('bench_job', drop_destination => true)" >/dev/null
  awk -v n="$ROWS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%5.0f", n / (b - a) }'
}

opts='{}'
[ -n "$BATCH" ] && opts="{\"batch\": $BATCH}"
declare -a SW SC JW JC CW CC TW
echo "rows/s by the wall clock (and per CPU second of the backend):"
for r in $(seq 1 "$REPS"); do
  if [ $((r % 2)) = 1 ]; then s=$(one_statement); j=$(job "$opts"); else j=$(job "$opts"); s=$(one_statement); fi
  c=$(job '{"chunk_tokens": 32, "chunk_overlap": 8}')
  t=$(job_two_runners "$opts"); TW+=("$t")
  read -r a b <<<"$s"; SW+=("$a"); SC+=("$b")
  read -r a b <<<"$j"; JW+=("$a"); JC+=("$b")
  read -r a b <<<"$c"; CW+=("$a"); CC+=("$b")
  printf 'run %d: one statement %s   job backfill %s   job chunking 32/8 %s   job, 2 runners %s\n' "$r" "$s" "$j" "$c" "$t"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf 'median: one statement %5s %5s   job backfill %5s %5s   job chunking 32/8 %5s %5s   job, 2 runners %5s\n' \
  "$(median "${SW[@]}")" "$(median "${SC[@]}")" "$(median "${JW[@]}")" "$(median "${JC[@]}")" \
  "$(median "${CW[@]}")" "$(median "${CC[@]}")" "$(median "${TW[@]}")"
