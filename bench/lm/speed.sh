#!/bin/bash
# speed.sh — training and generation speed of tfm's language models beside
# PyTorch, for two shapes (run by bench/lm/run.sh speed, on its cluster):
#
#   small   the Moby-Dick char model: vocab 89, d 128, 4 heads, 4 layers,
#           d_ff 512; training batch 64 × 128 tokens
#   gpt2s   GPT-2-small's shape: GPT-2's vocabulary (50,257 ids; tfm adds
#           its 6 special ids after them), d 768, 12 heads, 12 layers,
#           d_ff 3072; training batch 4 × 64 tokens
#
# tfm is measured through SQL, as users run it: training tokens/s is the
# tokens_per_s that tfm_train reports for max_steps steps over the Moby-Dick
# text (the first step and the reading of the rows included); generation is
# tfm_generate_tokens, greedy, from a 16-token prompt for 48 new tokens
# (prompt included in the time; one untimed call first, so the model is
# loaded and cached; the median of 3 calls). PyTorch (torch_lm.py speed):
# the same shapes on random ids, median step time after a warm-up, and
# generation from a 16-token prompt for 48 tokens without a cache (the
# whole prefix again for every token) and with a key/value cache.
#
#   speed.sh OUT     (PGHOST etc. set, extension created, THREADS exported)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$1
THREADS=${THREADS:-2}
DATA=${DATA:-$ROOT/../shared/data}
PSQL="psql -X -q -v ON_ERROR_STOP=1"
log() { echo "[$(date '+%H:%M:%S')] $*"; }

gzip -dc "$DATA/moby_dick_train.txt.gz" > "$OUT/moby_train.txt"
chmod 644 "$OUT/moby_train.txt"
$PSQL <<EOF
CREATE TABLE IF NOT EXISTS moby (part text PRIMARY KEY, body text NOT NULL);
INSERT INTO moby VALUES ('train', convert_from(pg_read_binary_file('$OUT/moby_train.txt'), 'UTF8'))
  ON CONFLICT DO NOTHING;
SELECT tfm_tokenizer_train('speed_chars', body, 'char') FROM moby WHERE part = 'train';
\set enc \`zcat $ROOT/test/fixtures/tokenizer/gpt2_encoder.json.gz\`
\set bpe \`zcat $ROOT/test/fixtures/tokenizer/gpt2_vocab.bpe.gz\`
SELECT tfm_tokenizer_import('speed_gpt2', 'bpe', :'enc', :'bpe');
SELECT name, kind, vocab_size FROM tfm.tokenizer_list WHERE name LIKE 'speed_%';
CREATE OR REPLACE FUNCTION lm_gen_speed(model text, prompt text, n integer, OUT tokens bigint, OUT tokens_per_s float8)
LANGUAGE plpgsql AS \$\$
DECLARE
  t timestamptz;
  rates float8[] := '{}';
BEGIN
  PERFORM count(*) FROM tfm_generate_tokens(model, prompt, max_tokens => n, temperature => 0);
  FOR i IN 1..3 LOOP
    t := clock_timestamp();
    SELECT count(*) INTO tokens FROM tfm_generate_tokens(model, prompt, max_tokens => n, temperature => 0);
    rates := rates || (tokens / extract(epoch FROM clock_timestamp() - t)::float8);
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY r) INTO tokens_per_s FROM unnest(rates) r;
END \$\$;
EOF

# shape: name tokenizer "create options" batch max_steps train_len
tfm_shape() {
  local name=$1 tok=$2 copts=$3 batch=$4 steps=$5 len=$6 prompt=$7
  log "tfm $name: training speed ($steps steps, batch $batch × $len)"
  $PSQL <<EOF | tee "$OUT/speed_tfm_$name.txt"
SET tfm.threads = $THREADS;
SET tfm.progress = off;
SELECT parameters FROM tfm_create_model('${name}_t', 'lm', '$tok', $copts, max_len => $len);
SELECT 'RESULT shape=$name what=train tokens_per_s=' || round(tokens_per_s::numeric, 1)
FROM tfm_train('${name}_t', 'SELECT body FROM moby WHERE part = ''train''', batch_size => $batch,
               max_steps => $steps);
SELECT tfm_drop_model('${name}_t');
SELECT parameters FROM tfm_create_model('${name}_g', 'lm', '$tok', $copts, max_len => 1024);
SELECT 'RESULT shape=$name what=generate tokens=' || tokens || ' tokens_per_s=' || round(tokens_per_s::numeric, 2)
FROM lm_gen_speed('${name}_g', '$prompt', 48);
SELECT tfm_drop_model('${name}_g');
EOF
}

# a 16-token prompt for each tokenizer
tfm_shape small speed_chars "d_model => 128, heads => 4, layers => 4, d_ff => 512" 64 100 128 "Call me Ishmael."
tfm_shape gpt2s speed_gpt2 "d_model => 768, heads => 12, layers => 12, d_ff => 3072" 4 12 64 \
  "Call me Ishmael. Some years ago, never mind how long precisely, having"
$PSQL -At -c "SELECT array_length(tfm_tokenize('speed_gpt2', 'Call me Ishmael. Some years ago, never mind how long precisely, having'), 1)
              || ' GPT-2 tokens in the gpt2s prompt'"

log "PyTorch: small"
/usr/bin/python3 "$HERE/torch_lm.py" speed --vocab 89 --d 128 --heads 4 --layers 4 --dff 512 --max-len 1024 \
  --batch 64 --seq 128 --gen-prompt 16 --gen-tokens 48 --threads "$THREADS" --tag small | tee "$OUT/speed_torch_small.txt"
log "PyTorch: gpt2s"
/usr/bin/python3 "$HERE/torch_lm.py" speed --vocab 50257 --d 768 --heads 12 --layers 12 --dff 3072 --max-len 1024 \
  --batch 4 --seq 64 --gen-prompt 16 --gen-tokens 48 --threads "$THREADS" --tag gpt2s | tee "$OUT/speed_torch_gpt2s.txt"

{
  echo "## LM speed (threads $THREADS, $(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "| shape | tfm train tok/s | PyTorch train tok/s | ratio | tfm generate tok/s (cache) | PyTorch no cache | PyTorch cache | tfm / no cache | tfm / cache |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for s in small gpt2s; do
    tt=$(grep 'what=train' "$OUT/speed_tfm_$s.txt" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    tg=$(grep 'what=generate' "$OUT/speed_tfm_$s.txt" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    pt=$(grep 'mode=train_speed' "$OUT/speed_torch_$s.txt" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    pn=$(grep 'cache=no' "$OUT/speed_torch_$s.txt" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    pc=$(grep 'cache=yes' "$OUT/speed_torch_$s.txt" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    r() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
    echo "| $s | $tt | $pt | $(r "$tt" "$pt") | $tg | $pn | $pc | $(r "$tg" "$pn") | $(r "$tg" "$pc") |"
  done
} | tee "$OUT/speed.md"
