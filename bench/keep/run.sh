#!/usr/bin/env bash
# bench/keep/run.sh — keep => 'best' vs 'last' on held-out data: the same
# classifier (rt_polarity, word vocabulary, d_model 64, 2 pre-LN layers)
# trained twice with the same seed for EPOCHS epochs (default 8) with 10 %
# of the training rows held out; one run keeps the last epoch's weights, the
# other the epoch with the best validation accuracy.  Prints each epoch's
# validation accuracy and both models' accuracy on the test set (rows the
# training never saw).  Reads ../shared/data (rt_polarity_*.tsv.gz).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EPOCHS=${EPOCHS:-8}
DATA=${DATA:-$ROOT/../shared/data}
. "$ROOT/scripts/cluster.sh"
cluster_start
PSQL="psql -X -q -v ON_ERROR_STOP=1"
$PSQL -c "CREATE EXTENSION tfm" \
      -c "CREATE TABLE rt_train (id bigserial, text text NOT NULL, label text NOT NULL)" \
      -c "CREATE TABLE rt_test (LIKE rt_train INCLUDING ALL)"
for part in train test; do
  $PSQL -c "\copy rt_$part(text, label) FROM PROGRAM 'gzip -dc $DATA/rt_polarity_$part.tsv.gz' WITH (FORMAT csv, DELIMITER E'\t', HEADER true, QUOTE E'\x01')"
done
$PSQL -c "SELECT tfm_tokenizer_train('rt_word', text, 'word', 20000) FROM rt_train" >/dev/null
for keep in last best; do
  $PSQL -c "SELECT * FROM tfm_create_model('rt_$keep', 'classify', 'rt_word', labels => ARRAY['neg', 'pos'],
                       d_model => 64, heads => 4, layers => 2, norm => 'pre', max_len => 64, seed => 7)" >/dev/null
  echo "== keep => '$keep'"
  $PSQL -c "SET tfm.progress = off" \
        -c "SELECT epoch, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
                   round(val_accuracy::numeric, 4) AS val_accuracy, kept, round(seconds::numeric, 1) AS seconds
            FROM tfm_train('rt_$keep', 'SELECT text, label FROM rt_train ORDER BY id', epochs => $EPOCHS,
                           batch_size => 32, val_fraction => 0.1, seed => 7, keep => '$keep')"
done
echo "== test accuracy (rows the training never saw)"
$PSQL -c "SELECT 'last' AS keep, round(accuracy::numeric, 4) AS test_accuracy, rows
          FROM tfm_evaluate('rt_last', 'SELECT text, label FROM rt_test ORDER BY id')
          UNION ALL
          SELECT 'best', round(accuracy::numeric, 4), rows
          FROM tfm_evaluate('rt_best', 'SELECT text, label FROM rt_test ORDER BY id')"
