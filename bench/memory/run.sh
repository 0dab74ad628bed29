#!/usr/bin/env bash
# bench/memory/run.sh — training memory does not grow with the table: one
# epoch of the same small classifier over 100,000 rows and over 1,000,000
# rows, printing the training backend's peak resident memory (VmHWM) after
# each.  tfm_train reads the query through a cursor 8192 rows at a time and
# keeps at most 50,000 held-out rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
cluster_start
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION tfm;
CREATE TABLE million AS
SELECT i, array(SELECT 6 + (i * 7 + j * 13) % 90 FROM generate_series(1, 8 + i % 17) j)
          || CASE WHEN i % 2 = 1 THEN ARRAY[97] ELSE ARRAY[]::int[] END AS ids,
       CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label
FROM generate_series(1, 1000000) i;
SQL
for rows in 100000 1000000; do
  psql -X -q -v ON_ERROR_STOP=1 -c "SELECT tfm_drop_model(name) FROM tfm.models" \
       -c "SELECT model FROM tfm_create_model('mem', 'classify', vocab_size => 100, labels => ARRAY['a', 'b'], d_model => 32, heads => 4, layers => 1, max_len => 32)" >/dev/null
  coproc PSQL { psql -X -q -At -v ON_ERROR_STOP=1; }
  echo "SELECT pg_backend_pid();" >&"${PSQL[1]}"
  read -r pid <&"${PSQL[0]}"
  echo "SET tfm.progress = off; SELECT 'steps=' || steps || ' train_loss=' || round(train_loss::numeric, 4) || ' val_accuracy=' || round(val_accuracy::numeric, 4) || ' seconds=' || round(seconds::numeric) FROM tfm_train('mem', 'SELECT ids, label FROM million WHERE i <= $rows', batch_size => 256, lr => 3e-3);" >&"${PSQL[1]}"
  read -r result <&"${PSQL[0]}"
  hwm=$(awk '/VmHWM/ {print $2, $3}' /proc/$pid/status)
  echo "rows=$rows $result peak_resident_memory=$hwm"
  exec {PSQL[1]}>&-
  wait "$PSQL_PID" 2>/dev/null || true
done
