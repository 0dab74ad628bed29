#!/bin/bash
# trained_ids.sh — greedy ids of tfm and llama.cpp on the same GGUF files of
# a small Llama trained on real text (make_trained.py), not random weights
# (issue 40).  run.sh's random-weight shapes are near ties at many steps,
# which any rounding decides (doc/performance.md, "Greedy ids against
# llama.cpp on Q4_K_M"); a trained model's next-token distributions are
# peaked as a real checkpoint's are.
#
#   bench/peers/trained_ids.sh [--threads N] [--tokens 64] [--keep]
#
# For each of make_trained.py's 8 held-out prompts: N greedy ids from
#   tfm gguf        (the Q4_K_M file, its blocks kept: tfm.precision gguf)
#   tfm fp32        (the F32 file)
#   llama.cpp       Q4_K_M and F32 computed in F32 (F32 cache, flash
#                   attention off), and Q4_K_M at its defaults (F16 cache,
#                   flash attention auto)
# then the leading ids each pair shares, per prompt and in all.  No
# timings.  The model is written once into OUT (default: a fresh
# directory, removed at the end unless --keep; make_trained.py needs
# ../shared/data and about 4-8 minutes).  PGBIN as for scripts/cluster.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.."
THREADS=1; TOKENS=64; KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: $0 [--threads N] [--tokens 64] [--keep]" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
log() { echo "[$(date -u '+%H:%M:%S')] $*"; }
[ -d "$HERE/node_modules/node-llama-cpp" ] || (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund)
export GGML_LIB="$HERE/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"
OUT=${OUT:-$(mktemp -d /tmp/tfm-trained.XXXXXX)}
mkdir -p "$OUT"
STAMP=$(cd "$HERE" && cat make_trained.py gguf_writer.py | md5sum | cut -c1-12)
if [ "$(cat "$OUT/stamp" 2>/dev/null)" != "$STAMP" ] || [ ! -f "$OUT/model-Q4_K_M.gguf" ]; then
  log "training the model (make_trained.py) into $OUT"
  (cd "$HERE" && nice -n 10 "$PY" make_trained.py "$OUT") 2>&1 | grep -v -i warn || true
  [ -f "$OUT/model-Q4_K_M.gguf" ] || { echo "make_trained.py failed" >&2; exit 1; }
  echo "$STAMP" > "$OUT/stamp"
fi
chmod -R a+rX "$OUT"; chmod a+rx "$OUT"
log "$(tail -1 "$OUT/train.log")"

. scripts/cluster.sh
cleanup() { cluster_stop 2>/dev/null || true; [ "$KEEP" = 1 ] && log "model kept in $OUT" || rm -rf "$OUT"; }
cluster_start
trap cleanup EXIT
$PSQL -c "CREATE EXTENSION tfm" >/dev/null
$PSQL -c "SELECT model FROM tfm_import_gguf_file('q4km', '$OUT/model-Q4_K_M.gguf')" >/dev/null
$PSQL -c "SELECT model FROM tfm_import_gguf_file('f32', '$OUT/model-F32.gguf')" >/dev/null
log "tfm: $($PSQL -F ' ' -c "SELECT 'kept ' || count(*) FILTER (WHERE kept) || ' of ' || count(*) || ' tensors as blocks' FROM tfm_gguf_kept('q4km')")"

NP=$($PY -c "import json, sys; print(len(json.load(open(sys.argv[1]))['prompts']))" "$OUT/prompts.json")
agree() {  # leading ids two comma lists share
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, ","); m = split(b, y, ","); k = 0;
    while (k < n && k < m && x[k+1] == y[k+1]) k++; print k }'
}
declare -A IDS
for i in $(seq 0 $((NP - 1))); do
  P=$($PY -c "import json, sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompts'][int(sys.argv[2])])))" "$OUT/prompts.json" "$i")
  echo "{\"generate\": [$P], \"prefill\": [1]}" > "$OUT/p$i.json"
  for m in q4km:gguf f32:fp32; do
    IDS[tfm_${m%%:*},$i]=$($PSQL -c "SET tfm.threads = $THREADS" -c "SET tfm.precision = ${m#*:}" \
      -c "SELECT string_agg(id::text, ',' ORDER BY pos) FROM tfm_generate_tokens('${m%%:*}', '{$P}'::int[], max_tokens => $TOKENS, temperature => 0)")
  done
  for r in Q4_K_M:F32:off:q4km F32:F32:off:f32 Q4_K_M:F16:auto:q4km_defaults; do
    IFS=: read -r f kv fa key <<< "$r"
    IDS[llama_$key,$i]=$(cd "$HERE" && node llama_gen.mjs "$OUT/model-$f.gguf" --threads "$THREADS" --prompts "$OUT/p$i.json" \
      --tokens "$TOKENS" --rounds 1 --kv "$kv" --flash-attention "$fa" 2>&1 | sed -n 's/^IDS //p')
  done
  text=$($PY -c "import sys; print(bytes(int(x) - 3 for x in sys.argv[1].split(',') if 3 <= int(x) < 259).decode('latin-1'))" "${IDS[llama_q4km,$i]}")
  log "prompt $((i + 1)): llama.cpp Q4_K_M (F32 cache) continues with \"$(echo "$text" | tr '\n' ' ')\""
done

echo
echo "Greedy ids, $TOKENS a prompt, $NP held-out prompts, $THREADS thread(s): the leading ids equal, per prompt (and the prompts equal throughout)"
echo
echo "| pair | per prompt | all $TOKENS equal |"
echo "|---|---|---|"
for pr in "tfm gguf / llama.cpp Q4_K_M (F32 cache, no flash attention):tfm_q4km:llama_q4km" \
          "tfm gguf / llama.cpp Q4_K_M at its defaults (F16 cache, flash attention auto):tfm_q4km:llama_q4km_defaults" \
          "llama.cpp Q4_K_M, F32 cache / its defaults:llama_q4km:llama_q4km_defaults" \
          "tfm fp32 / llama.cpp F32 (F32 cache, no flash attention):tfm_f32:llama_f32"; do
  IFS=: read -r what a b <<< "$pr"
  per=""; full=0
  for i in $(seq 0 $((NP - 1))); do
    k=$(agree "${IDS[$a,$i]}" "${IDS[$b,$i]}"); per="$per $k"
    [ "$k" = "$TOKENS" ] && full=$((full + 1))
  done
  echo "| $what |$per | $full/$NP |"
done
