#!/usr/bin/env bash
# bench/memory/shared.sh — what N sessions using one published-size model
# cost in memory, with tfm.share_weights on (one read-only mapping of the
# weights for all sessions) and off (a private copy per session).
#
# The model has GPT-2 small's shape as an encoder (vocabulary 50,257,
# d_model 768, 12 heads, 12 layers, 1,024 positions: 124 M parameters,
# 497 MB of fp32).  Each of N sessions embeds one 128-token input and stays
# connected; then the script sums the sessions' resident (RSS) and
# proportional (PSS: shared pages divided among their users) memory from
# /proc/<pid>/smaps_rollup.
#
#   bench/memory/shared.sh [N ...]      (default: 1 20)
#
# PRECISIONS (default "fp32 bf16"): tfm.precision of the sessions; at bf16
# and int8 each session also holds the packed copies of the matrices, which
# are shared (a file beside the weights' file) when share_weights is on.
set -euo pipefail
cd "$(dirname "$0")/../.."
counts=${*:-1 20}
precisions=${PRECISIONS:-fp32 bf16}
. scripts/cluster.sh
cluster_start "shared_buffers=128MB"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION tfm;
SELECT tfm_create_model('gpt2_shape', 'classify', vocab_size => 50257, labels => ARRAY['a', 'b'],
                        d_model => 768, heads => 12, layers => 12, d_ff => 3072, max_len => 1024,
                        norm => 'pre', activation => 'gelu');
SQL
psql -X -A -t -c "SELECT 'model: ' || parameters || ' parameters' FROM tfm.models WHERE name = 'gpt2_shape'"

measure() {				# share n precision
  local share=$1 n=$2 prec=$3 pids=() rss=0 pss=0 t0 t1
  local fifo_dir
  fifo_dir=$(mktemp -d)
  t0=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    mkfifo "$fifo_dir/in$i" "$fifo_dir/out$i"
    psql -X -q -A -t <"$fifo_dir/in$i" >"$fifo_dir/out$i" 2>&1 &
    exec {fd}>"$fifo_dir/in$i"
    eval "in_fd_$i=$fd"
    echo "SET tfm.threads = 1; SET tfm.share_weights = $share; SET tfm.precision = $prec; SELECT pg_backend_pid();
          SELECT array_length(tfm_embed('gpt2_shape', (SELECT array_agg(1 + (g * 7919) % 50000) FROM generate_series(1, 128) g)), 1);" >&"$fd"
  done
  for i in $(seq 1 "$n"); do
    exec {rfd}<"$fifo_dir/out$i"
    read -r pid <&"$rfd"
    read -r len <&"$rfd"
    [ "$len" = 768 ] || { echo "session $i: $len" >&2; exit 1; }
    pids+=("$pid")
    eval "out_fd_$i=$rfd"
  done
  t1=$(date +%s.%N)
  for pid in "${pids[@]}"; do
    rss=$((rss + $(awk '/^Rss:/ {print $2}' /proc/"$pid"/smaps_rollup)))
    pss=$((pss + $(awk '/^Pss:/ {print $2}' /proc/"$pid"/smaps_rollup)))
  done
  printf "| %-4s | %-3s | %2d | %8.0f | %8.0f | %6.0f | %5.1f |\n" "$prec" "$share" "$n" \
    "$(echo "$rss / 1024" | bc -l)" "$(echo "$pss / 1024" | bc -l)" \
    "$(echo "$pss / 1024 / $n" | bc -l)" "$(echo "$t1 - $t0" | bc -l)"
  for i in $(seq 1 "$n"); do
    eval "exec {in_fd_$i}>&-"
  done
  wait 2>/dev/null || true
  rm -rf "$fifo_dir"
}

echo
echo "| precision | share_weights | sessions | RSS sum (MB) | PSS sum (MB) | PSS per session (MB) | load time (s) |"
echo "|---|---|---:|---:|---:|---:|---:|"
for prec in $precisions; do
  for n in $counts; do
    for share in on off; do
      measure "$share" "$n" "$prec"
    done
  done
done
