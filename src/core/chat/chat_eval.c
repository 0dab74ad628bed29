/*
 * chat_eval.c: a chat template's expressions evaluated (render_eval):
 * literals, names, lists, attributes, subscripts and slices, not / minus /
 * and / or / if-else, and the operators (== != in, ~ and +, the integer
 * arithmetic with Python's floor division and modulo, comparisons).  It
 * evaluates the operands itself and hands the values to chat_builtins.c
 * for the filters, tests, methods, loop attributes, message keys and
 * raise_exception(); chat_render.c calls render_eval from the statements.
 *
 * Bounds: the recursion is as deep as the parser let the template nest,
 * counted again in r->depth; lists built here nest no deeper
 * (value.depth), so values_equal's recursion is bounded too; every step,
 * and every byte copied, compared or scanned, is work for the cancel poll.
 */
#include <stdio.h>
#include <string.h>

#include "chat_builtins.h"
#include "chat_eval.h"

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
		case V_NUM:
			/* numbers as their text: 1.5 and 1.50 differ here (Python's floats would not) */
			return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
		case V_MAP:
			if (a->len != b->len)
				return 0;
			/* Python's dict equality: the same keys with equal values, in any order */
			for (size_t k = 0; k < a->len; k++)
			{
				value		bv = render_map_get(r, b, a->items[2 * k].s, a->items[2 * k].len);

				if (render_tick(r, CHAT_STEP) || !values_equal(r, &a->items[2 * k + 1], &bv))
					return 0;
			}
			return 1;
		case V_NS:
			return a->ns == b->ns;
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
	if (hay->k == V_MAP && needle->k == V_STR)
		return render_map_get(r, hay, needle->s, needle->len).k != V_UNDEF;
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
	if (v.k == V_MAP && k.k == V_STR)
		*out = render_map_get(r, &v, k.s, k.len);
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
	else if (v.k == V_LOOP || v.k == V_UNDEF || v.k == V_MAP || v.k == V_NS)
		return render_attribute(r, &v, k.k == V_STR ? k.s : "", k.k == V_STR ? k.len : 0, out, e->line);
	else
		return render_fail(r, TFM_EINVAL, e->line, "a subscript of %s by %s is not supported",
								 kind_name(v.k), kind_name(k.k));
	return TFM_OK;
}

/* a list's items from lo to hi (Python's bounds) every step (not 0 or 1): a new list */
static int
stepped(render *r, const chat_expr *e, const value *v, const value *lo, const value *hi, int64_t step,
		value *out)
{
	int64_t		n = (int64_t) v->len,
				a,
				b,
				count;
	value	   *items;

	if (v->k != V_LIST)
		return render_fail(r, TFM_EINVAL, e->line, "%s%s", "a slice of a string with a step is not supported", "");
	if (step > 0)
	{
		a = lo->k == V_INT ? clamp_bound(lo->i, v->len) : 0;
		b = hi->k == V_INT ? clamp_bound(hi->i, v->len) : n;
		count = b > a ? (b - a + step - 1) / step : 0;
	}
	else
	{
		/* Python's: bounds below 0 after adding the length are -1 (before the first), above are n - 1 */
		a = lo->k == V_INT ? (lo->i < 0 ? lo->i + n : lo->i) : n - 1;
		b = hi->k == V_INT ? (hi->i < 0 ? hi->i + n : hi->i) : -1;
		a = a < -1 ? -1 : a > n - 1 ? n - 1 : a;
		b = b < -1 ? -1 : b > n - 1 ? n - 1 : b;
		count = a > b ? (a - b + (-step) - 1) / (-step) : 0;
	}
	if (render_tick(r, (size_t) count))
		return TFM_ECANCELED;
	if (!(items = chat_alloc(&r->arena, sizeof(value) * (size_t) (count + 1))))
		return render_oom(r);
	for (int64_t k = 0; k < count; k++)
		items[k] = v->items[a + k * step];
	*out = *v;
	out->items = items;
	out->len = (size_t) count;
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
	if (e->nargs == 1)
	{
		value		st = mkint(V_NONE, 0);

		if (render_eval(r, e->args[0], &st))
			return TFM_EINVAL;
		if (st.k != V_NONE && (st.k != V_INT || st.i == 0))
			return render_fail(r, TFM_EINVAL, e->line, "%s%s", "a slice's step must be a non-zero integer", "");
		if (st.k == V_INT && st.i != 1)
			return stepped(r, e, &v, &lo, &hi, st.i, out);
	}
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

/* the arguments of a call, left to right, up to the first failure */
static int
eval_args(render *r, const chat_expr *e, value *args)
{
	for (int k = 0; k < e->nargs; k++)
		if (render_eval(r, e->args[k], &args[k]))
			return TFM_EINVAL;
	return TFM_OK;
}

/*
 * namespace(name=value, ...): an object whose attributes {% set ns.name %}
 * sets in place (seen outside the loop that sets them), in the arena
 */
static int
namespace(render *r, const chat_expr *e, value *out)
{
	frame	   *ns = chat_alloc(&r->arena, sizeof(frame));

	if (!ns)
		return render_oom(r);
	for (int k = 0; k < e->nargs; k++)
	{
		value		v;

		if (e->args[k]->k != E_KWARG)
			return render_fail(r, TFM_EINVAL, e->line, "%s%s",
							   "namespace() takes keyword arguments only", "");
		if (render_eval(r, e->args[k]->a, &v) ||
			render_ns_set(r, ns, e->args[k]->s, e->args[k]->len, v))
			return TFM_EINVAL;
	}
	*out = mkint(V_NS, 0);
	out->ns = ns;
	return TFM_OK;
}

/*
 * a call: x.method(args), its operands first, or a function by name, its
 * name asked for before its arguments are evaluated
 */
static int
call(render *r, const chat_expr *e, value *out)
{
	value		self,
				args[32];		/* the parser allows 32 arguments */

	if (e->a->k == E_ATTR)
	{
		if (render_eval(r, e->a->a, &self) || eval_args(r, e, args))
			return TFM_EINVAL;
		return render_method(r, e->a->s, e->a->len, &self, args, e->nargs, e->line, out);
	}
	if (e->a->k != E_NAME)
		return render_fail(r, TFM_EINVAL, e->line, "%s%s", "only names and methods can be called", "");
	if (name_is(e->a->s, e->a->len, "namespace"))
		return namespace(r, e, out);
	if (render_function_exists(r, e->a->s, e->a->len, e->line) || eval_args(r, e, args))
		return TFM_EINVAL;
	return render_function(r, e->a->s, e->a->len, args, e->nargs, e->line);
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
			*out = render_lookup(r, e->s, e->len);
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
					if ((items[k].k == V_LIST || items[k].k == V_MAP) && items[k].depth + 1 > depth)
						depth = items[k].depth + 1;
				}
				/* {% set l = [l] %} again and again nests lists deeper than any expression */
				if (depth > TFM_CHAT_MAX_NESTING)
					return render_too_deep(r, e->line, "lists");
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
			return call(r, e, out);
		case E_FILTER:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			return render_filter(r, e->s, e->len, &a, e->line, out);
		case E_TEST:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			return render_test(r, e->s, e->len, e->op, &a, e->line, out);
		case E_NOT:
			if (render_eval(r, e->a, &a))
				return TFM_EINVAL;
			*out = mkint(V_BOOL, !render_truthy(&a));
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
			if (render_truthy(&a) == (e->k == E_OR))
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
			if (render_truthy(&a))
				return render_eval(r, e->b, out);
			if (e->c)
				return render_eval(r, e->c, out);
			*out = mkint(V_UNDEF, 0);
			return TFM_OK;
		case E_KWARG:
			return render_fail(r, TFM_EINVAL, e->line, "%s%s",
							   "keyword arguments are supported by namespace() only", "");
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
		st = render_too_deep(r, e->line, "blocks and expressions");
	else
		st = eval_node(r, e, out);
	r->depth--;
	return st;
}
