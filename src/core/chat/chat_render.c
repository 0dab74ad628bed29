/*
 * chat_render.c: a parsed chat template (chat_parse.c) rendered for a
 * conversation (tfm_chat_template_render): the walk over its statements
 * (text, output, if, for, set) and the output.  Expressions are
 * chat_eval.c's (render_eval), what values can do chat_builtins.c's, and
 * values, names and the render state's helpers chat_value.c's; this file
 * is the top and defines nothing they call.
 *
 * The names defined are messages (a list of {role, content}),
 * add_generation_prompt, bos_token and eos_token (when given) and
 * raise_exception(message) for tfm_chat_template_render; for
 * tfm_chat_template_render_json the members of its JSON object (messages
 * with any keys, tools, enable_thinking ..., read by chat_json.c) and
 * raise_exception.  Any other name is undefined (false, printed as
 * nothing, "is defined" false), as Jinja's default undefined.  Strings
 * print as they are, integers in decimal, booleans as True / False, none
 * as None (Python's str()); a list or a mapping cannot be printed.  A for
 * loop over a mapping walks its keys.  The output stops at
 * TFM_CHAT_MAX_OUTPUT_BYTES.
 *
 * Bounds (a template is hostile input): the walk over statements and
 * expressions is recursive, as deep as the parser let the template nest
 * (blocks and expressions together, TFM_CHAT_MAX_NESTING; counted again
 * here in r->depth), and lists built while rendering nest no deeper
 * (value.depth), so values_equal's recursion is bounded too.  Every loop
 * adds its work to the host's cancel poll (render_tick()): statements,
 * loop passes and expression steps, and every byte copied, compared or
 * scanned; a cancel stops the rendering with TFM_ECANCELED.  Memory comes
 * from the host's allocator within the budget (chat_arena.c), the
 * template's own bytes included; an output tag's temporary values are
 * dropped once printed, a loop pass's when the pass ends (nothing made in
 * a pass outlives it: its names go with its scope), so a long
 * conversation holds about its prompt and what {% set %} keeps.
 */
#include <string.h>

#include "chat_eval.h"
#include "chat_json.h"

/* ---- output ------------------------------------------------------------------------ */
static int
emit(render *r, const char *s, size_t n)
{
	if (render_tick(r, n))
		return TFM_ECANCELED;
	if (n > TFM_CHAT_MAX_OUTPUT_BYTES || r->len + n > TFM_CHAT_MAX_OUTPUT_BYTES)
		return render_fail(r, TFM_ELIMIT, 0, "a rendered chat prompt is longer than %s bytes%s",
								 "67108864", "");
	if (r->len + n + 1 > r->cap)
	{
		size_t		need = r->len + n + 1,
					cap = need < 256 ? 256 : need * 2;
		char	   *o;

		if (cap > (size_t) TFM_CHAT_MAX_OUTPUT_BYTES + 1)
			cap = need > (size_t) TFM_CHAT_MAX_OUTPUT_BYTES + 1 ? need : (size_t) TFM_CHAT_MAX_OUTPUT_BYTES + 1;
		if (!(o = chat_mem_grow(&r->mem, r->out, r->cap, cap)))
			return render_oom(r);
		r->out = o;
		r->cap = cap;
	}
	memcpy(r->out + r->len, s, n);
	r->len += n;
	r->out[r->len] = '\0';
	return TFM_OK;
}

/* ---- statements --------------------------------------------------------------------------- */
static int run_body(render *r, const chat_body *b);

/* a block's body, one level deeper */
static int
run_nested(render *r, const chat_body *b, int line)
{
	int			st;

	if (++r->depth > TFM_CHAT_MAX_NESTING)
		st = render_too_deep(r, line, "blocks and expressions");
	else
		st = run_body(r, b);
	r->depth--;
	return st;
}

static int
run_for(render *r, const chat_node *n)
{
	value		seq;
	loop_info	info;

	if (render_eval(r, n->e, &seq))
		return TFM_EINVAL;
	if (seq.k == V_UNDEF)
		return TFM_OK;			/* Jinja loops over nothing */
	if (seq.k == V_MAP)
	{
		/* Python: a dict's keys */
		value	   *keys = chat_alloc(&r->arena, sizeof(value) * (seq.len + 1));

		if (!keys)
			return render_oom(r);
		for (size_t k = 0; k < seq.len; k++)
			keys[k] = seq.items[2 * k];
		seq.k = V_LIST;
		seq.items = keys;
		seq.depth = 1;
	}
	if (seq.k != V_LIST)
		return render_fail(r, TFM_EINVAL, n->line, "{%% for %%} over %s is not supported%s",
								 kind_name(seq.k), "");
	if (r->nframes >= TFM_CHAT_MAX_NESTING + 2)
		return render_fail(r, TFM_ELIMIT, n->line, "%s%s", "loops nested too deep", "");
	info.length = (int64_t) seq.len;
	r->nframes++;
	for (size_t k = 0; k < seq.len; k++)
	{
		value		lv = mkint(V_LOOP, 0);
		chat_mark	pass = chat_arena_mark(&r->arena);

		/* each pass starts from the outer scope, as in Jinja */
		r->frames[r->nframes - 1].n = 0;
		info.index0 = (int64_t) k;
		lv.loop = &info;
		if (render_tick(r, CHAT_STEP) || render_bind(r, n->s, n->len, seq.items[k]) ||
			render_bind(r, "loop", 4, lv) || run_nested(r, &n->body, n->line))
		{
			r->nframes--;
			return TFM_EINVAL;
		}
		/* what the pass made went with its scope */
		chat_arena_release(&r->arena, pass);
	}
	r->frames[r->nframes - 1].n = 0;
	r->nframes--;
	return TFM_OK;
}

static int
run_body(render *r, const chat_body *b)
{
	for (int k = 0; k < b->count; k++)
	{
		const chat_node *n = b->n[k];
		value		v;
		chat_mark	temp = chat_arena_mark(&r->arena);

		if (render_tick(r, CHAT_STEP))
			return TFM_ECANCELED;
		switch (n->k)
		{
			case N_TEXT:
				if (emit(r, n->s, n->len))
					return TFM_EINVAL;
				break;
			case N_OUT:
				{
					const char *s;
					size_t		len;

					if (render_eval(r, n->e, &v) || render_text(r, &v, &s, &len, n->line) || emit(r, s, len))
						return TFM_EINVAL;
					/* printed: its values are of no more use */
					chat_arena_release(&r->arena, temp);
					break;
				}
			case N_SET:
				if (render_eval(r, n->e, &v))
					return TFM_EINVAL;
				if (n->attr)
				{
					value		ns = render_lookup(r, n->s, n->len);

					if (ns.k != V_NS)
						return render_fail(r, TFM_EINVAL, n->line,
										   "{%% set x.attr %%} needs x a namespace(), not %s%s",
										   kind_name(ns.k), "");
					if (render_ns_set(r, ns.ns, n->attr, n->alen, v))
						return TFM_EINVAL;
				}
				else if (render_bind(r, n->s, n->len, v))
					return TFM_EINVAL;
				break;
			case N_IF:
				for (int j = 0; j < n->nbranch; j++)
				{
					if (n->conds[j])
					{
						int			yes;

						if (render_eval(r, n->conds[j], &v))
							return TFM_EINVAL;
						yes = render_truthy(&v);
						chat_arena_release(&r->arena, temp);
						if (!yes)
							continue;
					}
					if (run_nested(r, &n->bodies[j], n->line))
						return TFM_EINVAL;
					break;
				}
				break;
			case N_FOR:
				if (run_for(r, n))
					return TFM_EINVAL;
				break;
		}
	}
	return TFM_OK;
}

/* the render state for t under o, its names not yet set */
static void
render_init(render *r, const tfm_chat_template *t, tfm_chat_opts *o, tfm_status *err)
{
	memset(r, 0, sizeof(*r));
	chat_mem_init(&r->mem, o);
	/* the template is held while it renders: its bytes count against the budget */
	r->mem.used = r->mem.peak = t->mem.used;
	r->arena.mem = &r->mem;
	chat_poll_init(&r->poll, o);
	r->err = err;
	r->nframes = 1;
	r->names = mkint(V_MAP, 0);
	r->defaults = mkint(V_MAP, 0);
}

/* the template run with r's names (st: the setting up's status), r's memory returned */
static int
render_finish(render *r, int st, const tfm_chat_template *t, char **out, size_t *out_len,
			  tfm_chat_opts *o)
{
	if (st == TFM_OK && emit(r, "", 0))
		st = r->code;
	if (st == TFM_OK)
		st = run_body(r, &t->root);
	if (r->failed)
		st = r->code;
	for (int f = 0; f < TFM_CHAT_MAX_NESTING + 2; f++)
		chat_mem_free(&r->mem, r->frames[f].b, sizeof(binding) * r->frames[f].cap);
	chat_arena_free(&r->arena);
	if (o)
	{
		o->peak = r->mem.peak;
		o->over_budget = r->mem.over_budget && st == TFM_ELIMIT;
	}
	if (st != TFM_OK)
	{
		chat_mem_free(&r->mem, r->out, r->cap);
		return st;
	}
	*out = r->out;
	*out_len = r->len;
	return TFM_OK;
}

int
tfm_chat_template_render(char **out, size_t *out_len, const tfm_chat_template *t,
						 const tfm_chat_message *msgs, int n, int add_generation_prompt,
						 const char *bos, const char *eos, tfm_chat_opts *o, tfm_status *err)
{
	render		r;
	int			st = TFM_OK;
	value	   *names,
			   *kv,
				messages = mkint(V_LIST, 0);
	int			nn = 0;

	*out = NULL;
	*out_len = 0;
	render_init(&r, t, o, err);
	n = n > 0 ? n : 0;
	/* messages, add_generation_prompt, bos_token, eos_token: a mapping of their names */
	names = chat_alloc(&r.arena, sizeof(value) * 8);
	messages.len = (size_t) n;
	messages.depth = 2;
	messages.items = chat_alloc(&r.arena, sizeof(value) * ((size_t) n + 1));
	/* each message a mapping {role, content}: its keys and values, all in one block */
	kv = chat_alloc(&r.arena, sizeof(value) * (4 * (size_t) n + 1));
	if (!names || !messages.items || !kv)
		st = render_oom(&r);
	for (int k = 0; st == TFM_OK && k < n; k++, kv += 4)
	{
		kv[0] = mkstr("role", 4);
		kv[1] = mkstr(msgs[k].role, strlen(msgs[k].role));
		kv[2] = mkstr("content", 7);
		kv[3] = mkstr(msgs[k].content, strlen(msgs[k].content));
		messages.items[k] = mkint(V_MAP, 0);
		messages.items[k].items = kv;
		messages.items[k].len = 2;
		messages.items[k].depth = 1;
	}
	if (st == TFM_OK)
	{
		names[nn++] = mkstr("messages", 8);
		names[nn++] = messages;
		names[nn++] = mkstr("add_generation_prompt", 21);
		names[nn++] = mkint(V_BOOL, add_generation_prompt != 0);
		if (bos)
		{
			names[nn++] = mkstr("bos_token", 9);
			names[nn++] = mkstr(bos, strlen(bos));
		}
		if (eos)
		{
			names[nn++] = mkstr("eos_token", 9);
			names[nn++] = mkstr(eos, strlen(eos));
		}
		r.names.items = names;
		r.names.len = (size_t) nn / 2;
		r.names.depth = 3;
	}
	return render_finish(&r, st, t, out, out_len, o);
}

/* text (len bytes) read as a JSON object into *into; what the first failure is */
static int
read_object(render *r, const char *text, size_t len, value *into, const char *what)
{
	int			st;

	if (len > TFM_CHAT_MAX_OUTPUT_BYTES)
		return render_fail(r, TFM_ELIMIT, 0, "a chat %s longer than 67108864 bytes%s", what, "");
	if ((st = render_json_parse(r, text, len, into)) != TFM_OK)
		return st;
	if (into->k != V_MAP)
		return render_fail(r, TFM_EINVAL, 0, "the chat context must be a JSON object, not %s%s",
						   kind_name(into->k), "");
	return TFM_OK;
}

int
tfm_chat_template_render_json(char **out, size_t *out_len, const tfm_chat_template *t,
							  const char *context, size_t len, const char *defaults, size_t dlen,
							  tfm_chat_opts *o, tfm_status *err)
{
	render		r;
	int			st;

	*out = NULL;
	*out_len = 0;
	render_init(&r, t, o, err);
	r.defaults = mkint(V_MAP, 0);
	st = read_object(&r, context, len, &r.names, "context");
	if (st == TFM_OK && defaults)
		st = read_object(&r, defaults, dlen, &r.defaults, "context's defaults");
	return render_finish(&r, st, t, out, out_len, o);
}
