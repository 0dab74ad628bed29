#!/bin/bash
# run.sh — issue 17's speed section: an imported GPT-2 small and a
# MiniLM-shaped encoder, tfm through SQL beside PyTorch with the same
# weights / shape, on this machine, in one run (~10 minutes).
#
#   1. a random GPT-2 small (HF names and config, F32, tied head, GPT-2's
#      real tokenizer.json) written by torch_gpt2.py make; the time of
#      tfm_import_files('gpt2s', dir) as a superuser
#   2. generation with the key/value cache, greedy, batch 1, 64 new tokens
#      after a 16-token int[] prompt: tfm_generate_tokens at tfm.threads 1
#      and 2, tfm.precision fp32 / bf16 / int8, beside torch_gpt2.py
#      generate (the same safetensors, its own cache); the greedy ids of tfm
#      fp32 and PyTorch are compared
#   3. a MiniLM-shaped classifier (6 post-LN layers, d 384, 12 heads,
#      d_ff 1536, vocab 30522, GELU, mean pooling) made by tfm_create_model:
#      embeddings/s for 128-token inputs, ROWS rows, at fp32 and bf16, through
#      `SELECT tfm_embed('minilm', ids) FROM t` (one forward per row) and
#      through the batched text[] form tfm_embed(model, text[]) (batches of
#      up to 512 tokens inside; needs a tokenizer, so a twin of the same shape
#      with a character tokenizer and 128-letter texts), beside nn.TransformerEncoder
#      of the same shape (batch 32, mean pooling, no_grad)
#   4. a table with the ratios tfm / PyTorch and the load average before
#      each measurement; the log in bench/import/last-run.log
#
# Environment: PGBIN (the cluster's server binaries; cluster.sh), PG_CONFIG
# (if set, build and install tfm with it first), GEN_THREADS ("1 2"),
# ENC_THREADS ("1 2"), ROWS (256), OUT (a fresh temporary directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
GEN_THREADS=${GEN_THREADS:-"1 2"}
ENC_THREADS=${ENC_THREADS:-"1 2"}
ROWS=${ROWS:-256}
PY=/usr/bin/python3
PSQL="psql -X -q -At -v ON_ERROR_STOP=1"
LOG=$HERE/last-run.log
# a 16-token prompt (GPT-2 ids of "The dog of the sea was a small boat, and the dog were born")
PROMPT=464,3290,286,262,6801,1110,373,257,1310,2350,11,290,262,3290,547,4642

exec > >(tee "$LOG") 2>&1
log() { echo "[$(date -u '+%H:%M:%S')] $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
RES=$(mktemp /tmp/tfm-benchimport-res.XXXXXX)   # key|value lines for the table
res() { echo "$1|$2" >> "$RES"; }

log "bench/import at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (modified)'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
if [ -n "${PG_CONFIG:-}" ]; then
  log "building tfm with $PG_CONFIG"
  make -s -j2 PG_CONFIG="$PG_CONFIG" && make -s install PG_CONFIG="$PG_CONFIG"
fi

OUT=${OUT:-$(mktemp -d /tmp/tfm-benchimport.XXXXXX)}
chmod 755 "$OUT"
. scripts/cluster.sh
cluster_start
trap 'cluster_stop; rm -rf "$OUT" "$RES"' EXIT
$PSQL -c "CREATE EXTENSION tfm" -c "SET tfm.threads = 1" -c "SELECT * FROM tfm_info()"

# ---- 1. checkpoint and import -------------------------------------------------
log "writing a random GPT-2 small (HF layout) into $OUT/gpt2s"
$PY "$HERE/torch_gpt2.py" make "$OUT/gpt2s"
chmod -R a+rX "$OUT"
res import_load "$(load)"
log "tfm_import_files (load $(load))"
$PSQL <<EOF > "$OUT/import.txt" 2>&1
SET tfm.threads = 1;
DO \$\$
DECLARE t timestamptz := clock_timestamp(); r record;
BEGIN
  SELECT * INTO r FROM tfm_import_files('gpt2s', '$OUT/gpt2s');
  RAISE NOTICE 'RESULT what=import model=% task=% parameters=% seconds=%', r.model, r.model_task, r.parameters,
    round(extract(epoch FROM clock_timestamp() - t)::numeric, 2);
END \$\$;
EOF
grep -o 'RESULT.*' "$OUT/import.txt" || true
res import_s "$(grep -o 'seconds=[0-9.]*' "$OUT/import.txt" | cut -d= -f2)"
$PSQL -c "SELECT 'prompt: ' || tfm_detokenize('gpt2s', '{$PROMPT}'::int[])" 2>/dev/null || true

$PSQL <<'EOF'
CREATE FUNCTION gen_speed(model text, prompt int[], n integer, OUT tokens bigint, OUT tokens_per_s float8, OUT ids text)
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz;
  rates float8[] := '{}';
BEGIN
  PERFORM count(*) FROM tfm_generate_tokens(model, prompt, max_tokens => n, temperature => 0);  -- load, pack
  FOR i IN 1..3 LOOP
    t := clock_timestamp();
    SELECT count(*), string_agg(g.id::text, ',' ORDER BY g.pos) INTO tokens, ids
      FROM tfm_generate_tokens(model, prompt, max_tokens => n, temperature => 0) g;
    rates := rates || (tokens / extract(epoch FROM clock_timestamp() - t)::float8);
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY r) INTO tokens_per_s FROM unnest(rates) r;
END $$;
EOF

# ---- 2. generation -------------------------------------------------------------
for th in $GEN_THREADS; do
  for prec in fp32 bf16 int8; do
    l=$(load)
    log "tfm generate threads=$th precision=$prec (load $l)"
    line=$($PSQL -F ' ' <<EOF
SET tfm.threads = $th;
SET tfm.precision = $prec;
SELECT tokens, round(tokens_per_s::numeric, 2), ids FROM gen_speed('gpt2s', '{$PROMPT}', 64);
EOF
)
    set -- $line
    echo "RESULT what=generate impl=tfm threads=$th precision=$prec tokens=$1 tokens_per_s=$2"
    echo "IDS $3"
    res "gen_tfm_${th}_$prec" "$2"
    res "gen_tfm_${th}_${prec}_load" "$l"
    res "gen_tfm_${th}_${prec}_ids" "$3"
  done
  l=$(load)
  log "PyTorch generate threads=$th (load $l)"
  BLIS_NUM_THREADS=$th OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th \
    $PY "$HERE/torch_gpt2.py" generate "$OUT/gpt2s" --threads "$th" --prompt "$PROMPT" --tokens 64 --seconds 0 \
    | tee "$OUT/torch_gen_$th.txt"
  res "gen_torch_$th" "$(sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p' "$OUT/torch_gen_$th.txt")"
  res "gen_torch_${th}_load" "$l"
  res "gen_torch_${th}_ids" "$(sed -n 's/^IDS //p' "$OUT/torch_gen_$th.txt")"
done
$PSQL -c "SELECT tfm_drop_model('gpt2s')" >/dev/null

# ---- 3. the MiniLM-shaped encoder ---------------------------------------------------
log "MiniLM-shaped classifiers and $ROWS rows of 128 ids / 128 letters"
$PSQL <<EOF
SELECT tfm_tokenizer_train('enc_letters', 'abcdefghijklmnopqrstuvwxyz', 'char');
SELECT 'minilm: ' || parameters || ' parameters' FROM tfm_create_model('minilm', 'classify', vocab_size => 30522,
  labels => ARRAY['a','b'], d_model => 384, heads => 12, layers => 6, d_ff => 1536, max_len => 512,
  norm => 'post', activation => 'gelu', pooling => 'mean', dropout => 0);
SELECT 'minilm_letters: ' || parameters || ' parameters' FROM tfm_create_model('minilm_letters', 'classify',
  tokenizer => 'enc_letters', labels => ARRAY['a','b'], d_model => 384, heads => 12, layers => 6, d_ff => 1536,
  max_len => 512, norm => 'post', activation => 'gelu', pooling => 'mean', dropout => 0);
SELECT setseed(0.17);
CREATE TABLE t AS SELECT i, ARRAY(SELECT 6 + floor(random() * 30516)::int + 0 * i FROM generate_series(1, 128)) AS ids
  FROM generate_series(1, $ROWS) i;
CREATE TABLE tt AS SELECT i, (SELECT string_agg(chr(97 + floor(random() * 26)::int), '') FROM generate_series(1, 128) WHERE i > 0) AS body
  FROM generate_series(1, $ROWS) i;
SELECT 'token ids per letters row: ' || array_length(tfm_tokenize('enc_letters', body), 1) FROM tt LIMIT 1;
CREATE FUNCTION enc_speed(q text, n integer) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz;
BEGIN
  EXECUTE q || ' LIMIT 8';   -- load and pack the model (LIMIT applies to count's one row: a whole untimed pass)
  t := clock_timestamp();
  EXECUTE q;
  RETURN n / extract(epoch FROM clock_timestamp() - t)::float8;
END \$\$;
EOF

for th in $ENC_THREADS; do
  for prec in fp32 bf16; do
    for path in row batched; do
      q="SELECT count(tfm_embed('minilm', ids)) FROM t"
      l=$(load)
      log "tfm encoder threads=$th precision=$prec path=$path (load $l)"
      if [ $path = row ]; then
        r=$($PSQL -c "SET tfm.threads = $th" -c "SET tfm.precision = $prec" \
                  -c "SELECT round(enc_speed(\$q\$$q\$q\$, $ROWS)::numeric, 2)")
      else
        # one call with all the texts (tfm_embed(model, text[]) runs them in batches)
        r=$($PSQL <<EOF
SET tfm.threads = $th;
SET tfm.precision = $prec;
DO \$\$ BEGIN PERFORM count(*) FROM tfm_embed('minilm_letters', ARRAY(SELECT body FROM tt ORDER BY i LIMIT 8)); END \$\$;
CREATE TEMP TABLE tim AS SELECT clock_timestamp() AS t0;
SELECT count(*) FROM tfm_embed('minilm_letters', ARRAY(SELECT body FROM tt ORDER BY i)) \gset
SELECT round(($ROWS / extract(epoch FROM clock_timestamp() - t0))::numeric, 2) FROM tim;
EOF
)
      fi
      r=$(echo "$r" | tail -1)
      echo "RESULT what=encoder impl=tfm threads=$th precision=$prec path=$path embeddings_per_s=$r"
      res "enc_tfm_${th}_${prec}_$path" "$r"
      res "enc_tfm_${th}_${prec}_${path}_load" "$l"
    done
  done
  l=$(load)
  log "PyTorch encoder threads=$th (load $l)"
  BLIS_NUM_THREADS=$th OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th \
    $PY "$HERE/torch_gpt2.py" encoder --threads "$th" --rows "$ROWS" --batch 32 --len 128 --seconds 0 \
    | tee "$OUT/torch_enc_$th.txt"
  res "enc_torch_$th" "$(sed -n 's/.*kind=best embeddings_per_s=\([0-9.]*\).*/\1/p' "$OUT/torch_enc_$th.txt")"
  res "enc_torch_${th}_load" "$l"
done

# ---- 4. the table ----------------------------------------------------------------
get() { grep -m1 "^$1|" "$RES" | cut -d'|' -f2-; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "?"; else printf "%.2f×", a / b }'; }
agree() {  # how many leading ids two comma lists share, of the longer's length
  awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, ","); m = split(b, y, ","); k = 0;
    while (k < n && k < m && x[k+1] == y[k+1]) k++; printf "%d/%d", k, (n > m ? n : m) }'
}
{
  echo
  echo "## bench/import, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo
  echo "Import: tfm_import_files('gpt2s', dir) of a 498 MB F32 GPT-2 small: **$(get import_s) s** (load before: $(get import_load))"
  echo
  echo "Generation, batch 1, greedy, 16-token int[] prompt + 64 new tokens, tokens/s (median of 3 after a warm-up call):"
  echo
  echo "| threads | tfm fp32 | tfm bf16 | tfm int8 | PyTorch fp32 (own KV cache) | fp32 / PyTorch | bf16 / PyTorch | int8 / PyTorch | greedy ids tfm fp32 = PyTorch | load avg before (tfm fp32, bf16, int8; PyTorch) |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for th in $GEN_THREADS; do
    p=$(get gen_torch_$th)
    echo "| $th | $(get gen_tfm_${th}_fp32) | $(get gen_tfm_${th}_bf16) | $(get gen_tfm_${th}_int8) | $p" \
         "| $(ratio "$(get gen_tfm_${th}_fp32)" "$p") | $(ratio "$(get gen_tfm_${th}_bf16)" "$p") | $(ratio "$(get gen_tfm_${th}_int8)" "$p")" \
         "| $(agree "$(get gen_tfm_${th}_fp32_ids)" "$(get gen_torch_${th}_ids)")" \
         "| $(get gen_tfm_${th}_fp32_load); $(get gen_tfm_${th}_bf16_load); $(get gen_tfm_${th}_int8_load); $(get gen_torch_${th}_load) |"
  done
  echo
  echo "bf16 / int8 greedy ids agreeing with fp32 (leading ids):" \
    $(for th in $GEN_THREADS; do echo "threads $th: bf16 $(agree "$(get gen_tfm_${th}_bf16_ids)" "$(get gen_tfm_${th}_fp32_ids)"), int8 $(agree "$(get gen_tfm_${th}_int8_ids)" "$(get gen_tfm_${th}_fp32_ids)");"; done)
  echo
  echo "MiniLM-shaped encoder, 128-token inputs, $ROWS rows, embeddings/s (PyTorch: nn.TransformerEncoder, batch 32, the faster of its fast path and module path):"
  echo
  echo "| threads | precision | tfm tfm_embed per row | tfm tfm_embed(text[]) batched | PyTorch fp32 | per row / PyTorch | batched / PyTorch | load avg before (row; batched; PyTorch) |"
  echo "|---|---|---|---|---|---|---|---|"
  for th in $ENC_THREADS; do
    p=$(get enc_torch_$th)
    for prec in fp32 bf16; do
      a=$(get enc_tfm_${th}_${prec}_row); b=$(get enc_tfm_${th}_${prec}_batched)
      echo "| $th | $prec | $a | $b | $p | $(ratio "$a" "$p") | $(ratio "$b" "$p")" \
           "| $(get enc_tfm_${th}_${prec}_row_load); $(get enc_tfm_${th}_${prec}_batched_load); $(get enc_torch_${th}_load) |"
    done
  done
} | tee "$OUT/table.md"
log "done; log in $LOG"
