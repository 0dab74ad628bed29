#!/bin/bash
# bench/varlen.sh — tfm_embed(model, text[]) against one call per text
# (issue 41): a MiniLM-L6-shaped classifier (d_model 384, 6 layers, 12
# heads, d_ff 1536, random weights, a character tokenizer), 32 texts of
# 126 characters (128 tokens with [CLS] and [SEP]), at fp32, bf16 and int8,
# 1 and 2 threads; each round times the array form, then one call per
# text, then one text alone (batch 1), after an untimed warm-up of each.
#
#   PG_CONFIG=... bench/varlen.sh [rounds]      (default 3)
#
# Runs a throwaway cluster (scripts/cluster.sh) of the PostgreSQL that
# PG_CONFIG names, with tfm installed there.  Prints psql's timings
# (milliseconds), one line per form and round.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
export PGBIN=${PGBIN:-$(dirname "${PG_CONFIG:-$(command -v pg_config)}")}
. scripts/cluster.sh
cluster_start tfm.precision=fp32 > /dev/null
P="$PGBIN/psql -X -q -v ON_ERROR_STOP=1"
$P <<'SQL'
CREATE EXTENSION tfm;
SET tfm.progress = off;
CREATE TABLE texts AS SELECT i, left(repeat(md5(i::text) || ' ' || md5((i+1)::text) || ' ', 20), 126) AS t
  FROM generate_series(1, 32) i;
SELECT tfm_tokenizer_train('mchars', t, 'char') FROM texts;
SELECT model FROM tfm_create_model('mini', 'classify', 'mchars', labels => ARRAY['a','b'], d_model => 384,
                                   heads => 12, layers => 6, d_ff => 1536, max_len => 256);
SQL
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for prec in fp32 bf16 int8; do
  for th in 1 2; do
    for rep in $(seq "$ROUNDS"); do
      $P -t -A <<SQL
SET tfm.progress = off; SET tfm.threads = $th; SET tfm.precision = $prec;
SELECT count(*) FROM tfm_embed('mini', (SELECT array_agg(t ORDER BY i) FROM texts));
SELECT count(tfm_embed('mini', t)) FROM texts;
\timing on
SELECT 'array', count(*) FROM tfm_embed('mini', (SELECT array_agg(t ORDER BY i) FROM texts));
SELECT 'one', count(tfm_embed('mini', t)) FROM texts;
SELECT 'batch1', count(tfm_embed('mini', t)) FROM texts WHERE i = 1;
SQL
    done 2>&1 | paste -d' ' - - | grep -E '^(array|one|batch1)' | sed "s/^/$prec threads=$th /"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
