#!/usr/bin/env bash
# test_vector_dump.sh — pg_dump / pg_restore of a database using tfm and
# pgvector together: tfm_vector (which requires both), a job owned by a
# role that is not a superuser writing a vector(16) destination with an
# HNSW index, half of its backfill done.  Dumped in plain and custom
# format and restored into new databases; in each the three extensions
# are back, the outputs are those of the source database, the restored
# job finishes the backfill through pgvector's cast (each output its
# text's embedding), and the nearest-neighbour query is an index scan.
#
# Runs against the server the PG* variables name (scripts/test.sh starts
# one, with pgvector installed), as a superuser, from the checkout's root.
# Exits non-zero on any failure.
set -euo pipefail
export PGOPTIONS="-c tfm.threads=1 -c tfm.progress=off -c client_min_messages=warning"
src=tfm_vdump_src
dbs="$src tfm_vdump_plain tfm_vdump_custom"
drop_all() {
  for db in $dbs; do dropdb --if-exists "$db" 2>/dev/null || true; done
  psql -q -X -d postgres -c "DROP ROLE IF EXISTS tfm_vd_owner" >/dev/null 2>&1 || true
}
fail() { echo "FAIL: $*" >&2; exit 1; }
drop_all
work=$(mktemp -d /tmp/tfm-vector-dump.XXXXXX)
trap 'drop_all; rm -rf "$work"' EXIT

psql -q -X -d postgres -c "CREATE ROLE tfm_vd_owner"
createdb "$src"
psql -q -X -v ON_ERROR_STOP=1 -d "$src" -v cfg="$(cat test/fixtures/hf_bert/config.json)" \
  -v w="$(base64 -w0 test/fixtures/hf_bert/model.safetensors)" \
  -v tok="$(cat test/fixtures/hf_bert/tokenizer.json)" >/dev/null <<'SQL'
CREATE EXTENSION tfm_vector CASCADE;
SELECT tfm_import('vd_bert', :'cfg', decode(:'w', 'base64'), :'tok');
SELECT tfm_grant('vd_bert', 'tfm_vd_owner');
CREATE SCHEMA app AUTHORIZATION tfm_vd_owner;
SET ROLE tfm_vd_owner;
CREATE TABLE app.docs (id int PRIMARY KEY, body text);
INSERT INTO app.docs
SELECT i, array_to_string(ARRAY(SELECT (ARRAY['the', 'quick', 'brown', 'fox', 'lazy', 'dog', 'hello', 'world'])[(i / 8 ^ k)::int % 8 + 1]
                                 FROM generate_series(0, 2) k), ' ')
  FROM generate_series(1, 200) i;
CREATE TABLE app.docs_emb (id int PRIMARY KEY, output vector(16), model_version bigint,
                           updated_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX docs_emb_hnsw ON app.docs_emb USING hnsw (output vector_cosine_ops);
SELECT tfm_job_create('vd_emb', 'app.docs', 'body', 'vd_bert', 'embed', destination => 'app.docs_emb',
                      options => '{"batch": 50}');
CALL tfm_job_run('vd_emb', 2);
SQL
[ "$(psql -X -A -t -d "$src" -c "SELECT count(*) FROM app.docs_emb")" = 100 ] || fail "the source database's job did not write 100 outputs"
psql -X -A -t -v ON_ERROR_STOP=1 -d "$src" -c "SELECT id, output FROM app.docs_emb ORDER BY id" > "$work/outputs.src"

pg_dump -d "$src" -f "$work/plain.sql"
pg_dump -Fc -d "$src" -f "$work/custom.dump"
createdb tfm_vdump_plain
psql -q -X -v ON_ERROR_STOP=1 -d tfm_vdump_plain -f "$work/plain.sql" >/dev/null
createdb tfm_vdump_custom
pg_restore --exit-on-error -d tfm_vdump_custom "$work/custom.dump"

for db in tfm_vdump_plain tfm_vdump_custom; do
  exts=$(psql -X -A -t -d "$db" -c "SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension WHERE extname <> 'plpgsql'")
  [ "$exts" = "tfm,tfm_vector,vector" ] || fail "$db: extensions $exts"
  psql -X -A -t -v ON_ERROR_STOP=1 -d "$db" -c "SELECT id, output FROM app.docs_emb ORDER BY id" > "$work/outputs.$db"
  cmp -s "$work/outputs.src" "$work/outputs.$db" || fail "$db: the restored outputs differ from the dumped ones"
  psql -q -X -v ON_ERROR_STOP=1 -d "$db" -c "SET ROLE tfm_vd_owner" -c "CALL tfm_job_run('vd_emb')" >/dev/null
  got=$(psql -X -A -t -v ON_ERROR_STOP=1 -d "$db" <<'SQL'
SELECT count(*) || ' ' || count(*) FILTER (WHERE (SELECT max(abs(x - y)) FROM unnest(e.output::real[], tfm_embed('vd_bert', d.body)) u(x, y)) < 1e-5)
  FROM app.docs_emb e JOIN app.docs d USING (id);
SQL
)
  [ "$got" = "200 200" ] || fail "$db: after the restored job's run, outputs and outputs equal to tfm_embed: $got (want 200 200)"
  plan=$(psql -X -A -t -v ON_ERROR_STOP=1 -d "$db" -c "SET enable_seqscan = off" \
    -c "EXPLAIN (COSTS OFF) SELECT id FROM app.docs_emb ORDER BY output <=> tfm_embed_vector('vd_bert', 'the lazy dog') LIMIT 5")
  grep -q "Index Scan using docs_emb_hnsw" <<<"$plan" || fail "$db: no HNSW index scan: $plan"
  echo "$db: tfm, vector and tfm_vector restored; 100 dumped outputs equal, the job's 200 outputs its texts' embeddings, HNSW index scan"
done
