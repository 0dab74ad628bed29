-- hostile_sizes: every size argument of tfm_create_model at its limit and one
-- past it.  At the limit the range check passes and the parameter cap
-- (tfm.max_parameters, set tiny here) refuses the model before any memory is
-- taken (54000); one past, the range check refuses it (22023).
SET tfm.max_parameters = 1000;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT arg, pg_temp.err(format($$SELECT tfm_create_model('hs', 'classify', labels => ARRAY['a', 'b'], %s)$$, at_limit)) AS at_limit,
       pg_temp.err(format($$SELECT tfm_create_model('hs', 'classify', labels => ARRAY['a', 'b'], %s)$$, past)) AS one_past
FROM (VALUES
  ('vocab_size', 'vocab_size => 1000000, d_model => 8, heads => 1, layers => 1, max_len => 8',
                 'vocab_size => 1000001, d_model => 8, heads => 1, layers => 1, max_len => 8'),
  ('d_model',    'vocab_size => 7, d_model => 4096, heads => 1, layers => 1, max_len => 8',
                 'vocab_size => 7, d_model => 4097, heads => 1, layers => 1, max_len => 8'),
  ('heads',      'vocab_size => 7, d_model => 64, heads => 64, layers => 1, max_len => 8',
                 'vocab_size => 7, d_model => 65, heads => 65, layers => 1, max_len => 8'),
  ('layers',     'vocab_size => 7, d_model => 8, heads => 1, layers => 48, max_len => 8',
                 'vocab_size => 7, d_model => 8, heads => 1, layers => 49, max_len => 8'),
  ('d_ff',       'vocab_size => 7, d_model => 8, heads => 1, layers => 1, d_ff => 16384, max_len => 8',
                 'vocab_size => 7, d_model => 8, heads => 1, layers => 1, d_ff => 16385, max_len => 8'),
  ('max_len',    'vocab_size => 7, d_model => 8, heads => 1, layers => 1, max_len => 8192',
                 'vocab_size => 7, d_model => 8, heads => 1, layers => 1, max_len => 8193'),
  ('vocab_size (low)', 'vocab_size => 7, d_model => 8, heads => 1, layers => 1, max_len => 8',
                 'vocab_size => 6, d_model => 8, heads => 1, layers => 1, max_len => 8')
) v(arg, at_limit, past);
-- the cap's own message names the size and the setting
SELECT tfm_create_model('hs', 'classify', labels => ARRAY['a', 'b'], vocab_size => 7, d_model => 8,
                        heads => 1, layers => 1, max_len => 8);
RESET tfm.max_parameters;
SELECT count(*) AS models_made FROM tfm.models WHERE name = 'hs';
