-- train_precision => 'bf16': mixed-precision training (bf16 products, fp32 master
-- weights, gradients and Adam) learns as fp32 does; 'fp32' is exactly the
-- default; bad values are errors; tfm_fit keeps a run's precision across a
-- resume.  (Speed and quality in the same time: bench/mixed.)
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
SET tfm.train_chunk_rows = 100;
-- on a CPU without bf16 instructions bf16 training says (a NOTICE) that it
-- runs on the slow fallback kernels: NOTICEs off, so the output is the same
-- on every CPU
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- every tensor of two models equal, bit for bit
CREATE FUNCTION pg_temp.same_weights(x text, y text) RETURNS text LANGUAGE sql AS $$
SELECT count(*) || ' tensors, '
       || CASE WHEN bool_and(a.data::text = b.data::text) THEN 'identical' ELSE 'DIFFERENT' END
  FROM tfm.tensors a JOIN tfm.tensors b USING (name)
 WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = x)
   AND b.model_id = (SELECT id FROM tfm.models WHERE name = y) $$;

-- a classifier on 600 rows of a learnable task, 300 more to test on
CREATE TABLE mp_rows AS
SELECT i, array(SELECT 6 + (i * 7 + j * 13) % 90 FROM generate_series(1, 8 + i % 17) j)
          || CASE WHEN i % 2 = 1 THEN ARRAY[97] ELSE ARRAY[]::int[] END AS ids,
       CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS label
FROM generate_series(1, 900) i;
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'classify', vocab_size => 100, labels => ARRAY['a', 'b'],
                          d_model => 32, heads => 4, layers => 2, max_len => 32, seed => 5)
    FROM unnest(ARRAY['mp_default', 'mp_fp32', 'mp_bf16', 'mp_fit', 'mp_fit_resumed']) n) s;
CREATE TABLE mp_epochs AS
SELECT 'default' AS run, * FROM tfm_train('mp_default', 'SELECT ids, label FROM mp_rows WHERE i <= 600 ORDER BY i',
                                          epochs => 4, batch_size => 32, lr => 3e-3, val_fraction => 0, keep => 'last');
INSERT INTO mp_epochs
SELECT 'fp32', * FROM tfm_train('mp_fp32', 'SELECT ids, label FROM mp_rows WHERE i <= 600 ORDER BY i',
                                epochs => 4, batch_size => 32, lr => 3e-3, val_fraction => 0, keep => 'last', train_precision => 'fp32');
INSERT INTO mp_epochs
SELECT 'bf16', * FROM tfm_train('mp_bf16', 'SELECT ids, label FROM mp_rows WHERE i <= 600 ORDER BY i',
                                epochs => 4, batch_size => 32, lr => 3e-3, val_fraction => 0, keep => 'last', train_precision => 'bf16');
-- 'fp32' is the default, bit for bit
SELECT pg_temp.same_weights('mp_default', 'mp_fp32');
SELECT a.epoch, a.train_loss = b.train_loss AS same_loss
FROM mp_epochs a JOIN mp_epochs b USING (epoch) WHERE a.run = 'default' AND b.run = 'fp32' ORDER BY epoch;
-- bf16 learns: its loss falls as fp32's does and ends within 0.05 of it
-- (the two differ: the products really ran in bf16)
SELECT b.epoch, abs(b.train_loss - f.train_loss) < 0.05 AS loss_close, b.train_loss <> f.train_loss AS differs
FROM mp_epochs b JOIN mp_epochs f USING (epoch) WHERE b.run = 'bf16' AND f.run = 'fp32' ORDER BY epoch;
SELECT max(train_loss) FILTER (WHERE epoch = 4) < 0.5 * max(train_loss) FILTER (WHERE epoch = 1) AS bf16_loss_halved
FROM mp_epochs WHERE run = 'bf16';
-- on rows neither saw: accuracy within 2 points of fp32's, and high
SELECT m.model, e.accuracy >= 0.95 AS learned,
       abs(e.accuracy - (SELECT accuracy FROM tfm_evaluate('mp_fp32', 'SELECT ids, label FROM mp_rows WHERE i > 600'))) <= 0.02 AS close_to_fp32
FROM (VALUES ('mp_bf16')) m(model), tfm_evaluate(m.model, 'SELECT ids, label FROM mp_rows WHERE i > 600') e;
-- the trained model serves at any inference precision as usual
SET tfm.precision = bf16;
SELECT avg((tfm_classify('mp_bf16', ids) = label)::int) >= 0.95 AS served_at_bf16 FROM mp_rows WHERE i > 600;
SET tfm.precision = fp32;

-- an lm with its output head tied to the embedding (the head's products in bf16 too)
SELECT count(*) FROM (
  SELECT tfm_create_model(n, 'lm', vocab_size => 100, d_model => 32, heads => 4, layers => 2, max_len => 32, seed => 5)
    FROM unnest(ARRAY['mpl_fp32', 'mpl_bf16']) n) s;
CREATE TABLE mpl_epochs AS
SELECT 'fp32' AS run, * FROM tfm_train('mpl_fp32', 'SELECT ids FROM mp_rows ORDER BY i', epochs => 3, batch_size => 16);
INSERT INTO mpl_epochs
SELECT 'bf16', * FROM tfm_train('mpl_bf16', 'SELECT ids FROM mp_rows ORDER BY i', epochs => 3, batch_size => 16,
                                train_precision => 'bf16');
SELECT b.epoch, abs(b.train_loss - f.train_loss) < 0.05 AS loss_close, b.train_loss <> f.train_loss AS differs
FROM mpl_epochs b JOIN mpl_epochs f USING (epoch) WHERE b.run = 'bf16' AND f.run = 'fp32' ORDER BY epoch;

-- tfm_fit at bf16: a run interrupted by an error (reading row 450 the
-- second time: the first read is the row count) resumes at bf16 (its
-- checkpoint holds the precision) and ends with the weights of a run that
-- was never interrupted
CREATE SEQUENCE boom_reads;
CREATE FUNCTION boom(i integer, label text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF i = 450 AND nextval('boom_reads') = current_setting('tfm_test.boom_at')::bigint THEN
        RAISE EXCEPTION 'the connection is lost';
    END IF;
    RETURN label;
END $$;
SET enable_sort = off;
CREATE INDEX ON mp_rows (i);
SET tfm_test.boom_at = 0;
CALL tfm_fit('mp_fit', 'SELECT ids, boom(i, label) FROM mp_rows WHERE i <= 600 ORDER BY i', epochs => 2,
             batch_size => 32, val_fraction => 0, keep => 'last', train_precision => 'bf16', checkpoint_every => '1 microsecond');
SELECT setval('boom_reads', 1, false);
SET tfm_test.boom_at = 2;
CALL tfm_fit('mp_fit_resumed', 'SELECT ids, boom(i, label) FROM mp_rows WHERE i <= 600 ORDER BY i', epochs => 2,
             batch_size => 32, val_fraction => 0, keep => 'last', train_precision => 'bf16', checkpoint_every => '1 microsecond');
SET tfm_test.boom_at = 0;
SELECT options->>'precision' AS checkpoint_precision FROM tfm.checkpoints
WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'mp_fit_resumed');
-- another precision on resume is an error; NULL (not given) takes the run's
CALL tfm_fit('mp_fit_resumed', resume => true, train_precision => 'fp32');
CALL tfm_fit('mp_fit_resumed', resume => true);
SELECT pg_temp.same_weights('mp_fit', 'mp_fit_resumed');

-- bad precision values
SELECT pg_temp.err($$SELECT tfm_train('mp_fp32', 'SELECT ids, label FROM mp_rows', train_precision => 'int8')$$);
SELECT pg_temp.err($$SELECT tfm_train('mp_fp32', 'SELECT ids, label FROM mp_rows', train_precision => 'fp16')$$);
SELECT pg_temp.err($$SELECT tfm_train('mp_fp32', 'SELECT ids, label FROM mp_rows', train_precision => 'BF16')$$);
SELECT pg_temp.err($$CALL tfm_fit('mp_fp32', 'SELECT ids, label FROM mp_rows', train_precision => 'auto')$$);
SELECT pg_temp.err($$CALL tfm_fit('mp_fp32', 'SELECT ids, label FROM mp_rows', train_precision => '')$$);

-- the models and tables of this file go (later files list every model)
SELECT count(tfm_drop_model(name)) AS dropped FROM tfm.model_list WHERE name LIKE 'mp%';
DROP TABLE mp_rows, mp_epochs, mpl_epochs;
DROP FUNCTION boom(integer, text);
DROP SEQUENCE boom_reads;
RESET enable_sort;
