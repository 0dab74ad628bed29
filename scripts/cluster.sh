# cluster.sh — sourced by test.sh and demo.sh: start a throwaway PostgreSQL
# 15 cluster (UTF-8, socket only, in a fresh directory under /tmp) and stop
# and remove it when the calling script exits.  initdb refuses to run as
# root, so as root the cluster runs as the `postgres` user.
#
#   cluster_start [extra postgres -c settings...]
#   exports PGHOST (the socket directory), PGPORT, PGUSER, PGDATABASE
#   and TFM_PGDATA (the data directory)
#   cluster_restart: pg_ctl restart -m immediate (a crash: recovery at the
#   start), with the options of cluster_start (pg_ctl keeps them in
#   postmaster.opts)

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

cluster_run() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cluster_stop() {
  if [ -n "${TFM_PGDATA:-}" ] && [ -d "$TFM_PGDATA" ]; then
    cluster_run "$PGBIN/pg_ctl" -D "$TFM_PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$TFM_PGDATA"
  fi
}

cluster_start() {
  TFM_PGDATA=$(mktemp -d /tmp/tfm-pgdata.XXXXXX)
  chmod 700 "$TFM_PGDATA"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$TFM_PGDATA"
  trap cluster_stop EXIT
  cluster_run "$PGBIN/initdb" -D "$TFM_PGDATA" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
  local opts="-c listen_addresses='' -c unix_socket_directories='$TFM_PGDATA' -c port=5432"
  opts+=" -c max_parallel_workers_per_gather=2 -c fsync=off -c full_page_writes=off"
  for o in "$@"; do opts+=" -c $o"; done
  cluster_run "$PGBIN/pg_ctl" -D "$TFM_PGDATA" -l "$TFM_PGDATA/server.log" -o "$opts" -w start >/dev/null
  export PGHOST="$TFM_PGDATA" PGPORT=5432 PGUSER=postgres PGDATABASE=postgres TFM_PGDATA
}

cluster_restart() {
  cluster_run "$PGBIN/pg_ctl" -D "$TFM_PGDATA" -l "$TFM_PGDATA/server.log" -m immediate -w restart >/dev/null
}
