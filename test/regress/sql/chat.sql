-- tfm_chat: a conversation through the model's chat template, on the Qwen2
-- fixture (test/reference/hf_qwen2_reference.py: Qwen2's tokenizer and
-- Qwen2-0.5B-Instruct's tokenizer_config.json and generation_config.json);
-- every published template of test/fixtures/chat rendered as python3-jinja2
-- renders it (test/reference/chat_templates_reference.py); bad messages
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
\set ref `cat test/fixtures/hf_qwen2/reference.json`
\set tcfg `cat test/fixtures/hf_qwen2/tokenizer_config.json`
\set cases `cat test/fixtures/chat/cases.json`
CREATE TEMP TABLE ref AS SELECT :'ref'::jsonb AS r;
CREATE TEMP TABLE chat AS
SELECT r->'chat'->'messages' AS messages, r->'chat'->>'prompt' AS prompt,
       ARRAY(SELECT jsonb_array_elements_text(r->'chat'->'ids')::int) AS ids,
       ARRAY(SELECT jsonb_array_elements_text(r->'chat'->'greedy')::int) AS greedy
  FROM ref;

-- tfm_import_files keeps the template, the eos text, the added tokens and
-- the stop ids (generation_config.json's <|im_end|> and <|endoftext|>)
\getenv abs_srcdir PG_ABS_SRCDIR
\set qwen2_dir :abs_srcdir '/../fixtures/hf_qwen2'
SELECT * FROM tfm_import_files('qwen2', :'qwen2_dir');
SELECT options->'chat'->>'template' = :'tcfg'::jsonb->>'chat_template' AS template_kept,
       options->'chat'->'bos_token' AS bos, options->'chat'->'eos_token' AS eos,
       options->'chat'->'stop_ids' AS stop_ids,
       jsonb_array_length(options->'chat'->'specials') AS specials
  FROM tfm.tokenizers WHERE name = 'qwen2';

-- the prompt is the template as Jinja renders it, its ids the reference's
-- (<|im_start|> and <|im_end|> as their ids), and greedy generation the
-- reference's 12 tokens
SELECT tfm_chat_prompt('qwen2', messages) = prompt AS prompt_matches,
       tfm_chat_tokens('qwen2', messages) = ids AS ids_match,
       tfm_chat('qwen2', messages, max_tokens => 12, temperature => 0) = tfm_detokenize('qwen2', greedy) AS reply_matches
  FROM chat;
SELECT tfm_chat_prompt('qwen2', messages) AS prompt FROM chat;
SELECT tfm_chat_prompt('qwen2', '[{"role": "user", "content": "Hi"}]', add_generation_prompt => false) AS without_generation_prompt;
SELECT tfm_chat('qwen2', messages, max_tokens => 12, temperature => 0) AS reply FROM chat;
-- a seed repeats a sampled reply
SELECT tfm_chat('qwen2', messages, max_tokens => 8, seed => 7) = tfm_chat('qwen2', messages, max_tokens => 8, seed => 7) AS seeded
  FROM chat;
-- a stop id of generation_config.json ends the reply before it (here the
-- fifth greedy token made a stop id)
SELECT tfm_chat_template_import('qwen2', :'tcfg', jsonb_build_object('eos_token_id', jsonb_build_array(greedy[5])))
  FROM chat;
SELECT options->'chat'->'stop_ids' AS stop_ids FROM tfm.tokenizers WHERE name = 'qwen2';
SELECT tfm_chat('qwen2', messages, max_tokens => 12, temperature => 0) = tfm_detokenize('qwen2', greedy[1:4]) AS stopped_before_it
  FROM chat;
-- the stop text still applies
SELECT tfm_chat('qwen2', messages, max_tokens => 12, temperature => 0, stop => tfm_detokenize('qwen2', greedy[3:3]))
     = tfm_detokenize('qwen2', greedy[1:2]) AS stop_text
  FROM chat;

-- every template of the published models, on conversations with and
-- without a system turn, with and without the generation prompt: Jinja's
-- text byte for byte, or the template's own refusal (raise_exception)
CREATE TEMP TABLE cases AS SELECT c FROM jsonb_array_elements(:'cases'::jsonb) AS a(c);
\set tpls `cat test/fixtures/chat/templates.json`
CREATE TEMP TABLE tpl AS SELECT key AS name, value AS text FROM jsonb_each_text(:'tpls'::jsonb);
CREATE FUNCTION pg_temp.try_render(t text, c jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN tfm_chat_render(t, c->'messages', (c->>'add_generation_prompt')::boolean, c->>'bos_token', c->>'eos_token');
EXCEPTION WHEN OTHERS THEN
  RETURN 'ERROR: ' || SQLERRM;
END $$;
SELECT c->>'template' AS template, count(*) AS cases,
       count(*) FILTER (WHERE c ? 'rendered' AND pg_temp.try_render(text, c) = c->>'rendered') AS rendered_alike,
       count(*) FILTER (WHERE c ? 'error' AND pg_temp.try_render(text, c) LIKE '%' || (c->>'error')) AS refused_alike
  FROM cases JOIN tpl ON tpl.name = c->>'template'
 GROUP BY 1 ORDER BY 1;
SELECT pg_temp.try_render(text, c) AS gemma_refuses
  FROM cases JOIN tpl ON tpl.name = c->>'template'
 WHERE c->>'template' = 'gemma' AND c->>'conversation' = 'system' AND (c->>'add_generation_prompt')::boolean;
SELECT tfm_chat_render(text, '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]',
                       true, '<|begin_of_text|>', '<|eot_id|>') AS llama3
  FROM tpl WHERE name = 'llama3';

-- bad messages, one error each
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '{"role": "user", "content": "hi"}')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '"hi"')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '["hi"]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"content": "hi"}]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "user"}]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": 1, "content": "hi"}]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "user", "content": null}]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "robot", "content": "hi"}]')$$);
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "user", "content": "hi", "name": "x"}]')$$);
-- NULL in, NULL out (doc/reference.md, NULLs)
SELECT tfm_chat('qwen2', NULL) IS NULL AS null_messages,
       tfm_chat(NULL, '[{"role": "user", "content": "hi"}]') IS NULL AS null_model;
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "user", "content": "hi"}]', max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT tfm_chat('nosuch', '[{"role": "user", "content": "hi"}]')$$);
-- a conversation longer than the model reads (max_len 128) is refused, not cut
SELECT pg_temp.err(format('SELECT tfm_chat(%L, %L)', 'qwen2', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat('word ', 200)))));
-- templates tfm cannot run, refused by name; a template's own refusal
SELECT pg_temp.err($$SELECT tfm_chat_template_import('qwen2', '{"chat_template": "{% macro m() %}{% endmacro %}"}')$$);
SELECT pg_temp.err($$SELECT tfm_chat_template_import('qwen2', '{"chat_template": "{% for m in messages %}{{ m.content }}"}')$$);
SELECT pg_temp.err($$SELECT tfm_chat_template_import('qwen2', '{"eos_token": "<|im_end|>"}')$$);
SELECT pg_temp.err($$SELECT tfm_chat_template_import('qwen2', '{"chat_template": "x", "added_tokens_decoder": {"abc": {"content": "y"}}}')$$);
SELECT pg_temp.err($$SELECT tfm_chat_render('{{ messages | pprint }}', '[{"role": "user", "content": "hi"}]')$$);
-- tojson as transformers' (Python's json.dumps, ensure_ascii false)
SELECT tfm_chat_render('{{ messages | tojson }}', '[{"role": "user", "content": "hi \"é\"\n"}]');
SELECT pg_temp.err($$SELECT tfm_chat_render('{{ raise_exception(''only one turn'') }}', '[{"role": "user", "content": "hi"}]')$$);
SELECT tfm_chat_render(NULL, '[{"role": "user", "content": "hi"}]') IS NULL AS null_template;
-- a model without a chat template
\set cfg `cat test/fixtures/hf_qwen2/config.json`
\set w `base64 -w0 test/fixtures/hf_qwen2/model.safetensors`
\set tok `cat test/fixtures/hf_qwen2/tokenizer.json`
SELECT * FROM tfm_import('qwen2_plain', :'cfg', decode(:'w', 'base64'), :'tok');
SELECT pg_temp.err($$SELECT tfm_chat('qwen2_plain', '[{"role": "user", "content": "hi"}]')$$);
-- an added token whose id is not that piece of the tokenizer
SELECT tfm_chat_template_import('qwen2_plain', jsonb_set(:'tcfg'::jsonb, '{added_tokens_decoder}', '{"300": {"content": "<|im_start|>"}}'));
SELECT pg_temp.err($$SELECT tfm_chat('qwen2_plain', '[{"role": "user", "content": "hi"}]')$$);

-- a whole context (tfm_chat_render_context, json): the real templates of
-- Qwen3 (tools, tool calls, tool responses, reasoning, enable_thinking) and
-- Gemma 3 (its system-prompt rules) for every case of
-- test/fixtures/chat/hf_context_cases.tsv (chat_templates_context.py:
-- python3-jinja2 as transformers): the rendering, or the template's refusal
\set cases `cat test/fixtures/chat/hf_context_cases.tsv`
CREATE TEMP TABLE ctx_lines AS
SELECT n, string_to_array(l, E'\t') AS f
  FROM regexp_split_to_table(:'cases', E'\n') WITH ORDINALITY AS t(l, n) WHERE l ~ '^[TJ]\t';
CREATE TEMP TABLE ctx_tpl AS
SELECT f[2] AS name, convert_from(decode(f[3], 'hex'), 'UTF8') AS tpl FROM ctx_lines WHERE f[1] = 'T';
CREATE TEMP TABLE ctx_case AS
SELECT n, f[2] AS name, convert_from(decode(f[3], 'hex'), 'UTF8') AS context, f[4] AS kind,
       convert_from(decode(f[5], 'hex'), 'UTF8') AS want
  FROM ctx_lines WHERE f[1] = 'J';
SELECT c.name, count(*) AS cases,
       count(*) FILTER (WHERE CASE WHEN kind = 'R' THEN tfm_chat_render_context(t.tpl, c.context::json) = want
                                   ELSE pg_temp.err(format('SELECT tfm_chat_render_context(%L, %L)', t.tpl, c.context))
                                        = '22023: cannot render the chat template: the chat template refuses the conversation: ' || want
                              END) AS as_transformers
  FROM ctx_case c JOIN ctx_tpl t USING (name) GROUP BY c.name ORDER BY c.name;
-- one in full: Qwen3 with a tool, a call, its response and the answer
SELECT tfm_chat_render_context(t.tpl, json_build_object(
         'tools', json_build_array(json_build_object('type', 'function', 'function',
             json_build_object('name', 'get_weather', 'description', 'The weather in a city.',
                               'parameters', json_build_object('type', 'object', 'properties',
                                   json_build_object('city', json_build_object('type', 'string')))))),
         'messages', json_build_array(
             json_build_object('role', 'user', 'content', 'Weather in Paris?'),
             json_build_object('role', 'assistant', 'content', '', 'tool_calls', json_build_array(
                 json_build_object('function', json_build_object('name', 'get_weather',
                                                                 'arguments', json_build_object('city', 'Paris'))))),
             json_build_object('role', 'tool', 'content', '21 °C'),
             json_build_object('role', 'assistant', 'content', '<think>
Easy.
</think>

It is 21 °C.'))))
  FROM ctx_tpl t WHERE name = 'hf_qwen3';
-- json keeps the keys' order (jsonb would sort them); add_generation_prompt true unless given
SELECT tfm_chat_render_context('{{ x | tojson }} {{ add_generation_prompt }}', '{"x": {"zeta": 1, "a": [true, null, 2.50]}}');
SELECT tfm_chat_render_context('{{ add_generation_prompt }}', '{"add_generation_prompt": false}');
-- a model's template with its bos and eos texts: tfm_chat_prompt's prompt for the same messages
SELECT tfm_chat_prompt_context('qwen2', '{"messages": [{"role": "user", "content": "Hi"}]}')
     = tfm_chat_prompt('qwen2', '[{"role": "user", "content": "Hi"}]') AS as_chat_prompt,
       tfm_chat_prompt_context('qwen2', '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false}')
     = tfm_chat_prompt('qwen2', '[{"role": "user", "content": "Hi"}]', false) AS without_generation_prompt;
-- tfm_chat_context: the reply to a whole context; for role and content
-- messages tfm_chat's (the reference's greedy reply up to the stop id
-- imported above), and a tool turn tfm_chat refuses
SELECT tfm_chat_context('qwen2', json_build_object('messages', messages::json), max_tokens => 12, temperature => 0)
     = tfm_detokenize('qwen2', greedy[1:4]) AS context_reply_matches,
       tfm_chat_context('qwen2', json_build_object('messages', messages::json), max_tokens => 8, seed => 7)
     = tfm_chat('qwen2', messages, max_tokens => 8, seed => 7) AS sampled_as_chat
  FROM chat;
SELECT pg_temp.err($$SELECT tfm_chat('qwen2', '[{"role": "user", "content": "2+2?"}, {"role": "tool", "content": "4"}]')$$);
SELECT tfm_chat_prompt_context('qwen2', '{"messages": [{"role": "user", "content": "2+2?"}, {"role": "tool", "content": "4"}]}') AS tool_prompt;
-- its reply: greedy generation from that prompt (its specials read as their ids)
SELECT tfm_chat_context('qwen2', c, max_tokens => 6, temperature => 0)
     = tfm_generate('qwen2', tfm_chat_prompt_context('qwen2', c), max_tokens => 6, temperature => 0) AS tool_reply_as_generate,
       encode(convert_to(tfm_chat_context('qwen2', c, max_tokens => 6, temperature => 0), 'UTF8'), 'hex') AS tool_reply
  FROM (SELECT '{"messages": [{"role": "user", "content": "2+2?"}, {"role": "tool", "content": "4"}]}'::json AS c) x;
SELECT tfm_chat_context('qwen2', NULL) IS NULL AS null_context, tfm_chat_context(NULL, '{}') IS NULL AS null_model_context;
SELECT pg_temp.err($$SELECT tfm_chat_context('qwen2', '[1]')$$);
SELECT pg_temp.err($$SELECT tfm_chat_context('qwen2', '{"messages": [{"role": "user", "content": "hi"}]}', max_tokens => 0)$$);
SELECT pg_temp.err($$SELECT tfm_chat_context('nosuch', '{"messages": []}')$$);
SELECT pg_temp.err(format('SELECT tfm_chat_context(%L, %L)', 'qwen2',
                          json_build_object('messages', json_build_array(json_build_object('role', 'user', 'content', repeat('word ', 200))))));
SELECT tfm_chat_render_context(NULL, '{}') IS NULL AS null_template, tfm_chat_render_context('x', NULL) IS NULL AS null_context,
       tfm_chat_prompt_context(NULL, '{}') IS NULL AS null_model;
SELECT pg_temp.err($$SELECT tfm_chat_render_context('x', '[1]')$$);
SELECT pg_temp.err($$SELECT tfm_chat_render_context('{{ x }}', '{"x": "\ud800"}')$$);
SELECT pg_temp.err($$SELECT tfm_chat_prompt_context('nosuch', '{}')$$);
-- nesting past 64 levels refused (not a deep recursion)
SELECT pg_temp.err(format('SELECT tfm_chat_render_context(%L, %L)', '{{ x }}',
                          '{"x": ' || repeat('[', 70) || repeat(']', 70) || '}'));

SELECT tfm_drop_model('qwen2_plain');
SELECT tfm_tokenizer_drop('qwen2_plain');
SELECT tfm_drop_model('qwen2');
SELECT tfm_tokenizer_drop('qwen2');
