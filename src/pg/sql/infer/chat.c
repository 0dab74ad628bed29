/*
 * chat.c — conversations in SQL: tfm_chat (the model's chat template
 * applied to the messages, then generation until a stop id, the stop text
 * or max_tokens), tfm_chat_prompt and tfm_chat_tokens (the prompt it
 * builds, as text and as ids), tfm_chat_render (any template on any
 * messages, no model), tfm_chat_render_context and tfm_chat_prompt_context
 * (a template, or a model's, for a whole JSON context: messages with tool
 * calls, tools, enable_thinking), tfm_chat_context (the reply to such a
 * context) and tfm_chat_template_import (a model's
 * tokenizer_config.json and generation_config.json kept for chat).
 *
 * The prompt is built by runtime/infer/chat_prompt.c; the decode loop is tfm_generate's
 * (runtime/infer/generator.c) with the model's stop ids.  A conversation longer
 * than the model's max_len is refused rather than cut: cutting would drop
 * the system turn.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "sql/args.h"
#include "runtime/infer/chat_prompt.h"
#include "runtime/infer/infer.h"
#include "sql/infer/language_model.h"
#include "import/hf_files.h"
#include "storage/storage.h"
#include "storage/models/models.h"
#include "storage/roles/roles.h"
#include "runtime/cache/model_cache.h"

/* messages of argument 1 and the model's prompt for them (the callers
 * answer NULL model names and messages with NULL: args.h) */
static char *
model_prompt(const TfmModelRow *row, FunctionCallInfo fcinfo, bool add_generation_prompt,
			 TfmChat *c, size_t *len)
{
	tfm_chat_message *msgs;
	int			n;

	tfm_chat_settings(row, c);
	msgs = tfm_chat_messages(PG_GETARG_JSONB_P(1), &n);
	return tfm_chat_render(c->template_text, msgs, n, add_generation_prompt, c->bos, c->eos, len);
}

static bool
add_generation_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? true : PG_GETARG_BOOL(n);
}

/*
 * the reply to a rendered prompt: its ids (specials as their ids), refused
 * past the model's max_len, then generation with the options of arguments
 * 2 .. 8 and the model's stop ids (tfm_chat and tfm_chat_context)
 */
static text *
chat_reply(const char *name, tfm_model *m, const TfmModelRow *row,
		   TfmChat *c, const char *prompt, size_t len, const GenOpts *opts)
{
	GenOpts		o = *opts;
	GenRow		g;
	int32	   *ids;
	int			n;

	ids = tfm_chat_prompt_ids(row, c, prompt, len, &n);
	if (n > row->cfg.max_len)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the conversation's prompt is %d tokens, more than model \"%s\" reads (max_len %d)",
						n, name, row->cfg.max_len),
				 errhint("Leave out earlier turns.")));
	o.stop_ids = c->stop_ids;
	o.n_stop_ids = c->n_stop;
	tfm_generate_prompts(m, row, &ids, &n, 1, &o, &g);
	return tfm_generated_text(row, &g);
}

PG_FUNCTION_INFO_V1(tfm_chat);
Datum
tfm_chat(PG_FUNCTION_ARGS)
{
	char	   *name;
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	TfmChat		c;
	char	   *prompt;
	size_t		len;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	tfm_generate_options(fcinfo, &o);
	m = tfm_model_for(name, TFM_TASK_LM, true, &row);
	prompt = model_prompt(row, fcinfo, true, &c, &len);
	PG_RETURN_TEXT_P(chat_reply(name, m, row, &c, prompt, len, &o));
}

/*
 * tfm_chat_context(model, context json, options as tfm_chat's): the reply
 * to a whole context (tools, tool calls, tool responses, reasoning,
 * enable_thinking: tfm_chat_prompt_context's prompt)
 */
PG_FUNCTION_INFO_V1(tfm_chat_context);
Datum
tfm_chat_context(PG_FUNCTION_ARGS)
{
	char	   *name;
	const TfmModelRow *row;
	tfm_model  *m;
	GenOpts		o;
	TfmChat		c;
	char	   *prompt;
	size_t		len;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	name = tfm_text_arg(fcinfo, 0, "model");
	tfm_generate_options(fcinfo, &o);
	m = tfm_model_for(name, TFM_TASK_LM, true, &row);
	tfm_chat_settings(row, &c);
	prompt = tfm_chat_render_context(c.template_text, text_to_cstring(PG_GETARG_TEXT_PP(1)), c.bos,
									 c.eos, &len);
	PG_RETURN_TEXT_P(chat_reply(name, m, row, &c, prompt, len, &o));
}

/* tfm_chat_prompt's and tfm_chat_tokens' prompt: model, messages, add_generation_prompt */
static char *
prompt_args(FunctionCallInfo fcinfo, const TfmModelRow **row, TfmChat *c, size_t *len)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");

	(void) tfm_model_for(name, TFM_TASK_LM, true, row);
	return model_prompt(*row, fcinfo, add_generation_arg(fcinfo, 2), c, len);
}

PG_FUNCTION_INFO_V1(tfm_chat_prompt);
Datum
tfm_chat_prompt(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	TfmChat		c;
	size_t		len;
	char	   *prompt;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	prompt = prompt_args(fcinfo, &row, &c, &len);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(prompt, len));
}

PG_FUNCTION_INFO_V1(tfm_chat_tokens);
Datum
tfm_chat_tokens(PG_FUNCTION_ARGS)
{
	const TfmModelRow *row;
	TfmChat		c;
	size_t		len;
	char	   *prompt;
	int			n;
	int32	   *ids;
	Datum	   *d;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	prompt = prompt_args(fcinfo, &row, &c, &len);
	ids = tfm_chat_prompt_ids(row, &c, prompt, len, &n);
	d = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		d[i] = Int32GetDatum(ids[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(d, n, INT4OID, 4, true, TYPALIGN_INT));
}

PG_FUNCTION_INFO_V1(tfm_chat_render_sql);
Datum
tfm_chat_render_sql(PG_FUNCTION_ARGS)
{
	char	   *tpl,
			   *out;
	tfm_chat_message *msgs;
	int			n;
	size_t		len;

	if (tfm_args_null(fcinfo, 0, 1))
		PG_RETURN_NULL();
	tpl = text_to_cstring(PG_GETARG_TEXT_PP(0));
	msgs = tfm_chat_messages(PG_GETARG_JSONB_P(1), &n);
	out = tfm_chat_render(tpl, msgs, n, add_generation_arg(fcinfo, 2),
						  PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
						  PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)), &len);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, len));
}

/* tfm_chat_render_context(template, context json): any template, the whole context given */
PG_FUNCTION_INFO_V1(tfm_chat_render_context_sql);
Datum
tfm_chat_render_context_sql(PG_FUNCTION_ARGS)
{
	size_t		len;
	char	   *out = tfm_chat_render_context(text_to_cstring(PG_GETARG_TEXT_PP(0)),
											  text_to_cstring(PG_GETARG_TEXT_PP(1)), NULL, NULL, &len);

	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, len));
}

/* tfm_chat_prompt_context(model, context json): the model's template, its bos and eos texts */
PG_FUNCTION_INFO_V1(tfm_chat_prompt_context);
Datum
tfm_chat_prompt_context(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	const TfmModelRow *row;
	TfmChat		c;
	size_t		len;
	char	   *out;

	(void) tfm_model_for(name, TFM_TASK_LM, true, &row);
	tfm_chat_settings(row, &c);
	out = tfm_chat_render_context(c.template_text, text_to_cstring(PG_GETARG_TEXT_PP(1)), c.bos, c.eos,
								  &len);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, len));
}

PG_FUNCTION_INFO_V1(tfm_chat_template_import);
Datum
tfm_chat_template_import(PG_FUNCTION_ARGS)
{
	char	   *name = tfm_text_arg(fcinfo, 0, "model");
	TfmModelRow row;

	TFM_ARG_NOT_NULL(1, "tokenizer_config");
	tfm_check_writable("import a chat template for", name);
	tfm_check_model_owner("import a chat template for", name);
	(void) tfm_catalog_lookup(name, &row, false);
	if (strcmp(row.task, "lm") != 0 || !row.tokenizer)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is not a language model with a tokenizer", name)));
	(void) tfm_hf_import_chat(row.tokenizer, PG_GETARG_JSONB_P(1),
							  PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2), NULL, NULL, true);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("chat template of model \"%s\" imported", name)));
}
