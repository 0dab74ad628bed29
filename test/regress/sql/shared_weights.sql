-- shared weights: a loaded model's parameters are one read-only file that
-- every session maps (tfm.share_weights), with the same outputs as a
-- private copy; dropping the model removes the file
SET tfm.threads = 1;
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.shared_files(model text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_ls_tmpdir() f, tfm.models m
  WHERE m.name = model AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s',
        (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid,
        m.id, m.version) $$;
SELECT tfm_tokenizer_train('sw_chars', 'the quick brown fox ' || i, 'char') FROM generate_series(1, 20) i;
SELECT model, parameters FROM tfm_create_model('sw_lm', 'lm', 'sw_chars', d_model => 32, heads => 2, layers => 2);
CREATE TABLE sw_out (how text, output text);
-- a private copy
SET tfm.share_weights = off;
INSERT INTO sw_out SELECT 'private', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
SELECT pg_temp.shared_files('sw_lm') AS files_after_private_load;
\c
-- a new session maps the shared copy, which it writes first
SET tfm.threads = 1;
CREATE FUNCTION pg_temp.shared_files(model text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_ls_tmpdir() f, tfm.models m
  WHERE m.name = model AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s',
        (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid,
        m.id, m.version) $$;
INSERT INTO sw_out SELECT 'shared, written', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
SELECT pg_temp.shared_files('sw_lm') AS files_after_shared_load;
\c
-- and another one maps the file the first wrote
SET tfm.threads = 1;
SET tfm.progress = off;
INSERT INTO sw_out SELECT 'shared, mapped', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
SELECT how, output = (SELECT output FROM sw_out WHERE how = 'private') AS same_as_private FROM sw_out ORDER BY how;
-- the bf16 and int8 copies that tfm.precision packs are shared too: the
-- first session that packs a precision writes the packed block beside the
-- parameters, the next lays its copies over a mapping of it (no packing);
-- the outputs are those of a private packing
CREATE FUNCTION pg_temp.packed_files(model text, prec text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_ls_tmpdir() f, tfm.models m
  WHERE m.name = model AND f.size > 0 AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s_%s',
        (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid,
        m.id, m.version, prec) $$;
SELECT pg_temp.packed_files('sw_lm', 'bf16') AS bf16_files_before;
\c
SET tfm.threads = 1;
SET tfm.precision = bf16;
INSERT INTO sw_out SELECT 'bf16 shared, written', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
\c
SET tfm.threads = 1;
SET tfm.precision = bf16;
INSERT INTO sw_out SELECT 'bf16 shared, mapped', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
SET tfm.precision = int8;
INSERT INTO sw_out SELECT 'int8 shared, written', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
\c
SET tfm.threads = 1;
SET tfm.share_weights = off;
SET tfm.precision = bf16;
INSERT INTO sw_out SELECT 'bf16 private', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
SET tfm.precision = int8;
INSERT INTO sw_out SELECT 'int8 private', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
\c
SET tfm.threads = 1;
SET tfm.precision = int8;
SET client_min_messages = warning;
INSERT INTO sw_out SELECT 'int8 shared, mapped', tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11);
CREATE FUNCTION pg_temp.packed_files(model text, prec text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_ls_tmpdir() f, tfm.models m
  WHERE m.name = model AND f.size > 0 AND f.name = format('pgsql_tmp_tfm_%s_%s_%s_%s_%s',
        (SELECT oid FROM pg_database WHERE datname = current_database()), 'tfm.models'::regclass::oid,
        m.id, m.version, prec) $$;
SELECT pg_temp.packed_files('sw_lm', 'bf16') AS bf16_files, pg_temp.packed_files('sw_lm', 'int8') AS int8_files;
SELECT how, output = (SELECT output FROM sw_out WHERE how = split_part(s.how, ' ', 1) || ' private') AS same_as_private
  FROM sw_out s WHERE how LIKE '%shared%' AND how ~ '^(bf16|int8)' ORDER BY how;
RESET tfm.precision;
SET tfm.progress = off;
-- training makes a new version (trained in place on a private copy)
SELECT count(*) FROM tfm_train('sw_lm', 'SELECT ''the quick brown fox'' FROM generate_series(1, 20)', batch_size => 4);
SELECT tfm_generate('sw_lm', 'the', max_tokens => 20, temperature => 0.9, seed => 11)
       <> (SELECT output FROM sw_out WHERE how = 'private') AS trained_differs;
SELECT tfm_drop_model('sw_lm');
SELECT count(*) AS files_after_drop FROM pg_ls_tmpdir() WHERE name LIKE 'pgsql\_tmp\_tfm\_%';
SELECT tfm_tokenizer_drop('sw_chars');
DROP TABLE sw_out;
