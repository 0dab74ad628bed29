-- synthetic.sql — the synthetic sequence-to-sequence tasks, made in SQL:
-- copy, reverse and sort a string of 1–20 random digits.  60,000 seeded
-- random strings for training; 1,000 distinct strings of 3,000 more that
-- never occur in the training rows are the test set (so every test example
-- is unseen).  One character tokenizer over the digits serves the three
-- tasks.
SELECT setseed(0.42);
CREATE TABLE digit_strings AS
SELECT i, (SELECT string_agg(floor(random() * 10)::int::text, '')
           FROM generate_series(1, 1 + floor(random() * 20)::int + 0 * i)) AS s
FROM generate_series(1, 63000) i;
CREATE TABLE digit_test AS
SELECT s FROM (SELECT DISTINCT ON (s) s, i FROM digit_strings WHERE i > 60000 ORDER BY s, i) t
WHERE s NOT IN (SELECT s FROM digit_strings WHERE i <= 60000)
ORDER BY md5(s) LIMIT 1000;
CREATE TABLE digit_train AS SELECT i, s FROM digit_strings WHERE i <= 60000;

CREATE FUNCTION pg_temp.target(task text, s text) RETURNS text IMMUTABLE LANGUAGE sql AS $$
  SELECT CASE task
           WHEN 'copy' THEN s
           WHEN 'reverse' THEN reverse(s)
           WHEN 'sort' THEN (SELECT string_agg(c, '' ORDER BY c) FROM regexp_split_to_table(s, '') c)
         END
$$;
CREATE TABLE synth_train AS
SELECT t.task, d.i, d.s AS source, pg_temp.target(t.task, d.s) AS target
FROM digit_train d CROSS JOIN (VALUES ('copy'), ('reverse'), ('sort')) t(task);
CREATE TABLE synth_test AS
SELECT t.task, d.s AS source, pg_temp.target(t.task, d.s) AS target
FROM digit_test d CROSS JOIN (VALUES ('copy'), ('reverse'), ('sort')) t(task);
SELECT task, count(*) AS train_rows, min(length(source)) AS min_len, max(length(source)) AS max_len
FROM synth_train GROUP BY task ORDER BY task;
SELECT task, source, target FROM synth_test ORDER BY task, source LIMIT 6;
SELECT count(*) AS test_rows_also_in_train FROM synth_test t JOIN synth_train r USING (task, source);
SELECT tfm_tokenizer_train('digits', s, 'char') FROM digit_train;
