/*
 * chat_expr.c: the expressions inside a chat template's tags, by recursive
 * descent in Jinja's order of precedence (lowest first): a if c else b;
 * or; and; not; comparisons and in / not in; + -; ~; * // %; unary minus;
 * then a primary (a string, adjacent strings joined, an integer, true /
 * false / none, a name, (expr), [list]) with its attributes, subscripts,
 * slices, calls, filters and tests.
 *
 * Nesting is bounded twice, both counted with the blocks around the tag
 * (TFM_CHAT_MAX_NESTING in all): the recursion of the rules themselves
 * (an expression inside brackets, a list or arguments, a unary minus, a
 * not: enter() and leave()) and the height of the tree they build, which
 * the renderer walks recursively (a chain of a + b + ..., filters or
 * attributes is as deep as it is long: seal() on every node).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_parser.h"

static chat_expr *
new_expr(parser *ps, chat_ekind k)
{
	chat_expr  *e;

	if (chat_work(ps, CHAT_STEP))
		return NULL;
	if (!(e = chat_alloc(&ps->t->arena, sizeof(chat_expr))))
	{
		chat_oom(ps);
		return NULL;
	}
	e->k = k;
	e->line = ps->line;
	e->height = 1;
	return e;
}

/* a recursive rule entered: fails past the limit with the blocks around */
static int
enter(parser *ps)
{
	if (++ps->depth + ps->block > TFM_CHAT_MAX_NESTING)
		return chat_too_deep(ps);
	return TFM_OK;
}

static void
leave(parser *ps)
{
	ps->depth--;
}

static int
height_of(const chat_expr *e)
{
	return e ? e->height : 0;
}

/* e complete: its height from its operands', NULL past the limit */
static chat_expr *
seal(parser *ps, chat_expr *e)
{
	int			h = 0;

	if (!e)
		return NULL;
	if (height_of(e->a) > h)
		h = height_of(e->a);
	if (height_of(e->b) > h)
		h = height_of(e->b);
	if (height_of(e->c) > h)
		h = height_of(e->c);
	for (int k = 0; k < e->nargs; k++)
		if (height_of(e->args[k]) > h)
			h = height_of(e->args[k]);
	e->height = h + 1;
	if (e->height + ps->block > TFM_CHAT_MAX_NESTING)
	{
		chat_too_deep(ps);
		return NULL;
	}
	return e;
}

static chat_expr *parse_expr(parser *ps);

/* "(" args ")" after a name: into e->args */
static int
parse_args(parser *ps, chat_expr *e, const char *close)
{
	chat_expr  *tmp[32];

	e->nargs = 0;
	if (!chat_accept(ps, close))
	{
		do
		{
			chat_expr  *a;

			size_t		n;
			const char *q;

			if (e->nargs >= 32)
				return chat_fail(ps, TFM_ELIMIT, "%s", "more than 32 arguments");
			/* a keyword argument (name=value): the renderer lets only namespace() take them */
			n = chat_peek_name(ps);
			q = ps->p + n;
			while (n && q < ps->end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
				q++;
			if (n && *close == ')' && q < ps->end && *q == '=' && (q + 1 >= ps->end || q[1] != '='))
			{
				if (!(a = new_expr(ps, E_KWARG)))
					return TFM_EINVAL;
				a->len = n;
				if (!(a->s = chat_copy_name(ps, n)))
					return TFM_EINVAL;
				ps->p = q + 1;
				if (!(a->a = parse_expr(ps)))
					return TFM_EINVAL;
				a = seal(ps, a);
			}
			else if (!(a = parse_expr(ps)))
				return TFM_EINVAL;
			tmp[e->nargs++] = a;
		} while (chat_accept(ps, ","));
		if (!chat_accept(ps, close))
			return chat_fail(ps, TFM_EINVAL, "expected \"%s\"", close);
	}
	e->args = chat_alloc(&ps->t->arena, sizeof(chat_expr *) * (e->nargs + 1));
	if (!e->args)
		return chat_oom(ps);
	memcpy(e->args, tmp, sizeof(chat_expr *) * e->nargs);
	return TFM_OK;
}

/* a string literal (adjacent ones join) */
static chat_expr *
parse_string(parser *ps)
{
	chat_expr  *e = new_expr(ps, E_STR);
	char	   *buf;
	size_t		n = 0;
	const char *q = ps->p;

	if (!e)
		return NULL;
	/* the bytes of the adjacent strings bound their text (not the rest of the tag) */
	while (q < ps->end && (*q == '\'' || *q == '"'))
	{
		char		quote = *q++;

		while (q < ps->end && *q != quote)
			q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
		if (q < ps->end)
			q++;
		while (q < ps->end && chat_is_space(*q))
			q++;
	}
	if (!(buf = chat_alloc(&ps->t->arena, (size_t) (q - ps->p) + 1)))
	{
		chat_oom(ps);
		return NULL;
	}
	while (ps->p < ps->end && (*ps->p == '\'' || *ps->p == '"'))
	{
		char		q = *ps->p++;

		while (ps->p < ps->end && *ps->p != q)
		{
			char		c = *ps->p++;

			if (c == '\\' && ps->p < ps->end)
			{
				c = *ps->p++;
				switch (c)
				{
					case 'n': c = '\n'; break;
					case 't': c = '\t'; break;
					case 'r': c = '\r'; break;
					case '\\': case '\'': case '"': break;
					default:
						buf[n++] = '\\';
						break;
				}
			}
			buf[n++] = c;
		}
		if (ps->p >= ps->end)
		{
			chat_fail(ps, TFM_EINVAL, "%s", "a string is not closed");
			return NULL;
		}
		ps->p++;
		chat_skip_ws(ps);
	}
	e->s = buf;
	e->len = n;
	return e;
}

static chat_expr *
parse_primary(parser *ps)
{
	chat_expr  *e;
	size_t		n;

	chat_skip_ws(ps);
	if (ps->p >= ps->end)
	{
		chat_fail(ps, TFM_EINVAL, "%s", "an expression is missing");
		return NULL;
	}
	if (*ps->p == '\'' || *ps->p == '"')
		return parse_string(ps);
	if (*ps->p >= '0' && *ps->p <= '9')
	{
		if (!(e = new_expr(ps, E_INT)))
			return NULL;
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
		{
			if (e->i > 100000000000000LL)
			{
				chat_fail(ps, TFM_EINVAL, "%s", "a number too large");
				return NULL;
			}
			e->i = e->i * 10 + (*ps->p++ - '0');
		}
		if (ps->p < ps->end && *ps->p == '.')
		{
			chat_fail(ps, TFM_EINVAL, "%s", "decimal numbers are not supported");
			return NULL;
		}
		return e;
	}
	if (chat_accept(ps, "("))
	{
		e = parse_expr(ps);
		if (e && !chat_accept(ps, ")"))
		{
			chat_fail(ps, TFM_EINVAL, "%s", "expected \")\"");
			return NULL;
		}
		return e;
	}
	if (chat_accept(ps, "["))
	{
		if (!(e = new_expr(ps, E_LIST)) || parse_args(ps, e, "]") != TFM_OK)
			return NULL;
		return seal(ps, e);
	}
	n = chat_peek_name(ps);
	if (n == 0)
	{
		char		c[2] = {*ps->p, 0};

		chat_fail(ps, TFM_EINVAL, "unexpected \"%s\"", c);
		return NULL;
	}
	if ((n == 4 && (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "True", 4))) ||
		(n == 5 && (!strncmp(ps->p, "false", 5) || !strncmp(ps->p, "False", 5))))
	{
		if (!(e = new_expr(ps, E_BOOL)))
			return NULL;
		e->i = n == 4;
		ps->p += n;
		return e;
	}
	if (n == 4 && (!strncmp(ps->p, "none", 4) || !strncmp(ps->p, "None", 4)))
	{
		ps->p += n;
		return new_expr(ps, E_NONE);
	}
	if (!(e = new_expr(ps, E_NAME)))
		return NULL;
	e->len = n;
	if (!(e->s = chat_copy_name(ps, n)))
		return NULL;
	return e;
}

/* attributes, subscripts, calls, filters and tests after a primary */
static chat_expr *
parse_postfix(parser *ps, chat_expr *e)
{
	while (e)
	{
		chat_expr  *x;
		size_t		n;

		if (chat_accept(ps, "."))
		{
			if (!(n = chat_peek_name(ps)) || !(x = new_expr(ps, E_ATTR)))
				return n ? NULL : (chat_fail(ps, TFM_EINVAL, "%s", "a name after \".\""), NULL);
			x->a = e;
			x->len = n;
			if (!(x->s = chat_copy_name(ps, n)))
				return NULL;
			e = seal(ps, x);
		}
		else if (chat_accept(ps, "["))
		{
			if (!(x = new_expr(ps, E_INDEX)))
				return NULL;
			x->a = e;
			if (!chat_accept(ps, ":"))
			{
				if (!(x->b = parse_expr(ps)))
					return NULL;
				if (!chat_accept(ps, ":"))
				{
					if (!chat_accept(ps, "]"))
						return chat_fail(ps, TFM_EINVAL, "%s", "expected \"]\""), NULL;
					e = seal(ps, x);
					continue;
				}
			}
			x->k = E_SLICE;
			chat_skip_ws(ps);
			if (ps->p < ps->end && *ps->p != ']' && *ps->p != ':' && !(x->c = parse_expr(ps)))
				return NULL;
			if (chat_accept(ps, ":"))
			{
				/* a step: a[b:c:d], d in args[0] (may be left out) */
				if (!(x->args = chat_alloc(&ps->t->arena, sizeof(chat_expr *))))
					return chat_oom(ps), NULL;
				chat_skip_ws(ps);
				if (ps->p < ps->end && *ps->p != ']')
				{
					if (!(x->args[0] = parse_expr(ps)))
						return NULL;
					x->nargs = 1;
				}
			}
			if (!chat_accept(ps, "]"))
				return chat_fail(ps, TFM_EINVAL, "%s", "only slices [a:b:c] are supported"), NULL;
			e = seal(ps, x);
		}
		else if (chat_accept(ps, "("))
		{
			if (!(x = new_expr(ps, E_CALL)))
				return NULL;
			x->a = e;
			if (parse_args(ps, x, ")") != TFM_OK)
				return NULL;
			e = seal(ps, x);
		}
		else if (chat_accept(ps, "|"))
		{
			if (!(n = chat_peek_name(ps)) || !(x = new_expr(ps, E_FILTER)))
				return n ? NULL : (chat_fail(ps, TFM_EINVAL, "%s", "a filter name after \"|\""), NULL);
			x->a = e;
			x->len = n;
			if (!(x->s = chat_copy_name(ps, n)))
				return NULL;
			if (chat_accept(ps, "(") && parse_args(ps, x, ")") != TFM_OK)
				return NULL;
			e = seal(ps, x);
		}
		else if (chat_accept_word(ps, "is"))
		{
			if (!(x = new_expr(ps, E_TEST)))
				return NULL;
			x->a = e;
			x->op = chat_accept_word(ps, "not");
			if (!(n = chat_peek_name(ps)))
				return chat_fail(ps, TFM_EINVAL, "%s", "a test name after \"is\""), NULL;
			x->len = n;
			if (!(x->s = chat_copy_name(ps, n)))
				return NULL;
			e = seal(ps, x);
		}
		else
			break;
	}
	return e;
}

static chat_expr *
parse_unary(parser *ps)
{
	if (chat_accept(ps, "-"))
	{
		chat_expr  *e = new_expr(ps, E_NEG);

		if (!e || enter(ps))
			return NULL;
		e->a = parse_unary(ps);
		leave(ps);
		return e->a ? seal(ps, e) : NULL;
	}
	return parse_postfix(ps, parse_primary(ps));
}

/* a node of kind k over a and b (NULL when either failed) */
static chat_expr *
pair(parser *ps, chat_ekind k, int op, chat_expr *a, chat_expr *b)
{
	chat_expr  *e;

	if (!a || !b || !(e = new_expr(ps, k)))
		return NULL;
	e->op = op;
	e->a = a;
	e->b = b;
	return seal(ps, e);
}

static chat_expr *
binary(parser *ps, int op, chat_expr *a, chat_expr *b)
{
	return pair(ps, E_BIN, op, a, b);
}

static chat_expr *
parse_mul(parser *ps)
{
	chat_expr  *e = parse_unary(ps);

	while (e)
	{
		if (chat_accept(ps, "//"))
			e = binary(ps, OP_FLOORDIV, e, parse_unary(ps));
		else if (chat_accept(ps, "*"))
			e = binary(ps, OP_MUL, e, parse_unary(ps));
		else if (chat_accept(ps, "%"))
			e = binary(ps, OP_MOD, e, parse_unary(ps));
		else if (chat_accept(ps, "/"))
			return chat_fail(ps, TFM_EINVAL, "%s", "\"/\" (decimal division) is not supported"), NULL;
		else
			break;
	}
	return e;
}

static chat_expr *
parse_concat(parser *ps)
{
	chat_expr  *e = parse_mul(ps);

	while (e && chat_accept(ps, "~"))
		e = binary(ps, OP_CONCAT, e, parse_mul(ps));
	return e;
}

static chat_expr *
parse_add(parser *ps)
{
	chat_expr  *e = parse_concat(ps);

	while (e)
	{
		if (chat_accept(ps, "+"))
			e = binary(ps, OP_ADD, e, parse_concat(ps));
		else if (chat_accept(ps, "-"))
			e = binary(ps, OP_SUB, e, parse_concat(ps));
		else
			break;
	}
	return e;
}

static chat_expr *
parse_compare(parser *ps)
{
	chat_expr  *e = parse_add(ps);

	while (e)
	{
		const char *save = ps->p;

		if (chat_accept(ps, "=="))
			e = binary(ps, OP_EQ, e, parse_add(ps));
		else if (chat_accept(ps, "!="))
			e = binary(ps, OP_NE, e, parse_add(ps));
		else if (chat_accept(ps, "<="))
			e = binary(ps, OP_LE, e, parse_add(ps));
		else if (chat_accept(ps, ">="))
			e = binary(ps, OP_GE, e, parse_add(ps));
		else if (chat_accept(ps, "<"))
			e = binary(ps, OP_LT, e, parse_add(ps));
		else if (chat_accept(ps, ">"))
			e = binary(ps, OP_GT, e, parse_add(ps));
		else if (chat_accept_word(ps, "in"))
			e = binary(ps, OP_IN, e, parse_add(ps));
		else if (chat_accept_word(ps, "not"))
		{
			if (!chat_accept_word(ps, "in"))
			{
				ps->p = save;
				break;
			}
			e = binary(ps, OP_NOTIN, e, parse_add(ps));
		}
		else
			break;
	}
	return e;
}

static chat_expr *
parse_not(parser *ps)
{
	if (chat_accept_word(ps, "not"))
	{
		chat_expr  *e = new_expr(ps, E_NOT);

		if (!e || enter(ps))
			return NULL;
		e->a = parse_not(ps);
		leave(ps);
		return e->a ? seal(ps, e) : NULL;
	}
	return parse_compare(ps);
}

static chat_expr *
parse_and(parser *ps)
{
	chat_expr  *e = parse_not(ps);

	while (e && chat_accept_word(ps, "and"))
		e = pair(ps, E_AND, 0, e, parse_not(ps));
	return e;
}

static chat_expr *
parse_or(parser *ps)
{
	chat_expr  *e = parse_and(ps);

	while (e && chat_accept_word(ps, "or"))
		e = pair(ps, E_OR, 0, e, parse_and(ps));
	return e;
}

static chat_expr *
parse_cond(parser *ps)
{
	chat_expr  *e = parse_or(ps);

	if (e && chat_accept_word(ps, "if"))
	{
		chat_expr  *c = new_expr(ps, E_COND);

		if (!c || !(c->a = parse_or(ps)))
			return NULL;
		c->b = e;
		if (chat_accept_word(ps, "else") && !(c->c = parse_expr(ps)))
			return NULL;
		return seal(ps, c);
	}
	return e;
}

/* every nested expression (brackets, lists, arguments, subscripts, else) comes here */
static chat_expr *
parse_expr(parser *ps)
{
	chat_expr  *e = NULL;

	if (enter(ps) == TFM_OK)
		e = parse_cond(ps);
	leave(ps);
	return e;
}

/* a whole tag's expression */
chat_expr *
chat_tag_expr(parser *ps, int block, const char *p, const char *end)
{
	chat_expr  *e;

	ps->p = p;
	ps->end = end;
	ps->block = block;
	ps->depth = 0;
	e = parse_expr(ps);
	chat_skip_ws(ps);
	if (e && ps->p < ps->end)
	{
		chat_fail(ps, TFM_EINVAL, "unexpected \"%.20s\"", ps->p);
		return NULL;
	}
	return e;
}

