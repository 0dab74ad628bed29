#!/bin/bash
# throughput.sh — rows/s of classification through SQL, beside PyTorch.
#
#   throughput.sh MODEL TOKENIZER SOURCE_TABLE REPEAT OUTDIR TORCH_ARGS...
#
# Needs a running server with tfm and a trained MODEL (PGHOST etc. set;
# run.sh calls it).  Builds table clsbench_t = SOURCE_TABLE's text repeated
# REPEAT times (plus the token ids as an int[] column), then times, each in
# one session after a warm-up statement that loads the model:
#   sql_row_text   SELECT count(tfm_classify(MODEL, text)) FROM t      one row at a time
#   sql_row_ids    SELECT count(tfm_classify(MODEL, ids)) FROM t       same, ids given (no tokenizing)
#   sql_batch      SELECT tfm_classify(MODEL, array_agg(text)) FROM t  batched forward passes (64 rows,
#                                                                      grouped by length) in one call
#   tokenize_only  SELECT count(tfm_tokenize(TOKENIZER, text)) FROM t  the tokenizer's share
#   torch_b64      PyTorch, eval + no_grad, batch 64 grouped by length, on the same ids, with
#                  the model's weights read from tfm.tensors (its accuracy is printed as a check)
# Parallel query is off (max_parallel_workers_per_gather = 0): one backend, tfm.threads threads.
set -euo pipefail
MODEL=$1 TOK=$2 SRC=$3 REPEAT=$4 OUT=$5
shift 5
HERE=$(cd "$(dirname "$0")" && pwd)
THREADS=${THREADS:-2}
ts() { date '+%H:%M:%S'; }

psql -X -q -v ON_ERROR_STOP=1 <<EOF
DROP TABLE IF EXISTS clsbench_t;
CREATE TABLE clsbench_t AS
  SELECT row_number() OVER () AS id, s.text, s.label, tfm_tokenize('$TOK', s.text) AS ids
  FROM generate_series(1, $REPEAT) g, (SELECT * FROM $SRC ORDER BY id) s;
ANALYZE clsbench_t;
EOF
N=$(psql -X -At -c "SELECT count(*) FROM clsbench_t")
psql -X -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT label, ids FROM clsbench_t ORDER BY id) TO '$OUT/throughput.ids'"
psql -X -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT t.name, t.data FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = '$MODEL') TO '$OUT/$MODEL.tensors'"

# time one statement (ms) in a session that has already loaded the model
time_sql() {
  psql -X -q -v ON_ERROR_STOP=1 <<EOF | grep '^Time:' | tail -1 | awk '{print $2}'
SET tfm.threads = $THREADS;
SET tfm.progress = off;
SET max_parallel_workers_per_gather = 0;
SELECT tfm_classify('$MODEL', 'warm up') IS NOT NULL AS warm \g /dev/null
\\timing on
$1 \\g /dev/null
EOF
}

echo "[$(ts)] throughput: $N rows ($SRC x $REPEAT), model $MODEL, tfm.threads $THREADS"
declare -A MS
MS[sql_row_text]=$(time_sql "SELECT count(tfm_classify('$MODEL', text)) FROM clsbench_t")
MS[sql_row_ids]=$(time_sql "SELECT count(tfm_classify('$MODEL', ids)) FROM clsbench_t")
MS[sql_batch]=$(time_sql "SELECT cardinality(tfm_classify('$MODEL', array_agg(text ORDER BY id))) FROM clsbench_t")
MS[tokenize_only]=$(time_sql "SELECT count(tfm_tokenize('$TOK', text)) FROM clsbench_t")

# the batched form agrees with the row-at-a-time one?
DIFF=$(psql -X -At -c "SET max_parallel_workers_per_gather = 0;
  WITH b AS (SELECT tfm_classify('$MODEL', array_agg(text ORDER BY id)) AS l, array_agg(id ORDER BY id) AS i FROM clsbench_t WHERE id <= 2000)
  SELECT count(*) FILTER (WHERE u.l IS DISTINCT FROM tfm_classify('$MODEL', t.text))
  FROM b CROSS JOIN LATERAL unnest(b.l, b.i) AS u(l, i) JOIN clsbench_t t ON t.id = u.i" | tail -1)

echo "[$(ts)] torch inference"
TORCH_LINE=$(BLIS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS /usr/bin/python3 "$HERE/torch_classify.py" infer \
  --test "$OUT/throughput.ids" --weights "$OUT/$MODEL.tensors" --threads "$THREADS" --tag torch_b64 "$@" | grep '^RESULT')
echo "$TORCH_LINE"
TORCH_S=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' <<<"$TORCH_LINE")

{
  printf '| path | statement | seconds | rows/s | µs/row |\n|---|---|---|---|---|\n'
  for k in sql_row_text sql_row_ids sql_batch tokenize_only; do
    ms=${MS[$k]}
    case $k in
      sql_row_text) st="SELECT count(tfm_classify('$MODEL', text)) FROM t" ;;
      sql_row_ids) st="SELECT count(tfm_classify('$MODEL', ids)) FROM t  (ids pre-tokenized)" ;;
      sql_batch) st="SELECT tfm_classify('$MODEL', array_agg(text)) FROM t" ;;
      tokenize_only) st="SELECT count(tfm_tokenize('$TOK', text)) FROM t" ;;
    esac
    awk -v k="$k" -v st="$st" -v ms="$ms" -v n="$N" 'BEGIN { printf "| %s | `%s` | %.2f | %.0f | %.1f |\n", k, st, ms/1000, n/(ms/1000), ms*1000/n }'
  done
  awk -v s="$TORCH_S" -v n="$N" 'BEGIN { printf "| torch_b64 | PyTorch 1.13, eval + no_grad, batch 64 grouped by length, tfm weights | %.2f | %.0f | %.1f |\n", s, n/s, s*1e6/n }'
  echo
  echo "rows: $N; batched vs row-at-a-time labels that differ (first 2000 rows): $DIFF"
} | tee "$OUT/throughput.md"
