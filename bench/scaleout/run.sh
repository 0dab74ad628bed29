#!/usr/bin/env bash
# bench/scaleout/run.sh — the figures of doc/scaleout.md, on the layout of
# test/cluster/test_scaleout.sh (scripts/scaleout_layout.sh): a publisher that is
# also the coordinator and two shards of 50,000 rows each, subscribing to
# its tfm catalog; every server limited to one thread (tfm.threads = 1,
# BLIS_NUM_THREADS = OMP_NUM_THREADS = 1); postgres_fdw over TCP on
# 127.0.0.1 so that each connection's bytes can be counted.  Prints:
#
#   1. rows scored per second through the coordinator, shard-side form
#      (SELECT max(id), count(label) FROM docs_scored): one shard (its
#      50,000 rows; the other partition pruned) and two shards (100,000
#      rows, an Append of Async Foreign Scans), alternating, REPS times;
#      medians, their ratio, and the CPU seconds the shards' backends used
#      (from /proc/<pid>/stat: rows per CPU second do not depend on load);
#   2. the time from a retrain's commit on the publisher to the new version
#      on every shard: the commit's time from track_commit_timestamp on the
#      publisher; on each shard, the time its subscription applied the new
#      version (a trigger on tfm.models enabled ALWAYS, so it fires for the
#      apply worker: one clock, one machine); and the time until both shards
#      classify a text with the new version through the coordinator (polled
#      every 10 ms in one coordinator session, so up to 10 ms late); for the
#      small classifier of the test and a larger one (LAG_BIG=0: skip it).
#      (A subscriber's pg_xact_commit_timestamp gives the publisher's commit
#      time for applied transactions, not its own: not usable here.)
#   3. bytes shipped per scored row, shard-side form (id and label come
#      back) against coordinator-side form (id and body come back; tfm runs
#      on the coordinator): the coordinator's TCP connections to the shards,
#      bytes received and sent from the kernel's counters (ss -ti:
#      bytes_received, bytes_sent) before and after each query, in the same
#      session — the protocol's whole traffic (DECLARE, FETCH 100 rows at a
#      time, CLOSE, COMMIT), divided by the rows — beside the payload the
#      rows' text alone would take.
#
#   bench/scaleout/run.sh             # about 3 minutes on a quiet machine
#   REPS=5 bench/scaleout/run.sh
#
# Needs tfm installed for the PostgreSQL that PG_CONFIG (or PGBIN) names,
# and free TCP ports PORT0+1 .. PORT0+3 on 127.0.0.1 (PORT0=5460).  Nothing
# here is a test.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPS=${REPS:-3}
LAG_REPS=${LAG_REPS:-5}
LAG_BIG=${LAG_BIG:-1}
PORT0=${PORT0:-5460}
export PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
. "$ROOT/scripts/cluster.sh"
. "$ROOT/scripts/scaleout_layout.sh"
export SCALE_FDW_TCP=1
trap nodes_stop EXIT

for p in $((PORT0 + 1)) $((PORT0 + 2)) $((PORT0 + 3)); do
  if [ -n "$(ss -ltnH "sport = :$p")" ]; then echo "port $p is taken: set PORT0" >&2; exit 1; fi
done
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# CPU seconds (user + system) of a process
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
layout_start "$PORT0" "listen_addresses='127.0.0.1'" track_commit_timestamp=on
v=$CLF_VERSION
echo "   layout ready: clf $(on pub -c "SELECT parameters FROM tfm.models WHERE name = 'clf'") parameters, version $v on both shards"

# Bench-only objects.  Each backend's own CPU time (utime + stime from
# /proc/self/stat, read by the backend itself): the shards' seen from the
# coordinator (the backends postgres_fdw talks to), the coordinator's own.
# On each shard, a trigger that fires for the subscription's apply too
# (ENABLE ALWAYS) notes when a model's new version is applied, and a view
# that classifies one text with a model named in the coordinator's WHERE.
cpu_sql="(split_part(f, ' ', 14)::bigint + split_part(f, ' ', 15)::bigint) / $(getconf CLK_TCK)::numeric"
for s in shard1 shard2; do
  on "$s" <<SQL
CREATE VIEW backend_cpu AS SELECT '$s'::text AS shard, $cpu_sql AS cpu_s FROM pg_read_file('/proc/self/stat') f;
CREATE TABLE applied (name text, version bigint, at timestamptz);
CREATE FUNCTION note_applied() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.version IS DISTINCT FROM OLD.version THEN
    INSERT INTO public.applied VALUES (NEW.name, NEW.version, clock_timestamp());
  END IF;
  RETURN NULL;
END \$\$;
CREATE TRIGGER note_applied AFTER INSERT OR UPDATE ON tfm.models FOR EACH ROW EXECUTE FUNCTION note_applied();
ALTER TABLE tfm.models ENABLE ALWAYS TRIGGER note_applied;
CREATE VIEW probe AS SELECT '$s'::text AS shard, name, version, tfm_classify(name, 'a fine warm film') AS label FROM tfm.models;
SQL
done
on pub <<SQL
CREATE VIEW backend_cpu_local AS SELECT $cpu_sql AS cpu_s FROM pg_read_file('/proc/self/stat') f;
CREATE TABLE backend_cpu (shard text NOT NULL, cpu_s numeric) PARTITION BY LIST (shard);
CREATE TABLE probe (shard text NOT NULL, name text, version bigint, label text) PARTITION BY LIST (shard);
CREATE FOREIGN TABLE backend_cpu_shard1 PARTITION OF backend_cpu FOR VALUES IN ('shard1') SERVER shard1 OPTIONS (table_name 'backend_cpu');
CREATE FOREIGN TABLE backend_cpu_shard2 PARTITION OF backend_cpu FOR VALUES IN ('shard2') SERVER shard2 OPTIONS (table_name 'backend_cpu');
CREATE FOREIGN TABLE probe_shard1 PARTITION OF probe FOR VALUES IN ('shard1') SERVER shard1 OPTIONS (table_name 'probe');
CREATE FOREIGN TABLE probe_shard2 PARTITION OF probe FOR VALUES IN ('shard2') SERVER shard2 OPTIONS (table_name 'probe');
SQL

# ---- 1. rows per second, one shard and two
one="SELECT max(id) AS m, count(label) AS n FROM docs_scored WHERE id <= 50000"
two="SELECT max(id) AS m, count(label) AS n FROM docs_scored"
coord="SELECT max(id) AS m, count(tfm_classify('clf', body)) AS n FROM docs"
echo "== 1. rows scored per second through the coordinator (one thread per server)"
echo "   shard-side form, two shards:"
on pub -c "EXPLAIN (VERBOSE, COSTS OFF) $two" | sed 's/^/   | /'
echo "   shard-side form, one shard:"
on pub -c "EXPLAIN (VERBOSE, COSTS OFF) $one" | sed 's/^/   | /'
echo "   coordinator-side form (two shards ship the texts, tfm runs on the coordinator):"
on pub -c "EXPLAIN (VERBOSE, COSTS OFF) $coord" | sed 's/^/   | /'
# one session: a warm-up (connections made, the model loaded where it
# runs), then the timed query; prints "seconds rows cpu_coordinator cpu_shard1 cpu_shard2"
cpu_now() {
  echo "SELECT (SELECT cpu_s FROM backend_cpu_local) AS c0,
               coalesce(sum(cpu_s) FILTER (WHERE shard = 'shard1'), 0) AS c1,
               coalesce(sum(cpu_s) FILTER (WHERE shard = 'shard2'), 0) AS c2 FROM backend_cpu \\gset $1"
}
timed() {
  on pub <<SQL
SET enable_partitionwise_aggregate = off;
$1 \gset w_
$(cpu_now a_)
SELECT clock_timestamp() AS t0 \gset
$1 \gset q_
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 3) AS secs \gset
$(cpu_now b_)
SELECT :secs, :q_n, :b_c0 - :a_c0, :b_c1 - :a_c1, :b_c2 - :a_c2;
SQL
}
: >"$NODES/rate"
for r in $(seq 1 "$REPS"); do
  forms="one two coord"
  [ $((r % 2)) = 0 ] && forms="coord two one"
  for form in $forms; do
    read -r secs rows c0 c1 c2 <<<"$(timed "${!form}" | tr '|' ' ')"
    echo "$form $secs $rows $c0 $c1 $c2" >>"$NODES/rate"
    awk -v r="$r" -v f="$form" -v s="$secs" -v n="$rows" -v c0="$c0" -v c1="$c1" -v c2="$c2" 'BEGIN {
      printf "   run %d, %-5s: %6d rows in %6.3f s = %6.0f rows/s; CPU s: coordinator %.2f, shard1 %.2f, shard2 %.2f\n",
        r, f, n, s, n / s, c0, c1, c2 }'
  done
done
r1=$(awk '$1 == "one" { print $3 / $2 }' "$NODES/rate" | median)
r2=$(awk '$1 == "two" { print $3 / $2 }' "$NODES/rate" | median)
rc=$(awk '$1 == "coord" { print $3 / $2 }' "$NODES/rate" | median)
p1=$(awk '$1 == "one" { print $3 / $5 }' "$NODES/rate" | median)
p2=$(awk '$1 == "two" { print $3 / ($5 + $6) }' "$NODES/rate" | median)
pc=$(awk '$1 == "coord" { print $3 / $4 }' "$NODES/rate" | median)
awk -v r1="$r1" -v r2="$r2" -v rc="$rc" -v p1="$p1" -v p2="$p2" -v pc="$pc" 'BEGIN {
  printf "   medians: shard-side one shard %.0f rows/s, two shards %.0f rows/s (x%.2f); coordinator-side %.0f rows/s\n", r1, r2, r2 / r1, rc
  printf "   rows per CPU second of the servers that score: %.0f (one shard), %.0f (two shards), %.0f (coordinator)\n", p1, p2, pc }'
echo "   load average now $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1b. what a statement costs a shard: postgres_fdw reads a foreign
# table through a cursor, FETCH fetch_size rows at a time (100 unless the
# server or table says otherwise), and each FETCH is a statement on the
# shard, in which tfm checks its model once (a catalog read by SPI)
echo "== 1b. shard1's CPU for its 50,000 rows: one statement, FETCH 100 (postgres_fdw's default), FETCH 1000"
cpu_t="SELECT (split_part(f, ' ', 14)::int + split_part(f, ' ', 15)::int) AS t FROM pg_read_file('/proc/self/stat') f"
fetches() { # COUNT SIZE
  echo "BEGIN;"
  echo "DECLARE c CURSOR FOR SELECT id, label FROM docs_scored;"
  for _ in $(seq 1 "$1"); do echo "FETCH $2 FROM c \\g /dev/null"; done
  echo "COMMIT;"
}
for r in $(seq 1 "$REPS"); do
  on shard1 <<SQL
SELECT count(label) FROM docs_scored WHERE id < 100 \g /dev/null
$cpu_t \gset a_
SELECT count(label) FROM docs_scored \g /dev/null
$cpu_t \gset b_
$(fetches 500 100)
$cpu_t \gset c_
$(fetches 50 1000)
$cpu_t \gset d_
$(for _ in $(seq 1 500); do echo "SELECT tfm_classify('clf', 'a fine warm film') \\g /dev/null"; done)
$cpu_t \gset e_
SELECT format('   run %s: one statement %s s, 500 x FETCH 100 %s s, 50 x FETCH 1000 %s s; 500 statements of one tfm_classify %s s',
              $r, round((:b_t - :a_t) / $(getconf CLK_TCK)::numeric, 2), round((:c_t - :b_t) / $(getconf CLK_TCK)::numeric, 2),
              round((:d_t - :c_t) / $(getconf CLK_TCK)::numeric, 2), round((:e_t - :d_t) / $(getconf CLK_TCK)::numeric, 2));
SQL
done

# ---- 2. from a retrain's commit to the new version on every shard
echo "== 2. from a retrain's commit on the publisher to the new version on both shards"
on pub <<'SQL'
CREATE TABLE lag_runs (model text, version bigint, committed timestamptz, answered timestamptz);
-- polls the shards through the coordinator every 10 ms until both classify
-- a text with the model's new version (the version and the label come from
-- the same snapshot of the shard), and notes the time
CREATE PROCEDURE wait_answer(model text, want bigint, committed timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  n integer;
  deadline timestamptz := clock_timestamp() + interval '120 s';
BEGIN
  LOOP
    SELECT count(*) INTO n FROM probe WHERE name = model AND version = want AND label IS NOT NULL;
    IF n = 2 THEN
      INSERT INTO lag_runs VALUES (model, want, committed, clock_timestamp());
      RETURN;
    END IF;
    IF clock_timestamp() > deadline THEN RAISE EXCEPTION 'the shards did not answer with version % of % in 120 s', want, model; END IF;
    COMMIT;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SQL
lag_run() { # MODEL QUERY SEED: SQL for a retrain that commits, then the poll
  cat <<SQL
SELECT count(*) FROM tfm_train('$1', '$2', epochs => 1, seed => $3) \\gset
SELECT version AS v, pg_xact_commit_timestamp(xmin) AS c FROM tfm.models WHERE name = '$1' \\gset
CALL wait_answer('$1', :v, :'c');
SQL
}
lag_report() { # MODEL VERSION
  local c a s1 s2
  read -r c a < <(on pub -F ' ' -c "SELECT extract(epoch FROM committed), extract(epoch FROM answered) FROM lag_runs WHERE model = '$1' AND version = $2")
  s1=$(on shard1 -c "SELECT extract(epoch FROM at) FROM applied WHERE name = '$1' AND version = $2")
  s2=$(on shard2 -c "SELECT extract(epoch FROM at) FROM applied WHERE name = '$1' AND version = $2")
  awk -v m="$1" -v v="$2" -v c="$c" -v a="$a" -v s1="$s1" -v s2="$s2" 'BEGIN {
    printf "   %s version %s: applied on shard1 after %.1f ms, shard2 after %.1f ms; both answering after %.1f ms\n",
      m, v, (s1 - c) * 1000, (s2 - c) * 1000, (a - c) * 1000
    printf "%s %.1f %.1f %.1f\n", m, (s1 - c) * 1000, (s2 - c) * 1000, (a - c) * 1000 > "/dev/stderr" }' 2>>"$NODES/lag"
}
: >"$NODES/lag"
# One coordinator session for every retrain and poll, as a server that
# keeps its connections would be: the shards' backends behind postgres_fdw
# are the same ones from one version to the next (connections made and
# the first model loaded before the first retrain, with the probe).
{
  echo "SELECT count(label) FROM probe \\g /dev/null"
  for r in $(seq 1 "$LAG_REPS"); do
    lag_run clf "SELECT body, label FROM docs_local WHERE id % 20 = $r ORDER BY id" "$r"
  done
  if [ "$LAG_BIG" = 1 ]; then
    echo "SELECT tfm_create_model('clf_big', 'classify', 'chars', labels => ARRAY['neg', 'pos'],
                                  d_model => 128, heads => 4, layers => 2, max_len => 32) \\g /dev/null"
    echo "SELECT count(label) FROM probe \\g /dev/null"
    for r in $(seq 1 "$LAG_REPS"); do
      lag_run clf_big "SELECT body, label FROM docs_local WHERE id % 100 = $r ORDER BY id" "$r"
    done
  fi
} | on pub
if [ "$LAG_BIG" = 1 ]; then
  echo "   clf_big: $(on pub -c "SELECT parameters FROM tfm.models WHERE name = 'clf_big'") parameters (tfm.tensors: $(on pub -c "SELECT pg_size_pretty(sum(pg_column_size(data))) FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'clf_big'"))"
fi
on pub -F ' ' -c "SELECT model, version FROM lag_runs ORDER BY answered" | while read -r m v; do lag_report "$m" "$v"; done
for m in clf clf_big; do
  grep -q "^$m " "$NODES/lag" || continue
  printf '   medians, %s: applied %.1f ms (shard1), %.1f ms (shard2); answering on both %.1f ms\n' "$m" \
    "$(awk -v m=$m '$1 == m { print $2 }' "$NODES/lag" | median)" \
    "$(awk -v m=$m '$1 == m { print $3 }' "$NODES/lag" | median)" \
    "$(awk -v m=$m '$1 == m { print $4 }' "$NODES/lag" | median)"
done

# ---- 3. bytes shipped per scored row
echo "== 3. bytes from the shards per scored row: shard-side against coordinator-side form"
shard_q="SELECT max(id) AS m, count(label) AS n FROM docs_scored"
coord_q="SELECT max(id) AS m, count(tfm_classify('clf', body)) AS n FROM docs"
on pub -c "EXPLAIN (VERBOSE, COSTS OFF) $coord_q" | sed 's/^/   | /'
snap() { echo "\\! ss -tinH state established '( dport = :$((PORT0 + 2)) or dport = :$((PORT0 + 3)) )' > $NODES/ss.$1"; }
on pub >/dev/null <<SQL
SET enable_partitionwise_aggregate = off;
$shard_q \gset
$coord_q \gset
$(snap 0)
$shard_q \gset
$(snap 1)
$coord_q \gset
$(snap 2)
SQL
bytes() { grep -o "$1:[0-9]*" "$NODES/ss.$2" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'; }
[ "$(grep -c bytes_received "$NODES/ss.0")" = 2 ] || { echo "expected two connections to the shards:" >&2; cat "$NODES/ss.0" >&2; exit 1; }
rs=$(( $(bytes bytes_received 1) - $(bytes bytes_received 0) ))
ss_=$(( $(bytes bytes_sent 1) - $(bytes bytes_sent 0) ))
rc=$(( $(bytes bytes_received 2) - $(bytes bytes_received 1) ))
sc=$(( $(bytes bytes_sent 2) - $(bytes bytes_sent 1) ))
# the rows' text alone: a DataRow message is 1 + 4 + 2 bytes, then 4 + the text per column
read -r ps pc < <(on pub -F ' ' -c "SELECT avg(7 + 4 + octet_length(id::text) + 4 + 3), avg(7 + 4 + octet_length(id::text) + 4 + octet_length(body))
                                    FROM docs_local")   # labels: 'neg', 'pos'
awk -v rs="$rs" -v ss="$ss_" -v rc="$rc" -v sc="$sc" -v ps="$ps" -v pc="$pc" 'BEGIN {
  printf "   shard-side form (id, label back):     %9d bytes received, %7d sent: %6.2f bytes per row (DataRow payload alone %.2f)\n", rs, ss, rs / 100000, ps
  printf "   coordinator-side form (id, body back): %9d bytes received, %7d sent: %6.2f bytes per row (DataRow payload alone %.2f)\n", rc, sc, rc / 100000, pc
  printf "   coordinator-side / shard-side: x%.2f\n", rc / rs }'
echo "== done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
