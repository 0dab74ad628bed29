#!/bin/bash
# train_defaults.sh — the training defaults (issue 29) against the old ones,
# on the shared data:
#   - Moby-Dick character LM (4 layers, d 128, 4 heads, length 256, batch 32),
#     the book as one row, trained for each of BUDGETS minutes with
#     `epochs => 1000, time_limit`; scored in nats/char on moby_dick_val
#     (text the training never saw).  Old: dropout 0, nothing held out,
#     keep => 'last', weight decay 0.01, no early stopping.  New: the
#     defaults (5 % of the sequences held out, keep => 'best', patience 3,
#     dropout and weight decay from the planned passes).
#   - rt_polarity classification (word vocabulary, d 64, 2 layers, length
#     64) for each of EPOCHS epoch counts, scored on rt_polarity_test, and
#     spamassassin (the same, length 256: over half the messages are
#     longer, cut head + tail) for each of SPAM_EPOCHS, scored on
#     spamassassin_test.  Old: post-LN, dropout 0.1, val_fraction 0.1,
#     keep => 'best', weight decay 0.01, no early stopping, no label
#     smoothing.  New: the defaults (pre-LN, and the rest from the plan).
#     Epoch-based runs do the same arithmetic whatever the machine's load.
#
#   bench/train_defaults.sh                  # BUDGETS="5 10", EPOCHS="3 8", SPAM_EPOCHS="2 4"
#   BUDGETS="30 60" bench/train_defaults.sh  # the issue's budgets
#   WHAT=lm | WHAT=classify                  # one half only
#   LM_WHICH=new WHAT=lm BUDGETS=30          # the LM with the new defaults only
#   LM_CHARS=100000 WHAT=lm BUDGETS=5        # the first 100,000 characters only:
#                                            # many passes in a short budget
#
# Environment: THREADS (default 2; on a loaded machine 1 is far faster),
# SEED (the classifiers' seeds, default 7), SKIP_BUILD=1, OUT (default a fresh
# /tmp/tfm-train-defaults.XXXX), DATA (/work/shared/data or ../shared/data).
# Runs are sequential, never two at once; the table goes to $OUT/summary.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
THREADS=${THREADS:-2}
BUDGETS=${BUDGETS:-5 10}
EPOCHS=${EPOCHS:-3 8}
SPAM_EPOCHS=${SPAM_EPOCHS:-2 4}
SEED=${SEED:-7}
WHAT=${WHAT:-all}
LM_CHARS=${LM_CHARS:-0}
LM_WHICH=${LM_WHICH:-old new}
if [ -z "${DATA:-}" ]; then
  for d in /work/shared/data "$ROOT/../shared/data"; do [ -f "$d/moby_dick_train.txt.gz" ] && DATA=$d && break; done
fi
OUT=${OUT:-$(mktemp -d /tmp/tfm-train-defaults.XXXXXX)}
. "$ROOT/bench/bench_start.sh"
SUMMARY="$OUT/summary.md"
{
  echo "## Training defaults, old vs new (threads $THREADS, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
  echo
} > "$SUMMARY"

# one classification set, old defaults against new: classify_set NAME FILE
# LABELS MAX_LEN EPOCHS TEST_ROWS (FILE: shared/data's FILE_train/_test.tsv.gz)
classify_set() {
  local name=$1 file=$2 labels=$3 max_len=$4 epochs=$5 test_rows=$6
  $PSQL -c "CREATE TABLE ${name}_train (id bigserial, text text NOT NULL, label text NOT NULL)" \
        -c "CREATE TABLE ${name}_test (LIKE ${name}_train INCLUDING ALL)"
  for part in train test; do
    # spamassassin's files have two more columns (group, id): read into a wider table, keep text and label
    $PSQL -c "CREATE TEMP TABLE raw (text text, label text, g text, n text)" \
          -c "\\copy raw($( [ "$file" = spamassassin ] && echo "text, label, g, n" || echo "text, label")) FROM PROGRAM 'gzip -dc $DATA/${file}_$part.tsv.gz' WITH (FORMAT csv, DELIMITER E'\\t', HEADER true, QUOTE E'\\x01')" \
          -c "INSERT INTO ${name}_$part(text, label) SELECT text, label FROM raw"
  done
  $PSQL -c "SELECT tfm_tokenizer_train('${name}_word', text, 'word', 20000) FROM ${name}_train" >/dev/null
  {
    echo "### $file (test accuracy, $test_rows; word vocabulary of 20,000, d 64, 2 layers, max_len $max_len)"
    echo
    echo "| epochs | old defaults | new defaults | new: epochs run, kept, dropout, weight decay |"
    echo "|---|---|---|---|"
  } >> "$SUMMARY"
  for e in $epochs; do
    local acc_old acc_new how
    for which in old new; do
      local create="" opts=""
      if [ $which = old ]; then
        # before issue 29: post-LN (lr 5e-4), dropout 0.1, 10 % held out, keep => 'best',
        # weight decay 0.01, no early stopping, no label smoothing; head_tail truncation
        # is unchanged (what every classifier did)
        create=", norm => 'post', dropout => 0.1, attention_dropout => 0.1"
        opts=", val_fraction => 0.1, keep => 'best', weight_decay => 0.01, patience => 0, label_smoothing => 0"
      fi
      $PSQL -c "SELECT tfm_drop_model(name) FROM tfm.models WHERE name = '$name'" >/dev/null
      $PSQL -c "SELECT model FROM tfm_create_model('$name', 'classify', '${name}_word', labels => $labels,
                   d_model => 64, heads => 4, layers => 2, max_len => $max_len, seed => $SEED $create)" >/dev/null
      log "$file: $which defaults, $e epochs"
      $PSQL -c "SET tfm.threads = $THREADS" -c "SET tfm.progress = off" \
            -c "SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
                       round(val_accuracy::numeric, 4) AS val_accuracy, kept, val_rows, dropout, decay,
                       round(seconds::numeric, 1) AS seconds, note
                FROM tfm_train('$name', 'SELECT text, label FROM ${name}_train ORDER BY id', epochs => $e,
                               batch_size => 32, seed => $SEED $opts)" 2>&1 | tee -a "$OUT/${name}_${which}_$e.txt"
      local acc
      acc=$($PSQL -At -c "SET tfm.threads = $THREADS" -c "SELECT round(accuracy::numeric, 4) FROM tfm_evaluate('$name', 'SELECT text, label FROM ${name}_test ORDER BY id')" | tail -1)
      if [ $which = old ]; then acc_old=$acc; else
        acc_new=$acc
        how=$($PSQL -At -F' ' -c "SELECT count(*) FILTER (WHERE checkpoint = 0) || ' run, kept epoch ' ||
                 max(epoch) FILTER (WHERE kept) || ', dropout ' || max(dropout) || ', weight decay ' || max(weight_decay)
                 FROM tfm.history WHERE model_id = (SELECT id FROM tfm.models WHERE name = '$name')")
      fi
    done
    echo "| $e | $acc_old | $acc_new | $how |" >> "$SUMMARY"
  done
  echo >> "$SUMMARY"
}

classify() {
  classify_set rt rt_polarity "ARRAY['neg', 'pos']" 64 "$EPOCHS" "1,066 sentences"
  classify_set spam spamassassin "ARRAY['ham', 'spam']" 256 "$SPAM_EPOCHS" "604 messages"
}

lm() {
  gzip -dc "$DATA/moby_dick_train.txt.gz" > "$OUT/moby_train.txt"
  gzip -dc "$DATA/moby_dick_val.txt.gz" > "$OUT/moby_val.txt"
  chmod 644 "$OUT"/moby_*.txt
  # the whole book is one row: the default holds out 5 % of its 256-token sequences
  $PSQL <<EOF
CREATE TABLE moby (part text PRIMARY KEY, body text NOT NULL);
INSERT INTO moby VALUES ('train', convert_from(pg_read_binary_file('$OUT/moby_train.txt'), 'UTF8')),
                        ('val', convert_from(pg_read_binary_file('$OUT/moby_val.txt'), 'UTF8'));
UPDATE moby SET body = left(body, $LM_CHARS) WHERE part = 'train' AND $LM_CHARS > 0;
SELECT tfm_tokenizer_train('moby_chars', body, 'char') FROM moby WHERE part = 'train';
EOF
  {
    echo "### Moby-Dick char LM (nats/char on moby_dick_val, 119,032 characters; trained on $( [ "$LM_CHARS" -gt 0 ] && echo "the first $LM_CHARS characters of moby_dick_train" || echo "moby_dick_train"))"
    echo
    echo "| budget | old defaults | new defaults | new: passes, evaluations, kept, dropout, weight decay |"
    echo "|---|---|---|---|"
  } >> "$SUMMARY"
  for b in $BUDGETS; do
    local old=- new=- how=-
    for which in $LM_WHICH; do
      local drop="" opts=""
      if [ $which = old ]; then
        drop=", dropout => 0, attention_dropout => 0"
        opts=", val_fraction => 0, keep => 'last', weight_decay => 0.01, patience => 0"
      fi
      $PSQL -c "SELECT tfm_drop_model(name) FROM tfm.models WHERE name = 'moby'" >/dev/null
      $PSQL -c "SELECT parameters FROM tfm_create_model('moby', 'lm', 'moby_chars', d_model => 128, heads => 4,
                   layers => 4, max_len => 256 $drop)" >/dev/null
      log "Moby-Dick LM: $which defaults, $b minutes"
      $PSQL -c "SET tfm.threads = $THREADS" -c "SET tfm.progress = off" \
            -c "SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss,
                       round(val_loss::numeric, 4) AS val_loss, kept, val_rows, dropout, decay,
                       round(tokens_per_s) AS tokens_per_s, note
                FROM tfm_train('moby', 'SELECT body FROM moby WHERE part = ''train''',
                               epochs => 1000, batch_size => 32, time_limit => '$b minutes' $opts)" 2>&1 | tee "$OUT/lm_${which}_$b.txt"
      local v
      v=$($PSQL -At -c "SET tfm.threads = $THREADS" -c "SELECT round(nats_per_char::numeric, 4) FROM tfm_evaluate('moby', 'SELECT body FROM moby WHERE part = ''val''')" | tail -1)
      if [ $which = old ]; then old=$v; else
        new=$v
        how=$($PSQL -At -F' ' -c "SELECT count(*) FILTER (WHERE checkpoint = 0) || ' epochs, ' ||
                 count(*) FILTER (WHERE val_loss IS NOT NULL) || ' evaluations, kept epoch ' ||
                 max(epoch) FILTER (WHERE kept) || ', dropout ' || max(dropout) || ', weight decay ' || max(weight_decay)
                 FROM tfm.history WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'moby')")
      fi
    done
    echo "| $b min | $old | $new | $how |" >> "$SUMMARY"
  done
  echo >> "$SUMMARY"
}

case "$WHAT" in
  classify) classify ;;
  lm) lm ;;
  *) lm; classify ;;
esac
cat "$SUMMARY"
