#!/usr/bin/env bash
# test_logical.sh — tfm's models published by logical replication: two
# throwaway clusters of their own, a publisher (wal_level=logical) and a
# subscriber (its own socket and port), as the postgres user like
# scripts/cluster.sh.  Checks:
#   - the subscriber, which has a local tokenizer and model of its own,
#     subscribes to tfm_create_publication's publication (the tables of
#     tfm_publication_tables()).  Its node is first made the publisher's
#     (as two default nodes tie once in 2047): the initial copy refuses the
#     publisher's rows (55000, "this database's own node") until
#     tfm_set_node moves the subscriber's own rows to another node;
#     then no id collides: every replicated row's origin is the
#     publisher's node, the local ones the subscriber's;
#   - owners and grants travel by role name: the grantee's OID differs
#     between the clusters, and on the subscriber the role of that name may
#     use the model; a role the subscriber lacks stops the apply until it
#     is created there;
#   - classification, probabilities, embeddings, seeded generation,
#     tokenizing and the alias the publisher deployed give the publisher's
#     outputs, row for row;
#   - after a retrain on the publisher, a subscriber session that had
#     already used the model (its cache and the shared weight file of the
#     old version) answers with the new weights, equal to the publisher's;
#   - the subscriber refuses to train (tfm_train, tfm_fit, tfm_train_agg),
#     drop, rename or grant the replicated model (55000, naming the origin
#     node) and trains its own model normally;
#   - a subscriber's model named like one the publisher then creates stops
#     the apply on models_name_key until it is renamed;
#   - the server logs have no crash.
# Every wait is bounded (60 s); no timing is asserted.  Needs PGBIN (or
# /usr/lib/postgresql/15/bin) with tfm installed there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
cluster_start "wal_level=logical" "tfm.precision=fp32" "tfm.threads=1" "tfm.progress=off"
pub_host=$PGHOST
sport=5433
sdir=$(mktemp -d /tmp/tfm-subscriber.XXXXXX)
chmod 700 "$sdir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$sdir"
stop_all() {
  [ -n "${SUB_PID:-}" ] && kill "$SUB_PID" 2>/dev/null || true
  cluster_run "$PGBIN/pg_ctl" -D "$sdir" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$sdir"
  cluster_stop
}
trap stop_all EXIT
cluster_run "$PGBIN/initdb" -D "$sdir" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
cluster_run "$PGBIN/pg_ctl" -D "$sdir" -l "$sdir/server.log" -w start \
  -o "-c port=$sport -c unix_socket_directories='$sdir' -c listen_addresses='' -c fsync=off -c tfm.precision=fp32 -c tfm.threads=1 -c tfm.progress=off -c wal_retrieve_retry_interval=1s" >/dev/null
export PGOPTIONS="-c client_min_messages=warning"

fail() {
  echo "FAIL: $*" >&2
  for log in "$TFM_PGDATA/server.log" "$sdir/server.log"; do
    echo "--- $log (last 20 lines)" >&2
    tail -20 "$log" >&2 || true
  done
  exit 1
}
pub() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$pub_host" -p 5432 -d tfm_pub "$@"; }
sub() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$sdir" -p $sport -d tfm_sub "$@"; }
# wait_for WHAT SQL: poll the subscriber (every 0.1 s, up to 60 s) until SQL returns t
wait_for() {
  for _ in $(seq 1 600); do
    [ "$(sub -c "$2" 2>/dev/null || true)" = t ] && return 0
    sleep 0.1
  done
  fail "$1: not within 60 s"
}
# wait_log WHAT PATTERN: poll the subscriber's log (up to 60 s) until it has PATTERN
wait_log() {
  for _ in $(seq 1 600); do
    grep -q "$2" "$sdir/server.log" && return 0
    sleep 0.1
  done
  fail "$1: not in the subscriber's log within 60 s"
}
# the subscriber has applied the publisher's last save of a model
caught_up() {
  local v
  v=$(pub -c "SELECT version FROM tfm.models WHERE name = '$1'")
  wait_for "model $1 at version $v on the subscriber" \
    "SELECT coalesce((SELECT version = $v FROM tfm.models WHERE name = '$1'), false)"
}

# roles exist per cluster: the subscriber's "analysts" gets another OID
psql -X -q -h "$pub_host" -p 5432 -d postgres -c "CREATE DATABASE tfm_pub" -c "CREATE ROLE analysts"
psql -X -q -h "$sdir" -p $sport -d postgres -c "CREATE DATABASE tfm_sub" -c "CREATE ROLE somebody_else" -c "CREATE ROLE analysts"

# the same inputs on both sides
reviews="CREATE TABLE reviews AS
SELECT CASE WHEN i % 2 = 0 THEN 'a fine and moving film ' || i ELSE 'a dull and tiresome plot ' || i END AS review,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END AS label
FROM generate_series(1, 200) i"
pub -c "CREATE EXTENSION tfm" -c "$reviews" >/dev/null
pub >/dev/null <<'SQL'
SELECT tfm_tokenizer_train('pub_bpe', review, 'bpe', 300) FROM reviews;
SELECT tfm_create_model('pub_clf', 'classify', 'pub_bpe', labels => ARRAY['neg', 'pos'],
                        d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('pub_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16);
SELECT tfm_create_model('pub_lm', 'lm', 'pub_bpe', d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('pub_lm', 'SELECT review FROM reviews', epochs => 1, batch_size => 8);
SELECT tfm_deploy('pub_clf', 'serving');
SELECT tfm_grant('pub_clf', 'analysts');
SELECT tfm_create_publication('tfm_models');
SQL

pub_node=$(pub -c "SELECT tfm_node()")
# the subscriber: the same table of inputs, a tokenizer and model of its own,
# made as the publisher's node
sub -c "CREATE EXTENSION tfm" -c "SELECT tfm_set_node($pub_node)" -c "$reviews" >/dev/null
sub >/dev/null <<'SQL'
SELECT tfm_tokenizer_train('sub_chars', review, 'char') FROM reviews;
SELECT tfm_create_model('sub_clf', 'classify', 'sub_chars', labels => ARRAY['neg', 'pos'],
                        d_model => 32, heads => 2, layers => 1, max_len => 32);
SQL
[ "$(sub -c "SELECT tfm_node()")" = "$pub_node" ] || fail "tfm_set_node($pub_node) did not take"
[ "$(sub -c "SELECT id FROM tfm.models WHERE name = 'sub_clf'")" = "$(pub -c "SELECT min(id) FROM tfm.models")" ] \
  || fail "the tie of nodes gave different ids"

sub -c "CREATE SUBSCRIPTION tfm_models CONNECTION 'host=$pub_host port=5432 dbname=tfm_pub user=postgres' PUBLICATION tfm_models" >/dev/null
# the initial copy meets the subscriber's own ids, stops and retries ...
wait_log "the initial copy refusing the rows of the subscriber's own node" \
  "replicated from node $pub_node, which is this database's own node"
[ "$(sub -c "SELECT (SELECT count(*) FROM tfm.models) + (SELECT count(*) FROM tfm.aliases) + (SELECT count(*) FROM tfm.history)")" = 1 ] \
  || fail "rows of the publisher's came in despite the tie"
# ... until the subscriber's own rows move to another node
sub_node=$(( pub_node % 2047 + 1 ))
moved=$(sub -c "SELECT tfm_set_node($sub_node)")
[ "$moved" = 2 ] || fail "tfm_set_node moved $moved objects, not the local tokenizer and model"
echo "   publisher and subscriber both node $pub_node: the initial copy refused the publisher's rows; tfm_set_node($sub_node) on the subscriber moved its $moved objects"
wait_for "initial copy of every table" \
  "SELECT count(*) = (SELECT count(*) FROM tfm_publication_tables()) AND bool_and(srsubstate = 'r') FROM pg_subscription_rel"
caught_up pub_clf
caught_up pub_lm

# ids: the replicated rows keep the publisher's, the local ones are the subscriber's own
ids=$(sub -c "SELECT string_agg(name || ':' || (origin = $pub_node) || ':' || (origin = $sub_node), ',' ORDER BY name) FROM (
                SELECT name, origin FROM tfm.models UNION ALL SELECT name, origin FROM tfm.tokenizers
                UNION ALL SELECT name, origin FROM tfm.aliases) o")
[ "$ids" = "pub_bpe:true:false,pub_clf:true:false,pub_lm:true:false,serving:true:false,sub_chars:false:true,sub_clf:false:true" ] \
  || fail "origins on the subscriber: $ids"
rows_pub=$(pub -c "SELECT md5(string_agg(concat_ws('|', id, name, version, steps, owner, acl_use, config), ',' ORDER BY id)) FROM tfm.models")
rows_sub=$(sub -c "SELECT md5(string_agg(concat_ws('|', id, name, version, steps, owner, acl_use, config), ',' ORDER BY id)) FROM tfm.models WHERE origin = $pub_node")
[ "$rows_pub" = "$rows_sub" ] || fail "the replicated tfm.models rows differ from the publisher's"
echo "   no collision: $ids (name:from publisher:local)"

# grants travel by role name
oids="$(pub -c "SELECT acl_use[1]::oid FROM tfm.models WHERE name = 'pub_clf'") $(sub -c "SELECT acl_use[1]::oid FROM tfm.models WHERE name = 'pub_clf'")"
grantee=$(sub -c "SELECT acl_use::text || ' ' || (acl_use[1] = 'analysts'::regrole) FROM tfm.models WHERE name = 'pub_clf'")
[ "$grantee" = "{analysts} true" ] && [ "${oids% *}" != "${oids#* }" ] || fail "the grant on the subscriber: $grantee (OIDs $oids)"
as_analyst=$(sub -c "SET ROLE analysts" -c "SELECT tfm_classify('pub_clf', 'a fine and moving film')")
[ -n "$as_analyst" ] || fail "analysts cannot use pub_clf on the subscriber"
echo "   grant to analysts travels by name: OIDs $oids, the subscriber's analysts may use pub_clf"
# a grant to a role the subscriber lacks stops the apply until it is created there
pub -c "CREATE ROLE only_on_pub" -c "SELECT tfm_grant('pub_lm', 'only_on_pub')" >/dev/null
wait_log "the apply stopping on a role the subscriber lacks" 'role "only_on_pub" does not exist'
psql -X -q -h "$sdir" -p $sport -d postgres -c "CREATE ROLE only_on_pub"
wait_for "the grant to only_on_pub" "SELECT acl_use::text = '{only_on_pub}' FROM tfm.models WHERE name = 'pub_lm'"
echo "   a grant to a role the subscriber lacked stopped the apply (role does not exist) until the role was created"

inference=$(cat <<'SQL'
SET extra_float_digits = 3;
SELECT md5(string_agg(tfm_classify('pub_clf', review), ',' ORDER BY review)) FROM reviews;
SELECT md5(string_agg(tfm_classify('serving', review), ',' ORDER BY review)) FROM reviews;
SELECT md5(string_agg(p.probability::text, ',' ORDER BY r.review, p.label))
  FROM reviews r, tfm_predict_proba('pub_clf', r.review) p;
SELECT md5(tfm_embed('pub_clf', 'a fine film')::text);
SELECT tfm_generate('pub_lm', 'a fine', max_tokens => 20, temperature => 0.8, seed => 5);
SELECT tfm_tokenize('pub_bpe', 'a fine and moving film');
SQL
)
on_pub=$(pub -c "$inference")
on_sub=$(sub -c "$inference")
[ "$on_pub" = "$on_sub" ] || { diff <(echo "$on_pub") <(echo "$on_sub") >&2 || true; fail "inference on the subscriber differs"; }
echo "   subscriber: classify (by name and by the alias), probabilities, embed, generate, tokenize equal the publisher's"

# a session of the subscriber that already uses the model follows a retrain
coproc SUB { exec psql -X -A -t -q -h "$sdir" -p $sport -d tfm_sub 2>&1; }
SUB_PID=$SUB_PID
ask() {
  local line out=""
  printf '%s\n\\echo __end__\n' "$1" >&"${SUB[1]}"
  while IFS= read -r -t 60 line <&"${SUB[0]}"; do
    [ "$line" = __end__ ] && { printf '%s' "$out"; return 0; }
    out+="$line"$'\n'
  done
  fail "the subscriber's session did not answer"
}
pid1=$(ask "SELECT pg_backend_pid();")
old_sub=$(ask "$inference")
[ "$old_sub" = "$on_sub" ] || fail "the open session answers differently: $old_sub"
v1=$(sub -c "SELECT version FROM tfm.models WHERE name = 'pub_clf'")
pub -c "SELECT count(*) FROM tfm_train('pub_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16, seed => 9)" \
    -c "SELECT count(*) FROM tfm_train('pub_lm', 'SELECT review FROM reviews', epochs => 1, batch_size => 8, seed => 9)" >/dev/null
caught_up pub_clf
caught_up pub_lm
v2=$(sub -c "SELECT version FROM tfm.models WHERE name = 'pub_clf'")
on_pub=$(pub -c "$inference")
new_sub=$(ask "$inference")
pid2=$(ask "SELECT pg_backend_pid();")
[ "$pid1" = "$pid2" ] || fail "the session changed ($pid1, $pid2)"
[ "$new_sub" = "$on_pub" ] || { diff <(echo "$on_pub") <(echo "$new_sub") >&2 || true; fail "the open session did not follow the retrain"; }
[ "$new_sub" != "$old_sub" ] || fail "the retrain changed no output"
shared=$(sub -c "SELECT count(*) FROM pg_ls_tmpdir() f, tfm.models m WHERE m.name = 'pub_clf'
                 AND f.name LIKE format('pgsql\_tmp\_tfm\_%%\_%s\_%s', m.id, m.version)")
[ "$shared" = 1 ] || fail "no shared weight file of pub_clf's new version on the subscriber ($shared)"
echo "   retrain on the publisher: version $v1 → $v2; the open subscriber session (pid $pid1) answers with the new weights, from the new shared file"

# the subscriber refuses to change the replicated model, trains its own
refused() {
  local err
  err=$(psql -X -A -t -q -v VERBOSITY=verbose -h "$sdir" -p $sport -d tfm_sub -c "$1" 2>&1 || true)
  grep -q "ERROR:  55000: cannot $2 model \"pub_clf\": it is replicated from node $pub_node" <<<"$err" \
    || fail "$1 on the subscriber gave: $err"
}
refused "SELECT * FROM tfm_train('pub_clf', 'SELECT review, label FROM reviews')" train
refused "CALL tfm_fit('pub_clf', 'SELECT review, label FROM reviews')" train
refused "SELECT tfm_train_agg('pub_clf', review, label) FROM reviews" train
refused "SELECT tfm_drop_model('pub_clf')" drop
refused "SELECT tfm_rename_model('pub_clf', 'mine')" rename
refused "SELECT tfm_grant('pub_clf', 'somebody_else')" "change the grants of"
sub -c "SELECT count(*) FROM tfm_train('sub_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16)" >/dev/null
steps=$(sub -c "SELECT steps > 0 AND origin = $sub_node FROM tfm.models WHERE name = 'sub_clf'")
[ "$steps" = t ] || fail "the subscriber's own model did not train"
echo "   subscriber refuses train, fit, train_agg, drop, rename and grant on pub_clf (55000, origin node $pub_node); its own sub_clf trains"

# a local name the publisher then takes stops the apply until renamed
sub -c "SELECT tfm_copy_model('sub_clf', 'shared_name')" >/dev/null
pub -c "SELECT tfm_copy_model('pub_clf', 'shared_name')" >/dev/null
# (PostgreSQL 18 reports it as a conflict: "Key already exists in unique index")
wait_log "the apply stopping on the name taken locally" \
  'duplicate key value violates unique constraint "models_name_key"\|Key already exists in unique index "models_name_key"'
[ "$(sub -c "SELECT origin FROM tfm.models WHERE name = 'shared_name'")" = "$sub_node" ] || fail "the local shared_name was replaced"
sub -c "SELECT tfm_rename_model('shared_name', 'sub_own_name')" >/dev/null
caught_up shared_name
[ "$(sub -c "SELECT string_agg(name || ':' || origin, ',' ORDER BY name) FROM tfm.models WHERE name IN ('shared_name', 'sub_own_name')")" \
  = "shared_name:$pub_node,sub_own_name:$sub_node" ] || fail "after the rename: the models are not both there"
echo "   a local model named like the publisher's new one stopped the apply (models_name_key) until renamed"

for log in "$TFM_PGDATA/server.log" "$sdir/server.log"; do
  if grep -E "terminated by signal|PANIC" "$log" >/dev/null; then fail "a crash in $log"; fi
done
