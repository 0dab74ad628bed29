-- chat templates are hostile input (tracker issue 37, findings 3 and 4):
-- any role renders any template with tfm_chat_render, and one imported
-- for a model runs in every later tfm_chat.  Nesting past 64 levels
-- (blocks and expressions counted together) is refused, not a stack
-- overflow; rendering stays within tfm.work_mem and ends at a cancel or
-- statement_timeout.  0.4 crashed the server on the first three inputs,
-- ran the three loops for 23-27 s under a 1 s timeout and took 1.1 GB
-- for the doubling template under tfm.work_mem = '64MB'.
SET tfm.progress = off;
-- errors as "SQLSTATE message (hint)"
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' (' || nullif(h, '') || ')', '');
END $$;
CREATE TEMP TABLE hi AS SELECT '[{"role": "user", "content": "hi"}]'::jsonb AS m;

-- finding 3: the issue's three inputs, and the other chains the renderer walks
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ ' || repeat('-', 20000) || '1 }}', m)) AS minuses FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ ' || repeat('not ', 60000) || 'true }}', m)) AS nots FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ ' || repeat('[', 100000) || '1 }}', m)) AS brackets FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ 1' || repeat(' + 1', 100000) || ' }}', m)) AS additions FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ ''a''' || repeat(' | trim', 100000) || ' }}', m)) AS filters FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{{ messages' || repeat('[0]', 100000) || ' }}', m)) AS subscripts FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', repeat('{% if true %}', 50000) || 'x', m)) AS blocks FROM hi;
-- lists that {% set %} nests while rendering
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', '{% set l = 1 %}' || repeat('{% set l = [l] %}', 100) || '{{ l == l }}', m)) AS set_lists FROM hi;
-- 64 levels in all: 30 blocks around 30 levels of brackets render, 40 around 30 do not
SELECT tfm_chat_render(repeat('{% if true %}', 30) || '{{ ' || repeat('(1 + ', 29) || '1' || repeat(')', 29) || ' }}' || repeat('{% endif %}', 30), m) AS within_limit FROM hi;
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', repeat('{% if true %}', 40) || '{{ ' || repeat('(1 + ', 29) || '1' || repeat(')', 29) || ' }}' || repeat('{% endif %}', 40), m)) AS past_limit FROM hi;
-- a template that deep cannot be imported for a model either
\getenv abs_srcdir PG_ABS_SRCDIR
\set qwen2_dir :abs_srcdir '/../fixtures/hf_qwen2'
SELECT model FROM tfm_import_files('qwen2_limits', :'qwen2_dir');
SELECT pg_temp.err(format('SELECT tfm_chat_template_import(%L, %L)', 'qwen2_limits',
                          jsonb_build_object('chat_template', '{{ ' || repeat('-', 20000) || '1 }}'))) AS import_refused;
SELECT tfm_chat_prompt('qwen2_limits', m) IS NOT NULL AS template_kept FROM hi;

-- finding 4: memory.  A string doubled 30 times in each of 16 passes stops
-- at tfm.work_mem (each pass's values go when the pass ends, so a pass
-- must hold it all)
CREATE TEMP TABLE sixteen AS
SELECT jsonb_agg(jsonb_build_object('role', 'user', 'content', 'message ' || i)) AS m
  FROM generate_series(1, 16) i;
SET tfm.work_mem = '64MB';
SELECT pg_temp.err(format('SELECT length(tfm_chat_render(%L, %L))',
                          '{% for m in messages %}{% set s = m.content %}' || repeat('{% set s = s ~ s %}', 30) ||
                          '{{ s | length }}{% endfor %}', m)) AS doubling FROM sixteen;
-- 20 doublings (10 MB strings) fit
SELECT length(tfm_chat_render('{% for m in messages %}{% set s = m.content %}' || repeat('{% set s = s ~ s %}', 20) ||
                              '{{ s | length }} {% endfor %}', m)) AS twenty_doublings FROM sixteen;
-- and the budget holds the template itself too
SET tfm.work_mem = '1MB';
SELECT pg_temp.err(format('SELECT tfm_chat_render(%L, %L)', repeat('{{ 1 }}', 140000), m)) AS template_past_budget FROM hi;
RESET tfm.work_mem;

-- finding 4: time.  Three loops over 1,000 messages (10^9 passes, printing
-- 11 MB: short of the 64 MB prompt limit, which printing in every pass
-- would reach in about a second) end at a 1 s statement_timeout, with
-- PostgreSQL's own error
CREATE TEMP TABLE thousand AS
SELECT jsonb_agg(jsonb_build_object('role', 'user', 'content', 'message ' || i)) AS m
  FROM generate_series(1, 1000) i;
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '1s';
SELECT length(tfm_chat_render('{% for a in messages %}{% for b in messages %}{% for c in messages %}'
                              '{% if b.content == c.content %}{{ a.content }}{% endif %}'
                              '{% endfor %}{% endfor %}{% endfor %}', m)) FROM thousand;
RESET statement_timeout;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate, clock_timestamp() - :'t0'::timestamptz < interval '3 s' AS ended_in_time;

SELECT tfm_drop_model('qwen2_limits');
SELECT tfm_tokenizer_drop('qwen2_limits');
