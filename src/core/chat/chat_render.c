/*
 * chat_render.c: a parsed chat template (chat_parse.c) rendered for a
 * conversation.  The names defined are messages (a list of {role,
 * content}), add_generation_prompt, bos_token and eos_token (when given)
 * and raise_exception(message); any other name is undefined (false,
 * printed as nothing, "is defined" false), as Jinja's default undefined.
 *
 * Values: undefined, none, booleans, integers, strings, lists and the
 * messages (role and content; any other key undefined); the filters,
 * tests, methods and loop attributes are chat_builtins.c's.  Strings
 * print as they are, integers in decimal, booleans as True / False, none
 * as None (Python's str()); a list or a message cannot be printed.  The
 * output stops at TFM_CHAT_MAX_OUTPUT_BYTES.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_render.h"

int
render_fail(render *r, int code, int line, const char *fmt, const char *a, const char *b)
{
	if (!r->failed)
	{
		char		buf[256];

		snprintf(buf, sizeof(buf), fmt, a, b);
		if (line > 0)
			tfm_status_set(r->err, code, "chat template line %d: %s", line, buf);
		else
			tfm_status_set(r->err, code, "%s", buf);
		r->code = code;
	}
	r->failed = 1;
	return code;
}

int
render_oom(render *r)
{
	char		b[32];

	if (!r->mem.over_budget)
		return render_fail(r, TFM_ENOMEM, 0, "%s%s", "out of memory", "");
	snprintf(b, sizeof(b), "%zu", r->mem.budget);
	return render_fail(r, TFM_ELIMIT, 0, "rendering the chat template needs more memory than the budget of %s bytes%s",
							 b, "");
}

int
render_tick(render *r, size_t units)
{
	if (!chat_poll_work(&r->poll, units))
		return TFM_OK;
	return render_fail(r, TFM_ECANCELED, 0, "%s%s", "rendering the chat template was canceled", "");
}

static int
too_deep(render *r, int line, const char *what)
{
	char		b[16];

	snprintf(b, sizeof(b), "%d", TFM_CHAT_MAX_NESTING);
	return render_fail(r, TFM_ELIMIT, line, "%s nested deeper than %s levels", what, b);
}


static int
truthy(const value *v)
{
	switch (v->k)
	{
		case V_UNDEF:
		case V_NONE:
			return 0;
		case V_BOOL:
		case V_INT:
			return v->i != 0;
		case V_STR:
		case V_LIST:
			return v->len > 0;
		default:
			return 1;
	}
}

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

int
render_text(render *r, const value *v, const char **s, size_t *n, int line)
{
	char	   *buf;

	switch (v->k)
	{
		case V_UNDEF:
			*s = "";
			*n = 0;
			return TFM_OK;
		case V_NONE:
			*s = "None";
			*n = 4;
			return TFM_OK;
		case V_BOOL:
			*s = v->i ? "True" : "False";
			*n = strlen(*s);
			return TFM_OK;
		case V_INT:
			if (!(buf = chat_alloc(&r->arena, 24)))
				return render_oom(r);
			*n = (size_t) snprintf(buf, 24, "%lld", (long long) v->i);
			*s = buf;
			return TFM_OK;
		case V_STR:
			*s = v->s;
			*n = v->len;
			return TFM_OK;
		default:
			return render_fail(r, TFM_EINVAL, line, "%s cannot be printed%s", kind_name(v->k), "");
	}
}

/* ---- names ------------------------------------------------------------------------- */

static value
lookup(render *r, const char *s, size_t n)
{
	for (int f = r->nframes - 1; f >= 0; f--)
	{
		/* many names set make each lookup long: their count is work too */
		(void) render_tick(r, (size_t) r->frames[f].n);
		for (int k = r->frames[f].n - 1; k >= 0; k--)
			if (r->frames[f].b[k].len == n && strncmp(r->frames[f].b[k].name, s, n) == 0)
				return r->frames[f].b[k].v;
	}
	if (name_is(s, n, "messages"))
		return r->messages;
	if (name_is(s, n, "add_generation_prompt"))
		return mkint(V_BOOL, r->add_generation_prompt);
	if (name_is(s, n, "bos_token") && r->bos)
		return mkstr(r->bos, strlen(r->bos));
	if (name_is(s, n, "eos_token") && r->eos)
		return mkstr(r->eos, strlen(r->eos));
	return mkint(V_UNDEF, 0);
}

static int
bind(render *r, const char *s, size_t n, value v)
{
	frame	   *f = &r->frames[r->nframes - 1];

	for (int k = 0; k < f->n; k++)
		if (f->b[k].len == n && strncmp(f->b[k].name, s, n) == 0)
		{
			f->b[k].v = v;
			return TFM_OK;
		}
	if (f->n == f->cap)
	{
		int			cap = f->cap ? 2 * f->cap : 8;
		binding    *b = chat_mem_grow(&r->mem, f->b, sizeof(binding) * f->cap, sizeof(binding) * cap);

		if (!b)
			return render_oom(r);
		f->b = b;
		f->cap = cap;
	}
	f->b[f->n].name = s;
	f->b[f->n].len = n;
	f->b[f->n].v = v;
	f->n++;
	return TFM_OK;
}

/* ---- expressions ---------------------------------------------------------------------- */

static int
concat(render *r, const char *a, size_t an, const char *b, size_t bn, value *out)
{
	char	   *s;

	if (an > TFM_CHAT_MAX_OUTPUT_BYTES || bn > TFM_CHAT_MAX_OUTPUT_BYTES ||
		an + bn > TFM_CHAT_MAX_OUTPUT_BYTES)
		return render_fail(r, TFM_ELIMIT, 0, "a string of the chat template grows past %s bytes%s",
								 "67108864", "");
	if (render_tick(r, an + bn))
		return TFM_ECANCELED;
	if (!(s = chat_alloc(&r->arena, an + bn + 1)))
		return render_oom(r);
	memcpy(s, a, an);
	memcpy(s + an, b, bn);
	*out = mkstr(s, an + bn);
	return TFM_OK;
}

/*
 * a == b.  Recursive over lists (as deep as lists nest, TFM_CHAT_MAX_NESTING
 * at most); lists that share items ({% set l = [l, l] %}) can make the walk
 * far longer than their memory, so it counts its work and stops (0, failed)
 * at a cancel.
 */
static int
values_equal(render *r, const value *a, const value *b)
{
	int			an = a->k == V_INT || a->k == V_BOOL,
				bn = b->k == V_INT || b->k == V_BOOL;

	if (an && bn)
		return a->i == b->i;
	if (a->k != b->k || r->failed)
		return 0;
	switch (a->k)
	{
		case V_UNDEF:
		case V_NONE:
			return 1;
		case V_STR:
			if (a->len != b->len || render_tick(r, a->len))
				return 0;
			return memcmp(a->s, b->s, a->len) == 0;
		case V_MSG:
			return a->i == b->i;
		case V_LIST:
			if (a->len != b->len)
				return 0;
			for (size_t k = 0; k < a->len; k++)
				if (render_tick(r, CHAT_STEP) || !values_equal(r, &a->items[k], &b->items[k]))
					return 0;
			return 1;
		default:
			return a->loop == b->loop;
	}
}

/* Python's index of n items: negative counts from the end; -1 if outside */
static int64_t
py_index(int64_t i, size_t n)
{
	if (i < 0)
		i += (int64_t) n;
	return (i < 0 || i >= (int64_t) n) ? -1 : i;
}

static int64_t
clamp_bound(int64_t i, size_t n)
{
	if (i < 0)
		i += (int64_t) n;
	return i < 0 ? 0 : i > (int64_t) n ? (int64_t) n : i;
}


static int
contains(render *r, const value *hay, const value *needle, int line)
{
	if (hay->k == V_STR && needle->k == V_STR)
	{
		if (needle->len == 0)
			return 1;
		/* quadratic at worst ("aa...ab" in "aa...a"): every comparison is work */
		for (size_t k = 0; k + needle->len <= hay->len; k++)
		{
			if (render_tick(r, needle->len))
				return -1;
			if (memcmp(hay->s + k, needle->s, needle->len) == 0)
				return 1;
		}
		return 0;
	}
	if (hay->k == V_LIST)
	{
		for (size_t k = 0; k < hay->len; k++)
		{
			if (values_equal(r, &hay->items[k], needle))
				return 1;
			if (r->failed || render_tick(r, CHAT_STEP))
				return -1;
		}
		return 0;
	}
	if (hay->k == V_MSG && needle->k == V_STR)
		return render_message_key(r, hay->i, needle->s, needle->len).k != V_UNDEF;
	render_fail(r, TFM_EINVAL, line, "\"in\" %s is not supported%s", kind_name(hay->k), "");
	return -1;
}

static int
binop(render *r, const chat_expr *e, value *out)
{
	value		a,
				b;

	if (render_eval(r, e->a, &a) || render_eval(r, e->b, &b))
		return TFM_EINVAL;
	switch (e->op)
	{
		case OP_EQ:
		case OP_NE:
			*out = mkint(V_BOOL, values_equal(r, &a, &b) == (e->op == OP_EQ));
			return r->failed ? r->code : TFM_OK;
		case OP_IN:
		case OP_NOTIN:
			{
				int			c = contains(r, &b, &a, e->line);

				if (c < 0)
					return TFM_EINVAL;
				*out = mkint(V_BOOL, c == (e->op == OP_IN));
				return TFM_OK;
			}
		case OP_CONCAT:
			{
				const char *as,
						   *bs;
				size_t		an,
							bn;

				if (render_text(r, &a, &as, &an, e->line) || render_text(r, &b, &bs, &bn, e->line))
					return TFM_EINVAL;
				return concat(r, as, an, bs, bn, out);
			}
		case OP_ADD:
			if (a.k == V_STR && b.k == V_STR)
				return concat(r, a.s, a.len, b.s, b.len, out);
			if (a.k == V_LIST && b.k == V_LIST)
			{
				value	   *items = chat_alloc(&r->arena, sizeof(value) * (a.len + b.len + 1));

				if (!items)
					return render_oom(r);
				memcpy(items, a.items, sizeof(value) * a.len);
				memcpy(items + a.len, b.items, sizeof(value) * b.len);
				*out = a;
				out->items = items;
				out->len = a.len + b.len;
				out->depth = a.depth > b.depth ? a.depth : b.depth;
				return render_tick(r, sizeof(value) * out->len);
			}
			break;
		default:
			break;
	}
	if ((a.k == V_INT || a.k == V_BOOL) && (b.k == V_INT || b.k == V_BOOL))
	{
		int64_t		x = a.i,
					y = b.i,
					q;

		if (x > 1000000000000LL || x < -1000000000000LL || y > 1000000000000LL || y < -1000000000000LL)
			return render_fail(r, TFM_ELIMIT, e->line, "%s%s", "an integer too large", "");
		switch (e->op)
		{
			case OP_ADD: *out = mkint(V_INT, x + y); return TFM_OK;
			case OP_SUB: *out = mkint(V_INT, x - y); return TFM_OK;
			case OP_MUL:
				/* operands up to 10^12 each: the product may not fit (nor its minus) */
				if (__builtin_mul_overflow(x, y, &q) || q == INT64_MIN)
					return render_fail(r, TFM_ELIMIT, e->line, "%s%s", "an integer too large", "");
				*out = mkint(V_INT, q);
				return TFM_OK;
			case OP_LT: *out = mkint(V_BOOL, x < y); return TFM_OK;
			case OP_GT: *out = mkint(V_BOOL, x > y); return TFM_OK;
			case OP_LE: *out = mkint(V_BOOL, x <= y); return TFM_OK;
			case OP_GE: *out = mkint(V_BOOL, x >= y); return TFM_OK;
			case OP_FLOORDIV:
			case OP_MOD:
				if (y == 0)
					return render_fail(r, TFM_EINVAL, e->line, "%s%s", "division by zero", "");
				/* Python's floor division and modulo */
				q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
				*out = mkint(V_INT, e->op == OP_FLOORDIV ? q : x - q * y);
				return TFM_OK;
		}
	}
	if (a.k == V_STR && b.k == V_STR && e->op >= OP_LT && e->op <= OP_GE)
	{
		size_t		m = a.len < b.len ? a.len : b.len;
		int			c;

		if (render_tick(r, m))
			return TFM_ECANCELED;
		c = memcmp(a.s, b.s, m);

		if (c == 0)
			c = (a.len > b.len) - (a.len < b.len);
		*out = mkint(V_BOOL, e->op == OP_LT ? c < 0 : e->op == OP_GT ? c > 0 :
					 e->op == OP_LE ? c <= 0 : c >= 0);
		return TFM_OK;
	}
	return render_fail(r, TFM_EINVAL, e->line, "an operator on %s and %s is not supported",
							 kind_name(a.k), kind_name(b.k));
}

static int
subscript(render *r, const chat_expr *e, value *out)
{
	value		v,
				k;

	if (render_eval(r, e->a, &v) || render_eval(r, e->b, &k))
		return TFM_EINVAL;
	if (v.k == V_MSG && k.k == V_STR)
		*out = render_message_key(r, v.i, k.s, k.len);
	else if ((v.k == V_LIST || v.k == V_STR) && k.k == V_INT)
	{
		int64_t		i = py_index(k.i, v.len);

		if (i < 0)
			*out = mkint(V_UNDEF, 0);
		else if (v.k == V_LIST)
			*out = v.items[i];
		else
			*out = mkstr(v.s + i, 1);
	}
	else if (v.k == V_LOOP || v.k == V_UNDEF || v.k == V_MSG)
		return render_attribute(r, &v, k.k == V_STR ? k.s : "", k.k == V_STR ? k.len : 0, out, e->line);
	else
		return render_fail(r, TFM_EINVAL, e->line, "a subscript of %s by %s is not supported",
								 kind_name(v.k), kind_name(k.k));
	return TFM_OK;
}

static int
slice(render *r, const chat_expr *e, value *out)
{
	value		v,
				lo = mkint(V_NONE, 0),
				hi = mkint(V_NONE, 0);
	int64_t		a,
				b;

	if (render_eval(r, e->a, &v) || (e->b && render_eval(r, e->b, &lo)) || (e->c && render_eval(r, e->c, &hi)))
		return TFM_EINVAL;
	if ((v.k != V_LIST && v.k != V_STR) || (lo.k != V_NONE && lo.k != V_INT) ||
		(hi.k != V_NONE && hi.k != V_INT))
		return render_fail(r, TFM_EINVAL, e->line, "a slice of %s is not supported%s", kind_name(v.k), "");
	a = lo.k == V_INT ? clamp_bound(lo.i, v.len) : 0;
	b = hi.k == V_INT ? clamp_bound(hi.i, v.len) : (int64_t) v.len;
	if (b < a)
		b = a;
	*out = v;
	if (v.k == V_LIST)
		out->items = v.items + a;
	else
		out->s = v.s + a;
	out->len = (size_t) (b - a);
	return TFM_OK;
}

static int
eval_node(render *r, const chat_expr *e, value *out)
{
	value		a;

	switch (e->k)
	{
		case E_STR:
			*out = mkstr(e->s, e->len);
			return TFM_OK;
		case E_INT:
			*out = mkint(V_INT, e->i);
			return TFM_OK;
		case E_BOOL:
			*out = mkint(V_BOOL, e->i);
			return TFM_OK;
		case E_NONE:
			*out = mkint(V_NONE, 0);
			return TFM_OK;
		case E_NAME:
			*out = lookup(r, e->s, e->len);
			return TFM_OK;
		case E_LIST:
			{
				value	   *items = chat_alloc(&r->arena, sizeof(value) * (e->nargs + 1));
				int			depth = 1;

				if (!items)
					return render_oom(r);
				for (int k = 0; k < e->nargs; k++)
				{
					if (render_eval(r, e->args[k], &items[k]))
						return TFM_EINVAL;
					if (items[k].k == V_LIST && items[k].depth + 1 > depth)
						depth = items[k].depth + 1;
				}
				/* {% set l = [l] %} again and again nests lists deeper than any expression */
				if (depth > TFM_CHAT_MAX_NESTING)
					return too_deep(r, e->line, "lists");
				*out = mkint(V_LIST, 0);
				out->items = items;
				out->len = (size_t) e->nargs;
				out->depth = depth;
				return TFM_OK;
			}
		case E_ATTR:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			return render_attribute(r, &a, e->s, e->len, out, e->line);
		case E_INDEX:
			return subscript(r, e, out);
		case E_SLICE:
			return slice(r, e, out);
		case E_CALL:
			return render_call(r, e, out);
		case E_FILTER:
			return render_filter(r, e, out);
		case E_TEST:
			return render_test(r, e, out);
		case E_NOT:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			*out = mkint(V_BOOL, !truthy(&a));
			return TFM_OK;
		case E_NEG:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			if (a.k != V_INT)
				return render_fail(r, TFM_EINVAL, e->line, "minus %s is not supported%s", kind_name(a.k), "");
			*out = mkint(V_INT, -a.i);
			return TFM_OK;
		case E_AND:
		case E_OR:
			/* Python's: the deciding operand itself */
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			if (truthy(&a) == (e->k == E_OR))
			{
				*out = a;
				return TFM_OK;
			}
			return render_eval(r, e->b, out);
		case E_BIN:
			return binop(r, e, out);
		case E_COND:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			if (truthy(&a))
				return render_eval(r, e->b, out);
			if (e->c)
				return render_eval(r, e->c, out);
			*out = mkint(V_UNDEF, 0);
			return TFM_OK;
	}
	return render_fail(r, TFM_EINVAL, e->line, "%s%s", "an unknown expression", "");
}

/* e evaluated one level deeper (the parser bounded the levels; counted here again) */
int
render_eval(render *r, const chat_expr *e, value *out)
{
	int			st;

	if (r->failed)
		return r->code;
	if (render_tick(r, CHAT_STEP))
		return TFM_ECANCELED;
	if (++r->depth > TFM_CHAT_MAX_NESTING)
		st = too_deep(r, e->line, "blocks and expressions");
	else
		st = eval_node(r, e, out);
	r->depth--;
	return st;
}

/* ---- statements --------------------------------------------------------------------------- */
static int run_body(render *r, const chat_body *b);

/* a block's body, one level deeper */
static int
run_nested(render *r, const chat_body *b, int line)
{
	int			st;

	if (++r->depth > TFM_CHAT_MAX_NESTING)
		st = too_deep(r, line, "blocks and expressions");
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
		if (render_tick(r, CHAT_STEP) || bind(r, n->s, n->len, seq.items[k]) ||
			bind(r, "loop", 4, lv) || run_nested(r, &n->body, n->line))
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
				if (render_eval(r, n->e, &v) || bind(r, n->s, n->len, v))
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
						yes = truthy(&v);
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

int
tfm_chat_template_render(char **out, size_t *out_len, const tfm_chat_template *t,
						 const tfm_chat_message *msgs, int n, int add_generation_prompt,
						 const char *bos, const char *eos, tfm_chat_opts *o, tfm_status *err)
{
	render		r;
	int			st = TFM_OK;

	*out = NULL;
	*out_len = 0;
	memset(&r, 0, sizeof(r));
	chat_mem_init(&r.mem, o);
	/* the template is held while it renders: its bytes count against the budget */
	r.mem.used = r.mem.peak = t->mem.used;
	r.arena.mem = &r.mem;
	chat_poll_init(&r.poll, o);
	r.err = err;
	r.msgs = msgs;
	r.nmsg = n;
	r.add_generation_prompt = add_generation_prompt != 0;
	r.bos = bos;
	r.eos = eos;
	r.nframes = 1;
	r.messages = mkint(V_LIST, 0);
	r.messages.len = (size_t) (n > 0 ? n : 0);
	r.messages.depth = 1;
	r.messages.items = chat_alloc(&r.arena, sizeof(value) * (r.messages.len + 1));
	if (!r.messages.items || emit(&r, "", 0))
		st = render_oom(&r);
	for (int k = 0; st == TFM_OK && k < n; k++)
		r.messages.items[k] = mkint(V_MSG, k);
	if (st == TFM_OK)
		st = run_body(&r, &t->root);
	if (r.failed)
		st = r.code;
	for (int f = 0; f < TFM_CHAT_MAX_NESTING + 2; f++)
		chat_mem_free(&r.mem, r.frames[f].b, sizeof(binding) * r.frames[f].cap);
	chat_arena_free(&r.arena);
	if (o)
	{
		o->peak = r.mem.peak;
		o->over_budget = r.mem.over_budget && st == TFM_ELIMIT;
	}
	if (st != TFM_OK)
	{
		chat_mem_free(&r.mem, r.out, r.cap);
		return st;
	}
	*out = r.out;
	*out_len = r.len;
	return TFM_OK;
}
