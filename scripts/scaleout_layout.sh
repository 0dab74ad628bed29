# shellcheck shell=bash
# scaleout_layout.sh — sourced by test/cluster/test_scaleout.sh and
# bench/scaleout/run.sh: tfm's scale-out layout (doc/scaleout.md) on
# throwaway PostgreSQL servers, each with its own data directory and socket
# under one temporary directory, wal_level=logical, every server limited to
# one thread (tfm.threads = 1, BLIS and OpenMP 1): a publisher that trains
# the model and is also the coordinator, shards that subscribe to its tfm
# catalog and hold parts of a 100,000-row table.  Needs scripts/cluster.sh
# (cluster_run, PGBIN) sourced first.
#
#   nodes_init            the directory $NODES and one initdb'd template
#   node_start NAME PORT [extra -c settings...]
#   node_stop NAME [mode] pg_ctl stop (default -m immediate: a crash)
#   node_restart NAME     start again with the options of node_start
#   nodes_stop            stop every node and remove $NODES
#   on NAME [psql args]   psql on NAME's database $SCALE_DB, unaligned, tuples only
#   node_conninfo NAME    a libpq connection string for NAME (postgres_fdw, subscriptions)
#   publish_tfm NAME      a publication tfm_catalog of the tables a model needs
#   subscribe_tfm NAME FROM   NAME subscribes to FROM's tfm_catalog
#   layout_publisher NAME         tfm, docs_local (all rows), model clf trained, publication
#   layout_shard NAME LO HI FROM  tfm, docs rows LO..HI, views, subscribed to FROM
#   layout_coordinator NAME SHARD LO HI [SHARD LO HI ...]
#                         postgres_fdw servers and partitioned tables over the shards
#   wait_synced NAME MODEL VERSION [seconds]  until NAME's MODEL is at VERSION
#   layout_start PORT0 [extra -c settings...]
#                         all of it: pub, shard1 (ids 1-50000) and shard2
#                         (50001-100000) on ports PORT0+1..3, clf on both
#                         shards; sets CLF_VERSION (not in a subshell: it
#                         sets NODES and the ports for the caller)

SCALE_DB=${SCALE_DB:-tfm_scale}
declare -A NODE_PORT=()
declare -A NODE_OPTS=()
# each server's tfm node (ids node * 2^20 + n): the servers are copies of one
# template cluster, so their default nodes (a hash of the system identifier
# and the database's OID) would tie, which a subscription refuses
declare -A NODE_NUM=()

nodes_init() {
  NODES=$(mktemp -d /tmp/tfm-scaleout.XXXXXX)
  chmod 755 "$NODES"
  mkdir "$NODES/template"
  chmod 700 "$NODES/template"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$NODES"
  cluster_run "$PGBIN/initdb" -D "$NODES/template" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
}

node_start() {
  local name=$1 port=$2 dir="$NODES/$1"
  shift 2
  # a copy of the template is quicker than initdb on a loaded machine
  [ -d "$dir" ] || cluster_run cp -a "$NODES/template" "$dir"
  local opts="-c listen_addresses='' -c unix_socket_directories='$dir' -c port=$port"
  opts+=" -c wal_level=logical -c fsync=off -c full_page_writes=off -c max_parallel_workers_per_gather=0"
  opts+=" -c tfm.precision=fp32 -c tfm.threads=1 -c tfm.progress=off"
  for o in "$@"; do opts+=" -c $o"; done
  NODE_PORT[$name]=$port
  [ -n "${NODE_NUM[$name]:-}" ] || NODE_NUM[$name]=$((${#NODE_NUM[@]} + 1))
  NODE_OPTS[$name]=$opts
  node_restart "$name"
}

node_restart() {
  local dir="$NODES/$1"
  # (the servers' own libpq connections — postgres_fdw, subscriptions —
  # must not take the caller's PGOPTIONS)
  cluster_run env -u PGOPTIONS -u PGAPPNAME BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
    "$PGBIN/pg_ctl" -D "$dir" -l "$dir/server.log" -o "${NODE_OPTS[$1]}" -w start >/dev/null
}

node_stop() {
  cluster_run "$PGBIN/pg_ctl" -D "$NODES/$1" -m "${2:-immediate}" -w stop >/dev/null 2>&1 || true
}

nodes_stop() {
  [ -n "${NODES:-}" ] && [ -d "$NODES" ] || return 0
  local n
  for n in "${!NODE_PORT[@]}"; do node_stop "$n"; done
  rm -rf "$NODES"
}

node_conninfo() {
  echo "host=$NODES/$1 port=${NODE_PORT[$1]} dbname=$SCALE_DB user=postgres"
}

on() {
  local name=$1
  shift
  psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$NODES/$name" -p "${NODE_PORT[$name]}" -U postgres -d "$SCALE_DB" "$@"
}

# The publication of the catalog tables a subscriber needs to run the
# publisher's models: tfm_publication_tables() names them (tokenizers with
# vocabularies and merges, models, tensors, training history, aliases and
# their history; doc/operations.md, "Logical replication").
publish_tfm() {
  on "$1" -c "SELECT tfm_create_publication('tfm_catalog')"
}

subscribe_tfm() {
  on "$1" -c "SET client_min_messages = warning" -c "CREATE SUBSCRIPTION tfm_catalog_$1 CONNECTION '$(node_conninfo "$2")' PUBLICATION tfm_catalog"
}

# docs rows lo..hi: deterministic short texts of a few words and a number;
# the label follows the words, with one row in three pushed to 'pos' (so a
# small model learns most of it, not all)
docs_sql() {
  cat <<SQL
CREATE TABLE $1 (id integer PRIMARY KEY, body text NOT NULL, label text NOT NULL);
INSERT INTO $1
SELECT i, b, CASE WHEN (b ~ 'fine|warm|bright')::int - (b ~ 'dull|cold|bleak')::int + (i % 3 = 0)::int > 0
                  THEN 'pos' ELSE 'neg' END
FROM (SELECT i, w[1 + (i * 7) % 10] || ' ' || w[1 + (i * 13 + i / 10) % 10] || ' '
                || w[1 + (i * 31 + i / 100) % 10] || ' ' || i AS b
      FROM generate_series($2, $3) i,
           (SELECT ARRAY['fine', 'dull', 'warm', 'cold', 'film', 'plot', 'scene', 'bright', 'bleak', 'story'] AS w) c) s;
ANALYZE $1;
SQL
}

layout_publisher() {
  psql -X -q -h "$NODES/$1" -p "${NODE_PORT[$1]}" -U postgres -d postgres -c "CREATE DATABASE $SCALE_DB"
  { echo "SET client_min_messages = warning;"
    echo "CREATE EXTENSION tfm;"
    echo "SELECT tfm_set_node(${NODE_NUM[$1]});"
    docs_sql docs_local 1 100000
    cat <<'SQL'
SELECT tfm_tokenizer_train('chars', body, 'char') FROM docs_local WHERE id <= 2000;
SELECT tfm_create_model('clf', 'classify', 'chars', labels => ARRAY['neg', 'pos'],
                        d_model => 16, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('clf', 'SELECT body, label FROM docs_local WHERE id % 10 = 0 ORDER BY id',
                               epochs => 1, batch_size => 32);
SQL
  } | on "$1" >/dev/null
  publish_tfm "$1" >/dev/null
}

# A shard: its rows, the view that scores them where they live, the view
# that says which version of each model it has (and which backend answers)
layout_shard() {
  psql -X -q -h "$NODES/$1" -p "${NODE_PORT[$1]}" -U postgres -d postgres -c "CREATE DATABASE $SCALE_DB"
  { echo "SET client_min_messages = warning;"
    echo "CREATE EXTENSION tfm;"
    echo "SELECT tfm_set_node(${NODE_NUM[$1]});"
    docs_sql docs "$2" "$3"
    cat <<SQL
CREATE VIEW docs_scored AS
SELECT id, tfm_classify('clf', body) AS label,
       (SELECT p.probability FROM tfm_predict_proba('clf', body) p WHERE p.label = 'pos') AS p_pos
FROM docs;
CREATE VIEW model_versions AS
SELECT '$1'::text AS shard, name, version, pg_backend_pid() AS pid FROM tfm.models;
SQL
  } | on "$1" >/dev/null
  subscribe_tfm "$1" "$4" >/dev/null
}

# The coordinator: a postgres_fdw server per shard (async_capable, so an
# Append waits on all of them at once) and three partitioned tables whose
# partitions are foreign tables on the shards: docs (the rows), docs_scored
# (the shards' view: tfm runs there; fetched 1000 rows at a time, since
# every FETCH is a statement on the shard and tfm checks its model once per
# statement) and model_versions.
layout_coordinator() {
  local coord=$1 sql
  shift
  sql="SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE TABLE docs (id integer NOT NULL, body text NOT NULL, label text NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE docs_scored (id integer NOT NULL, label text, p_pos double precision) PARTITION BY RANGE (id);
CREATE TABLE model_versions (shard text NOT NULL, name text, version bigint, pid integer) PARTITION BY LIST (shard);"
  while [ $# -ge 3 ]; do
    local s=$1 lo=$2 hi=$3 host="$NODES/$1"
    shift 3
    # SCALE_FDW_TCP=1: over TCP on 127.0.0.1 (the shards must listen there),
    # so that bench/scaleout/run.sh can count the bytes on each connection
    [ -n "${SCALE_FDW_TCP:-}" ] && host=127.0.0.1
    sql+="
CREATE SERVER $s FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$host', port '${NODE_PORT[$s]}', dbname '$SCALE_DB', async_capable 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER $s OPTIONS (user 'postgres');
CREATE FOREIGN TABLE docs_$s PARTITION OF docs FOR VALUES FROM ($lo) TO ($((hi + 1)))
  SERVER $s OPTIONS (table_name 'docs');
CREATE FOREIGN TABLE docs_scored_$s PARTITION OF docs_scored FOR VALUES FROM ($lo) TO ($((hi + 1)))
  SERVER $s OPTIONS (table_name 'docs_scored', fetch_size '1000');
CREATE FOREIGN TABLE model_versions_$s PARTITION OF model_versions FOR VALUES IN ('$s')
  SERVER $s OPTIONS (table_name 'model_versions');"
  done
  # the coordinator's statistics of the shards' rows (sampled through
  # postgres_fdw), so a query's ORDER BY id streams through an Append of
  # sorted remote scans instead of sorting every row on the coordinator
  sql+="
ANALYZE docs;"
  on "$coord" -c "$sql" >/dev/null
}

# until NAME has MODEL at VERSION: the subscription's first copy of every
# table is done (each table is copied in a transaction of its own, so a
# model's row can be there before its tensors) and the save is applied
# (after the first copy the publisher's transactions apply whole, in order)
wait_synced() {
  local _
  for _ in $(seq 1 $((${4:-60} * 20))); do
    [ "$(on "$1" -c "SELECT count(*) FROM tfm.models WHERE name = '$2' AND version = $3
                     AND NOT EXISTS (SELECT FROM pg_subscription_rel WHERE srsubstate <> 'r')")" = 1 ] && return 0
    sleep 0.05
  done
  echo "$1 did not get version $3 of model $2 in ${4:-60} s" >&2
  return 1
}

layout_start() {
  local port0=$1
  shift
  nodes_init
  node_start pub $((port0 + 1)) "$@"
  node_start shard1 $((port0 + 2)) "$@"
  node_start shard2 $((port0 + 3)) "$@"
  layout_publisher pub
  layout_shard shard1 1 50000 pub
  layout_shard shard2 50001 100000 pub
  layout_coordinator pub shard1 1 50000 shard2 50001 100000
  CLF_VERSION=$(on pub -c "SELECT version FROM tfm.models WHERE name = 'clf'")
  wait_synced shard1 clf "$CLF_VERSION"
  wait_synced shard2 clf "$CLF_VERSION"
}
