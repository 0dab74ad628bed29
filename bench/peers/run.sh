#!/bin/bash
# bench/peers/run.sh — tfm beside llama.cpp and ONNX Runtime (issue 26), in
# one command, with the same weights on both sides:
#
#   1. installs node-llama-cpp 3.21.1 and onnxruntime-node 1.30.0 into
#      bench/peers/node_modules (npm ci --ignore-scripts, from the committed
#      package-lock.json; skipped when already installed)
#   2. make_models.py writes a random (fixed-seed) Llama — "Llama 134M":
#      hidden 768, 12 layers, 12 heads, vocab 32000, intermediate 2048 — as
#      Hugging Face safetensors + config.json + tokenizer.json (for
#      tfm_import_files) and as GGUF F32, Q8_0 and Q4_0 (for llama.cpp), and a
#      MiniLM-shaped BertModel (hidden 384, 6 layers, 12 heads, vocab 30522)
#      as safetensors (for tfm) and ONNX (torch.onnx.export, for ONNX Runtime)
#   3. a throwaway cluster (scripts/cluster.sh) with tfm from this checkout:
#      both checkpoints imported with tfm_import_files
#   4. generation, batch 1, greedy: a 16-id prompt + N new tokens (64), the
#      whole call timed (tfm_generate_tokens with an int[] prompt; llama.cpp:
#      llama_gen.mjs), tfm fp32 / int8 / int4 beside llama.cpp F32 / Q8_0 /
#      Q4_0 (tfm's int4 runs the Q4_0 file itself, imported with
#      tfm_import_gguf_file: its blocks kept, the very weights llama.cpp
#      reads), and prefill (one pass over a 128-id
#      prompt: tfm_next_tokens; llama.cpp: evaluate without generating);
#      tfm alone also at batch 8 (tfm_generate(model, text[]) of 8 text
#      prompts: 8 x N tokens / time);
#      the greedy ids of tfm fp32 must equal llama.cpp F32's computed exactly
#      (a separate run with an F32 cache and flash attention off: llama.cpp's
#      CPU flash attention rounds through F16)
#   5. the encoder: 32 sequences of 128 ids, embeddings/s at batch 1 (one
#      call a sequence: tfm_embed(model, int[]); ONNX Runtime: one run each)
#      and batch 32 (tfm_embed(model, text[]) of the 32 texts; ONNX Runtime:
#      one [32, 128] run), tfm fp32 / bf16 / int8 beside ONNX Runtime fp32
#      and its dynamic int8 (ort_embed.mjs; the int8 file written by
#      onnx_int8.py as quantize_dynamic would), in paired rounds: the five
#      engines stay up (a backend each for tfm, ort_embed.mjs --serve for
#      ONNX Runtime) and round by round each times one batch-1 round, then
#      each one batch-32 round (the order reversed every other round); a
#      figure is the median of its rounds and a ratio the median of the
#      ratios within a round, printed with their least and greatest beside
#      the ratio of the medians, so the spread of the load (which moves
#      both engines of a round alike) and the difference separate; tfm fp32's embeddings must
#      equal ONNX Runtime's within 1e-4, and every engine's agreement with a
#      float64 forward of the same weights and with tfm fp32 is printed
#   6. a table with ratios, the machine (lscpu), tfm_info()'s kernels and the
#      load average before each figure; the log in bench/peers/last-run.log
#
#   bench/peers/run.sh [--size full|small|3b|1b|qwen3-0.6b] [--threads "1 2"] [--tokens 64]
#                      [--rounds 3] [--kv F16|F32] [--flash-attention auto|on|off]
#                      [--work-mem 16GB] [--wait S] [--keep]
#                      [--gguf-only | --encoder-only]
#
#   --size      full (default: Llama 134M, 6-layer encoder) or small (a quick
#               run: Llama hidden 256, 4 layers, 4 heads, intermediate 704,
#               vocab 32000; encoder 2 layers), or 3b: a Llama-3.2-3B-shaped
#               model (hidden 3072, 28 layers, 24 heads, 8 key/value heads,
#               intermediate 8192, vocab 128256, rope theta 500000 with Llama
#               3's rope scaling, tied embeddings) as one Q4_K_M file only
#               (about 2 GB, written one tensor at a time; set OUT to a disk
#               with room, not /tmp), to show it fits: the gguf rows alone
#               (implies --gguf-only; default --threads 1; no batch-8 row),
#               its import time, rows, tfm_model_footprint and the backend's
#               memory after a generation at gguf, and tfm / llama.cpp
#               rounds interleaved (--rounds pairs, each one timed call
#               after an untimed one) on a machine others may share.  Not in
#               CI: the file takes minutes to write and ~2.5 GB of memory.
#               The import's backend peaks at ~0.5 GB (doc/performance.md,
#               "The import at the file's size"); a refused import makes the
#               table say so, and the llama.cpp rows run alone.
#               1b: a Llama-3.2-1B-shaped file (hidden 2048, 16 layers, 32
#               heads, 8 key/value heads, intermediate 8192, vocab 128256,
#               Llama 3's rope, tied; ~0.8 GB), qwen3-0.6b: a
#               Qwen3-0.6B-shaped one (architecture qwen3: hidden 1024, 28
#               layers, 16 heads of 128, 8 key/value heads, intermediate
#               3072, vocab 151936, rope theta 1e6, per-head q/k norms,
#               tied; ~0.5 GB): the same rows as 3b, plus the greedy ids
#               against llama.cpp computed in F32 and one tfm_chat call
#               (the family's chat template is in the file's metadata).
#               The import's backend peaks at ~0.36 GB at 1b (set OUT to a
#               disk with room; not in CI).
#   --threads   thread counts (default "1 2"): tfm.threads, llama.cpp's
#               context threads, ONNX Runtime's intra-op threads
#   --tokens    new tokens per generation (default 64)
#   --rounds    timed rounds per figure after an untimed one; the median is
#               the figure (default 3; the encoder's rounds are paired, 5-9
#               separate spread from difference better)
#   --kv        llama.cpp's key/value cache type in the timed runs (default
#               F16, its default)
#   --flash-attention  llama.cpp's flash attention in the timed runs
#               (default auto, its default)
#   --work-mem  tfm.work_mem of the cluster (default 16GB: tfm's estimate of
#               a generation's memory assumes a slide re-feeding 3/4 of
#               max_position_embeddings, 1.5 GB a sequence for Llama 134M's
#               2048 positions; under a lower limit batch 8 is refused or
#               split in halves; the backend's peak RSS at batch 8 was 0.8 GB)
#   --wait S    wait up to S s (default 60) for the 1-minute load average
#               to fall below 0.5 before starting; warn if it does not
#   --keep      keep the checkpoints (printed directory) instead of removing
#               them at the end
#   --gguf-only     only the int4 / Q4_0 and gguf / Q4_K_M generation rows
#   --encoder-only  only the encoder rows (no Llama checkpoint or generation)
#
# Environment: PGBIN (the server binaries of the throwaway cluster), PG_CONFIG
# (if set, build and install tfm with it first), OUT (where the checkpoints
# go; default a fresh directory under /tmp; checkpoints already there, made
# by the same make_models.py and gguf_writer.py at the same size, are
# reused).  Needs node (v18+) and npm, /usr/bin/python3 with PyTorch and
# numpy (Debian's python3-torch), and tfm installed for PGBIN's PostgreSQL.
# About 1.5 GB of disk at --size full.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
SIZE=full
THREADS="1 2"
TOKENS=64
ROUNDS=3
KV=F16
FA=auto
WORK_MEM=16GB
WAIT=60
KEEP=0
GGUF_ONLY=0
ENC_ONLY=0
THREADS_SET=0
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE="$2"; shift 2 ;;
    --threads) THREADS="$2"; THREADS_SET=1; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --kv) KV="$2"; shift 2 ;;
    --flash-attention) FA="$2"; shift 2 ;;
    --work-mem) WORK_MEM="$2"; shift 2 ;;
    --wait) WAIT="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --gguf-only) GGUF_ONLY=1; shift ;;
    --encoder-only) ENC_ONLY=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
case "$SIZE" in full|small|3b|1b|qwen3-0.6b) ;; *) echo "--size must be full, small, 3b, 1b or qwen3-0.6b" >&2; exit 2 ;; esac
BIG=0
case "$SIZE" in 3b) SHAPE="Llama-3.2-3B" ;; 1b) SHAPE="Llama-3.2-1B" ;; qwen3-0.6b) SHAPE="Qwen3-0.6B" ;; *) SHAPE="" ;; esac
VOCAB=$(case "$SIZE" in 3b|1b) echo 128256 ;; qwen3-0.6b) echo 151936 ;; *) echo 32000 ;; esac)   # make_models.py's
if [ -n "$SHAPE" ]; then
  [ "$ENC_ONLY" = 1 ] && { echo "--size $SIZE has no encoder" >&2; exit 2; }
  BIG=1; GGUF_ONLY=1; [ "$THREADS_SET" = 1 ] || THREADS=1
fi
case "$KV" in F16|F32) ;; *) echo "--kv must be F16 or F32" >&2; exit 2 ;; esac
case "$FA" in auto|on|off) ;; *) echo "--flash-attention must be auto, on or off" >&2; exit 2 ;; esac
[ "$GGUF_ONLY$ENC_ONLY" = 11 ] && { echo "--gguf-only and --encoder-only exclude each other" >&2; exit 2; }

PY=/usr/bin/python3
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
LOG=$HERE/last-run.log
exec > >(tee "$LOG") 2>&1
log() { echo "[$(date -u '+%H:%M:%S')] $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
load1() { cut -d' ' -f1 /proc/loadavg; }
RES=$(mktemp /tmp/tfm-benchpeers-res.XXXXXX)   # key|value lines for the table
res() { echo "$1|$2" >> "$RES"; }
get() { grep -m1 "^$1|" "$RES" | cut -d'|' -f2- || true; }
load1s() { awk '{ for (i = 1; i <= NF; i += 3) printf "%s%s", (i > 1 ? " " : ""), $i }'; }   # the 1-minute loads of getall's
getall() { grep "^$1|" "$RES" | cut -d'|' -f2- | paste -sd' ' || true; }   # every round's, in order
median() { tr ' ' '\n' | { grep -E '^[0-9.]+$' || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
field() { tr " " "\n" | sed -n "s/^$1=//p" | head -1; }   # key=value out of a RESULT line

MACHINE="$(lscpu | sed -n 's/^Model name: *//p' | head -1) (family $(lscpu | sed -n 's/^CPU family: *//p' | head -1) model $(lscpu | sed -n 's/^Model: *//p' | head -1)), $(nproc) CPUs"
log "bench/peers at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (modified)'), size $SIZE: $MACHINE"
command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed" >&2; exit 1; }
"$PY" -c 'import torch, numpy' 2>/dev/null || { echo "$PY cannot import torch and numpy (apt-get install python3-torch)" >&2; exit 1; }

# ---- 1. the peers ---------------------------------------------------------------
# (a node_modules that is a symbolic link, to another checkout's, is used as
# it is: npm ci would empty the directory it points to)
if [ -L "$HERE/node_modules" ]; then
  [ -d "$HERE/node_modules/node-llama-cpp" ] && [ -d "$HERE/node_modules/onnxruntime-node" ] ||
    { echo "$HERE/node_modules links to a directory without node-llama-cpp and onnxruntime-node" >&2; exit 1; }
elif [ ! -f "$HERE/node_modules/.package-lock.json" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ] ||
   [ ! -d "$HERE/node_modules/node-llama-cpp" ] || [ ! -d "$HERE/node_modules/onnxruntime-node" ]; then
  log "npm ci --ignore-scripts (node-llama-cpp, onnxruntime-node; prebuilt CPU binaries)"
  (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund)
fi
PEERS=$(cd "$HERE" && node -e '
  const l = require("./package-lock.json").packages;
  console.log("node-llama-cpp " + l["node_modules/node-llama-cpp"].version + ", onnxruntime-node " + l["node_modules/onnxruntime-node"].version)')
LLAMA_SYS=$([ "$ENC_ONLY" = 1 ] && echo "not run" || (cd "$HERE" && node llama_gen.mjs --info))
log "peers: $PEERS; llama.cpp CPU features: $LLAMA_SYS"
# ggml's own quantizer, for the Q4_K_M file (make_models.py)
export GGML_LIB="$HERE/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"
[ -f "$GGML_LIB" ] || { log "no $GGML_LIB: no Q4_K_M file"; unset GGML_LIB; }

if [ -n "${PG_CONFIG:-}" ]; then
  log "building tfm with $PG_CONFIG"
  make -s -j2 PG_CONFIG="$PG_CONFIG" && make -s install PG_CONFIG="$PG_CONFIG"
fi

# ---- 2. the checkpoints ------------------------------------------------------------
OUT=${OUT:-$(mktemp -d /tmp/tfm-benchpeers.XXXXXX)}
mkdir -p "$OUT"
cleanup() {
  declare -F eng_stop >/dev/null && eng_stop
  [ -n "${FIFO:-}" ] && rm -rf "$FIFO"
  cluster_stop 2>/dev/null || true
  rm -f "$RES"
  if [ "$KEEP" = 1 ]; then log "checkpoints kept in $OUT"; else rm -rf "$OUT"; fi
}
trap cleanup EXIT
STAMP="$SIZE $(cd "$HERE" && cat make_models.py gguf_writer.py onnx_int8.py | md5sum | cut -c1-12)"
have_models() { if [ "$BIG" = 1 ]; then [ -f "$OUT/llama/model-Q4_K_M.gguf" ] && [ -f "$OUT/llama/prompts.json" ]; return; fi
                [ -f "$OUT/enc/model-int8.onnx" ] && [ -f "$OUT/enc/reference.json" ] &&
                { [ "$ENC_ONLY" = 1 ] || [ -f "$OUT/llama/model-Q4_0.gguf" ]; }; }
if [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$STAMP" ] && have_models; then
  log "reusing the checkpoints in $OUT ($STAMP)"
else
  log "writing the checkpoints into $OUT"
  rm -f "$OUT/stamp"
  (cd "$HERE" && { [ "$ENC_ONLY" = 1 ] || nice -n 19 "$PY" make_models.py llama "$OUT/llama" --size "$SIZE"; } &&
   { [ "$BIG" = 1 ] || "$PY" make_models.py encoder "$OUT/enc" --size "$SIZE"; }) 2>&1 |
    grep -v -i 'warning\|^ *warnings.warn\|^ *_C._jit\|^ *torch._C' || true
  have_models || { echo "make_models.py failed" >&2; exit 1; }
  echo "$STAMP" > "$OUT/stamp"
fi
chmod -R a+rX "$OUT"; chmod a+rx "$OUT"

# ---- 3. tfm ----------------------------------------------------------------------------
. scripts/cluster.sh
cluster_start "tfm.work_mem=$WORK_MEM"
trap cleanup EXIT
$PSQL -c "CREATE EXTENSION tfm"
INFO=$($PSQL -F ' ' -c "SELECT 'blis=' || blis_kernels || ' (' || kernel_choice || '); bf16=' || bf16_kernel || '; int8=' || int8_kernel || ' (' || lowp_kernel_choice || '); auto precision=' || inference_precision FROM tfm_info()")
KBLIS=$($PSQL -c "SELECT blis_kernels FROM tfm_info()")
KBF16=$($PSQL -c "SELECT bf16_kernel FROM tfm_info()")
KINT8=$($PSQL -c "SELECT int8_kernel FROM tfm_info()")
KINT4=$($PSQL -c "SELECT int4_kernel FROM tfm_info()")
KKQ=$($PSQL -c "SELECT coalesce(substring(lowp_kernel_choice from 'gguf blocks: (.*)$'), 'unknown') FROM tfm_info()")
log "tfm_info(): $INFO; tfm.work_mem $($PSQL -c 'SHOW tfm.work_mem')"
log "importing (tfm_import_files)"
[ "$BIG" = 1 ] || $PSQL -F ' ' -c "SELECT 'imported ' || model || ' (' || model_task || '): ' || parameters || ' parameters' FROM tfm_import_files('enc', '$OUT/enc/hf')"
[ "$ENC_ONLY" = 1 ] || [ "$BIG" = 1 ] || $PSQL -F ' ' <<EOF
SELECT 'imported ' || model || ' (' || model_task || '): ' || parameters || ' parameters' FROM tfm_import_files('llama', '$OUT/llama/hf');
SELECT 'imported ' || model || ' (' || model_task || '): ' || parameters || ' parameters (the Q4_0 GGUF file)'
  FROM tfm_import_gguf_file('llama_q4', '$OUT/llama/model-Q4_0.gguf');
SELECT 'Q4_0 blocks kept for int4: ' || count(*) FILTER (WHERE kept) || ' of ' || count(*) || ' tensors' FROM tfm_gguf_kept('llama_q4');
EOF
if [ "$ENC_ONLY" = 0 ] && [ -f "$OUT/llama/model-Q4_K_M.gguf" ]; then
  t0=$(date +%s.%N); l=$(load)
  res q4km_settings "$($PSQL -F ' ' -c "SELECT 'tfm.max_parameters ' || current_setting('tfm.max_parameters') || ', tfm.max_model_bytes ' || current_setting('tfm.max_model_bytes') FROM tfm_info()")"
  log "importing the Q4_K_M file (tfm_import_gguf_file; load $l; $(get q4km_settings))"
  if ! o=$($PSQL -F ' ' 2>&1 <<EOF
SELECT 'imported ' || model || ' (' || model_task || '): ' || parameters || ' parameters (the Q4_K_M GGUF file, ggml''s quantizer)'
  FROM tfm_import_gguf_file('llama_q4km', '$OUT/llama/model-Q4_K_M.gguf');
EOF
); then
    echo "$o"; [ "$BIG" = 1 ] || exit 1
    res import_refused "$(echo "$o" | tr '\n' ' ' | sed 's/ *$//')"
    log "REFUSED: the Q4_K_M file (the llama.cpp rows run alone)"
  else
    echo "$o"
  fi
  res import_q4km "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  res import_q4km_load "$l"
  res q4km_file "$(stat -c %s "$OUT/llama/model-Q4_K_M.gguf")"
fi
if [ "$ENC_ONLY" = 0 ] && [ -f "$OUT/llama/model-Q4_K_M.gguf" ] && [ -z "$(get import_refused)" ]; then
  res q4km_blocks "$($PSQL -c "SELECT sum(pg_column_size(g.*)) FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id WHERE m.name = 'llama_q4km'")"
  res q4km_rows "$($PSQL -c "SELECT (SELECT sum(pg_column_size(g.*)) FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id WHERE m.name = 'llama_q4km') + (SELECT sum(pg_column_size(t.*)) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'llama_q4km')")"
  $PSQL -F ' ' -c "SELECT 'kept: ' || gguf_type || ' ' || count(*) FILTER (WHERE kept) || ' of ' || count(*) FROM tfm_gguf_kept('llama_q4km') GROUP BY gguf_type ORDER BY gguf_type"
  res q4km_stored "$($PSQL -F ' ' -c "SELECT 'blocks ' || block_bytes || ', float32 ' || float32_bytes || ', made at a load for another precision ' || made_at_load_bytes FROM tfm_model_footprint('llama_q4km')")"
fi
[ "$ENC_ONLY" = 1 ] || $PSQL -F ' ' <<EOF
CREATE TABLE prompts AS SELECT
  ARRAY(SELECT x::int FROM json_array_elements_text(j->'generate') x) AS gen,
  ARRAY(SELECT x::int FROM json_array_elements_text(j->'prefill') x) AS prefill,
  ARRAY(SELECT x FROM json_array_elements_text(j->'batch') x) AS batch
  FROM (SELECT pg_read_file('$OUT/llama/prompts.json')::json AS j) s;
EOF
[ "$BIG" = 1 ] || $PSQL -F ' ' <<EOF
CREATE TABLE enc_texts AS SELECT t.o::int AS o, t.body,
  ARRAY(SELECT y::int FROM json_array_elements_text(j->'ids'->(t.o::int - 1)) y) AS ids
  FROM (SELECT pg_read_file('$OUT/enc/texts.json')::json AS j) s,
       json_array_elements_text(j->'texts') WITH ORDINALITY AS t(body, o);
EOF
$PSQL -F ' ' <<EOF
-- the median and best of ROUNDS timed calls after an untimed one (loads and packs the model)
CREATE FUNCTION gen_speed(m text, n integer, rounds integer, OUT tokens_per_s float8, OUT best float8, OUT tokens bigint, OUT ids text)
LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz; r float8[] := '{}'; p int[] := (SELECT gen FROM prompts);
BEGIN
  PERFORM count(*) FROM tfm_generate_tokens(m, p, max_tokens => n, temperature => 0);
  FOR i IN 1..rounds LOOP
    t := clock_timestamp();
    SELECT count(*), string_agg(g.id::text, ',' ORDER BY g.pos) INTO tokens, ids
      FROM tfm_generate_tokens(m, p, max_tokens => n, temperature => 0) g;
    r := r || (tokens / extract(epoch FROM clock_timestamp() - t)::float8);
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), max(x) INTO tokens_per_s, best FROM unnest(r) x;
END \$\$;
-- batch 8: one tfm_generate(model, text[]) call, 8 continuations of n tokens
CREATE FUNCTION gen8_speed(m text, n integer, rounds integer, OUT tokens_per_s float8, OUT best float8)
LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz; r float8[] := '{}'; p text[] := (SELECT batch FROM prompts);
BEGIN
  PERFORM tfm_generate(m, p, max_tokens => n, temperature => 0);
  FOR i IN 1..rounds LOOP
    t := clock_timestamp();
    PERFORM tfm_generate(m, p, max_tokens => n, temperature => 0);
    r := r || (cardinality(p) * n / extract(epoch FROM clock_timestamp() - t)::float8);
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), max(x) INTO tokens_per_s, best FROM unnest(r) x;
END \$\$;
CREATE FUNCTION prefill_speed(m text, rounds integer, OUT tokens_per_s float8, OUT best float8)
LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz; r float8[] := '{}'; p int[] := (SELECT prefill FROM prompts);
BEGIN
  PERFORM count(*) FROM tfm_next_tokens(m, p, 1);
  FOR i IN 1..rounds LOOP
    t := clock_timestamp();
    PERFORM count(*) FROM tfm_next_tokens(m, p, 1);
    r := r || (cardinality(p) / extract(epoch FROM clock_timestamp() - t)::float8);
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x), max(x) INTO tokens_per_s, best FROM unnest(r) x;
END \$\$;
-- one timed round (run.sh interleaves these with ONNX Runtime's): batch 1, one
-- tfm_embed(model, int[]) call a sequence; batch 32, tfm_embed(model, text[]) of all 32
CREATE FUNCTION enc_round(batch integer) RETURNS float8
LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz := clock_timestamp(); n int := (SELECT count(*) FROM enc_texts);
BEGIN
  IF batch = 1 THEN
    PERFORM count(tfm_embed('enc', ids)) FROM enc_texts;
  ELSE
    PERFORM count(*) FROM tfm_embed('enc', ARRAY(SELECT body FROM enc_texts ORDER BY o));
  END IF;
  RETURN n / extract(epoch FROM clock_timestamp() - t)::float8;
END \$\$;
EOF

if [ "$WAIT" -gt 0 ]; then
  waited=0
  while awk -v l="$(load1)" 'BEGIN { exit !(l > 0.5) }' && [ $waited -lt "$WAIT" ]; do
    [ $waited = 0 ] && log "load $(load1) > 0.5: waiting up to $WAIT s for it to drop"
    sleep 5; waited=$((waited + 5))
  done
fi
if awk -v l="$(load1)" 'BEGIN { exit !(l > 0.5) }'; then
  log "WARNING: load average $(load): other processes compete for the CPUs; the figures below are disturbed (a check of the harness, not a measurement)"
  res warn "load average $(load) at the start: other processes shared the CPUs, so these figures only show that the harness works"
fi

# ---- 4. generation -----------------------------------------------------------------------
llama_run() {   # threads file [key rounds kv flash-attention]: timed unless a key is given
  local key=${3:-$2} rounds=${4:-$ROUNDS} kv=${5:-$KV} fa=${6:-$FA} l; l=$(load)
  log "llama.cpp $2, $1 thread(s), cache $kv, flash attention $fa (load $l)"
  local o; o=$(cd "$HERE" && node llama_gen.mjs "$OUT/llama/model-$2.gguf" --threads "$1" --prompts "$OUT/llama/prompts.json" \
                 --tokens "$TOKENS" --rounds "$rounds" --kv "$kv" --flash-attention "$fa" 2>&1) ||
    { echo "$o"; log "FAILED: llama.cpp $2"; return 0; }
  echo "$o"
  res "gen_llama_$1_$key" "$(echo "$o" | grep 'what=generate' | field tokens_per_s)"
  res "pre_llama_$1_$key" "$(echo "$o" | grep 'what=prefill' | field tokens_per_s)"
  res "gen_llama_$1_${key}_ids" "$(echo "$o" | sed -n 's/^IDS //p')"
  res "gen_llama_$1_${key}_load" "$l"
}
tfm_gen_run() {   # threads precision [model rounds]
  local l m=${3:-llama} r=${4:-$ROUNDS}; l=$(load)
  log "tfm $2 ($m), $1 thread(s) (load $l)"
  local o; o=$($PSQL -F ' ' <<EOF
SET tfm.threads = $1;
SET tfm.precision = $2;
SELECT round(tokens_per_s::numeric, 2), round(best::numeric, 2), tokens, ids FROM gen_speed('$m', $TOKENS, $r);
SELECT round(tokens_per_s::numeric, 2), round(best::numeric, 2) FROM prefill_speed('$m', $r);
$([ "$BIG" = 1 ] && echo "SELECT 'not', 'run';" || echo "SELECT round(tokens_per_s::numeric, 2), round(best::numeric, 2) FROM gen8_speed('$m', $TOKENS, $r);")
EOF
) || { echo "$o"; log "FAILED: tfm $2"; return 0; }
  set -- "$1" "$2" $o
  echo "RESULT what=generate impl=tfm precision=$2 threads=$1 tokens=$5 tokens_per_s=$3 best=$4"
  echo "RESULT what=prefill impl=tfm precision=$2 threads=$1 tokens=128 tokens_per_s=$7 best=$8"
  echo "RESULT what=generate_batch8 impl=tfm precision=$2 threads=$1 tokens=$((8 * TOKENS)) tokens_per_s=$9 best=${10}"
  echo "IDS $6"
  res "gen8_tfm_$1_$2" "$9"
  res "gen_tfm_$1_$2" "$3"
  res "pre_tfm_$1_$2" "$7"
  res "gen_tfm_$1_$2_ids" "$6"
  res "gen_tfm_$1_$2_load" "$l"
}
# a session's memory after a generation at gguf: tfm_model_footprint (its
# loaded copy) and the backend's /proc/self/status, and the shared copy's files
tfm_footprint_run() {   # model
  $PSQL -F ' ' <<EOF
SET tfm.threads = 1;
SET tfm.precision = gguf;
SELECT count(*) FROM tfm_generate_tokens('$1', (SELECT gen FROM prompts), max_tokens => 4, temperature => 0) \\gset
SELECT 'footprint ' || loaded_precision || ': blocks ' || loaded_block_bytes || ', float32 ' || loaded_float32_bytes
       || ', left to the blocks ' || left_to_blocks_bytes || ', made from them ' || made_from_blocks_bytes
  FROM tfm_model_footprint('$1');
SELECT 'backend ' || string_agg(replace(l, E'\\t', ''), ', ') FROM regexp_split_to_table(pg_read_file('/proc/self/status'), E'\\n') l
 WHERE l ~ '^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):';
EOF
  local f; for f in "$TFM_PGDATA"/base/pgsql_tmp/pgsql_tmp_tfm_*; do
    [ -e "$f" ] && echo "shared copy $(basename "$f"): size $(stat -c %s "$f"), stored $(( $(stat -c %b "$f") * $(stat -c %B "$f") ))"
  done
  return 0
}
# the reference ids: llama.cpp F32 computed in F32 throughout (F32 cache, no
# flash attention), one round, at the first thread count
TH1=$(echo $THREADS | cut -d' ' -f1)
[ "$ENC_ONLY" = 0 ] && [ "$BIG" = 0 ] && llama_run "$TH1" F32 exact 1 F32 off
# and the Q4_K_M file's the same way, for tfm gguf's ids
[ "$ENC_ONLY" = 0 ] && [ -f "$OUT/llama/model-Q4_K_M.gguf" ] && llama_run "$TH1" Q4_K_M q4km_exact 1 F32 off
for th in $THREADS; do
  [ "$ENC_ONLY" = 1 ] && break
  if [ "$BIG" = 1 ]; then
    # --size 3b, 1b, qwen3-0.6b: tfm and llama.cpp rounds interleaved, one timed call each a round
    for r in $(seq "$ROUNDS"); do
      [ -n "$(get import_refused)" ] || tfm_gen_run "$th" gguf llama_q4km 1
      llama_run "$th" Q4_K_M "" 1
    done
    continue
  fi
  if [ "$GGUF_ONLY" = 0 ]; then
    tfm_gen_run "$th" fp32
    llama_run "$th" F32
    tfm_gen_run "$th" int8
    llama_run "$th" Q8_0
  fi
  tfm_gen_run "$th" int4 llama_q4
  llama_run "$th" Q4_0
  if [ -f "$OUT/llama/model-Q4_K_M.gguf" ]; then
    tfm_gen_run "$th" gguf llama_q4km
    llama_run "$th" Q4_K_M
  fi
done

# teacher-forced on llama.cpp's Q4_K_M ids (F32 cache, flash attention off):
# its distributions decoding, its prefill of each prefix (llama_probs.mjs
# --teacher) and tfm gguf's (tfm_next_tokens), pairwise top-1 agreement and
# logit differences (q4km_rounding.py --no-forward): llama.cpp against itself
# is the yardstick for tfm against llama.cpp
TF=""
if [ "$ENC_ONLY" = 0 ] && [ "$SIZE" != 3b ] && [ -z "$(get import_refused)" ] && [ -f "$OUT/llama/model-Q4_K_M.gguf" ]; then
  TF=$OUT/teacher; mkdir -p "$TF"; chmod a+rx "$TF"
  log "Q4_K_M teacher-forced: llama.cpp decoding and prefill, tfm gguf (load $(load))"
  if (cd "$HERE" && node llama_probs.mjs "$OUT/llama/model-Q4_K_M.gguf" --prompts "$OUT/llama/prompts.json" --tokens "$TOKENS" \
        --top "$VOCAB" --kv F32 --flash-attention off --threads "$TH1" > "$TF/llama_decode.jsonl" &&
      node llama_probs.mjs "$OUT/llama/model-Q4_K_M.gguf" --prompts "$OUT/llama/prompts.json" --tokens "$TOKENS" \
        --top "$VOCAB" --kv F32 --flash-attention off --threads "$TH1" --teacher "$TF/llama_decode.jsonl" > "$TF/llama_prefill.jsonl"); then
    TF_IDS=$("$PY" -c 'import json, sys; print(",".join(str(json.loads(l)["id"]) for l in open(sys.argv[1])))' "$TF/llama_decode.jsonl")
    $PSQL -F ' ' > "$TF/tfm.txt" <<EOF || log "FAILED: tfm_next_tokens teacher-forced"
SET tfm.threads = $TH1;
SET tfm.precision = gguf;
SELECT s, n.id, n.probability FROM generate_series(0, $TOKENS - 1) s,
  LATERAL tfm_next_tokens('llama_q4km', (SELECT gen FROM prompts) || ('{$TF_IDS}'::int[])[1:s], k => $VOCAB) n;
EOF
    "$PY" "$HERE/q4km_rounding.py" "$OUT/llama/model-Q4_K_M.gguf" "$OUT/llama/prompts.json" --no-forward --tokens "$TOKENS" \
      --llama "$TF/llama_decode.jsonl" --tfm "$TF/tfm.txt" --probs "llama.cpp prefill=$TF/llama_prefill.jsonl" > "$TF/distances.txt" ||
      log "FAILED: q4km_rounding.py"
    cat "$TF/distances.txt"
  else
    log "FAILED: llama_probs.mjs"
  fi
fi
if [ "$BIG" = 1 ] && [ -z "$(get import_refused)" ]; then
  log "a session's memory after a generation at gguf (load $(load))"
  tfm_footprint_run llama_q4km | tee "$OUT/footprint.txt"
  # tfm_chat end to end (the file's chat template): one call in a fresh
  # session (the model's load included), then one more in the same session
  l=$(load); log "tfm_chat, $TH1 thread(s) (load $l)"
  MSG='[{"role": "user", "content": "Say something about databases."}]'
  if o=$($PSQL -F ' ' 2>&1 <<EOF
SET tfm.threads = $TH1;
SET tfm.precision = gguf;
SELECT clock_timestamp() AS t0 \gset
SELECT length(tfm_chat('llama_q4km', '$MSG'::jsonb, max_tokens => $TOKENS, temperature => 0)) AS n1 \gset
SELECT clock_timestamp() AS t1 \gset
SELECT length(tfm_chat('llama_q4km', '$MSG'::jsonb, max_tokens => $TOKENS, temperature => 0)) AS n2 \gset
SELECT 'first call ' || round(extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz)::numeric, 2) || ' s (a reply of '
       || :n1 || ' characters), the second ' || round(extract(epoch FROM clock_timestamp() - :'t1'::timestamptz)::numeric, 2)
       || ' s; the prompt ' || cardinality(tfm_chat_tokens('llama_q4km', '$MSG'::jsonb)) || ' ids';
EOF
); then
    echo "$o"; res chat "$(echo "$o" | tail -1)"
  else
    echo "$o"; log "FAILED: tfm_chat"; res chat "FAILED: $(echo "$o" | tr '\n' ' ')"
  fi
  res chat_load "$l"
fi

# ---- 5. the encoder ------------------------------------------------------------------------
# Paired rounds: at each thread count the five engines (tfm fp32, bf16, int8
# in a backend each; ONNX Runtime fp32 and int8 in an ort_embed.mjs --serve
# process each) start and do their untimed round, then round by round each
# engine times one batch-1 round, then each one batch-32 round (the order
# reversed every other round), so that a ratio taken within a round compares
# engines under the same load.  The figures are the medians of the rounds;
# the ratios the medians of the per-round ratios.
FIFO=$(mktemp -d /tmp/tfm-benchpeers-fifo.XXXXXX)
declare -A EW ER EP
eng_start() {   # name command...: the engine reads requests on a FIFO, answers on another
  local n=$1 w r; shift
  mkfifo "$FIFO/$n.in" "$FIFO/$n.out"
  # (the engine must not hold the other engines' FIFOs open: they would see no end)
  ( for f in "${EW[@]}" "${ER[@]}"; do eval "exec $f>&-"; done
    exec "$@" ) < "$FIFO/$n.in" > "$FIFO/$n.out" 2> "$FIFO/$n.err" &
  EP[$n]=$!
  exec {w}>"$FIFO/$n.in"; exec {r}<"$FIFO/$n.out"
  EW[$n]=$w; ER[$n]=$r
}
eng_ask() {   # name request: one line back (empty on failure)
  local v=""
  echo "$2" >&"${EW[$1]}" 2>/dev/null && read -r -t 900 v <&"${ER[$1]}" || { log "FAILED: $1: $(tail -3 "$FIFO/$1.err")"; v=""; }
  echo "$v"
}
eng_stop() {
  local n
  for n in "${!EP[@]}"; do
    echo "$([ "${n%%_*}" = tfm ] && echo '\q' || echo quit)" >&"${EW[$n]}" 2>/dev/null || true
    eval "exec ${EW[$n]}>&- ${ER[$n]}<&-"
    wait "${EP[$n]}" 2>/dev/null || true
    rm -f "$FIFO/$n.in" "$FIFO/$n.out" "$FIFO/$n.err"
  done
  EW=(); ER=(); EP=()
}
trap '' PIPE   # an engine that died: its requests fail instead of ending the script
med() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
num() { [[ "$1" =~ ^[0-9.]+$ ]]; }
ENGINES="tfm_fp32 ort_fp32 tfm_bf16 tfm_int8 ort_int8"
PAIRS="tfm_fp32:ort_fp32 tfm_bf16:ort_int8 tfm_int8:ort_int8"
for th in $THREADS; do
  [ "$GGUF_ONLY" = 1 ] && break
  log "encoder, $th thread(s): starting the engines, an untimed round each (load $(load))"
  for prec in fp32 bf16 int8; do
    eng_start "tfm_$prec" stdbuf -oL $PSQL -F ' '
    echo "SET tfm.threads = $th; SET tfm.precision = $prec; SELECT 'ready' FROM (SELECT enc_round(1), enc_round(32)) s;" >&"${EW[tfm_$prec]}"
  done
  for prec in fp32 int8; do
    f=$([ $prec = fp32 ] && echo model.onnx || echo model-int8.onnx)
    eng_start "ort_$prec" node "$HERE/ort_embed.mjs" "$OUT/enc/$f" --threads "$th" --texts "$OUT/enc/texts.json" \
      --precision $prec --out "$OUT/ort_emb_$prec.json" --serve
  done
  for e in $ENGINES; do
    read -r -t 900 v <&"${ER[$e]}" || v=""
    [ "$v" = ready ] || log "FAILED: $e did not start: $v $(tail -3 "$FIFO/$e.err")"
  done
  declare -A V=()
  for r in $(seq 1 "$ROUNDS"); do
    order=$ENGINES; [ $((r % 2)) = 0 ] && order=$(echo $ENGINES | tr ' ' '\n' | tac | tr '\n' ' ')
    for b in 1 32; do
      l=$(load); line="round $r, batch $b (load $l):"
      for e in $order; do
        [ "$r" = 1 ] && res "enc_${e%%_*}_${th}_${e#*_}_load" "$l"
        if [ "${e%%_*}" = tfm ]; then v=$(eng_ask "$e" "SELECT round(enc_round($b)::numeric, 3);")
        else v=$(eng_ask "$e" "$b"); fi
        V[$e,$b,$r]=$v; line="$line $e $v"
      done
      log "$line"
    done
  done
  eng_stop
  for b in 1 32; do
    for e in $ENGINES; do
      m=$(for r in $(seq 1 "$ROUNDS"); do num "${V[$e,$b,$r]}" && echo "${V[$e,$b,$r]}"; done | med)
      best=$(for r in $(seq 1 "$ROUNDS"); do num "${V[$e,$b,$r]}" && echo "${V[$e,$b,$r]}"; done | sort -g | tail -1)
      echo "RESULT what=encoder impl=${e%%_*} precision=${e#*_} threads=$th length=128 batch=$b sequences_per_s=${m:-failed} best=${best:-failed}"
      res "enc_${e%%_*}_${th}_${e#*_}_$b" "$m"
    done
    for pr in $PAIRS; do
      a=${pr%%:*}; c=${pr#*:}
      rs=$(for r in $(seq 1 "$ROUNDS"); do num "${V[$a,$b,$r]}" && num "${V[$c,$b,$r]}" &&
             awk -v x="${V[$a,$b,$r]}" -v y="${V[$c,$b,$r]}" 'BEGIN { if (y > 0) printf "%.4f\n", x / y }'; done)
      [ -n "$rs" ] || continue
      res "pair_${a}_${c}_${th}_$b" "$(echo "$rs" | med) $(echo "$rs" | sort -g | head -1) $(echo "$rs" | sort -g | tail -1)"
      echo "PAIRED what=encoder threads=$th batch=$b $a/$c per-round $(echo $rs) median $(echo "$rs" | med)"
    done
  done
  unset V
  # the embeddings (batch 32) at the first thread count, for the agreement
  if [ "$th" = "$(echo $THREADS | cut -d' ' -f1)" ]; then
    for prec in fp32 bf16 int8; do
      $PSQL -c "SET tfm.precision = $prec" \
            -c "SELECT e.embedding FROM tfm_embed('enc', ARRAY(SELECT body FROM enc_texts ORDER BY o)) e ORDER BY e.ord" \
            > "$OUT/tfm_emb_$prec.txt"
    done
  fi
done
rm -rf "$FIFO"
# agreement (agree.py: max |difference|, least cosine) of every engine's 32
# embeddings (batch 32, the first thread count) with the float64 forward
# and with tfm fp32's
EMB=""
for e in tfm_fp32:tfm_emb_fp32.txt tfm_bf16:tfm_emb_bf16.txt tfm_int8:tfm_emb_int8.txt \
         ort_fp32:ort_emb_fp32.json ort_int8:ort_emb_int8.json; do
  [ -f "$OUT/${e#*:}" ] && EMB="$EMB ${e%%:*}=$OUT/${e#*:}"
done
if [ -n "$EMB" ]; then
  "$PY" "$HERE/agree.py" "$OUT/enc/reference.json" $EMB | while read -r n d c; do res "emb_ref_$n" "$d $c"; done
  [ -f "$OUT/tfm_emb_fp32.txt" ] &&
    "$PY" "$HERE/agree.py" "$OUT/tfm_emb_fp32.txt" $EMB | while read -r n d c; do res "emb_tfm_$n" "$d $c"; done
  [ -f "$OUT/ort_emb_fp32.json" ] && [ -f "$OUT/tfm_emb_fp32.txt" ] &&
    res emb_tfm_ort "$("$PY" "$HERE/agree.py" "$OUT/ort_emb_fp32.json" "x=$OUT/tfm_emb_fp32.txt" | cut -d' ' -f2-)"
fi
cluster_stop

# ---- 6. the table ----------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b == 0) print "—"; else printf "%.2fx", a / b }'; }
agree() {  # leading ids two comma lists share / the longer's length
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, ","); m = split(b, y, ","); k = 0;
    while (k < n && k < m && x[k+1] == y[k+1]) k++; printf "%d/%d", k, (n > m ? n : m) }'
}
row() {  # what threads tfm peer tfm_load peer_load kernel
  # --gguf-only / --encoder-only: a row neither engine ran is left out, not "failed"
  # (tfm's batch-8 rows have "—" for a peer)
  { [ -z "$3$4" ] || { [ -z "$3" ] && [ "$4" = "—" ]; }; } && [ "$GGUF_ONLY$ENC_ONLY" != 00 ] && return
  echo "| $1 | $2 | ${3:-failed} | ${4:-failed} | $(ratio "$3" "$4") | $7 | $5; $6 |"
}
{
  echo
  echo "## bench/peers, $(date -u '+%Y-%m-%d %H:%M UTC'), tfm at $(git rev-parse --short HEAD), size $SIZE"
  echo
  echo "- machine: $MACHINE; load average now $(load)"
  echo "- tfm_info(): $INFO"
  echo "- peers: $PEERS; llama.cpp CPU features: $LLAMA_SYS; in the timed runs its key/value cache $KV and flash attention $FA"
  w=$(get warn); [ -n "$w" ] && echo "- **WARNING: $w**"
  if [ "$BIG" = 1 ]; then
  f=$(get q4km_file)
  echo
  echo "$SHAPE shape at Q4_K_M (ggml's quantizer), the file $f bytes ($(awk -v b="$f" 'BEGIN { printf "%.2f GB", b / 1e9 }'))."
  r=$(get import_refused)
  if [ -n "$r" ]; then
    echo
    echo "**tfm refused the file** ($(get q4km_settings)): $r"
  else
    echo "Imported by tfm_import_gguf_file in $(get import_q4km) s (load $(get import_q4km_load) before); its rows $(get q4km_rows) bytes ($(ratio "$(get q4km_rows)" "$f") the file; the kept blocks $(get q4km_blocks) bytes, $(ratio "$(get q4km_blocks)" "$f")); tfm_model_footprint as stored: $(get q4km_stored)."
    [ -f "$OUT/footprint.txt" ] && { echo; echo "After a generation at gguf, in a fresh session:"; echo; sed 's/^/    /' "$OUT/footprint.txt"; }
  fi
  echo
  echo "Batch 1, greedy, a 16-id prompt + $TOKENS new tokens (the whole call timed), and prefill (one pass over 128 ids), tokens/s; tfm gguf and llama.cpp Q4_K_M (cache $KV, flash attention $FA) in interleaved rounds, one timed call each after an untimed one: every round's figure, then the median:"
  echo
  echo "| what | threads | tfm gguf (rounds) | llama.cpp (rounds) | tfm median | llama.cpp median | tfm / llama.cpp | load before each (tfm; llama.cpp) |"
  echo "|---|---|---|---|---|---|---|---|"
  for th in $THREADS; do
    for k in gen pre; do
      a=$(getall ${k}_tfm_${th}_gguf); b=$(getall ${k}_llama_${th}_Q4_K_M)
      ma=$(echo "$a" | median); mb=$(echo "$b" | median)
      echo "| $([ $k = gen ] && echo generation || echo prefill) | $th | ${a:-—} | ${b:-—} | ${ma:-—} | ${mb:-—} | $(ratio "$ma" "$mb") | $(getall gen_tfm_${th}_gguf_load | load1s); $(getall gen_llama_${th}_Q4_K_M_load | load1s) |"
    done
  done
  echo
  for th in $THREADS; do
    echo "- Greedy ids, tfm gguf = llama.cpp Q4_K_M as timed, $th thread(s): $(agree "$(get gen_tfm_${th}_gguf_ids)" "$(get gen_llama_${th}_Q4_K_M_ids)") leading ids equal; = llama.cpp Q4_K_M computed in F32 (F32 cache, flash attention off, $TH1 thread(s)): **$(agree "$(get gen_tfm_${th}_gguf_ids)" "$(get gen_llama_${TH1}_q4km_exact_ids)")**."
  done
  echo
  echo "For information, llama.cpp Q4_K_M as timed = llama.cpp Q4_K_M computed in F32, $TH1 thread(s): $(agree "$(get gen_llama_${TH1}_Q4_K_M_ids)" "$(get gen_llama_${TH1}_q4km_exact_ids)") leading ids equal (llama.cpp against itself: its defaults, F16 cache and flash attention, against its F32 path)."
  if [ -n "$TF" ] && [ -s "$TF/distances.txt" ]; then
    echo
    echo "Teacher-forced on llama.cpp's $TOKENS greedy ids (F32 cache, flash attention off; q4km_rounding.py --no-forward): llama.cpp decoding against its own prefill of the same prefixes is the yardstick for tfm gguf against llama.cpp:"
    echo
    echo '```'
    sed 's/^ *//' "$TF/distances.txt"
    echo '```'
  fi
  c=$(get chat)
  if [ -n "$c" ]; then
    echo
    echo "tfm_chat end to end (the file's chat template, one user message, max_tokens $TOKENS, temperature 0, tfm.precision gguf, $TH1 thread(s), a fresh session: the model's load included), load $(get chat_load) before: $c."
  fi
  fi
  if [ "$ENC_ONLY" = 0 ] && [ "$BIG" = 0 ]; then
  echo
  echo "Generation, batch 1, greedy, a 16-id prompt + $TOKENS new tokens (the whole call timed), and prefill (one pass over 128 ids), tokens/s, the median of $ROUNDS:"
  echo
  echo "| what | threads | tfm | peer | tfm / peer | tfm kernel | load before (tfm; peer) |"
  echo "|---|---|---|---|---|---|---|"
  for th in $THREADS; do
    row "generation: tfm fp32 / llama.cpp F32" "$th" "$(get gen_tfm_${th}_fp32)" "$(get gen_llama_${th}_F32)" "$(get gen_tfm_${th}_fp32_load)" "$(get gen_llama_${th}_F32_load)" "fp32: tfm's gemv"
    row "generation: tfm int8 / llama.cpp Q8_0" "$th" "$(get gen_tfm_${th}_int8)" "$(get gen_llama_${th}_Q8_0)" "$(get gen_tfm_${th}_int8_load)" "$(get gen_llama_${th}_Q8_0_load)" "int8: $KINT8"
    row "generation: tfm int4 (the Q4_0 file) / llama.cpp Q4_0" "$th" "$(get gen_tfm_${th}_int4)" "$(get gen_llama_${th}_Q4_0)" "$(get gen_tfm_${th}_int4_load)" "$(get gen_llama_${th}_Q4_0_load)" "int4: $KINT4"
    row "generation: tfm gguf (the Q4_K_M file's blocks) / llama.cpp Q4_K_M" "$th" "$(get gen_tfm_${th}_gguf)" "$(get gen_llama_${th}_Q4_K_M)" "$(get gen_tfm_${th}_gguf_load)" "$(get gen_llama_${th}_Q4_K_M_load)" "gguf: kquant $KKQ"
    row "generation: tfm gguf (Q4_K_M) / tfm int4 (Q4_0), the same shape" "$th" "$(get gen_tfm_${th}_gguf)" "$(get gen_tfm_${th}_int4)" "$(get gen_tfm_${th}_gguf_load)" "$(get gen_tfm_${th}_int4_load)" "gguf: kquant $KKQ"
    row "generation, batch 8, tfm fp32 (not measured for llama.cpp)" "$th" "$(get gen8_tfm_${th}_fp32)" "—" "$(get gen_tfm_${th}_fp32_load)" "—" "fp32: tfm's gemv"
    row "generation, batch 8, tfm int8 (not measured for llama.cpp)" "$th" "$(get gen8_tfm_${th}_int8)" "—" "$(get gen_tfm_${th}_int8_load)" "—" "int8: $KINT8"
    row "generation, batch 8, tfm int4 (not measured for llama.cpp)" "$th" "$(get gen8_tfm_${th}_int4)" "—" "$(get gen_tfm_${th}_int4_load)" "—" "int4: $KINT4"
    row "prefill: tfm fp32 / llama.cpp F32" "$th" "$(get pre_tfm_${th}_fp32)" "$(get pre_llama_${th}_F32)" "$(get gen_tfm_${th}_fp32_load)" "$(get gen_llama_${th}_F32_load)" "fp32: BLIS $KBLIS"
    row "prefill: tfm int8 / llama.cpp Q8_0" "$th" "$(get pre_tfm_${th}_int8)" "$(get pre_llama_${th}_Q8_0)" "$(get gen_tfm_${th}_int8_load)" "$(get gen_llama_${th}_Q8_0_load)" "int8: $KINT8"
    row "prefill: tfm int4 (the Q4_0 file) / llama.cpp Q4_0" "$th" "$(get pre_tfm_${th}_int4)" "$(get pre_llama_${th}_Q4_0)" "$(get gen_tfm_${th}_int4_load)" "$(get gen_llama_${th}_Q4_0_load)" "int4: $KINT4"
    row "prefill: tfm gguf (the Q4_K_M file's blocks) / llama.cpp Q4_K_M" "$th" "$(get pre_tfm_${th}_gguf)" "$(get pre_llama_${th}_Q4_K_M)" "$(get gen_tfm_${th}_gguf_load)" "$(get gen_llama_${th}_Q4_K_M_load)" "gguf: kquant $KKQ"
  done
  echo
  if [ "$GGUF_ONLY" = 0 ]; then
  echo -n "Greedy ids (leading ids equal / $TOKENS), tfm fp32 = llama.cpp F32 computed exactly (F32 cache, flash attention off):"
  for th in $THREADS; do echo -n " $th thread(s) **$(agree "$(get gen_tfm_${th}_fp32_ids)" "$(get gen_llama_${TH1}_exact_ids)")**;"; done
  echo
  fi
  echo -n "For information:"
  if [ "$GGUF_ONLY" = 0 ]; then
  echo -n " tfm fp32 = llama.cpp F32 as timed (cache $KV, flash attention $FA):"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_fp32_ids)" "$(get gen_llama_${th}_F32_ids)");"; done
  echo -n " tfm int8 = llama.cpp Q8_0 (each quantized its own way):"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_int8_ids)" "$(get gen_llama_${th}_Q8_0_ids)");"; done
  echo -n " tfm int8 = tfm fp32:"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_int8_ids)" "$(get gen_tfm_${th}_fp32_ids)");"; done
  fi
  echo -n " tfm int4 = llama.cpp Q4_0 (the same blocks; activations quantized each its own way):"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_int4_ids)" "$(get gen_llama_${th}_Q4_0_ids)");"; done
  echo -n " tfm gguf = llama.cpp Q4_K_M (the same blocks, activations quantized to Q8_K alike):"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_gguf_ids)" "$(get gen_llama_${th}_Q4_K_M_ids)");"; done
  echo -n " tfm gguf = llama.cpp Q4_K_M computed in F32 (F32 cache, flash attention off):"
  for th in $THREADS; do echo -n " $th thread(s) $(agree "$(get gen_tfm_${th}_gguf_ids)" "$(get gen_llama_${TH1}_q4km_exact_ids)");"; done
  echo " (with Q8_K activations float rounding flips quantized integers, so ids part at near ties: llama.cpp's own AVX2 and AVX-512 builds do; q4km_rounding.py and doc/performance.md measure it)"
  if [ -n "$TF" ] && [ -s "$TF/distances.txt" ]; then
    echo
    echo "Q4_K_M teacher-forced on llama.cpp's $TOKENS greedy ids (F32 cache, flash attention off; logits as log-probabilities less their mean; q4km_rounding.py --no-forward): llama.cpp decoding against its own prefill of the same prefixes is the yardstick for tfm gguf against llama.cpp:"
    echo
    echo '```'
    sed 's/^ *//' "$TF/distances.txt"
    echo '```'
    echo
  fi
  f=$(get q4km_file)
  [ -n "$f" ] && echo "Q4_K_M file: $f bytes, imported in $(get import_q4km) s; its rows $(get q4km_rows) bytes ($(ratio "$(get q4km_rows)" "$f") the file: the kept blocks $(get q4km_blocks) bytes, $(ratio "$(get q4km_blocks)" "$f"), the rest the float32 values of the tensors not stored as blocks: the norms)."
  fi
  [ "$BIG" = 1 ] || [ "$GGUF_ONLY" = 1 ] && exit 0
  echo
  echo "MiniLM-shaped encoder, 32 sequences of 128 ids, sequences/s, the median of $ROUNDS paired rounds (batch 1: a call / run per sequence; batch 32: tfm_embed(model, text[]), one [32, 128] ONNX Runtime run; the engines' rounds interleaved, see step 5); the ratios are the medians of the per-round ratios [their least and greatest] (the ratio of the medians in parentheses); ONNX Runtime int8: its dynamic quantization (onnx_int8.py: DynamicQuantizeLinear + MatMulInteger, int8 weights per tensor):"
  echo
  echo "| batch | threads | tfm fp32 | tfm bf16 | tfm int8 | ORT fp32 | ORT int8 | tfm fp32 / ORT fp32 | tfm bf16 / ORT int8 | tfm int8 / ORT int8 | load before (tfm fp32, bf16, int8; ORT fp32, int8) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  pratio() {  # tfm-engine ort-engine threads batch
    local p; p=$(get "pair_$1_$2_$3_$4")
    if [ -z "$p" ]; then echo "—"; return; fi
    set -- $p "$(ratio "$(get "enc_${1%%_*}_$3_${1#*_}_$4")" "$(get "enc_${2%%_*}_$3_${2#*_}_$4")")"
    awk -v m="$1" -v lo="$2" -v hi="$3" -v r="$4" 'BEGIN { printf "%.2fx [%.2f–%.2f] (%s)", m, lo, hi, r }'
  }
  for b in 1 32; do
    for th in $THREADS; do
      g() { v=$(get "$1"); echo "${v:-failed}"; }
      echo "| $b | $th | $(g enc_tfm_${th}_fp32_$b) | $(g enc_tfm_${th}_bf16_$b) | $(g enc_tfm_${th}_int8_$b) | $(g enc_ort_${th}_fp32_$b) | $(g enc_ort_${th}_int8_$b)" \
           "| $(pratio tfm_fp32 ort_fp32 $th $b) | $(pratio tfm_bf16 ort_int8 $th $b)" \
           "| $(pratio tfm_int8 ort_int8 $th $b)" \
           "| $(get enc_tfm_${th}_fp32_load); $(get enc_tfm_${th}_bf16_load); $(get enc_tfm_${th}_int8_load); $(get enc_ort_${th}_fp32_load); $(get enc_ort_${th}_int8_load) |"
    done
  done
  echo
  echo "tfm kernels: fp32 tfm_gemm_rows (the row-exact product of varlen passes: AVX-512, else AVX2 + FMA where the CPU has them, else plain C; not BLIS $KBLIS); bf16 $KBF16; int8 $KINT8.  Embeddings (the 32 of batch 32, at $(echo $THREADS | cut -d' ' -f1) thread(s)), max |difference| / least cosine:"
  echo
  echo "| engine | against float64 (the same forward in PyTorch float64) | against tfm fp32 |"
  echo "|---|---|---|"
  for n in tfm_fp32 tfm_bf16 tfm_int8 ort_fp32 ort_int8; do
    r=$(get emb_ref_$n); t=$(get emb_tfm_$n)
    echo "| $n | ${r:-—} | ${t:-—} |" | sed 's|\([0-9]\) \([0-9]\)|\1 / \2|g'
  done
  e=$(get emb_tfm_ort)
  if [ -n "$e" ]; then
    ok=$(awk -v d="${e%% *}" 'BEGIN { print (d <= 1e-4 ? "equal" : "NOT EQUAL") }')
    echo
    echo "tfm fp32 against ONNX Runtime fp32: ${e% *} / ${e#* } (**$ok** within 1e-4)."
  fi
  q=$(get emb_ref_ort_int8)
  if [ -n "$q" ]; then
    ok=$(awk -v c="${q#* }" 'BEGIN { print (c >= 0.999 ? "within" : "NOT within") }')
    echo "ONNX Runtime int8 against float64: least cosine ${q#* } (**$ok** int8's tolerance, 0.999)."
  fi
  if [ -n "$w" ]; then echo; echo "**$w.**"; fi
} | tee "$OUT/table.md"
log "done; log in $LOG"
