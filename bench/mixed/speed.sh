#!/bin/bash
# speed.sh — training tokens/s, fp32 against mixed-precision bf16, in the same
# run: bench_core's training step (tfm_trainer_step: forward, loss, backward,
# clipping, AdamW) on the reference classifier and on bench/lm's char LM,
# ROUNDS rounds of (classify fp32, classify bf16, lm fp32, lm bf16), each a
# fresh process, so both sides see the same drift of a shared machine.
#
#   bench/mixed/speed.sh                 # 1 thread, pinned to CPU 1, 3 rounds
#   THREADS=2 CPUS=0,1 bench/mixed/speed.sh
#
# Environment: THREADS (1), CPUS (taskset list, default 1), ROUNDS (3),
# SECONDS_EACH (8: each measurement times steps for this long, median).
# Prints each measurement, then per shape the median tokens/s of each side
# and the median of the per-round ratios bf16 / fp32.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
THREADS=${THREADS:-1}
CPUS=${CPUS:-1}
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-8}
make -s -C "$ROOT/bench" bench_core >/dev/null
OUT=$(mktemp /tmp/tfm-mixed-speed.XXXXXX)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), threads $THREADS on CPUs $CPUS; uptime: $(uptime)"
for r in $(seq "$ROUNDS"); do
  for model in classify lm; do
    for p in fp32 bf16; do
      line=$(taskset -c "$CPUS" "$ROOT/bench/bench_core" --model "$model" --threads "$THREADS" \
               --seconds "$SECONDS_EACH" --min-iters 3 --warmup 1 --what train --train-precision "$p" |
             grep '^RESULT')
      tok=$(sed -n 's/.* tok_s=\([0-9.]*\).*/\1/p' <<<"$line")
      echo "round $r $model $p $tok" | tee -a "$OUT"
    done
  done
done
echo "# uptime after: $(uptime)"
python3 - "$OUT" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print("| shape | fp32 tokens/s | bf16 tokens/s | bf16 / fp32 (median of rounds) |")
print("|---|---:|---:|---:|")
for model in ("classify", "lm"):
    f = {r[1]: float(r[4]) for r in rows if r[2] == model and r[3] == "fp32"}
    b = {r[1]: float(r[4]) for r in rows if r[2] == model and r[3] == "bf16"}
    ratios = [b[k] / f[k] for k in f if k in b]
    print(f"| {model} | {st.median(f.values()):.0f} | {st.median(b.values()):.0f} | {st.median(ratios):.2f}x |")
PY
rm -f "$OUT"
