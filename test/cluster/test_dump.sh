#!/usr/bin/env bash
# test_dump.sh — pg_dump / pg_restore keep tfm's models: a database with a
# tokenizer, a trained classifier and language model, their history, a
# deployment, an owner that is not a superuser and a grant, and an imported
# Qwen2 with its Split rules and chat template, and a GGUF file of the
# Q4_K_M mix whose blocks are kept (tfm.gguf_tensors, its matrices' only
# copy: their float32 values are made at load) and run at gguf, also stored
# in parts of at most 1 kB (tfm.gguf_row_bytes), is dumped in
# plain and custom format and restored into fresh databases; every tensor,
# the catalog rows, owners and grants, and the models' outputs (classify,
# probabilities, seeded generation, the chat prompt's ids and reply, the
# GGUF model's kept blocks, precision and greedy ids, the float32 values
# made from its blocks and its fp32 ids) must be identical.
#
# Runs against the server the PG* variables name (scripts/test.sh starts
# one), as a superuser.  Exits non-zero on any difference.
set -euo pipefail
src=tfm_dump_src
drop_all() {
  for db in $src tfm_dump_plain tfm_dump_custom; do dropdb --if-exists "$db" 2>/dev/null || true; done
  psql -q -X -d postgres -c "DROP ROLE IF EXISTS tfm_d_owner, tfm_d_reader" >/dev/null 2>&1 || true
}
drop_all
work=$(mktemp -d /tmp/tfm-dump.XXXXXX)
trap 'drop_all; rm -rf "$work"' EXIT

psql -q -X -d postgres -c "CREATE ROLE tfm_d_owner; CREATE ROLE tfm_d_reader"
createdb "$src"
psql -q -X -v ON_ERROR_STOP=1 -d "$src" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION tfm;
SET tfm.threads = 1;
SET tfm.progress = off;
CREATE TABLE reviews (review text, label text);
INSERT INTO reviews
SELECT CASE WHEN i % 2 = 0 THEN 'a fine and moving film number ' || i
            ELSE 'a dull and tiresome plot number ' || i END,
       CASE WHEN i % 2 = 0 THEN 'pos' ELSE 'neg' END
FROM generate_series(1, 200) i;
GRANT SELECT ON reviews TO PUBLIC;
SET ROLE tfm_d_owner;
SELECT tfm_tokenizer_train('dump_bpe', review, 'bpe', 300) FROM reviews;
SELECT tfm_tokenizer_train('dump_chars', review, 'char') FROM reviews;
SELECT tfm_create_model('dump_clf', 'classify', 'dump_bpe', labels => ARRAY['neg', 'pos'],
                        d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('dump_clf', 'SELECT review, label FROM reviews', epochs => 2, batch_size => 16);
SELECT tfm_create_model('dump_lm', 'lm', 'dump_chars', d_model => 32, heads => 2, layers => 1, max_len => 32);
SELECT count(*) FROM tfm_train('dump_lm', 'SELECT review FROM reviews', epochs => 1, batch_size => 8);
SELECT tfm_deploy('dump_lm', 'dump_live');
SELECT tfm_deploy('dump_clf', 'dump_live');
SELECT tfm_grant('dump_live', 'tfm_d_reader', 'train');
SELECT tfm_grant('dump_clf', 'tfm_d_reader');
SELECT tfm_grant('dump_bpe', 'PUBLIC');
RESET ROLE;
SELECT tfm_deploy('dump_clf');
SQL
# a chat model: its tokenizer's Split rules and chat settings live in
# tfm.tokenizers.options, dumped with the tokenizer
psql -q -X -v ON_ERROR_STOP=1 -v dir="$PWD/test/fixtures/hf_qwen2" -d "$src" >/dev/null <<'SQL'
SELECT * FROM tfm_import_files('dump_qwen2', :'dir');
SQL
# a GGUF file's blocks, kept in tfm.gguf_tensors and run at gguf
psql -q -X -v ON_ERROR_STOP=1 -d "$src" >/dev/null <<'SQL'
\set g `base64 -w0 test/fixtures/gguf/llama_q4_k_m.gguf`
SELECT * FROM tfm_import_gguf('dump_q4km', decode(:'g', 'base64'));
-- the same file's blocks stored in parts of at most 1 kB (tfm.gguf_row_bytes)
SET tfm.gguf_row_bytes = '1kB';
SELECT * FROM tfm_import_gguf('dump_q4km_parts', decode(:'g', 'base64'), tokenizer => false);
SQL

# what must survive: catalog rows (ids are renumbered by nothing: the
# sequences are dumped too), every tensor's bits, and the models' outputs
fingerprint() {
  psql -X -A -t -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SET tfm.threads = 1;
SET extra_float_digits = 3;
SELECT 'models', name, task, tokenizer, owner, acl_use, acl_train, version, steps, format_version, config
  FROM tfm.models ORDER BY name;
SELECT 'tokenizers', name, kind, vocab_size, owner, acl_use, options FROM tfm.tokenizers ORDER BY name;
SELECT 'vocab', t.name, count(*), md5(string_agg(v.id || ':' || encode(v.piece, 'hex'), ',' ORDER BY v.id))
  FROM tfm.vocab v JOIN tfm.tokenizers t ON t.id = v.tokenizer_id GROUP BY t.name ORDER BY t.name;
SELECT 'merges', t.name, count(*), md5(string_agg(g.rank || ':' || g.left_id || ':' || g.right_id, ',' ORDER BY g.rank))
  FROM tfm.merges g JOIN tfm.tokenizers t ON t.id = g.tokenizer_id GROUP BY t.name ORDER BY t.name;
SELECT 'tensors', m.name, count(*), sum(array_length(t.data, 1)),
       md5(string_agg(t.name || t.shape::text || t.data::text, ',' ORDER BY t.name))
  FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id GROUP BY m.name ORDER BY m.name;
SELECT 'history', m.name, h.epoch, h.steps, h.train_loss, h.val_loss, h.val_accuracy
  FROM tfm.history h JOIN tfm.models m ON m.id = h.model_id ORDER BY m.name, h.run_started, h.epoch;
SELECT 'deployed', task, model FROM tfm.deployed ORDER BY task;
SELECT 'aliases', alias, model, owner, train_granted, deployed_by, action FROM tfm.deployments;
SELECT 'alias_history', id, alias, model_id, model, previous, action, by_role FROM tfm.alias_history ORDER BY id;
BEGIN;
SELECT 'rollback', tfm_rollback('dump_live');
ROLLBACK;
SELECT 'sequence', nextval('tfm.version_seq') > (SELECT max(version) FROM tfm.models);
SELECT 'classify', md5(string_agg(tfm_classify(review), ',' ORDER BY review)) FROM reviews;
SELECT 'proba', md5(string_agg(p.label || p.probability::text, ',' ORDER BY r.review, p.label))
  FROM reviews r, tfm_predict_proba('dump_clf', r.review) p;
SELECT 'generate', tfm_generate('dump_lm', 'a fine', max_tokens => 40, temperature => 0.8, seed => 7);
SELECT 'chat', tfm_chat_tokens('dump_qwen2', '[{"role": "user", "content": "Where did the cat sit? 猫 123"}]'),
       tfm_chat('dump_qwen2', '[{"role": "user", "content": "Where did the cat sit? 猫 123"}]', max_tokens => 8, temperature => 0);
SELECT 'gguf_tensors', m.name, count(*), count(g.blocks),
       md5(string_agg(g.gguf_name || g.gguf_type || coalesce(g.tensor, '') || coalesce(g.first_column, -1) || ':' ||
                      coalesce(g.columns, -1) || ':' || coalesce(g.inputs, -1) || ':' || g.rope_heads || ':' ||
                      g.first_row || ':' || coalesce(md5(g.blocks), ''), ',' ORDER BY g.gguf_name, g.first_row))
  FROM tfm.gguf_tensors g JOIN tfm.models m ON m.id = g.model_id GROUP BY m.name ORDER BY m.name;
SET tfm.precision = 'auto';
SELECT 'gguf', p.inference_precision,
       ARRAY(SELECT id FROM tfm_generate_tokens('dump_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331],
                                                max_tokens => 8, temperature => 0) ORDER BY pos)
  FROM tfm_model_precision('dump_q4km') p;
SELECT 'gguf_parts', ARRAY(SELECT id FROM tfm_generate_tokens('dump_q4km_parts', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331],
                                                              max_tokens => 8, temperature => 0) ORDER BY pos);
-- the GGUF model's matrices are stored as their blocks only: the float32
-- values loading makes from them (fp32), and the greedy ids at fp32
SET tfm.precision = 'fp32';
SELECT 'gguf_values', count(*), md5(string_agg(n || ':' || tfm_tensor('dump_q4km', n)::text, ',' ORDER BY n))
  FROM (SELECT tensor FROM tfm_gguf_kept('dump_q4km') WHERE tensor IS NOT NULL
        UNION SELECT t.name FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 'dump_q4km') x(n);
SELECT 'gguf_fp32', ARRAY(SELECT id FROM tfm_generate_tokens('dump_q4km', ARRAY[1, 330, 348, 347, 351, 330, 259, 272, 331],
                                                             max_tokens => 8, temperature => 0) ORDER BY pos);
RESET tfm.precision;
SELECT 'reader', tfm_classify('dump_clf', 'a fine film') IS NOT NULL
  FROM (SELECT set_config('role', 'tfm_d_reader', true)) s;
SQL
}

fingerprint "$src" > "$work/src.txt"
[ -n "${TFM_TEST_VERBOSE:-}" ] && cat "$work/src.txt"
grep -q '^tensors|dump_clf|' "$work/src.txt" || { echo "no tensors in the source database" >&2; exit 1; }
grep -q '^gguf_tensors|dump_q4km|20|15|' "$work/src.txt" || { echo "no kept GGUF blocks in the source database" >&2; exit 1; }
grep -Eq '^gguf_tensors\|dump_q4km_parts\|[0-9]{3,}\|' "$work/src.txt" || { echo "no GGUF blocks in parts in the source database" >&2; exit 1; }
[ "$(grep '^gguf_parts|' "$work/src.txt" | cut -d'|' -f2)" = "$(grep '^gguf|' "$work/src.txt" | cut -d'|' -f3)" ] ||
  { echo "the GGUF model in parts generates other ids" >&2; exit 1; }
grep -q '^tensors|dump_q4km|5|1280|' "$work/src.txt" ||
  { echo "the GGUF model's matrices are stored as float32 rows, not as their blocks only" >&2; grep '^tensors|dump_q4km' "$work/src.txt" >&2; exit 1; }
# the values gguf_kept.sql checks: the float32 rows the import stored before it kept the blocks only
grep -q '^gguf_values|14|e77e95f5faa31adde6446261d24cec7c$' "$work/src.txt" ||
  { echo "the GGUF model's float32 values made from its blocks differ" >&2; grep '^gguf_values' "$work/src.txt" >&2; exit 1; }
grep -q '^gguf|gguf|{304,304,87,32,340,119,194,280}$' "$work/src.txt" ||
  { echo "the GGUF model does not run its blocks (gguf) with the reference's greedy ids" >&2; grep '^gguf|' "$work/src.txt" >&2; exit 1; }

pg_dump -Fp -f "$work/dump.sql" "$src"
pg_dump -Fc -f "$work/dump.custom" "$src"
echo "   plain dump: $(grep -c '^COPY tfm\.' "$work/dump.sql") COPY tfm.* sections, $(du -k "$work/dump.sql" | cut -f1) kB"

createdb tfm_dump_plain
psql -q -X -v ON_ERROR_STOP=1 -d tfm_dump_plain -f "$work/dump.sql" >/dev/null
createdb tfm_dump_custom
pg_restore --exit-on-error -d tfm_dump_custom "$work/dump.custom"

status=0
for db in tfm_dump_plain tfm_dump_custom; do
  fingerprint "$db" > "$work/$db.txt"
  if diff -u "$work/src.txt" "$work/$db.txt"; then
    echo "   $db: $(wc -l < "$work/$db.txt") fingerprint lines identical to the source"
  else
    echo "   $db: differs from the source" >&2
    status=1
  fi
done
exit $status
