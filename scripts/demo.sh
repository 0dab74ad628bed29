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
