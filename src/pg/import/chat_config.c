/*
 * chat_config.c — what tfm keeps for chat from a checkpoint's
 * tokenizer_config.json and generation_config.json, stored with the
 * model's tokenizer (storage/tokenizers/tokenizer_chat.c):
 *   template   "chat_template": a string, or the entry named "default" of
 *              a list of {name, template}; parsed now (src/core/chat), so a
 *              template outside tfm's Jinja subset is refused at import
 *   bos_token, eos_token   their texts ("<s>" or {"content": "<s>"}; null
 *              or absent: undefined in the template, as transformers does)
 *   specials   the added tokens: tokenizer_config.json's
 *              added_tokens_decoder (id → content) and tokenizer.json's
 *              added_tokens; a rendered prompt is cut at their texts, each
 *              becoming its id, as tokenizers does with added tokens
 *   stop_ids   generation stops at: eos_token's id, config.json's and
 *              generation_config.json's eos_token_id (one id or a list)
 * The ids are checked against the model when tfm_chat uses them.
 */
#include "postgres.h"

#include <limits.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "import/hf_files.h"
#include "base/json_fields.h"
#include "tfm/chat_template.h"
#include "runtime/infer/chat_prompt.h"
#include "storage/tokenizers/tokenizer_chat.h"
#include "storage/tokenizers/tokenizers.h"

#define MAX_SPECIALS 4096
#define MAX_STOP_IDS 64

typedef struct ChatSpecials
{
	int			n;
	char	   *text[MAX_SPECIALS];
	int			id[MAX_SPECIALS];
} ChatSpecials;

/* a token field: "text", {"content": "text"}, or NULL for null / absent */
static char *
token_text(JsonbContainer *c, const char *key)
{
	JsonbValue	b,
				cb,
			   *v = tfm_jget(c, key, &b),
			   *content;

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	if (v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data) &&
		(content = tfm_jget(v->val.binary.data, "content", &cb)) && content->type == jbvString)
		return pnstrdup(content->val.string.val, content->val.string.len);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("tokenizer_config.json field \"%s\" must be a string, an object with a \"content\" or null",
					key)));
	return NULL;
}

static void
add_special(ChatSpecials *sp, const char *text, int len, int id)
{
	if (len == 0)
		return;
	for (int i = 0; i < sp->n; i++)
		if (strlen(sp->text[i]) == (size_t) len && memcmp(sp->text[i], text, len) == 0)
			return;
	if (sp->n >= MAX_SPECIALS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("more than %d added tokens", MAX_SPECIALS)));
	sp->text[sp->n] = pnstrdup(text, len);
	sp->id[sp->n++] = id;
}

/* tokenizer_config.json's added_tokens_decoder: {"id": {"content": ...}} */
static void
decoder_specials(JsonbContainer *tcfg, ChatSpecials *sp)
{
	JsonbValue	b,
			   *v = tfm_jget(tcfg, "added_tokens_decoder", &b),
				jv,
				cb,
			   *content;
	JsonbIterator *it;
	char	   *key;
	long		id;

	if (!v || v->type == jbvNull)
		return;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer_config.json field \"added_tokens_decoder\" must be an object")));
	it = JsonbIteratorInit(v->val.binary.data);
	while (tfm_jnext_id_key(&it, &key, &id, &jv))
	{
		if (id < 0 || id > INT_MAX ||
			jv.type != jbvBinary || !JsonContainerIsObject(jv.val.binary.data) ||
			!(content = tfm_jget(jv.val.binary.data, "content", &cb)) || content->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tokenizer_config.json added_tokens_decoder entry \"%s\" must be an id with a \"content\"",
							key)));
		add_special(sp, content->val.string.val, content->val.string.len, (int) id);
	}
}

/* tokenizer.json's added_tokens: [{"id": .., "content": ..}] */
static void
tokenizer_specials(JsonbContainer *tok, ChatSpecials *sp)
{
	JsonbValue	b,
			   *v = tfm_jget(tok, "added_tokens", &b);

	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return;
	for (int i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(v->val.binary.data, i),
					ib,
					cb,
				   *id,
				   *content;

		if (t && t->type == jbvBinary && JsonContainerIsObject(t->val.binary.data) &&
			(id = tfm_jget(t->val.binary.data, "id", &ib)) != NULL &&
			(content = tfm_jget(t->val.binary.data, "content", &cb)) != NULL &&
			content->type == jbvString)
			add_special(sp, content->val.string.val, content->val.string.len,
						tfm_hf_uint(id, "an added token's id", INT_MAX));
	}
}

/* eos_token_id of a config: one id or a list, appended to ids */
static void
config_stop_ids(JsonbContainer *c, const char *file, int *ids, int *n)
{
	JsonbValue	b,
			   *v;

	if (!c || !(v = tfm_jget(c, "eos_token_id", &b)) || v->type == jbvNull)
		return;
	if (v->type == jbvNumeric)
	{
		if (*n < MAX_STOP_IDS)
			ids[(*n)++] = tfm_hf_uint(v, psprintf("%s eos_token_id", file), INT_MAX);
		return;
	}
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s eos_token_id must be an id or a list of ids", file)));
	for (int i = 0; i < (int) JsonContainerSize(v->val.binary.data) && *n < MAX_STOP_IDS; i++)
		ids[(*n)++] = tfm_hf_uint(getIthJsonbValueFromContainer(v->val.binary.data, i),
								  psprintf("%s eos_token_id", file), INT_MAX);
}

/* the chat template of tokenizer_config.json, or NULL when it has none */
static char *
template_text(JsonbContainer *tcfg)
{
	JsonbValue	b,
			   *v = tfm_jget(tcfg, "chat_template", &b);

	if (!v || v->type == jbvNull)
		return NULL;
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	if (v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		/* named templates (Cohere's, Hermes'): the default one */
		for (int i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
		{
			JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);
			char	   *name,
					   *tpl;

			if (!e || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
				continue;
			name = token_text(e->val.binary.data, "name");
			tpl = token_text(e->val.binary.data, "template");
			if (name && tpl && strcmp(name, "default") == 0)
				return tpl;
		}
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("tokenizer_config.json lists chat templates but none named \"default\"")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("tokenizer_config.json field \"chat_template\" must be a string or a list of {name, template}")));
	return NULL;
}

static void
json_text_or_null(StringInfo s, const char *key, const char *v)
{
	appendStringInfo(s, ", \"%s\": ", key);
	if (v)
		escape_json(s, v);
	else
		appendStringInfoString(s, "null");
}

bool
tfm_hf_import_chat(const char *tokenizer, Jsonb *tcfg, Jsonb *gcfg, Jsonb *config,
				   Jsonb *tokenizer_json, bool required)
{
	char	   *tpl,
			   *bos,
			   *eos;
	ChatSpecials *sp;
	int			stop[MAX_STOP_IDS + 1],
				nstop = 0;
	StringInfoData s;

	if (!tcfg || !JB_ROOT_IS_OBJECT(tcfg) || JB_ROOT_IS_SCALAR(tcfg))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tokenizer_config.json must be a JSON object")));
	if (gcfg && (!JB_ROOT_IS_OBJECT(gcfg) || JB_ROOT_IS_SCALAR(gcfg)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("generation_config.json must be a JSON object")));
	tpl = template_text(&tcfg->root);
	if (!tpl)
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tokenizer_config.json has no chat_template")));
		return false;
	}
	/* refused now if tfm cannot run it */
	tfm_chat_check_template(tpl);

	bos = token_text(&tcfg->root, "bos_token");
	eos = token_text(&tcfg->root, "eos_token");
	sp = palloc0(sizeof(ChatSpecials));
	decoder_specials(&tcfg->root, sp);
	if (tokenizer_json && JB_ROOT_IS_OBJECT(tokenizer_json) && !JB_ROOT_IS_SCALAR(tokenizer_json))
		tokenizer_specials(&tokenizer_json->root, sp);
	for (int i = 0; eos && i < sp->n; i++)
		if (strcmp(sp->text[i], eos) == 0)
			stop[nstop++] = sp->id[i];
	config_stop_ids(config ? &config->root : NULL, "config.json", stop, &nstop);
	config_stop_ids(gcfg ? &gcfg->root : NULL, "generation_config.json", stop, &nstop);

	initStringInfo(&s);
	appendStringInfoString(&s, "{\"template\": ");
	escape_json(&s, tpl);
	json_text_or_null(&s, "bos_token", bos);
	json_text_or_null(&s, "eos_token", eos);
	appendStringInfoString(&s, ", \"specials\": [");
	for (int i = 0; i < sp->n; i++)
	{
		appendStringInfoString(&s, i ? ", {\"text\": " : "{\"text\": ");
		escape_json(&s, sp->text[i]);
		appendStringInfo(&s, ", \"id\": %d}", sp->id[i]);
	}
	appendStringInfoString(&s, "], \"stop_ids\": [");
	for (int i = 0, first = 1; i < nstop; i++)
	{
		bool		seen = false;

		for (int j = 0; j < i; j++)
			seen |= stop[j] == stop[i];
		if (!seen)
		{
			appendStringInfo(&s, "%s%d", first ? "" : ", ", stop[i]);
			first = 0;
		}
	}
	appendStringInfoString(&s, "]}");
	tfm_tokenizer_chat_store(tokenizer, s.data);
	return true;
}
