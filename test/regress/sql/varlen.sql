-- varlen passes: tfm_embed(model, text[]) and tfm_classify(model, text[])
-- run many texts' tokens through one pass (nothing padded), and each
-- element's result is bit for bit the one-text call's, whatever the
-- array around it, at fp32, bf16 and int8, at 1 and 2 threads
SET extra_float_digits = 0;
SET tfm.progress = off;
CREATE TEMP TABLE vt AS
SELECT i, left(repeat(md5(i::text) || ' ', 6), 1 + (i * 37) % 150) AS t
  FROM generate_series(1, 40) i;
SELECT tfm_tokenizer_train('vl_chars', t, 'char') FROM vt;
SELECT model FROM tfm_create_model('vl', 'classify', 'vl_chars', labels => ARRAY['a', 'b', 'c'],
                                   d_model => 64, heads => 4, layers => 2, max_len => 160);
CREATE FUNCTION pg_temp.check_varlen() RETURNS TABLE (texts bigint, embed_same bigint, embed_same_reversed bigint,
                                                     classify_same bigint) LANGUAGE sql AS $$
  WITH one AS (SELECT i, tfm_embed('vl', t) AS e, tfm_classify('vl', t) AS c FROM vt),
       arr AS (SELECT array_agg(t ORDER BY i) AS ts, array_agg(t ORDER BY i DESC) AS rts FROM vt),
       batch AS (SELECT b.ord::int AS i, b.embedding FROM arr, tfm_embed('vl', arr.ts) b),
       rbatch AS (SELECT 41 - b.ord::int AS i, b.embedding FROM arr, tfm_embed('vl', arr.rts) b),
       cls AS (SELECT u.i::int AS i, u.c FROM arr, unnest(tfm_classify('vl', arr.ts)) WITH ORDINALITY u(c, i))
  SELECT count(*), count(*) FILTER (WHERE one.e = batch.embedding),
         count(*) FILTER (WHERE one.e = rbatch.embedding), count(*) FILTER (WHERE one.c = cls.c)
    FROM one JOIN batch USING (i) JOIN rbatch USING (i) JOIN cls USING (i)
$$;
SET tfm.threads = 1;
SET tfm.precision = fp32;
SELECT * FROM pg_temp.check_varlen();
SET tfm.precision = bf16;
SELECT * FROM pg_temp.check_varlen();
SET tfm.precision = int8;
SELECT * FROM pg_temp.check_varlen();
SET tfm.threads = 2;
SET tfm.precision = fp32;
SELECT * FROM pg_temp.check_varlen();
SET tfm.precision = int8;
SELECT * FROM pg_temp.check_varlen();
-- a few texts of a pass of several: the same as in the whole array
SELECT bool_and(a.embedding = b.embedding) AS subset_same
  FROM tfm_embed('vl', ARRAY(SELECT t FROM vt WHERE i IN (3, 17, 29) ORDER BY i)) WITH ORDINALITY a(o, embedding, n)
  JOIN (SELECT ord, embedding FROM tfm_embed('vl', ARRAY(SELECT t FROM vt ORDER BY i))) b
    ON b.ord = (ARRAY[3, 17, 29])[a.n];
-- tfm_predict_proba agrees with tfm_classify
SELECT count(*) FILTER (WHERE c = (SELECT label FROM tfm_predict_proba('vl', t) ORDER BY probability DESC LIMIT 1)) AS argmax_agrees
  FROM (SELECT t, tfm_classify('vl', t) AS c FROM vt) s;
RESET tfm.precision;
SELECT tfm_drop_model('vl');
SELECT tfm_tokenizer_drop('vl_chars');
