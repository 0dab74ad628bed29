#!/usr/bin/env bash
# test_replica.sh — tfm on a hot standby: starts a real streaming replica of
# the server the PG* variables name (pg_basebackup -R into a second
# throwaway data directory, its own socket and port), trains models on the
# primary and runs inference on the standby: tfm_classify, tfm_embed,
# tfm_evaluate, tfm_generate and tfm_translate give the primary's outputs;
# a model trained again on the primary is used on the standby once the save
# has replayed; training or creating a model on the standby is a clear error.
#
# Needs a primary that accepts local replication connections (initdb's
# default with -A trust, as scripts/cluster.sh makes it); run as root it
# runs the standby as the postgres user, like scripts/cluster.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
db=tfm_replica
sport=5433
sdir=$(mktemp -d /tmp/tfm-standby.XXXXXX)
chmod 700 "$sdir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$sdir"
stop_standby() {
  cluster_run "$PGBIN/pg_ctl" -D "$sdir" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$sdir"
  dropdb --if-exists "$db" 2>/dev/null || true
}
trap stop_standby EXIT

primary() { psql -X -A -t -v ON_ERROR_STOP=1 -d "$db" "$@"; }
standby() { psql -X -A -t -v ON_ERROR_STOP=1 -h "$sdir" -p $sport -d "$db" "$@"; }
# wait until the standby has replayed everything the primary has written
caught_up() {
  local lsn
  lsn=$(psql -X -A -t -d postgres -c "SELECT pg_current_wal_lsn()")
  for _ in $(seq 1 300); do
    if [ "$(psql -X -A -t -h "$sdir" -p $sport -d postgres \
            -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")" = t ]; then return 0; fi
    sleep 0.1
  done
  echo "the standby did not replay up to $lsn in 30 s" >&2
  return 1
}

dropdb --if-exists "$db" 2>/dev/null
createdb "$db"
primary -q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE TABLE reviews AS
SELECT CASE WHEN i % 2 = 0 THEN 'a fine and moving film ' || i ELSE 'a dull and tiresome plot ' || i END AS review,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END AS label
FROM generate_series(1, 200) i;
CREATE TABLE pairs AS
SELECT 'number ' || i AS src, 'nombre ' || i AS tgt FROM generate_series(1, 100) i;
SELECT tfm_tokenizer_train('rep_chars', t, 'char') FROM (SELECT review FROM reviews UNION ALL SELECT src FROM pairs UNION ALL SELECT tgt FROM pairs) s(t);
SELECT tfm_create_model('rep_clf', 'classify', 'rep_chars', labels => ARRAY['neg', 'pos'],
                        d_model => 32, heads => 2, layers => 1, max_len => 48);
SELECT count(*) FROM tfm_train('rep_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16);
SELECT tfm_create_model('rep_lm', 'lm', 'rep_chars', d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('rep_lm', 'SELECT review FROM reviews', epochs => 1, batch_size => 8);
SELECT tfm_create_model('rep_s2s', 'seq2seq', 'rep_chars', target_tokenizer => 'rep_chars', d_model => 32,
                        heads => 2, encoder_layers => 1, decoder_layers => 1, max_len => 24);
SELECT count(*) FROM tfm_train('rep_s2s', 'SELECT src, tgt FROM pairs', epochs => 1, batch_size => 16);
SELECT tfm_deploy('rep_clf');
SQL

echo "   starting a streaming replica (pg_basebackup -R, port $sport)"
# (the primary's socket lives in its data directory: pg_basebackup skips it)
cluster_run "$PGBIN/pg_basebackup" -h "$PGHOST" -p "$PGPORT" -U postgres -D "$sdir" -R -X stream -c fast \
  2> >(grep -v 'skipping special file' >&2)
cluster_run "$PGBIN/pg_ctl" -D "$sdir" -l "$sdir/server.log" -w start \
  -o "-c port=$sport -c unix_socket_directories='$sdir' -c listen_addresses='' -c hot_standby=on" >/dev/null
[ "$(standby -c "SELECT pg_is_in_recovery()")" = t ] || { echo "the replica is not in recovery" >&2; exit 1; }

inference=$(cat <<'SQL'
SET tfm.threads = 1;
SET tfm.precision = fp32;
SET extra_float_digits = 3;
SELECT md5(string_agg(tfm_classify(review), ',' ORDER BY review)) FROM reviews;
SELECT md5(string_agg(tfm_classify('rep_clf', review), ',' ORDER BY review)) FROM reviews;
SELECT md5(tfm_embed('rep_clf', 'a fine film')::text);
SELECT accuracy, loss FROM tfm_evaluate('rep_clf', 'SELECT review, label FROM reviews');
SELECT tfm_generate('rep_lm', 'a fine', max_tokens => 30, temperature => 0.8, seed => 5);
SELECT tfm_translate('rep_s2s', 'number 7', beam => 2) = translation, score FROM tfm_translate_nbest('rep_s2s', 'number 7', beam => 2) WHERE rank = 1;
SQL
)
caught_up
on_primary=$(primary -c "$inference")
on_standby=$(standby -c "$inference")
if [ "$on_primary" != "$on_standby" ]; then
  echo "inference on the standby differs from the primary" >&2
  diff <(echo "$on_primary") <(echo "$on_standby") >&2 || true
  exit 1
fi
[ -n "${TFM_TEST_VERBOSE:-}" ] && echo "$on_standby"
echo "   standby: classify, embed, evaluate, generate and translate equal the primary's"

# a new save on the primary reaches the standby's sessions once replayed
v1=$(standby -c "SELECT version FROM tfm.models WHERE name = 'rep_clf'")
primary -q -c "SET tfm.progress = off" \
  -c "SELECT count(*) FROM tfm_train('rep_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16, seed => 9)" >/dev/null
caught_up
v2=$(standby -c "SELECT version FROM tfm.models WHERE name = 'rep_clf'")
on_primary=$(primary -c "$inference")
on_standby=$(standby -c "$inference")
if [ "$v1" = "$v2" ] || [ "$on_primary" != "$on_standby" ]; then
  echo "the standby did not follow the primary's new save (version $v1 → $v2)" >&2
  exit 1
fi
echo "   standby follows a new save: version $v1 → $v2, outputs equal the primary's"

# training on the standby: a clear error
err=$(standby -c "SELECT * FROM tfm_train('rep_clf', 'SELECT review, label FROM reviews')" 2>&1 || true)
grep -q 'cannot train model "rep_clf" on a standby' <<<"$err" \
  || { echo "training on the standby gave: $err" >&2; exit 1; }
err=$(standby -c "SELECT tfm_create_model('x', 'lm', 'rep_chars')" 2>&1 || true)
grep -q 'cannot create model "x" on a standby' <<<"$err" \
  || { echo "creating a model on the standby gave: $err" >&2; exit 1; }
echo "   training or creating a model on the standby: $(echo "$err" | head -1)"
