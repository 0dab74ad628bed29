#!/bin/bash
# run.sh — encoder-decoder benchmarks (tfm vs PyTorch).
#
#   bench/seq2seq/run.sh synthetic   # copy / reverse / sort digit strings: exact match after SYNTH_TIME each
#   bench/seq2seq/run.sh eng_fra     # English→French, shared BPE 8k, 3+3 d 256: BLEU after MT_TIME,
#                                    # then PyTorch (nn.Transformer) for the same time on the same ids
#   bench/seq2seq/run.sh speed       # training tokens/s and translation sentences/s (greedy, beam 4)
#   bench/seq2seq/run.sh translate   # tfm only: train the eng_fra model for MT_TIME, then BLEU (beam 4
#                                    # and greedy) and translation sentences/s of that model (no PyTorch side)
#   bench/seq2seq/run.sh all
#
# Environment: THREADS (default 2), WORK_MEM (tfm.work_mem, default 2GB), SYNTH_TIME ('3 minutes'), MT_TIME
# ('60 minutes'), RECIPE (eng_fra/translate: 'explicit', the default, names
# the recipe's settings in the calls; 'defaults' leaves them to tfm's
# defaults, which 0.4 made the same recipe), SPEED=0 (translate: no speed
# figures after the BLEU), SKIP_BUILD=1, OUT (default a fresh /tmp/tfm-s2s-bench.XXXX),
# DATA (/work/shared/data or ../shared/data). Runs are sequential, except
# with CONCURRENT=1: eng_fra then trains tfm and PyTorch at the same time,
# one thread (one core) each, for MT_TIME of wall-clock time each.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
THREADS=${THREADS:-2}
RECIPE=${RECIPE:-explicit}
case $RECIPE in
  explicit) ENFR_NORM=", norm => 'pre'"; ENFR_OPTS=", batch_tokens => 8192, lr => 1.5e-3, schedule => 'cosine'" ;;
  defaults) ENFR_NORM=""; ENFR_OPTS="" ;;
  *) echo "RECIPE must be explicit or defaults" >&2; exit 2 ;;
esac
SYNTH_TIME=${SYNTH_TIME:-3 minutes}
WORK_MEM=${WORK_MEM:-2GB}   # the eng_fra model's 8,192-token batches need 1.5 GB
MT_TIME=${MT_TIME:-60 minutes}
WHAT=${1:-all}
if [ -z "${DATA:-}" ]; then
  for d in /work/shared/data "$ROOT/../shared/data"; do [ -f "$d/eng_fra_train.tsv.gz" ] && DATA=$d && break; done
fi
OUT=${OUT:-$(mktemp -d /tmp/tfm-s2s-bench.XXXXXX)}
. "$ROOT/bench/bench_start.sh"
SET_T="SET tfm.threads = $THREADS; SET tfm.progress = off; SET tfm.work_mem = '$WORK_MEM';"

synthetic() {
  $PSQL -f "$HERE/synthetic.sql" | tee "$OUT/synthetic_data.txt"
  echo "| task | training | steps | train loss | exact match, beam 4 (tfm_evaluate) | exact match, greedy | test sources |" > "$OUT/synthetic.md"
  echo "|---|---|---|---|---|---|---|" >> "$OUT/synthetic.md"
  for task in copy reverse sort; do
    log "synthetic $task: 2+2 pre-LN layers d 128, $SYNTH_TIME"
    $PSQL <<EOF | tee "$OUT/synthetic_$task.txt"
$SET_T
SELECT parameters FROM tfm_create_model('$task', 'seq2seq', 'digits', d_model => 128, heads => 4,
                                        encoder_layers => 2, decoder_layers => 2, d_ff => 512, max_len => 32,
                                        norm => 'pre', dropout => 0.0, attention_dropout => 0.0);
\pset format unaligned
\pset tuples_only on
SELECT 'TRAIN steps=' || max(steps) || ' loss=' || round(min(train_loss)::numeric, 4) || ' seconds=' || round(sum(seconds)::numeric)
FROM tfm_train('$task', 'SELECT source, target FROM synth_train WHERE task = ''$task'' ORDER BY md5(i::text)',
               epochs => 1000, batch_size => 64, lr => 2e-3, schedule => 'cosine', label_smoothing => 0.0,
               time_limit => '$SYNTH_TIME');
SELECT 'EVAL exact=' || round(exact_match::numeric, 4) || ' bleu=' || round(bleu::numeric, 2) || ' rows=' || rows
FROM tfm_evaluate('$task', 'SELECT source, target FROM synth_test WHERE task = ''$task''');
SELECT 'GREEDY exact=' || round(avg((tfm_translate('$task', source, beam => 1) = target)::int), 4)
FROM synth_test WHERE task = '$task';
SELECT 'EXAMPLE ' || source || ' -> ' || tfm_translate('$task', source) FROM synth_test WHERE task = '$task'
ORDER BY length(source) DESC, source LIMIT 2;
EOF
    f=$OUT/synthetic_$task.txt
    g() { sed -n "s/^$1.* $2=\([^ ]*\).*/\1/p" "$f" | head -1; }
    echo "| $task | $(sed -n 's/^TRAIN.* seconds=\([0-9]*\)/\1/p' "$f") s | $(g TRAIN steps) | $(g TRAIN loss) | $(sed -n 's/^EVAL exact=\([0-9.]*\).*/\1/p' "$f") | $(sed -n 's/^GREEDY exact=\([0-9.]*\)/\1/p' "$f") | $(sed -n 's/^EVAL.* rows=\([0-9]*\)/\1/p' "$f") |" >> "$OUT/synthetic.md"
  done
  cat "$OUT/synthetic.md"
}

eng_fra() {
  load_eng_fra
  local vocab t0 t1 train_s torch_pid="" torch_threads=$THREADS
  vocab=$($PSQL -At -c "SELECT vocab_size FROM tfm.tokenizer_list WHERE name = 'enfr_bpe'")
  $PSQL -c "\\copy (SELECT tfm_tokenize('enfr_bpe', src), tfm_tokenize('enfr_bpe', tgt) FROM eng_fra_train ORDER BY md5(id::text)) TO '$OUT/enfr_train.ids'"
  $PSQL -c "\\copy (SELECT tfm_tokenize('enfr_bpe', src) FROM test_sources ORDER BY first_id) TO '$OUT/enfr_test_src.ids'"
  torch_train() {   # budget seconds, threads
    BLIS_NUM_THREADS=$2 OMP_NUM_THREADS=$2 /usr/bin/python3 "$HERE/torch_seq2seq.py" train \
      --train "$OUT/enfr_train.ids" --test "$OUT/enfr_test_src.ids" --out "$OUT/enfr_torch_hyp.ids" \
      --vocab "$vocab" --norm pre --budget "$1" --threads "$2" --tag enfr > "$OUT/enfr_torch.txt" 2>&1
  }
  if [ "${CONCURRENT:-0}" = 1 ]; then
    # both sides at once, one core each, the same wall-clock budget
    torch_threads=1
    log "eng_fra: PyTorch (1 thread) in the background for $MT_TIME"
    torch_train "$($PSQL -At -c "SELECT extract(epoch FROM interval '$MT_TIME')")" 1 &
    torch_pid=$!
    SET_T="SET tfm.threads = 1; SET tfm.progress = off; SET tfm.work_mem = '$WORK_MEM';"
  fi
  log "eng_fra: tfm_train for $MT_TIME (recipe $RECIPE: batch_tokens 8192, lr 1.5e-3, cosine fitted to the time)"
  t0=$(date +%s.%N)
  $PSQL <<EOF 2>&1 | tee "$OUT/enfr_train.txt"
$SET_T
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
       kept, val_rows, dropout, round(tokens_per_s) AS tokens_per_s, round(seconds::numeric, 1) AS seconds, note
FROM tfm_train('enfr', 'SELECT src, tgt FROM eng_fra_train ORDER BY md5(id::text)', epochs => 1000,
               time_limit => '$MT_TIME' $ENFR_OPTS);
EOF
  t1=$(date +%s.%N)
  train_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  log "eng_fra: tfm trained ${train_s}s; evaluating it (beam 4 with tfm_evaluate, greedy in text[] batches)"
  $PSQL <<EOF 2>&1 | tee "$OUT/enfr_eval.txt"
$SET_T
\pset format unaligned
\pset tuples_only on
SELECT 'EVAL bleu=' || round(bleu::numeric, 2) || ' exact=' || round(exact_match::numeric, 4) ||
       ' loss=' || round(loss::numeric, 4) || ' rows=' || rows
FROM tfm_evaluate('enfr', 'SELECT src, tgt FROM eng_fra_test');
CREATE TABLE tfm_greedy AS
WITH s AS (SELECT src, row_number() OVER (ORDER BY first_id) AS n FROM test_sources),
     b AS (SELECT n / 64 AS g, array_agg(src ORDER BY n) AS a FROM s GROUP BY 1)
SELECT unnest(a) AS src, unnest(tfm_translate('enfr', a, beam => 1)) AS hyp FROM b;
SELECT 'GREEDY bleu=' || round(tfm_bleu(g.hyp, t.refs)::numeric, 2) FROM tfm_greedy g JOIN test_sources t USING (src);
EOF
  if [ -n "$torch_pid" ]; then
    log "eng_fra: waiting for PyTorch (training, then greedy decoding)"
    wait "$torch_pid"
    SET_T="SET tfm.threads = $THREADS; SET tfm.progress = off; SET tfm.work_mem = '$WORK_MEM';"
  else
    log "eng_fra: PyTorch nn.Transformer, same ids, ${train_s}s"
    torch_train "$train_s" "$THREADS"
  fi
  cat "$OUT/enfr_torch.txt"
  log "eng_fra: PyTorch's greedy BLEU"
  $PSQL <<EOF 2>&1 | tee -a "$OUT/enfr_eval.txt"
\pset format unaligned
\pset tuples_only on
CREATE TABLE torch_hyp_ids (n bigserial, ids integer[]);
\\copy torch_hyp_ids(ids) FROM '$OUT/enfr_torch_hyp.ids'
CREATE TABLE torch_greedy AS
SELECT t.src, tfm_detokenize('enfr_bpe', h.ids) AS hyp
FROM torch_hyp_ids h JOIN (SELECT src, row_number() OVER (ORDER BY first_id) AS n FROM test_sources) t USING (n);
SELECT 'TORCH_GREEDY bleu=' || round(tfm_bleu(g.hyp, t.refs)::numeric, 2) FROM torch_greedy g JOIN test_sources t USING (src);
SELECT 'EXAMPLE ' || t.src || ' => tfm: ' || g.hyp || ' | PyTorch: ' || p.hyp
FROM tfm_greedy g JOIN test_sources t USING (src) JOIN torch_greedy p USING (src)
ORDER BY t.first_id LIMIT 8 OFFSET 4000;
EOF
  translate_speed
  {
    echo "## eng_fra, 3+3 layers d 256 FF 1024, shared BPE 8k ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "| | threads | training time | tokens/s | BLEU greedy | BLEU beam 4 |"
    echo "|---|---|---|---|---|---|"
    echo "| tfm | $([ -n "$torch_pid" ] && echo 1 || echo "$THREADS") | ${train_s}s | $(awk -F'|' '$1 ~ /^ *[0-9]+ *$/ {gsub(/ /,"",$8); v=$8} END {print v}' "$OUT/enfr_train.txt") | $(sed -n 's/^GREEDY bleu=//p' "$OUT/enfr_eval.txt") | $(sed -n 's/^EVAL bleu=\([0-9.]*\).*/\1/p' "$OUT/enfr_eval.txt") |"
    echo "| PyTorch | $torch_threads | $(sed -n 's/^RESULT.* train_seconds=\([0-9.]*\).*/\1/p' "$OUT/enfr_torch.txt")s | $(sed -n 's/^RESULT.* tokens_per_s=\([0-9.]*\).*/\1/p' "$OUT/enfr_torch.txt") | $(sed -n 's/^TORCH_GREEDY bleu=//p' "$OUT/enfr_eval.txt") | — |"
    echo
    echo "Translation sentences/s ($THREADS threads; 1,000 test sources; tfm through SQL, one per call / text[] batches of 64):"
    v() { sed -n "s/^$1 [a-z_]*=\([0-9.]*\).*/\1/p" "$OUT/enfr_translate_speed.txt"; }
    echo "greedy $(v ONE_GREEDY) / $(v BATCH_GREEDY), beam 4 $(v ONE_BEAM4) / $(v BATCH_BEAM4);"
    echo "PyTorch greedy ($torch_threads threads, batches of 64, no cache, all $(sed -n 's/^INFO.* test_sources=\([0-9]*\).*/\1/p' "$OUT/enfr_torch.txt") test sources): $(sed -n 's/^RESULT.* greedy_sentences_per_s=\([0-9.]*\).*/\1/p' "$OUT/enfr_torch.txt")"
  } | tee "$OUT/eng_fra.md"
}

load_eng_fra() {
  $PSQL <<EOF
CREATE TABLE IF NOT EXISTS eng_fra_train (id bigserial PRIMARY KEY, src text NOT NULL, tgt text NOT NULL);
CREATE TABLE IF NOT EXISTS eng_fra_test (id bigserial PRIMARY KEY, src text NOT NULL, tgt text NOT NULL);
EOF
  if [ "$($PSQL -At -c "SELECT count(*) FROM eng_fra_train")" = 0 ]; then
    $PSQL <<EOF
\\copy eng_fra_train(src, tgt) FROM PROGRAM 'gzip -dc $DATA/eng_fra_train.tsv.gz' WITH (FORMAT csv, DELIMITER E'\\t', HEADER true, QUOTE E'\\x01')
\\copy eng_fra_test(src, tgt) FROM PROGRAM 'gzip -dc $DATA/eng_fra_test.tsv.gz' WITH (FORMAT csv, DELIMITER E'\\t', HEADER true, QUOTE E'\\x01')
-- one shared vocabulary: English and French sentences as rows of one stream
SELECT tfm_tokenizer_train('enfr_bpe', t, 'bpe', 8000)
FROM (SELECT src AS t FROM eng_fra_train UNION ALL SELECT tgt FROM eng_fra_train) x;
SELECT tfm_create_model('enfr', 'seq2seq', 'enfr_bpe', d_model => 256, heads => 8, encoder_layers => 3,
                        decoder_layers => 3, d_ff => 1024, max_len => 64 $ENFR_NORM);
CREATE TABLE test_sources AS SELECT src, array_agg(tgt ORDER BY id) AS refs, min(id) AS first_id
FROM eng_fra_test GROUP BY src;
EOF
    $PSQL -c "SELECT count(*) AS train_pairs, (SELECT count(*) FROM eng_fra_test) AS test_pairs,
                     (SELECT count(*) FROM test_sources) AS test_sources FROM eng_fra_train"
  fi
}

# translation sentences/s of the trained model: 1,000 test sources, one per call and in text[] batches of 64
translate_speed() {
  $PSQL <<EOF 2>&1 | tee "$OUT/enfr_translate_speed.txt"
$SET_T
\pset format unaligned
\pset tuples_only on
CREATE TEMP TABLE speed_src AS SELECT src, row_number() OVER (ORDER BY first_id) AS n
FROM test_sources ORDER BY first_id LIMIT 1000;
CREATE FUNCTION pg_temp.rate(q text) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE t timestamptz := clock_timestamp();
BEGIN
  EXECUTE q;
  RETURN round(1000 / extract(epoch FROM clock_timestamp() - t), 1);
END \$\$;
SELECT 'ONE_GREEDY sentences_per_s=' || pg_temp.rate('SELECT count(tfm_translate(''enfr'', src, beam => 1)) FROM speed_src');
SELECT 'ONE_BEAM4 sentences_per_s=' || pg_temp.rate('SELECT count(tfm_translate(''enfr'', src, beam => 4)) FROM speed_src');
SELECT 'BATCH_GREEDY sentences_per_s=' || pg_temp.rate('SELECT count(tfm_translate(''enfr'', a, beam => 1)) FROM (SELECT array_agg(src ORDER BY n) a FROM speed_src GROUP BY n / 64) b');
SELECT 'BATCH_BEAM4 sentences_per_s=' || pg_temp.rate('SELECT count(tfm_translate(''enfr'', a, beam => 4)) FROM (SELECT array_agg(src ORDER BY n) a FROM speed_src GROUP BY n / 64) b');
EOF
}

# training tokens/s only (an untrained model): tfm 60 steps, PyTorch 40, on the same 8,192 rows
speed() {
  load_eng_fra
  $PSQL <<EOF 2>&1 | tee "$OUT/speed_tfm.txt"
$SET_T
\pset format unaligned
\pset tuples_only on
SELECT 'TRAIN tokens_per_s=' || round(tokens_per_s::numeric, 1)
FROM tfm_train('enfr', 'SELECT src, tgt FROM eng_fra_train ORDER BY md5(id::text) LIMIT 8192',
               batch_tokens => 8192, max_steps => 60);
EOF
  $PSQL -c "\\copy (SELECT tfm_tokenize('enfr_bpe', src), tfm_tokenize('enfr_bpe', tgt) FROM eng_fra_train ORDER BY md5(id::text) LIMIT 8192) TO '$OUT/speed_train.ids'"
  $PSQL -c "\\copy (SELECT tfm_tokenize('enfr_bpe', src) FROM test_sources ORDER BY first_id LIMIT 100) TO '$OUT/speed_src.ids'"
  /usr/bin/python3 "$HERE/torch_seq2seq.py" speed --train "$OUT/speed_train.ids" --test "$OUT/speed_src.ids" \
    --vocab "$($PSQL -At -c "SELECT vocab_size FROM tfm.tokenizer_list WHERE name = 'enfr_bpe'")" \
    --norm pre --threads "$THREADS" --tag speed | tee "$OUT/speed_torch.txt"
  echo "training tokens/s: tfm $(sed -n 's/^TRAIN tokens_per_s=//p' "$OUT/speed_tfm.txt"), PyTorch $(sed -n 's/^RESULT.*mode=train_speed tokens_per_s=\([0-9.]*\).*/\1/p' "$OUT/speed_torch.txt")" | tee "$OUT/speed.md"
}

# tfm only: a trained eng_fra model's BLEU and translation speed (no PyTorch run)
translate() {
  load_eng_fra
  log "translate: tfm_train for $MT_TIME ($THREADS threads, recipe $RECIPE), then BLEU and translation speed"
  $PSQL <<EOF 2>&1 | tee "$OUT/enfr_train.txt"
$SET_T
SELECT epoch, steps, round(train_loss::numeric, 4) AS train_loss, round(val_loss::numeric, 4) AS val_loss,
       kept, val_rows, dropout, round(tokens_per_s) AS tokens_per_s, round(seconds::numeric, 1) AS seconds, note
FROM tfm_train('enfr', 'SELECT src, tgt FROM eng_fra_train ORDER BY md5(id::text)', epochs => 1000,
               time_limit => '$MT_TIME' $ENFR_OPTS);
EOF
  $PSQL <<EOF 2>&1 | tee "$OUT/enfr_eval.txt"
$SET_T
\\pset format unaligned
\\pset tuples_only on
SELECT 'EVAL bleu=' || round(bleu::numeric, 2) || ' exact=' || round(exact_match::numeric, 4) ||
       ' loss=' || round(loss::numeric, 4) || ' rows=' || rows
FROM tfm_evaluate('enfr', 'SELECT src, tgt FROM eng_fra_test');
CREATE TABLE tfm_greedy AS
WITH s AS (SELECT src, row_number() OVER (ORDER BY first_id) AS n FROM test_sources),
     b AS (SELECT n / 64 AS g, array_agg(src ORDER BY n) AS a FROM s GROUP BY 1)
SELECT unnest(a) AS src, unnest(tfm_translate('enfr', a, beam => 1)) AS hyp FROM b;
SELECT 'GREEDY bleu=' || round(tfm_bleu(g.hyp, t.refs)::numeric, 2) FROM tfm_greedy g JOIN test_sources t USING (src);
SELECT 'LENGTH hyp_words_per_sentence=' || round(avg(array_length(regexp_split_to_array(hyp, ' '), 1)), 2)
FROM tfm_greedy;
SELECT 'EXAMPLE ' || t.src || ' => ' || g.hyp
FROM tfm_greedy g JOIN test_sources t USING (src) ORDER BY t.first_id LIMIT 8 OFFSET 4000;
EOF
  [ "${SPEED:-1}" = 1 ] && translate_speed
  return 0
}

case $WHAT in
  synthetic) synthetic ;;
  eng_fra) eng_fra ;;
  speed) speed ;;
  translate) translate ;;
  all) synthetic; eng_fra; speed ;;
  *) echo "usage: run.sh [synthetic|eng_fra|speed|translate|all]" >&2; exit 2 ;;
esac
log "done; results in $OUT"
