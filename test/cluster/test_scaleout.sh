#!/usr/bin/env bash
# test_scaleout.sh — tfm past one server with PostgreSQL's own machinery
# (doc/scaleout.md): three throwaway servers of their own (wal_level=logical,
# one thread each) — a publisher that trains a classifier and is also the
# coordinator, and two shards that subscribe to its tfm catalog by logical
# replication and hold the two halves of a 100,000-row table; the
# coordinator sees them as partitioned tables of postgres_fdw foreign tables.
#
#   - the shard-side form (a view on each shard calls tfm, the coordinator
#     reads foreign tables over the views) plans as an Append of Async
#     Foreign Scans, and gives the same labels and probabilities, row for
#     row, as the single server scoring its own copy of the table; so does
#     the coordinator-side form (tfm on the coordinator, every row's text
#     shipped);
#   - the model retrained on the coordinator (tfm_train over the shards'
#     rows): each shard gets the new version (polled, with a timeout) and
#     the same shard backends that answered with the old one answer with
#     the new one, equal to the single server's;
#   - a classify job on each shard keeps a table of its own rows' labels
#     (the replicated model), equal to the shard's view, and follows an update
#   - CALL tfm_fit on the coordinator over the partitioned foreign table,
#     with one shard stopped in the middle of the run: the run fails, its
#     checkpoint holds, and after the shard is restarted, resume => true
#     ends with weights bit-identical to an uninterrupted run on the single
#     server's copy of the rows.
#
# Needs postgres_fdw (Debian's postgresql-15 package has it).  Run as root,
# the servers run as the postgres user (scripts/cluster.sh).  No timing is
# asserted.  TFM_TEST_VERBOSE=1 prints the plans.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/cluster.sh
. scripts/scaleout_layout.sh

bg_pids=()
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  nodes_stop
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

layout_start 5440
v1=$CLF_VERSION
echo "   publisher trained clf (version $v1); both shards subscribed and have it"

# the shard-side form plans as one Async Foreign Scan per shard
plan=$(on pub -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT id, label FROM docs_scored")
[ -n "${TFM_TEST_VERBOSE:-}" ] && echo "$plan"
[ "$(grep -c 'Async Foreign Scan on public.docs_scored_shard' <<<"$plan")" = 2 ] \
  || fail "the shard-side form is not an Append of two Async Foreign Scans: $plan"
grep -q 'Remote SQL: SELECT id, label FROM public.docs_scored' <<<"$plan" \
  || fail "the shard-side form does not read the shards' view: $plan"
plan=$(on pub -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT id, tfm_classify('clf', body) FROM docs")
grep -q 'Remote SQL: SELECT id, body FROM public.docs' <<<"$plan" \
  || fail "the coordinator-side form does not ship the texts: $plan"
echo "   plans: shard-side form = Append of 2 Async Foreign Scans over the shards' views; coordinator-side ships id, body"

# One coordinator session for the scores before and after the retrain, so
# the shard backends (postgres_fdw keeps its connections) that cached the
# old version must answer with the new one.
on pub <<'SQL' | sed 's/^/   /'
CREATE FUNCTION expect(ok boolean, what text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN RAISE EXCEPTION 'FAIL: %', what; END IF;
  RETURN what;
END $$;
-- every shard's model at version want, or an error after timeout_s
CREATE PROCEDURE wait_for_version(model text, want bigint, timeout_s integer) LANGUAGE plpgsql AS $$
DECLARE
  n integer;
  deadline timestamptz := clock_timestamp() + make_interval(secs => timeout_s);
BEGIN
  LOOP
    SELECT count(*) INTO n FROM model_versions WHERE name = model AND version = want;
    EXIT WHEN n = 2;
    IF clock_timestamp() > deadline THEN
      RAISE EXCEPTION 'FAIL: % of 2 shards at version % of % after % s', n, want, model, timeout_s;
    END IF;
    COMMIT;
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
CREATE FUNCTION compare(a regclass, b regclass, probabilities boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  bad bigint;
BEGIN
  EXECUTE format('SELECT count(*), count(*) FILTER (WHERE x.id IS NULL OR y.id IS NULL OR x.label IS DISTINCT FROM y.label'
                 || CASE WHEN probabilities THEN ' OR x.p_pos IS DISTINCT FROM y.p_pos' ELSE '' END
                 || ') FROM %s x FULL JOIN %s y ON x.id = y.id', a, b) INTO n, bad;
  RETURN expect(n = 100000 AND bad = 0, format('%s = %s: %s rows, %s differ', a, b, n, bad));
END $$;

SET extra_float_digits = 3;
CREATE TABLE single_v1 AS
SELECT id, tfm_classify('clf', body) AS label,
       (SELECT p.probability FROM tfm_predict_proba('clf', body) p WHERE p.label = 'pos') AS p_pos
FROM docs_local;
CREATE TABLE shards_v1 AS SELECT id, label, p_pos FROM docs_scored;
CREATE TABLE coordinator_v1 AS SELECT id, tfm_classify('clf', body) AS label FROM docs;
SELECT expect(count(DISTINCT label) = 2, 'both labels predicted: ' || string_agg(DISTINCT label, ', ')) FROM single_v1;
SELECT compare('shards_v1', 'single_v1', true);
SELECT compare('coordinator_v1', 'single_v1', false);
CREATE TABLE pids_v1 AS SELECT shard, pid FROM model_versions WHERE name = 'clf';

-- retrained on the coordinator, over the shards' rows
SELECT expect(count(*) = 1, 'clf retrained over the shards (tfm_train on docs)')
FROM tfm_train('clf', 'SELECT body, label FROM docs WHERE id % 10 = 5 ORDER BY id', epochs => 1, seed => 9);
SELECT version AS v2 FROM tfm.models WHERE name = 'clf' \gset
CALL wait_for_version('clf', :v2, 60);
CREATE TABLE shards_v2 AS SELECT id, label, p_pos FROM docs_scored;
SELECT expect(count(*) = 2, 'the same shard backends answered before and after the retrain')
FROM pids_v1 JOIN model_versions m USING (shard, pid) WHERE m.name = 'clf';
CREATE TABLE single_v2 AS
SELECT id, tfm_classify('clf', body) AS label,
       (SELECT p.probability FROM tfm_predict_proba('clf', body) p WHERE p.label = 'pos') AS p_pos
FROM docs_local;
SELECT compare('shards_v2', 'single_v2', true);
SELECT expect(count(*) > 0, 'the new version changed probabilities: ' || count(*) || ' rows')
FROM shards_v1 a JOIN shards_v2 b USING (id) WHERE a.p_pos <> b.p_pos;
SQL

# ---- a job on each shard keeps a table of its own rows' labels current,
# with the replicated model (jobs are per server: not published)
v2=$(on pub -c "SELECT version FROM tfm.models WHERE name = 'clf'")
for s in shard1 shard2; do
  lo=$([ $s = shard1 ] && echo 20000 || echo 60000)   # rows the training below does not read
  r=$(on $s <<SQL
SET client_min_messages = warning;
SELECT tfm_job_create('score', 'docs', 'body', 'clf', 'classify') \\gset
CALL tfm_job_run('score');
UPDATE docs SET body = 'bright warm fine fine ' || id WHERE id = $lo;
CALL tfm_job_run('score');
SELECT count(*) || ' ' || count(*) FILTER (WHERE j.id IS NULL OR v.id IS NULL OR j.output IS DISTINCT FROM v.label
                                                 OR j.model_version <> $v2)
       || ' ' || (SELECT updated_at > (SELECT min(updated_at) FROM score) FROM score WHERE id = $lo)
FROM score j FULL JOIN docs_scored v USING (id);
SQL
)
  [ "$r" = "50000 0 true" ] || fail "$s: the job's table (rows, differing from the shard's view, the updated row computed again): $r"
done
echo "   a job on each shard keeps its own 50000 rows' labels (version $v2), equal to the shard's view, and follows an update"

# ---- training over the shards, one shard stopped in the middle of the run
# (rows 1-10000 on shard1, 90001-100000 on shard2, read in id order: an
# Append of the shards' sorted scans, one after the other)
train_rows="SELECT body, label FROM %s WHERE id <= 10000 OR id > 90000 ORDER BY id"
# shellcheck disable=SC2059
plan=$(on pub -c "EXPLAIN (VERBOSE, COSTS OFF) $(printf "$train_rows" docs)")
if [ "$(grep -c 'ORDER BY id ASC NULLS LAST' <<<"$plan")" != 2 ] || grep -q Sort <<<"$plan"; then
  fail "the training query does not stream the shards' sorted rows: $plan"
fi
fit_args="epochs => 1, batch_size => 32, seed => 3, checkpoint_every => '1 millisecond'"
export PGOPTIONS="-c tfm.train_chunk_rows=1000 -c client_min_messages=warning"
on pub -c "SELECT tfm_create_model(n, 'classify', 'chars', labels => ARRAY['neg', 'pos'], d_model => 16,
                                   heads => 2, layers => 1, max_len => 32, seed => 5)
           FROM unnest(ARRAY['fit_single', 'fit_shards']) n" >/dev/null
# shellcheck disable=SC2059
on pub -c "CALL tfm_fit('fit_single', '$(printf "$train_rows" docs_local)', $fit_args)"

# Two locks make the failure land at a known place: a row lock on the
# model's catalog row holds the run at its first checkpoint (after it has
# read both shards: counting, held-out rows); meanwhile a lock on shard2's
# table is queued behind the run's read of it; once the first checkpoint
# commits, shard2's table is locked, the run goes on through shard1's rows
# (a checkpoint every chunk) and waits when it reaches shard2's: shard2 is
# stopped then.
holder() { # NAME NODE SQL: a session holding a lock until it is killed
  PGAPPNAME=$1 on "$2" -c "BEGIN" -c "$3" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
  bg_pids+=($!)
}
until_true() { # NODE SQL WHAT: poll (20 s)
  local _
  for _ in $(seq 1 400); do
    [ "$(on "$1" -c "$2")" = t ] && return 0
    sleep 0.05
  done
  fail "$3"
}
holder gate_fit pub "SELECT 1 FROM tfm.models WHERE name = 'fit_shards' FOR UPDATE"
until_true pub "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'gate_fit' AND wait_event = 'PgSleep')" \
  "the lock on fit_shards's row was not taken"
# shellcheck disable=SC2059
PGAPPNAME=fit_shards on pub -c "CALL tfm_fit('fit_shards', '$(printf "$train_rows" docs)', $fit_args)" \
  >"$NODES/fit.out" 2>&1 &
fit_pid=$!
bg_pids+=("$fit_pid")
until_true pub "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'fit_shards' AND wait_event_type = 'Lock')" \
  "the run did not reach its first checkpoint"
holder gate_shard shard2 "LOCK TABLE docs IN ACCESS EXCLUSIVE MODE"
until_true shard2 "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'docs'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted)" \
  "the run had not read shard2 before its first checkpoint"
on pub -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gate_fit'" >/dev/null
until_true shard2 "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'docs'::regclass AND mode = 'AccessShareLock' AND NOT granted)" \
  "the run did not reach shard2's rows"
ck=$(on pub -c "SELECT c.epoch || ' ' || c.rows_done || ' ' || c.model_version FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = 'fit_shards'")
[ -n "$ck" ] || fail "no checkpoint before shard2's rows"
node_stop shard2
if wait "$fit_pid"; then fail "tfm_fit went on without shard2: $(cat "$NODES/fit.out")"; fi
echo "   tfm_fit over the shards, shard2 stopped when the run reached its rows: $(grep -m1 ERROR "$NODES/fit.out")"
ck_after=$(on pub -c "SELECT c.epoch || ' ' || c.rows_done || ' ' || c.model_version FROM tfm.checkpoints c JOIN tfm.models m ON m.id = c.model_id WHERE m.name = 'fit_shards'")
[ "$ck_after" = "$ck" ] || fail "the checkpoint moved: $ck → $ck_after"
[ "$(on pub -c "SELECT version FROM tfm.models WHERE name = 'fit_shards'")" = "${ck##* }" ] \
  || fail "fit_shards is not at its checkpoint's version"
read -r ck_epoch ck_rows _ <<<"$ck"
# a checkpoint at every chunk of shard1's 10,000 rows, the last one just
# before shard2's first row
[ "$ck_epoch $ck_rows" = "1 10000" ] || fail "the last checkpoint is at epoch $ck_epoch, row $ck_rows, not epoch 1, row 10000"
echo "   the checkpoint holds: epoch $ck_epoch, $ck_rows rows done, the model at its version"

node_restart shard2
on pub -c "CALL tfm_fit('fit_shards', resume => true)"
same=$(on pub -c "SELECT count(*) || ' ' || count(*) FILTER (WHERE a.data IS DISTINCT FROM b.data OR a.shape IS DISTINCT FROM b.shape)
                  FROM (SELECT t.* FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'fit_single') a
                  FULL JOIN (SELECT t.* FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'fit_shards') b
                  USING (name)")
read -r ntensors ndiff <<<"$same"
if [ "$ntensors" -eq 0 ] || [ "$ndiff" != 0 ]; then
  fail "the resumed run over the shards differs from the single server's: $ndiff of $ntensors tensors"
fi
echo "   shard2 restarted, resume => true: $ntensors tensors bit-identical to the uninterrupted run on one server"
v=$(on pub -c "SELECT version FROM tfm.models WHERE name = 'fit_shards'")
wait_synced shard2 fit_shards "$v"
echo "   shard2 caught up with the publisher after its restart (fit_shards version $v)"
