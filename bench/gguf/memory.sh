#!/bin/bash
# bench/gguf/memory.sh — what a session holds for a GGUF model it runs at
# gguf (issue 40): on a throwaway cluster, import each file, then in fresh
# sessions (the first writes the shared copy, the second maps it) generate
# 32 tokens greedily and read the backend's /proc/self/status (VmRSS,
# RssAnon, RssFile, VmHWM) and smaps_rollup (Pss), tfm_model_footprint,
# and the shared-weights files in base/pgsql_tmp (size and bytes stored).
#   PGBIN=... bench/gguf/memory.sh FILE.gguf [FILE.gguf ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
cluster_start "shared_buffers=32MB"
PSQL="$PGBIN/psql -X -q -v ON_ERROR_STOP=1 -At"
$PSQL -c "CREATE EXTENSION tfm"
dir=$(mktemp -d /tmp/gguf-mem.XXXXXX); chmod 755 "$dir"
n=0
for f in "$@"; do
  n=$((n + 1)); cp "$f" "$dir/m$n.gguf"; chmod 644 "$dir/m$n.gguf"
  $PSQL -c "SELECT count(*) FROM tfm_import_gguf_file('m$n', '$dir/m$n.gguf')" >/dev/null
done
probe() {
  # $1 model: generate, then the backend's memory (kB) and the footprint
  $PSQL <<SQL
SELECT format('greedy ids (32): %s', array_agg(id ORDER BY pos)) FROM tfm_generate_tokens('$1', ARRAY[1, 330, 348, 347, 351], max_tokens => 32, temperature => 0);
SELECT string_agg(l, ' ') FROM regexp_split_to_table(pg_read_file('/proc/self/status'), E'\n') l
 WHERE l ~ '^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):';
SELECT string_agg(l, ' ') FROM regexp_split_to_table(pg_read_file('/proc/self/smaps_rollup'), E'\n') l
 WHERE l ~ '^(Pss|Pss_Anon|Pss_File):';
SELECT format('footprint: %s', f) FROM tfm_model_footprint('$1') f;
\\t on
SELECT pg_read_file('/proc/self/smaps') \\g $dir/smaps
SQL
  awk '/^[0-9a-f]+-[0-9a-f]+ /{t = ($0 ~ /pgsql_tmp_tfm_/)} t && /^Rss:/{s += $2} END{print "shared-weights mappings: Rss " s+0 " kB"}' "$dir/smaps"
}
echo "-- a session with tfm loaded and no model (the baseline)"
$PSQL <<SQL | tr -s ' ' | sed 's/\t/ /g'
SELECT count(*) FROM tfm_info() \\gset
SELECT string_agg(l, ' ') FROM regexp_split_to_table(pg_read_file('/proc/self/status'), E'\\n') l
 WHERE l ~ '^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):';
SQL
for i in $(seq 1 $n); do
  size=$(stat -c %s "$dir/m$i.gguf")
  echo "== $(basename "${@:$i:1}") ($size bytes)"
  echo "-- first session (loads, writes the shared copy)"; probe "m$i" | tr -s ' ' | sed 's/\t/ /g'
  echo "-- second session (maps it)"; probe "m$i" | tr -s ' ' | sed 's/\t/ /g'
  echo "-- shared files: name, size, bytes stored"
  for s in "$TFM_PGDATA"/base/pgsql_tmp/pgsql_tmp_tfm_*; do
    [ -e "$s" ] && echo "$(basename "$s") $(stat -c %s "$s") $(( $(stat -c %b "$s") * $(stat -c %B "$s") ))"
  done
  $PSQL -c "SELECT tfm_drop_model('m$i')" >/dev/null
done
rm -rf "$dir"
