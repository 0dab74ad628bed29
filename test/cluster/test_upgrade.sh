#!/usr/bin/env bash
# test_upgrade.sh — ALTER EXTENSION tfm UPDATE from 0.1 keeps stored models
# working.  Builds tfm 0.1 from this repository's history (the last commit
# at 0.1), installs it, makes a database with a tokenizer and trained
# classifier and language model at 0.1 and records their outputs, then
# installs this tree's build again (as a user upgrading would), runs ALTER
# EXTENSION tfm UPDATE in a new session and checks that every tensor and
# every output is unchanged and the later versions' objects (owner, grants)
# are there.
#
# Runs against the server the PG* variables name (scripts/test.sh starts
# one), as a superuser, with write access to PostgreSQL's install
# directories (root, as scripts/test.sh is run in CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
V01_COMMIT=7ce1fe7080c07f1ac125c8bed127beabb6bd2353  # the last commit of tfm 0.1
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
db=tfm_upgrade
ext=$("$PG_CONFIG" --sharedir)/extension
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

if ! git cat-file -e "$V01_COMMIT^{commit}" 2>/dev/null; then
  echo "test_upgrade: commit $V01_COMMIT (tfm 0.1) is not in this clone's history (a shallow clone?)" >&2
  exit 1
fi
old=$(mktemp -d /tmp/tfm-0.1.XXXXXX)
reinstall() {
  $SUDO rm -f "$ext/tfm--0.1.sql"
  $SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
}
trap 'dropdb --if-exists "$db" || true; rm -rf "$old"; reinstall' EXIT

echo "   building tfm 0.1 ($V01_COMMIT)"
git archive "$V01_COMMIT" | tar -x -C "$old"
make -s -C "$old" -j2 PG_CONFIG="$PG_CONFIG" tfm.so sql/tfm--0.1.sql >/dev/null 2>&1
$SUDO install -m 755 "$old/tfm.so" "$("$PG_CONFIG" --pkglibdir)/tfm.so"
$SUDO install -m 644 "$old/tfm.control" "$old/sql/tfm--0.1.sql" "$ext/"

dropdb --if-exists "$db" 2>/dev/null
createdb "$db"
psql -q -X -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE TABLE reviews AS
SELECT CASE WHEN i % 2 = 0 THEN 'a fine and moving film ' || i ELSE 'a dull and tiresome plot ' || i END AS review,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END AS label
FROM generate_series(1, 200) i;
SELECT tfm_tokenizer_train('up_bpe', review, 'bpe', 300) FROM reviews;
SELECT tfm_create_model('up_clf', 'classify', 'up_bpe', labels => ARRAY['neg', 'pos'],
                        d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('up_clf', 'SELECT review, label FROM reviews', epochs => 2, batch_size => 16);
SELECT tfm_create_model('up_lm', 'lm', 'up_bpe', d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('up_lm', 'SELECT review FROM reviews', epochs => 1, batch_size => 8);
SELECT tfm_deploy('up_clf');
SQL

outputs() {
  psql -X -A -t -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
SET tfm.threads = 1;
SET extra_float_digits = 3;
SELECT 'tensors', m.name, count(*), md5(string_agg(t.name || t.data::text, ',' ORDER BY t.name))
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id GROUP BY m.name ORDER BY m.name;
SELECT 'classify', md5(string_agg(tfm_classify(review), ',' ORDER BY review)) FROM reviews;
SELECT 'proba', md5(string_agg(p.probability::text, ',' ORDER BY r.review, p.label))
  FROM reviews r, tfm_predict_proba('up_clf', r.review) p;
SELECT 'generate', tfm_generate('up_lm', 'a fine', max_tokens => 30, temperature => 0.8, seed => 3);
SELECT 'tokenize', tfm_tokenize('up_bpe', 'a fine and moving film');
SQL
}
before=$(outputs)
[ "$(psql -X -A -t -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'tfm'")" = 0.1 ]

echo "   installing this tree's tfm and running ALTER EXTENSION tfm UPDATE"
reinstall
psql -q -X -v ON_ERROR_STOP=1 -d "$db" -c "ALTER EXTENSION tfm UPDATE"
version=$(psql -X -A -t -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'tfm'")
after=$(outputs)
owners=$(psql -X -A -t -d "$db" -c "SELECT string_agg(name || ':' || owner, ',' ORDER BY name) FROM tfm.model_list")
if [ "$version" != "$(sed -n "s/^default_version = '\(.*\)'/\1/p" tfm.control)" ] || [ "$before" != "$after" ] || [ "$owners" != "up_clf:postgres,up_lm:postgres" ]; then
  echo "upgrade changed something: version $version, owners $owners" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
# rows made before 0.4 (ids from 1) moved to this database's node range
nodes=$(psql -X -A -t -d "$db" -c "SELECT (SELECT bool_and(origin = tfm_node() AND id > 1048576) FROM tfm.models)
  AND (SELECT bool_and(origin = tfm_node()) FROM tfm.tokenizers) AND (SELECT bool_and(origin = tfm_node()) FROM tfm.aliases)
  AND (SELECT node = tfm_node() FROM tfm.node)")
[ "$nodes" = t ] || { echo "upgrade left ids outside the node's range" >&2; exit 1; }
# NULL in, NULL out on the updated catalog too (doc/reference.md, NULLs)
nulls=$(psql -X -A -t -d "$db" -c "SELECT tfm_classify('up_clf', NULL::text) IS NULL AND tfm_generate('up_lm', NULL::text) IS NULL
  AND (SELECT count(*) FROM tfm_predict_proba('up_clf', NULL::text)) = 0")
[ "$nulls" = t ] || { echo "the updated extension does not answer NULL for a NULL input" >&2; exit 1; }
# a model trained at 0.1 trains on after the update
psql -q -X -v ON_ERROR_STOP=1 -d "$db" >/dev/null \
  -c "SET tfm.progress = off; SELECT count(*) FROM tfm_train('up_clf', 'SELECT review, label FROM reviews', epochs => 1, batch_size => 16)"
echo "   0.1 → $version: $(echo "$after" | wc -l) outputs identical before and after the update; owners $owners"
