#!/usr/bin/env bash
# test_extract.sh — tfm_extract's results checked by an independent JSON
# Schema validator (python3-jsonschema, Draft 2020-12): a randomly
# initialised char-level language model (the hardest writer: it goes
# anywhere the mask lets it) extracts 1,000 texts under each of two schemas
# (an object with required keys, an enum and a bounded string; nested
# objects, arrays with bounds, numbers, booleans, a type list and an enum of
# any JSON values), sampling at temperature 1 with a seed per row; every
# result must validate, and the rows must differ (the test must not pass
# on one repeated value).  max_len 1,024: the prompt and the value fit, so
# the window never slides.
#
# Runs against the server the PG* variables name (scripts/test.sh starts
# one), as a superuser.  Exits non-zero on any invalid result.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
db=tfm_extract_check
work=$(mktemp -d /tmp/tfm-extract.XXXXXX)
chmod 755 "$work"
trap 'dropdb --if-exists "$db" 2>/dev/null || true; rm -rf "$work"' EXIT
dropdb --if-exists "$db" 2>/dev/null || true
createdb "$db"
psql -q -X -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.progress = off;
SET tfm.threads = 1;
-- every printable ASCII character and a few of two, three and four bytes
SELECT tfm_tokenizer_train('xchars', t, 'char')
  FROM (SELECT string_agg(chr(c), '') || 'é€😀ß' AS t FROM generate_series(32, 126) c, generate_series(1, 5) k GROUP BY k) r;
SELECT tfm_create_model('xrand', 'lm', 'xchars', d_model => 16, heads => 2, layers => 1, max_len => 1024, seed => 3);
CREATE TABLE schemas (name text PRIMARY KEY, s jsonb);
INSERT INTO schemas VALUES
  ('person', '{"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
               "age": {"type": "integer"}, "mood": {"enum": ["calm", "storm"]}},
               "required": ["name", "age", "mood"], "additionalProperties": false}'),
  ('nested', '{"type": "object", "properties": {
               "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 1, "maxItems": 3},
               "score": {"type": "number"}, "ok": {"type": "boolean"},
               "who": {"type": "object", "properties": {"first": {"type": "string", "minLength": 1, "maxLength": 6},
                                                       "nick": {"type": ["string", "null"], "maxLength": 4}},
                       "required": ["first"]},
               "kind": {"enum": ["a", 1, null, [1, 2], {"x": true}]}, "n": {"type": "integer"}},
               "required": ["tags", "score", "who"]}');
CREATE TABLE docs AS
SELECT i, (ARRAY['ann', 'bob', 'zed', 'maximiliana', 'o"neil', 'back\slash', 'zoë', 'ida', 'x', 'finn'])[1 + i % 10]
          || ' is ' || (i % 97) || ', ' || (ARRAY['calm', 'storm', 'sunny'])[1 + i % 3] AS t
  FROM generate_series(1, 1000) i;
CREATE TABLE results AS
SELECT s.name, d.i, tfm_extract('xrand', d.t, s.s, max_tokens => 600, temperature => 1, seed => d.i) AS j
  FROM docs d, schemas s;
SQL
psql -X -At -d "$db" -c "SELECT jsonb_build_object('name', name, 'schema', s) FROM schemas" > "$work/schemas.jsonl"
psql -X -At -d "$db" -c "SELECT jsonb_build_object('name', name, 'i', i, 'value', j) FROM results ORDER BY name, i" > "$work/results.jsonl"
/usr/bin/python3 - "$work/schemas.jsonl" "$work/results.jsonl" <<'PY'
import json, sys
from jsonschema import Draft202012Validator

schemas = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    Draft202012Validator.check_schema(r["schema"])
    schemas[r["name"]] = Draft202012Validator(r["schema"])
counts, bad, distinct = {}, 0, {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    counts[r["name"]] = counts.get(r["name"], 0) + 1
    distinct.setdefault(r["name"], set()).add(json.dumps(r["value"], sort_keys=True))
    errors = list(schemas[r["name"]].iter_errors(r["value"]))
    if errors:
        bad += 1
        if bad <= 10:
            print("INVALID %s row %d: %s: %s" % (r["name"], r["i"], json.dumps(r["value"]), errors[0].message))
for name in sorted(counts):
    print("%s: %d results, %d distinct" % (name, counts[name], len(distinct[name])))
ok = bad == 0 and all(counts.get(n) == 1000 for n in schemas) and all(len(distinct[n]) > 500 for n in schemas)
print("all valid" if ok else "FAILED: %d invalid" % bad)
sys.exit(0 if ok else 1)
PY
# the model's shared weights file goes with the model (dropdb alone would leave it in pgsql_tmp)
psql -q -X -v ON_ERROR_STOP=1 -d "$db" -c "SELECT tfm_drop_model('xrand')" -c "SELECT tfm_tokenizer_drop('xchars')" >/dev/null
