/*
 * chat_prompt.c — a conversation made a language model's prompt, for tfm_chat and
 * tfm_chat_prompt (sql/infer/chat.c): the messages checked (a non-empty array of
 * {"role": "system" | "user" | "assistant", "content": text}, nothing
 * else), the model's chat template (src/core/chat) rendered with its bos
 * and eos texts (or for a whole context, JSON text whose members are the
 * template's names: tfm_chat_render_context, the core reading and checking
 * it), and the prompt cut at the added tokens' texts (each its
 * id, as Hugging Face tokenizers splits added tokens out before the
 * pre-tokenizer), the text between them encoded by the tokenizer.
 *
 * A template is hostile input (tfm_chat_render takes any; one imported
 * for a model runs in every later tfm_chat), so the core parses and
 * renders it in a memory context of its own, deleted after, through
 * palloc that returns NULL rather than raising (the core then unwinds and
 * reports), counted against tfm.work_mem, and polls for a cancel or
 * statement_timeout (tfm_interrupt_pending), which is raised once the
 * core has returned.  Its nesting limit keeps its recursion shallow.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "runtime/infer/chat_prompt.h"
#include "runtime/runtime.h"
#include "storage/models/models.h"
#include "storage/tokenizers/tokenizer_chat.h"
#include "storage/tokenizers/tokenizers.h"
#include "runtime/cache/tokenizer_cache.h"

static const char *const roles[] = {"system", "user", "assistant"};

static char *
field_string(JsonbContainer *c, const char *key, int i, const char *what)
{
	JsonbValue	b,
			   *v = getKeyJsonValueFromContainer(c, key, strlen(key), &b);

	if (!v)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("message %d has no \"%s\"", i + 1, key),
				 errdetail("A message is {\"role\": \"user\", \"content\": \"...\"}; %s.", what)));
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("message %d: \"%s\" must be a string", i + 1, key)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

tfm_chat_message *
tfm_chat_messages(Jsonb *messages, int *n)
{
	tfm_chat_message *m;

	if (!JB_ROOT_IS_ARRAY(messages) || JB_ROOT_IS_SCALAR(messages))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("messages must be a JSON array of {\"role\": ..., \"content\": ...} objects")));
	*n = JB_ROOT_COUNT(messages);
	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("messages must hold at least one message")));
	if (*n > TFM_CHAT_MAX_MESSAGES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a conversation of %d messages is more than tfm_chat takes (%d)", *n,
						TFM_CHAT_MAX_MESSAGES)));
	m = palloc(sizeof(tfm_chat_message) * *n);
	for (int i = 0; i < *n; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(&messages->root, i);
		JsonbIterator *it;
		JsonbValue	kv;
		JsonbIteratorToken tok;
		char	   *role;
		bool		known = false;

		if (!v || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("message %d must be an object with \"role\" and \"content\"", i + 1)));
		role = field_string(v->val.binary.data, "role", i, "the role is system, user or assistant");
		for (int k = 0; k < (int) lengthof(roles); k++)
			known |= strcmp(role, roles[k]) == 0;
		if (!known)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("message %d has the role \"%s\"", i + 1, role),
					 errdetail("tfm_chat takes the roles system, user and assistant.")));
		m[i].role = role;
		m[i].content = field_string(v->val.binary.data, "content", i, "the content is its text");
		/* nothing else: a template would not see it */
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &kv, true)) != WJB_DONE)
			if (tok == WJB_KEY &&
				!(kv.val.string.len == 4 && strncmp(kv.val.string.val, "role", 4) == 0) &&
				!(kv.val.string.len == 7 && strncmp(kv.val.string.val, "content", 7) == 0))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("message %d has the key \"%s\"", i + 1,
								pnstrdup(kv.val.string.val, Min(kv.val.string.len, 64))),
						 errdetail("A message holds only \"role\" and \"content\".")));
	}
	return m;
}

static char *
json_text(JsonbContainer *c, const char *key)
{
	JsonbValue	b,
			   *v = getKeyJsonValueFromContainer(c, key, strlen(key), &b);

	if (!v || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* the ints of an array field (damaged settings: an error) */
static int32 *
json_ints(JsonbContainer *c, const char *key, int *n, const char *model)
{
	JsonbValue	b,
			   *v = getKeyJsonValueFromContainer(c, key, strlen(key), &b);
	int32	   *out;

	*n = 0;
	if (!v || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return palloc(sizeof(int32));
	*n = JsonContainerSize(v->val.binary.data);
	out = palloc(sizeof(int32) * (*n + 1));
	for (int i = 0; i < *n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);

		if (!e || e->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the chat settings of model \"%s\" are damaged", model)));
		out[i] = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(e->val.numeric)));
	}
	return out;
}

void
tfm_chat_settings(const TfmModelRow *row, TfmChat *c)
{
	Jsonb	   *chat = row->tokenizer ? tfm_tokenizer_chat_read(row->tokenizer) : NULL;
	JsonbValue	b,
			   *sp;

	memset(c, 0, sizeof(*c));
	if (!chat || !JB_ROOT_IS_OBJECT(chat) || !(c->template_text = json_text(&chat->root, "template")))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has no chat template", row->name),
				 errhint("Import its tokenizer_config.json with tfm_chat_template_import('%s', ...), "
						 "or import the checkpoint with tfm_import_files from a directory that holds it.",
						 row->name)));
	c->bos = json_text(&chat->root, "bos_token");
	c->eos = json_text(&chat->root, "eos_token");
	c->stop_ids = json_ints(&chat->root, "stop_ids", &c->n_stop, row->name);
	for (int i = 0; i < c->n_stop; i++)
		if (c->stop_ids[i] < 0 || c->stop_ids[i] >= row->cfg.vocab)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("stop id %d of model \"%s\" is outside its vocabulary of %d ids",
							c->stop_ids[i], row->name, row->cfg.vocab)));
	sp = getKeyJsonValueFromContainer(&chat->root, "specials", 8, &b);
	if (sp && sp->type == jbvBinary && JsonContainerIsArray(sp->val.binary.data))
	{
		int			n = JsonContainerSize(sp->val.binary.data);

		c->special_text = palloc(sizeof(char *) * (n + 1));
		c->special_id = palloc(sizeof(int32) * (n + 1));
		for (int i = 0; i < n; i++)
		{
			JsonbValue *e = getIthJsonbValueFromContainer(sp->val.binary.data, i),
						ib,
					   *id;

			if (!e || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data) ||
				!(c->special_text[i] = json_text(e->val.binary.data, "text")) ||
				!(id = getKeyJsonValueFromContainer(e->val.binary.data, "id", 2, &ib)) ||
				id->type != jbvNumeric)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the chat settings of model \"%s\" are damaged", row->name)));
			c->special_id[i] = DatumGetInt32(DirectFunctionCall1(numeric_int4,
																 NumericGetDatum(id->val.numeric)));
		}
		c->n_specials = n;
	}
}

static void *
chat_palloc(void *arg, size_t n)
{
	return MemoryContextAllocExtended((MemoryContext) arg, n, MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE);
}

static void
chat_pfree(void *arg, void *p)
{
	(void) arg;
	pfree(p);
}

/* the core's options for a call: cx's memory within tfm.work_mem, interrupts polled */
static MemoryContext
chat_begin(tfm_chat_opts *o)
{
	MemoryContext cx = AllocSetContextCreate(CurrentMemoryContext, "tfm chat template",
											 ALLOCSET_DEFAULT_SIZES);

	memset(o, 0, sizeof(*o));
	o->budget = tfm_work_mem_bytes();
	o->cancel = tfm_interrupt_pending;
	o->alloc = chat_palloc;
	o->dealloc = chat_pfree;
	o->alloc_arg = cx;
	return cx;
}

/* the core's result: tfm.work_mem named when the budget ran out, else the core's message */
static void
chat_check(int st, const tfm_status *err, const tfm_chat_opts *o, const char *doing,
		   const char *what)
{
	if (st == TFM_ELIMIT && o->over_budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s needs more memory than tfm.work_mem (%s)", doing,
						GetConfigOptionByName("tfm.work_mem", NULL, false)),
				 errhint("Raise tfm.work_mem, or shorten the conversation or the strings the template builds.")));
	tfm_raise(st, err, what);
}

/* the template parsed (and dropped): the core's status, err its message */
static int
parse_template(const char *template_text, tfm_chat_opts *o, tfm_status *err)
{
	MemoryContext cx = chat_begin(o);
	tfm_chat_template *t;
	int			st;

	for (;;)
	{
		t = NULL;
		st = tfm_chat_template_parse(&t, template_text, strlen(template_text), o, err);
		tfm_chat_template_free(t);
		if (st != TFM_ECANCELED)
			break;
		/* a cancel or timeout raises here; an interrupt that raises nothing: again */
		MemoryContextReset(cx);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextDelete(cx);
	return st;
}

void
tfm_chat_check_template(const char *template_text)
{
	tfm_chat_opts o;
	tfm_status	err = {0};
	int			st = parse_template(template_text, &o, &err);

	chat_check(st, &err, &o, "parsing the chat template", "cannot import the chat template");
}

bool
tfm_chat_template_parses(const char *template_text, char **why)
{
	tfm_chat_opts o;
	tfm_status	err = {0};
	int			st = parse_template(template_text, &o, &err);

	if (st == TFM_OK)
		return true;
	if (st == TFM_ENOMEM || (st == TFM_ELIMIT && o.over_budget))
		chat_check(st, &err, &o, "parsing the chat template", "cannot import the chat template");
	*why = pstrdup(err.msg);
	return false;
}

/* what one render asks of the core: a message list, or a whole context */
typedef struct ChatRender
{
	const tfm_chat_message *msgs;	/* messages, or NULL: the context */
	int			n;
	bool		add_generation_prompt;
	const char *bos,
			   *eos;
	const char *context,		/* JSON text of an object, and its defaults */
			   *defaults;
} ChatRender;

/*
 * The template parsed and rendered as r asks, in a memory context of its
 * own under chat_begin's budget; a cancel or timeout raises, an interrupt
 * that raises nothing starts again; the text palloc'd (*len bytes)
 */
static char *
chat_render(const char *template_text, const ChatRender *r, size_t *len)
{
	tfm_chat_opts o;
	MemoryContext cx = chat_begin(&o);
	tfm_chat_template *t;
	tfm_status	err;
	char	   *out,
			   *copy;
	int			st;

	for (;;)
	{
		t = NULL;
		out = NULL;
		st = tfm_chat_template_parse(&t, template_text, strlen(template_text), &o, &err);
		if (st == TFM_OK)
		{
			st = !r->context
				? tfm_chat_template_render(&out, len, t, r->msgs, r->n, r->add_generation_prompt,
										   r->bos, r->eos, &o, &err)
				: tfm_chat_template_render_json(&out, len, t, r->context, strlen(r->context),
												r->defaults, strlen(r->defaults), &o, &err);
			tfm_chat_template_free(t);
		}
		if (st != TFM_ECANCELED)
			break;
		/* a cancel or timeout raises here; an interrupt that raises nothing: again */
		MemoryContextReset(cx);
		CHECK_FOR_INTERRUPTS();
	}
	chat_check(st, &err, &o, "rendering the chat template", "cannot render the chat template");
	copy = palloc_extended(*len + 1, MCXT_ALLOC_HUGE);
	memcpy(copy, out, *len + 1);
	MemoryContextDelete(cx);
	return copy;
}

char *
tfm_chat_render(const char *template_text, const tfm_chat_message *msgs, int n,
				bool add_generation_prompt, const char *bos, const char *eos, size_t *len)
{
	ChatRender	r = {msgs, n, add_generation_prompt, bos, eos, NULL, NULL};

	return chat_render(template_text, &r, len);
}

/*
 * the defaults of a context (JSON text of an object): add_generation_prompt
 * true, the model's bos and eos texts (the core uses them where the
 * context names none)
 */
static char *
context_defaults(const char *bos, const char *eos)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"add_generation_prompt\": true");
	if (bos)
	{
		appendStringInfoString(&b, ", \"bos_token\": ");
		escape_json(&b, bos);
	}
	if (eos)
	{
		appendStringInfoString(&b, ", \"eos_token\": ");
		escape_json(&b, eos);
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

char *
tfm_chat_render_context(const char *template_text, const char *context, const char *bos,
						const char *eos, size_t *len)
{
	char	   *def = context_defaults(bos, eos);
	ChatRender	r = {NULL, 0, false, NULL, NULL, context, def};
	char	   *copy = chat_render(template_text, &r, len);

	pfree(def);
	return copy;
}

/* the special whose text starts at s[0 .. n), longest first; -1 if none */
static int
special_at(const TfmChat *c, const char *s, size_t n, size_t *tl)
{
	int			best = -1;

	*tl = 0;
	for (int k = 0; k < c->n_specials; k++)
	{
		size_t		l = strlen(c->special_text[k]);

		if (l > *tl && l <= n && memcmp(s, c->special_text[k], l) == 0)
		{
			best = k;
			*tl = l;
		}
	}
	return best;
}

int32 *
tfm_chat_prompt_ids(const TfmModelRow *row, const TfmChat *c, const char *prompt, size_t len,
					int *n)
{
	TfmCachedTokenizer *e = tfm_tokenizer_cached(row->tokenizer);
	bool		first[256] = {false};
	int32	   *ids = NULL;
	int			cap = 0;
	size_t		seg = 0,
				pos = 0;

	*n = 0;
	for (int k = 0; k < c->n_specials; k++)
	{
		const uint8_t *piece;
		size_t		pl;

		first[(uint8) c->special_text[k][0]] = true;
		/* the file's id must be the tokenizer's piece of that text */
		if (c->special_id[k] < 0 || c->special_id[k] >= row->cfg.vocab ||
			tfm_tok_piece(&piece, &pl, e->tok, c->special_id[k], NULL) != TFM_OK ||
			pl != strlen(c->special_text[k]) || memcmp(piece, c->special_text[k], pl) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("added token \"%s\" of model \"%s\"'s chat settings is not id %d of its tokenizer",
							c->special_text[k], row->name, c->special_id[k])));
	}
	while (pos <= len)
	{
		size_t		tl = 0;
		int			k = pos < len && first[(uint8) prompt[pos]] ?
			special_at(c, prompt + pos, len - pos, &tl) : -1;

		if (k < 0 && pos < len)
		{
			pos++;
			continue;
		}
		if ((pos & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		/* the text before, then the special */
		if (pos > seg)
		{
			int			m;
			int32	   *part = tfm_tokenizer_encode_with(e, prompt + seg, pos - seg, 0, 0, &m);

			if (*n + m + 1 > cap)
			{
				cap = (*n + m + 1) * 2;
				ids = ids ? repalloc_huge(ids, sizeof(int32) * cap) :
					palloc_extended(sizeof(int32) * cap, MCXT_ALLOC_HUGE);
			}
			memcpy(ids + *n, part, sizeof(int32) * m);
			*n += m;
			pfree(part);
		}
		if (k < 0)
			break;
		if (*n + 2 > cap)
		{
			cap = (*n + 2) * 2;
			ids = ids ? repalloc_huge(ids, sizeof(int32) * cap) :
				palloc_extended(sizeof(int32) * cap, MCXT_ALLOC_HUGE);
		}
		ids[(*n)++] = c->special_id[k];
		pos += tl;
		seg = pos;
	}
	if (!ids)
		ids = palloc(sizeof(int32) * 2);
	return ids;
}
