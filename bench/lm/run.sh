#!/bin/bash
# run.sh — language-model benchmarks (tfm vs PyTorch): quality on Moby-Dick in
# a fixed time, training and generation speed for a small and a GPT-2-small
# shaped model.
#
#   bench/lm/run.sh quality     # char LM, 4 layers d 128: tfm for TIME, then PyTorch for the same time
#   bench/lm/run.sh speed       # training tokens/s and generation tokens/s (cache / no cache), both shapes
#   bench/lm/run.sh             # both
#
# Environment: THREADS (tfm.threads and PyTorch/BLIS threads, default 2),
# TIME (training budget, default '30 minutes'), SKIP_BUILD=1, OUT (default a
# fresh /tmp/tfm-lm-bench.XXXX), DATA (/work/shared/data or ../shared/data).
# Runs are sequential, never two at once.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
THREADS=${THREADS:-2}
TIME=${TIME:-30 minutes}
WHAT=${1:-all}
if [ -z "${DATA:-}" ]; then
  for d in /work/shared/data "$ROOT/../shared/data"; do [ -f "$d/moby_dick_train.txt.gz" ] && DATA=$d && break; done
fi
OUT=${OUT:-$(mktemp -d /tmp/tfm-lm-bench.XXXXXX)}
. "$ROOT/bench/bench_start.sh"

quality() {
  gzip -dc "$DATA/moby_dick_train.txt.gz" > "$OUT/moby_train.txt"
  gzip -dc "$DATA/moby_dick_val.txt.gz" > "$OUT/moby_val.txt"
  chmod 644 "$OUT"/moby_*.txt
  # the whole book is one row (the stream is its characters, then <eos>)
  $PSQL <<EOF
CREATE TABLE moby (part text PRIMARY KEY, body text NOT NULL);
INSERT INTO moby VALUES ('train', convert_from(pg_read_binary_file('$OUT/moby_train.txt'), 'UTF8')),
                        ('val', convert_from(pg_read_binary_file('$OUT/moby_val.txt'), 'UTF8'));
SELECT part, length(body) AS characters FROM moby ORDER BY part;
SELECT tfm_tokenizer_train('moby_chars', body, 'char') FROM moby WHERE part = 'train';
SELECT parameters FROM tfm_create_model('moby', 'lm', 'moby_chars', d_model => 128, heads => 4, layers => 4,
                                        max_len => 128);
EOF
  log "tfm: tfm_train for $TIME (batch 64 × 128, lr 2e-3, cosine fitted to the time)"
  local t0 t1
  t0=$(date +%s.%N)
  $PSQL <<EOF 2>&1 | tee "$OUT/tfm_train.txt"
SET tfm.threads = $THREADS;
SET tfm.progress = off;
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(tokens_per_s) AS tokens_per_s,
       round(seconds::numeric, 1) AS seconds
FROM tfm_train('moby', 'SELECT body FROM moby WHERE part = ''train''', epochs => 1000, batch_size => 64,
               lr => 2e-3, time_limit => '$TIME');
EOF
  t1=$(date +%s.%N)
  local train_s
  train_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  $PSQL <<EOF 2>&1 | tee "$OUT/tfm_eval.txt"
SET tfm.threads = $THREADS;
SELECT round(loss::numeric, 4) AS loss, round(nats_per_char::numeric, 4) AS nats_per_char,
       round(bits_per_byte::numeric, 4) AS bits_per_byte, tokens
FROM tfm_evaluate('moby', 'SELECT body FROM moby WHERE part = ''val''');
\pset format unaligned
\pset tuples_only on
SELECT 'sample (t = 0.5): ' || tfm_generate('moby', 'The whale', max_tokens => 400, temperature => 0.5, seed => 1);
SELECT 'sample (t = 1.0): ' || tfm_generate('moby', 'Call me', max_tokens => 400, temperature => 1.0, seed => 2);
EOF
  log "tfm: training took ${train_s}s (statement wall time)"
  $PSQL -c "\\copy (SELECT tfm_tokenize('moby_chars', body) FROM moby WHERE part = 'train') TO '$OUT/train.ids'"
  $PSQL -c "\\copy (SELECT tfm_tokenize('moby_chars', body) FROM moby WHERE part = 'val') TO '$OUT/val.ids'"
  local vocab
  vocab=$($PSQL -At -c "SELECT vocab_size FROM tfm.tokenizer_list WHERE name = 'moby_chars'")
  log "PyTorch: same model, ids and time (${train_s}s)"
  /usr/bin/python3 "$HERE/torch_lm.py" train --train "$OUT/train.ids" --val "$OUT/val.ids" --vocab "$vocab" \
    --d 128 --heads 4 --layers 4 --max-len 128 --batch 64 --lr 2e-3 --budget "$train_s" \
    --threads "$THREADS" --tag moby | tee "$OUT/torch_train.txt"
  {
    echo "## Moby-Dick char LM (threads $THREADS, $(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "| | nats/char on moby_dick_val | training time | tokens/s |"
    echo "|---|---|---|---|"
    echo "| tfm | $(awk -F'|' 'NR==3 {gsub(/ /,"",$2); print $2}' "$OUT/tfm_eval.txt") | ${train_s}s | $(awk -F'|' '$1 ~ /^ *[0-9]+ *$/ {gsub(/ /,"",$4); v=$4} END {print v}' "$OUT/tfm_train.txt") |"
    r=$(grep '^RESULT' "$OUT/torch_train.txt")
    echo "| PyTorch | $(sed -n 's/.* nats_per_char=\([0-9.]*\).*/\1/p' <<<"$r") | $(sed -n 's/.* train_seconds=\([0-9.]*\).*/\1/p' <<<"$r")s | $(sed -n 's/.* tokens_per_s=\([0-9.]*\).*/\1/p' <<<"$r") |"
  } | tee "$OUT/quality.md"
}

case $WHAT in
  quality) quality ;;
  speed) "$HERE/speed.sh" "$OUT" ;;
  all) quality; "$HERE/speed.sh" "$OUT" ;;
  *) echo "usage: run.sh [quality|speed|all]" >&2; exit 2 ;;
esac
log "done; results in $OUT"
