-- demo_generate.sql — the second half of the demo: a character-level
-- language model trained on the rows of a book for a few minutes, then
-- sampled at two temperatures.  scripts/demo.sh loads the book into
-- demo_book (n, line) first.
\pset footer off
SELECT tfm_drop_model(name) FROM tfm.models WHERE name = 'demo_poet';
SELECT tfm_tokenizer_drop(name) FROM tfm.tokenizers WHERE name = 'demo_chars';

\echo '== Moby-Dick, one row per line'
SELECT count(*) AS lines, sum(length(line)) AS characters FROM demo_book;

\echo '== a character vocabulary, and a 4-layer GPT-style model (d_model 128, context 128)'
SELECT tfm_tokenizer_train('demo_chars', line, 'char') FROM demo_book;
SELECT * FROM tfm_create_model('demo_poet', 'lm', 'demo_chars', d_model => 128, heads => 4, layers => 4,
                               max_len => 128);

\echo '== train for' :'train_time' '(progress every 10 seconds; the schedule is fitted to the time)'
SELECT epoch, steps, round(train_loss::numeric, 3) AS train_loss, round(tokens_per_s::numeric) AS tokens_per_s,
       round(seconds::numeric) AS seconds
FROM tfm_train('demo_poet', 'SELECT line FROM demo_book ORDER BY n', epochs => 100, batch_size => 32,
               time_limit => :'train_time');

\echo '== samples: temperature 0.5, then 1.0'
SELECT tfm_generate('demo_poet', 'The sea', max_tokens => 300, temperature => 0.5, seed => 1) AS "The sea … (t = 0.5)";
SELECT tfm_generate('demo_poet', 'Call me', max_tokens => 300, temperature => 1.0, seed => 2) AS "Call me … (t = 1.0)";
\echo '== the most likely next characters after "the whal"'
SELECT rank, piece, round(probability::numeric, 3) AS probability FROM tfm_next_tokens('demo_poet', 'the whal', 5);
