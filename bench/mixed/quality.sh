#!/bin/bash
# quality.sh — mixed-precision (bf16) training against fp32 in the same wall
# time: the two runs of a pair at once, each in its own throwaway cluster
# pinned to its own core (fp32 on core 0, bf16 on core 1), tfm.threads = 1.
#
#   bench/mixed/quality.sh lm    # Moby-Dick char LM (bench/lm's model), TIME each (30 minutes), val nats/char
#   bench/mixed/quality.sh rt    # rt_polarity classifier (bench/classify's model), RT_TIME each (5 minutes), test accuracy
#   STEPS=2481 bench/mixed/quality.sh lm-steps   # the LM for STEPS steps (no time limit), PRECISIONS (bf16)
#                                               # only: the same steps as another run, not the same time
#
# Environment: TIME, RT_TIME, LM_DROPOUT (the LM's dropout, default 0 as in
# bench/lm; 0.1 lets the extra steps of a faster run help instead of
# overfitting this 1.07-million-character book), RT_SEED (the classifier's
# initialisation and shuffling, default 42: other seeds show the noise), DATA (/work/shared/data or ../shared/data),
# OUT (default a fresh /tmp/tfm-mixed-bench.XXXX), PGBIN (the PostgreSQL 15
# whose tfm is installed; default Debian's).  Results: $OUT/<what>_<precision>.txt
# and a table on stdout.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TIME=${TIME:-30 minutes}
RT_TIME=${RT_TIME:-5 minutes}
LM_DROPOUT=${LM_DROPOUT:-0}
RT_SEED=${RT_SEED:-42}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
WHAT=${1:-lm}
if [ -z "${DATA:-}" ]; then
  for d in /work/shared/data "$ROOT/../shared/data"; do [ -f "$d/moby_dick_train.txt.gz" ] && DATA=$d && break; done
fi
OUT=${OUT:-$(mktemp -d /tmp/tfm-mixed-bench.XXXXXX)}
mkdir -p "$OUT" && chmod 755 "$OUT"
log() { echo "[$(date -u '+%H:%M:%S')] $*"; }

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
CLUSTERS=()
stop_all() {
  for c in "${CLUSTERS[@]}"; do
    as_pg "$PGBIN/pg_ctl" -D "$c/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$c"
  done
}
trap stop_all EXIT

# start_cluster NAME CORE: a cluster whose every process runs on CORE
start_cluster() {
  local dir="$OUT/$1"
  mkdir -p "$dir" && chmod 700 "$dir"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
  as_pg "$PGBIN/initdb" -D "$dir/data" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
  as_pg taskset -c "$2" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c port=5432 -c fsync=off -c tfm.precision=fp32" >/dev/null
  CLUSTERS+=("$dir")
}
psql_in() { psql -X -q -v ON_ERROR_STOP=1 -h "$OUT/$1" -p 5432 -U postgres postgres; }

lm_run() {  # lm_run PRECISION [STEPS]: load, train for TIME (or STEPS steps), score
  local p=$1 limit="time_limit => '$TIME'"
  [ -n "${2:-}" ] && limit="max_steps => $2"
  psql_in "lm_$p" <<SQL
CREATE EXTENSION tfm;
CREATE TABLE moby (part text PRIMARY KEY, body text NOT NULL);
INSERT INTO moby VALUES ('train', convert_from(pg_read_binary_file('$OUT/moby_train.txt'), 'UTF8')),
                        ('val', convert_from(pg_read_binary_file('$OUT/moby_val.txt'), 'UTF8'));
SELECT tfm_tokenizer_train('moby_chars', body, 'char') FROM moby WHERE part = 'train' \g /dev/null
SELECT tfm_create_model('moby', 'lm', 'moby_chars', d_model => 128, heads => 4, layers => 4, max_len => 128,
                        dropout => $LM_DROPOUT) \g /dev/null
SET tfm.threads = 1;
SET tfm.progress = off;
\echo == training ($p, $limit)
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(tokens_per_s) AS tokens_per_s,
       round(seconds::numeric, 1) AS seconds
FROM tfm_train('moby', 'SELECT body FROM moby WHERE part = ''train''', epochs => 1000, batch_size => 64,
               lr => 2e-3, $limit, train_precision => '$p');
\echo == validation
SELECT round(loss::numeric, 4) AS loss, round(nats_per_char::numeric, 4) AS nats_per_char, tokens
FROM tfm_evaluate('moby', 'SELECT body FROM moby WHERE part = ''val''');
SQL
}

rt_run() {  # rt_run PRECISION
  local p=$1
  psql_in "rt_$p" <<SQL
CREATE EXTENSION tfm;
CREATE TABLE rt_train (id bigserial, text text NOT NULL, label text NOT NULL);
CREATE TABLE rt_test (LIKE rt_train INCLUDING ALL);
\copy rt_train(text, label) FROM PROGRAM 'gzip -dc $DATA/rt_polarity_train.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
\copy rt_test(text, label) FROM PROGRAM 'gzip -dc $DATA/rt_polarity_test.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')
SELECT tfm_tokenizer_train('rt_word', text, 'word', 20000) FROM rt_train \g /dev/null
SELECT tfm_create_model('rt', 'classify', 'rt_word', labels => ARRAY['neg', 'pos'], d_model => 128, heads => 8,
                        layers => 4, d_ff => 512, max_len => 64, norm => 'pre', dropout => 0.3,
                        seed => $RT_SEED) \g /dev/null
SET tfm.threads = 1;
SET tfm.progress = off;
\echo == training ($p, $RT_TIME)
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
       round(val_accuracy::numeric, 4) AS val_accuracy, round(tokens_per_s) AS tokens_per_s,
       round(seconds::numeric, 1) AS seconds, kept
FROM tfm_train('rt', 'SELECT text, label FROM rt_train ORDER BY id', epochs => 100, batch_size => 32, lr => 1e-3,
               weight_decay => 0.1, label_smoothing => 0.1, val_fraction => 0.1, time_limit => '$RT_TIME',
               seed => $RT_SEED, train_precision => '$p');
\echo == test
SELECT round(accuracy::numeric, 4) AS accuracy, round(macro_f1::numeric, 4) AS macro_f1, rows
FROM tfm_evaluate('rt', 'SELECT text, label FROM rt_test ORDER BY id');
SQL
}

case $WHAT in
  lm)
    gzip -dc "$DATA/moby_dick_train.txt.gz" > "$OUT/moby_train.txt"
    gzip -dc "$DATA/moby_dick_val.txt.gz" > "$OUT/moby_val.txt"
    chmod 644 "$OUT"/moby_*.txt
    start_cluster lm_fp32 0
    start_cluster lm_bf16 1
    log "Moby-Dick char LM (dropout $LM_DROPOUT): fp32 (core 0) and bf16 (core 1) at once, $TIME each; uptime: $(uptime)"
    lm_run fp32 > "$OUT/lm_fp32.txt" 2>&1 &
    a=$!
    lm_run bf16 > "$OUT/lm_bf16.txt" 2>&1 &
    b=$!
    wait $a; wait $b
    log "done; uptime: $(uptime)"
    for p in fp32 bf16; do echo "---- $p"; cat "$OUT/lm_$p.txt"; done
    ;;
  lm-steps)
    gzip -dc "$DATA/moby_dick_train.txt.gz" > "$OUT/moby_train.txt"
    gzip -dc "$DATA/moby_dick_val.txt.gz" > "$OUT/moby_val.txt"
    chmod 644 "$OUT"/moby_*.txt
    pids=()
    for p in ${PRECISIONS:-bf16}; do
      start_cluster "lm_$p" "$([ "$p" = fp32 ] && echo 0 || echo 1)"
      lm_run "$p" "$STEPS" > "$OUT/lm_$p.txt" 2>&1 &
      pids+=($!)
    done
    log "Moby-Dick char LM for $STEPS steps: ${PRECISIONS:-bf16}; uptime: $(uptime)"
    for x in "${pids[@]}"; do wait "$x"; done
    log "done; uptime: $(uptime)"
    for p in ${PRECISIONS:-bf16}; do echo "---- $p"; cat "$OUT/lm_$p.txt"; done
    ;;
  rt)
    start_cluster rt_fp32 0
    start_cluster rt_bf16 1
    log "rt_polarity classifier: fp32 (core 0) and bf16 (core 1) at once, $RT_TIME each, seed $RT_SEED; uptime: $(uptime)"
    rt_run fp32 > "$OUT/rt_fp32.txt" 2>&1 &
    a=$!
    rt_run bf16 > "$OUT/rt_bf16.txt" 2>&1 &
    b=$!
    wait $a; wait $b
    log "done; uptime: $(uptime)"
    for p in fp32 bf16; do echo "---- $p"; cat "$OUT/rt_$p.txt"; done
    ;;
  *) echo "usage: quality.sh lm|lm-steps|rt" >&2; exit 2 ;;
esac
log "results in $OUT"
