#!/usr/bin/env bash
# bench/cancel/run.sh — how fast a cancel stops training: the reference
# encoder classifier (d_model 128, 4 layers, length 256, batch 32, where one
# training step takes about a second on 2 cores) is trained with
# statement_timeout = 2 s and with pg_cancel_backend from another session;
# prints how long after the request the statement ended.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
cluster_start
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION tfm;
CREATE TABLE long_rows AS
SELECT array(SELECT 6 + (i * 31 + j * 17) % 7990 FROM generate_series(1, 256) j) AS ids,
       CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label
FROM generate_series(1, 2000) i;
SELECT model FROM tfm_create_model('ref', 'classify', vocab_size => 8000, labels => ARRAY['a', 'b'],
                                   d_model => 128, heads => 8, layers => 4, d_ff => 512, max_len => 256);
SQL
echo "== statement_timeout = 2 s"
start=$(date +%s.%N)
psql -X -q -c "SET tfm.progress = off" -c "SET statement_timeout = '2s'" \
     -c "SELECT count(*) FROM tfm_train('ref', 'SELECT ids, label FROM long_rows', epochs => 100)" 2>&1 | grep -o "canceling.*" || true
end=$(date +%s.%N)
echo "statement ended after $(echo "$end - $start" | bc) s (timeout 2 s): latency $(echo "$end - $start - 2" | bc) s"

echo "== pg_cancel_backend after 3 s"
psql -X -q -c "SET tfm.progress = off" \
     -c "SELECT count(*) FROM tfm_train('ref', 'SELECT ids, label FROM long_rows', epochs => 100)" >/tmp/tfm_cancel.out 2>&1 &
bg=$!
sleep 3
sent=$(date +%s.%N)
psql -X -q -At -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'tfm_train %'" >/dev/null
wait $bg || true
end=$(date +%s.%N)
grep -o "canceling.*" /tmp/tfm_cancel.out || true
echo "statement ended $(echo "$end - $sent" | bc) s after pg_cancel_backend"
