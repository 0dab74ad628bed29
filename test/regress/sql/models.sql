-- models: create, list, drop, save/load, and every bad argument
SET extra_float_digits = 0;
SET tfm.threads = 1;
SET tfm.progress = off;
-- errors as "SQLSTATE message", so both are pinned
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- a classifier over token ids (no tokenizer): defaults follow the reference
SELECT * FROM tfm_create_model('clf', 'classify', vocab_size => 50, labels => ARRAY['neg', 'pos'],
                               d_model => 16, heads => 2, layers => 2, max_len => 32);
SELECT name, task, parameters, d_model, layers FROM tfm.model_list;
SELECT config FROM tfm.models WHERE name = 'clf';
SELECT name, shape, array_length(data, 1) AS n FROM tfm.tensors
  WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'clf') ORDER BY name LIMIT 8;
-- initial values follow the seed: the same seed gives the same weights
SELECT * FROM tfm_create_model('clf2', 'classify', vocab_size => 50, labels => ARRAY['neg', 'pos'],
                               d_model => 16, heads => 2, layers => 2, max_len => 32);
SELECT tfm_tensor('clf', 'enc.0.attn.qkv.w') = tfm_tensor('clf2', 'enc.0.attn.qkv.w') AS same_seed_same_weights;
SELECT (tfm_tensor('clf', 'enc.0.ln1.g'))[1:4] AS gains;
SELECT tfm_drop_model('clf2');

-- language model and encoder-decoder with their options
SELECT * FROM tfm_create_model('lm', 'lm', vocab_size => 40, d_model => 16, heads => 2, layers => 1,
                               max_len => 16, tie_embeddings => false, positions => 'sinusoidal');
SELECT * FROM tfm_create_model('s2s', 'seq2seq', vocab_size => 40, d_model => 16, heads => 4,
                               encoder_layers => 1, decoder_layers => 2, d_ff => 32, max_len => 16,
                               norm => 'pre', positions => 'learned', activation => 'gelu');
SELECT name, task, parameters FROM tfm.model_list ORDER BY name;
SELECT count(*) AS tensors FROM tfm.tensors t JOIN tfm.models m ON m.id = t.model_id WHERE m.name = 's2s';

-- bad arguments
SELECT pg_temp.err($$SELECT tfm_create_model(NULL, 'classify', vocab_size => 10, labels => ARRAY['a', 'b'])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', NULL, vocab_size => 10)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('', 'lm', vocab_size => 10)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'regress', vocab_size => 10)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('clf', 'classify', vocab_size => 50, labels => ARRAY['a', 'b'])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', tokenizer => 'nope')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'classify', vocab_size => 10)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'classify', vocab_size => 10, labels => ARRAY['a'])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'classify', vocab_size => 10, labels => ARRAY['a', 'a'])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'classify', vocab_size => 10, labels => ARRAY['a', NULL])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, labels => ARRAY['a', 'b'])$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, d_model => 30, heads => 4)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, d_model => 0)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, d_model => -8)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, d_model => 100000)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, layers => 0)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, layers => 49)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, max_len => 1)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 0)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, dropout => 1)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, dropout => -0.1)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, norm => 'middle')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, positions => 'rotary')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, activation => 'tanh')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, pooling => 'cls')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 10, encoder_layers => 2)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'classify', vocab_size => 10, labels => ARRAY['a', 'b'], target_tokenizer => 't')$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'lm', vocab_size => 1000000, d_model => 4096, heads => 1, layers => 48)$$);
SELECT pg_temp.err($$SELECT tfm_create_model('x', 'seq2seq', vocab_size => 1000, d_model => 4096, heads => 1, encoder_layers => 48, decoder_layers => 48, d_ff => 16384)$$);
SELECT pg_temp.err($$SELECT tfm_drop_model(NULL)$$);
SELECT pg_temp.err($$SELECT tfm_drop_model('nope')$$);

-- settings
SELECT pg_temp.err($$SET tfm.threads = 0$$);
SELECT pg_temp.err($$SET tfm.threads = 65$$);
SELECT pg_temp.err($$SET tfm.blis_arch = 'pentium'$$);
SELECT pg_temp.err($$SET tfm.nonsense = 1$$);
SELECT threads > 0 AS threads, blis_kernels <> 'uninitialised' AS kernels FROM tfm_info();

-- a stored tensor that no longer matches the config is reported on load
UPDATE tfm.tensors SET data = data[1:10], shape = '{10}'
  WHERE name = 'dec.0.ff1.b' AND model_id = (SELECT id FROM tfm.models WHERE name = 'lm');
SELECT pg_temp.err($$SELECT * FROM tfm_train('lm', 'SELECT ARRAY[1,2,3]')$$);
DELETE FROM tfm.tensors WHERE name = 'dec.0.ff1.b' AND model_id = (SELECT id FROM tfm.models WHERE name = 'lm');
SELECT pg_temp.err($$SELECT * FROM tfm_train('lm', 'SELECT ARRAY[1,2,3]')$$);
UPDATE tfm.models SET format_version = 99 WHERE name = 'lm';
SELECT pg_temp.err($$SELECT * FROM tfm_train('lm', 'SELECT ARRAY[1,2,3]')$$);

-- dropping a model drops its tensors
SELECT tfm_drop_model('lm');
SELECT tfm_drop_model('s2s');
SELECT tfm_drop_model('clf');
SELECT count(*) FROM tfm.tensors;

-- a tensor of more than 4,194,304 values is stored in chunks and loads bit-exact
SELECT model, parameters FROM tfm_create_model('big', 'lm', vocab_size => 16500, d_model => 256, heads => 4,
                                               layers => 1, max_len => 16, d_ff => 32);
SELECT name, chunk, array_length(data, 1) AS n FROM tfm.tensors
  WHERE model_id = (SELECT id FROM tfm.models WHERE name = 'big') AND name = 'tok_emb' ORDER BY chunk;
SELECT array_length(tfm_tensor('big', 'tok_emb'), 1) AS tok_emb_values;
-- load (chunks joined), save (split again) and load: the same bits
SELECT tfm_copy_model('big', 'big_copy');
SELECT count(*) AS rows, bool_and(a.data = b.data AND a.shape = b.shape) AS same_values
  FROM tfm.tensors a JOIN tfm.tensors b USING (name, chunk)
  WHERE a.model_id = (SELECT id FROM tfm.models WHERE name = 'big')
    AND b.model_id = (SELECT id FROM tfm.models WHERE name = 'big_copy');
SELECT (SELECT string_agg(id::text, ',') FROM tfm_generate_tokens('big', ARRAY[5, 6], max_tokens => 4, temperature => 0))
     = (SELECT string_agg(id::text, ',') FROM tfm_generate_tokens('big_copy', ARRAY[5, 6], max_tokens => 4, temperature => 0)) AS same_outputs;
-- a chunk out of place is corrupted data, named
SELECT tfm_copy_model('big', 'big_bad');
UPDATE tfm.tensors SET chunk = 2 WHERE name = 'tok_emb' AND chunk = 1
  AND model_id = (SELECT id FROM tfm.models WHERE name = 'big_bad');
SELECT pg_temp.err($$SELECT * FROM tfm_generate_tokens('big_bad', ARRAY[5], max_tokens => 1)$$);
UPDATE tfm.tensors SET chunk = 1 WHERE name = 'tok_emb' AND chunk = 2
  AND model_id = (SELECT id FROM tfm.models WHERE name = 'big_bad');
DELETE FROM tfm.tensors WHERE name = 'tok_emb' AND chunk = 1
  AND model_id = (SELECT id FROM tfm.models WHERE name = 'big_bad');
SELECT pg_temp.err($$SELECT * FROM tfm_generate_tokens('big_bad', ARRAY[5], max_tokens => 1)$$);
SELECT tfm_drop_model(name) FROM tfm.models WHERE name LIKE 'big%' ORDER BY name;
