/*
 * chat_parse.c: a chat template's text parsed into statements and
 * expressions (chat_ast.h), with Jinja's whitespace rules as transformers
 * sets them: trim_blocks (the newline after a block or comment tag goes),
 * lstrip_blocks (spaces and tabs before a block or comment tag on its line
 * go), "-" inside a tag strips the whitespace on that side, and one
 * trailing newline of the template goes.
 *
 * The subset (what the published templates of Qwen2, Llama 3, Mistral,
 * Phi-3, Gemma, SmolLM and the like use):
 *   statements   {% if %} {% elif %} {% else %} {% endif %},
 *                {% for x in expr %} {% endfor %} (loop.index, index0,
 *                first, last, length; each pass has its own scope),
 *                {% set name = expr %}, {{ expr }}, {# comments #}
 *   expressions  strings, integers, true / false / none, names, lists
 *                [a, b], x.attr, x[i], x[a:b], calls, filters x | f(...),
 *                tests x is [not] t, not / and / or, == != < > <= >=,
 *                in / not in, + - * // % ~, a if c else b
 * Any other statement is refused here by name; filters, tests, methods and
 * functions by name when rendering reaches them (chat_render.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_ast.h"

/* ---- the arena ---------------------------------------------------------------- */
typedef struct chat_block
{
	struct chat_block *next;
	size_t		used,
				cap;
	_Alignas(16) unsigned char data[];
} chat_block;

void *
chat_alloc(chat_arena *a, size_t n)
{
	chat_block *b = a->head;

	n = (n + 15) & ~(size_t) 15;
	if (!b || b->used + n > b->cap)
	{
		size_t		cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(chat_block) + cap);
		if (!b)
			return NULL;
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	memset(b->data + b->used, 0, n);
	b->used += n;
	return b->data + b->used - n;
}

void
chat_arena_free(chat_arena *a)
{
	while (a->head)
	{
		chat_block *n = a->head->next;

		free(a->head);
		a->head = n;
	}
}

/* ---- the template's tags --------------------------------------------------------- */
typedef enum
{
	S_TEXT, S_OUT, S_STMT, S_COMMENT
} seg_kind;

typedef struct seg
{
	seg_kind	k;
	const char *p;				/* text, or a tag's inside */
	size_t		len;
	int			strip_before,	/* "{%-" */
				strip_after,	/* "-%}" */
				keep_lstrip;	/* "{%+" */
	int			line;
} seg;

typedef struct parser
{
	tfm_chat_template *t;
	tfm_status *err;
	const char *src;
	seg		   *segs;
	int			nseg,
				cap;
	/* the expression being read */
	const char *p,
			   *end;
	int			line,
				depth;
	int			failed;
} parser;

static int
fail(parser *ps, int code, const char *fmt, const char *what)
{
	if (!ps->failed)
	{
		char		buf[200];

		snprintf(buf, sizeof(buf), fmt, what);
		tfm_status_set(ps->err, code, "chat template line %d: %s", ps->line, buf);
	}
	ps->failed = 1;
	return code;
}

static int
add_seg(parser *ps, seg s)
{
	if (ps->nseg == ps->cap)
	{
		int			cap = ps->cap ? 2 * ps->cap : 64;
		seg		   *n = realloc(ps->segs, sizeof(seg) * cap);

		if (!n)
			return TFM_ENOMEM;
		ps->segs = n;
		ps->cap = cap;
	}
	ps->segs[ps->nseg++] = s;
	return TFM_OK;
}

static int
line_of(const char *src, const char *p)
{
	int			l = 1;

	for (; src < p; src++)
		l += *src == '\n';
	return l;
}

/* the template cut into text and tags */
static int
split_tags(parser *ps, const char *s, size_t n)
{
	size_t		pos = 0;

	while (pos < n)
	{
		const char *open = NULL;
		size_t		i;
		seg			g = {0};
		char		close;

		for (i = pos; i + 1 < n; i++)
			if (s[i] == '{' && (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#'))
			{
				open = s + i;
				break;
			}
		if (!open)
			i = n;
		if (i > pos)
		{
			seg			t = {S_TEXT, s + pos, i - pos, 0, 0, 0, line_of(s, s + pos)};

			if (add_seg(ps, t))
				return TFM_ENOMEM;
		}
		if (!open)
			break;
		g.line = line_of(s, open);
		g.k = open[1] == '{' ? S_OUT : open[1] == '%' ? S_STMT : S_COMMENT;
		close = open[1] == '{' ? '}' : open[1];
		i += 2;
		if (i < n && s[i] == '-')
		{
			g.strip_before = 1;
			i++;
		}
		else if (i < n && s[i] == '+')
		{
			g.keep_lstrip = 1;
			i++;
		}
		g.p = s + i;
		/* the closing mark, outside string literals */
		for (;;)
		{
			if (i + 1 >= n)
			{
				ps->line = g.line;
				return fail(ps, TFM_EINVAL, "%s is not closed",
							g.k == S_OUT ? "\"{{\"" : g.k == S_STMT ? "\"{%\"" : "a comment");
			}
			if (g.k != S_COMMENT && (s[i] == '\'' || s[i] == '"'))
			{
				char		q = s[i++];

				while (i < n && s[i] != q)
					i += (s[i] == '\\') ? 2 : 1;
				i++;
				continue;
			}
			if (s[i] == close && s[i + 1] == '}')
				break;
			i++;
		}
		g.len = (size_t) (s + i - g.p);
		if (g.len > 0 && g.p[g.len - 1] == '-')
		{
			g.strip_after = 1;
			g.len--;
		}
		if (add_seg(ps, g))
			return TFM_ENOMEM;
		pos = i + 2;
	}
	return TFM_OK;
}

static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Jinja's whitespace rules applied to the text segments */
static void
whitespace(parser *ps)
{
	for (int i = 0; i < ps->nseg; i++)
	{
		seg		   *g = &ps->segs[i],
				   *prev = i > 0 && ps->segs[i - 1].k == S_TEXT ? &ps->segs[i - 1] : NULL,
				   *next = i + 1 < ps->nseg && ps->segs[i + 1].k == S_TEXT ? &ps->segs[i + 1] : NULL;
		int			block = g->k == S_STMT || g->k == S_COMMENT;

		if (g->k == S_TEXT)
			continue;
		if (prev && g->strip_before)
			while (prev->len > 0 && is_space(prev->p[prev->len - 1]))
				prev->len--;
		else if (prev && block && !g->keep_lstrip)
		{
			/* lstrip_blocks: only spaces and tabs since the line began */
			size_t		k = prev->len;

			while (k > 0 && (prev->p[k - 1] == ' ' || prev->p[k - 1] == '\t'))
				k--;
			if (k > 0 ? prev->p[k - 1] == '\n' : (prev->p == ps->src || prev->p[-1] == '\n'))
				prev->len = k;
		}
		if (next && g->strip_after)
			while (next->len > 0 && is_space(next->p[0]))
			{
				next->p++;
				next->len--;
			}
		else if (next && block)
		{
			/* trim_blocks: the newline right after the tag */
			if (next->len > 0 && next->p[0] == '\n')
			{
				next->p++;
				next->len--;
			}
			else if (next->len > 1 && next->p[0] == '\r' && next->p[1] == '\n')
			{
				next->p += 2;
				next->len -= 2;
			}
		}
	}
}

/* ---- expressions ------------------------------------------------------------------ */
static void
skip_ws(parser *ps)
{
	while (ps->p < ps->end && is_space(*ps->p))
		ps->p++;
}

static int
is_name_char(char c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* the next name, without consuming it (its length, 0 if none) */
static size_t
peek_name(parser *ps)
{
	size_t		n = 0;

	skip_ws(ps);
	while (ps->p + n < ps->end && is_name_char(ps->p[n], n == 0))
		n++;
	return n;
}

static int
accept_word(parser *ps, const char *w)
{
	size_t		n = peek_name(ps);

	if (n == strlen(w) && strncmp(ps->p, w, n) == 0)
	{
		ps->p += n;
		return 1;
	}
	return 0;
}

static int
accept(parser *ps, const char *op)
{
	size_t		n = strlen(op);

	skip_ws(ps);
	if ((size_t) (ps->end - ps->p) >= n && strncmp(ps->p, op, n) == 0)
	{
		ps->p += n;
		return 1;
	}
	return 0;
}

static chat_expr *
new_expr(parser *ps, chat_ekind k)
{
	chat_expr  *e = chat_alloc(&ps->t->arena, sizeof(chat_expr));

	if (!e)
	{
		fail(ps, TFM_ENOMEM, "%s", "out of memory");
		return NULL;
	}
	e->k = k;
	e->line = ps->line;
	return e;
}

static chat_expr *parse_expr(parser *ps);

/* "(" args ")" after a name: into e->args */
static int
parse_args(parser *ps, chat_expr *e, const char *close)
{
	chat_expr  *tmp[32];

	e->nargs = 0;
	if (!accept(ps, close))
	{
		do
		{
			chat_expr  *a;

			/* keyword arguments (name=value) are not in the subset */
			if (e->nargs >= 32)
				return fail(ps, TFM_ELIMIT, "%s", "more than 32 arguments");
			if (!(a = parse_expr(ps)))
				return TFM_EINVAL;
			tmp[e->nargs++] = a;
		} while (accept(ps, ","));
		if (!accept(ps, close))
			return fail(ps, TFM_EINVAL, "expected \"%s\"", close);
	}
	e->args = chat_alloc(&ps->t->arena, sizeof(chat_expr *) * (e->nargs + 1));
	if (!e->args)
		return fail(ps, TFM_ENOMEM, "%s", "out of memory");
	memcpy(e->args, tmp, sizeof(chat_expr *) * e->nargs);
	return TFM_OK;
}

static char *
copy_name(parser *ps, size_t n)
{
	char	   *s = chat_alloc(&ps->t->arena, n + 1);

	if (s)
		memcpy(s, ps->p, n);
	ps->p += n;
	return s;
}

/* a string literal (adjacent ones join) */
static chat_expr *
parse_string(parser *ps)
{
	chat_expr  *e = new_expr(ps, E_STR);
	char	   *buf;
	size_t		n = 0;

	if (!e || !(buf = chat_alloc(&ps->t->arena, (size_t) (ps->end - ps->p) + 1)))
		return NULL;
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
			fail(ps, TFM_EINVAL, "%s", "a string is not closed");
			return NULL;
		}
		ps->p++;
		skip_ws(ps);
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

	skip_ws(ps);
	if (ps->p >= ps->end)
	{
		fail(ps, TFM_EINVAL, "%s", "an expression is missing");
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
				fail(ps, TFM_EINVAL, "%s", "a number too large");
				return NULL;
			}
			e->i = e->i * 10 + (*ps->p++ - '0');
		}
		if (ps->p < ps->end && *ps->p == '.')
		{
			fail(ps, TFM_EINVAL, "%s", "decimal numbers are not supported");
			return NULL;
		}
		return e;
	}
	if (accept(ps, "("))
	{
		if (++ps->depth > TFM_CHAT_MAX_NESTING)
		{
			fail(ps, TFM_ELIMIT, "%s", "parentheses nested too deep");
			return NULL;
		}
		e = parse_expr(ps);
		ps->depth--;
		if (e && !accept(ps, ")"))
		{
			fail(ps, TFM_EINVAL, "%s", "expected \")\"");
			return NULL;
		}
		return e;
	}
	if (accept(ps, "["))
	{
		if (!(e = new_expr(ps, E_LIST)) || parse_args(ps, e, "]") != TFM_OK)
			return NULL;
		return e;
	}
	n = peek_name(ps);
	if (n == 0)
	{
		char		c[2] = {*ps->p, 0};

		fail(ps, TFM_EINVAL, "unexpected \"%s\"", c);
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
	e->s = copy_name(ps, n);
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

		if (accept(ps, "."))
		{
			if (!(n = peek_name(ps)) || !(x = new_expr(ps, E_ATTR)))
				return n ? NULL : (fail(ps, TFM_EINVAL, "%s", "a name after \".\""), NULL);
			x->a = e;
			x->len = n;
			x->s = copy_name(ps, n);
			e = x;
		}
		else if (accept(ps, "["))
		{
			if (!(x = new_expr(ps, E_INDEX)))
				return NULL;
			x->a = e;
			if (!accept(ps, ":"))
			{
				if (!(x->b = parse_expr(ps)))
					return NULL;
				if (!accept(ps, ":"))
				{
					if (!accept(ps, "]"))
						return fail(ps, TFM_EINVAL, "%s", "expected \"]\""), NULL;
					e = x;
					continue;
				}
			}
			x->k = E_SLICE;
			skip_ws(ps);
			if (ps->p < ps->end && *ps->p != ']' && !(x->c = parse_expr(ps)))
				return NULL;
			if (!accept(ps, "]"))
				return fail(ps, TFM_EINVAL, "%s", "only slices [a:b] are supported"), NULL;
			e = x;
		}
		else if (accept(ps, "("))
		{
			if (!(x = new_expr(ps, E_CALL)))
				return NULL;
			x->a = e;
			if (parse_args(ps, x, ")") != TFM_OK)
				return NULL;
			e = x;
		}
		else if (accept(ps, "|"))
		{
			if (!(n = peek_name(ps)) || !(x = new_expr(ps, E_FILTER)))
				return n ? NULL : (fail(ps, TFM_EINVAL, "%s", "a filter name after \"|\""), NULL);
			x->a = e;
			x->len = n;
			x->s = copy_name(ps, n);
			if (accept(ps, "(") && parse_args(ps, x, ")") != TFM_OK)
				return NULL;
			e = x;
		}
		else if (accept_word(ps, "is"))
		{
			if (!(x = new_expr(ps, E_TEST)))
				return NULL;
			x->a = e;
			x->op = accept_word(ps, "not");
			if (!(n = peek_name(ps)))
				return fail(ps, TFM_EINVAL, "%s", "a test name after \"is\""), NULL;
			x->len = n;
			x->s = copy_name(ps, n);
			e = x;
		}
		else
			break;
	}
	return e;
}

static chat_expr *
parse_unary(parser *ps)
{
	if (accept(ps, "-"))
	{
		chat_expr  *e = new_expr(ps, E_NEG);

		if (e && !(e->a = parse_unary(ps)))
			return NULL;
		return e;
	}
	return parse_postfix(ps, parse_primary(ps));
}

static chat_expr *
binary(parser *ps, int op, chat_expr *a, chat_expr *b)
{
	chat_expr  *e;

	if (!a || !b || !(e = new_expr(ps, E_BIN)))
		return NULL;
	e->op = op;
	e->a = a;
	e->b = b;
	return e;
}

static chat_expr *
parse_mul(parser *ps)
{
	chat_expr  *e = parse_unary(ps);

	while (e)
	{
		if (accept(ps, "//"))
			e = binary(ps, OP_FLOORDIV, e, parse_unary(ps));
		else if (accept(ps, "*"))
			e = binary(ps, OP_MUL, e, parse_unary(ps));
		else if (accept(ps, "%"))
			e = binary(ps, OP_MOD, e, parse_unary(ps));
		else if (accept(ps, "/"))
			return fail(ps, TFM_EINVAL, "%s", "\"/\" (decimal division) is not supported"), NULL;
		else
			break;
	}
	return e;
}

static chat_expr *
parse_concat(parser *ps)
{
	chat_expr  *e = parse_mul(ps);

	while (e && accept(ps, "~"))
		e = binary(ps, OP_CONCAT, e, parse_mul(ps));
	return e;
}

static chat_expr *
parse_add(parser *ps)
{
	chat_expr  *e = parse_concat(ps);

	while (e)
	{
		if (accept(ps, "+"))
			e = binary(ps, OP_ADD, e, parse_concat(ps));
		else if (accept(ps, "-"))
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

		if (accept(ps, "=="))
			e = binary(ps, OP_EQ, e, parse_add(ps));
		else if (accept(ps, "!="))
			e = binary(ps, OP_NE, e, parse_add(ps));
		else if (accept(ps, "<="))
			e = binary(ps, OP_LE, e, parse_add(ps));
		else if (accept(ps, ">="))
			e = binary(ps, OP_GE, e, parse_add(ps));
		else if (accept(ps, "<"))
			e = binary(ps, OP_LT, e, parse_add(ps));
		else if (accept(ps, ">"))
			e = binary(ps, OP_GT, e, parse_add(ps));
		else if (accept_word(ps, "in"))
			e = binary(ps, OP_IN, e, parse_add(ps));
		else if (accept_word(ps, "not"))
		{
			if (!accept_word(ps, "in"))
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
	if (accept_word(ps, "not"))
	{
		chat_expr  *e = new_expr(ps, E_NOT);

		if (e && !(e->a = parse_not(ps)))
			return NULL;
		return e;
	}
	return parse_compare(ps);
}

static chat_expr *
logic(parser *ps, chat_ekind k, chat_expr *a, chat_expr *b)
{
	chat_expr  *e;

	if (!a || !b || !(e = new_expr(ps, k)))
		return NULL;
	e->a = a;
	e->b = b;
	return e;
}

static chat_expr *
parse_and(parser *ps)
{
	chat_expr  *e = parse_not(ps);

	while (e && accept_word(ps, "and"))
		e = logic(ps, E_AND, e, parse_not(ps));
	return e;
}

static chat_expr *
parse_or(parser *ps)
{
	chat_expr  *e = parse_and(ps);

	while (e && accept_word(ps, "or"))
		e = logic(ps, E_OR, e, parse_and(ps));
	return e;
}

static chat_expr *
parse_expr(parser *ps)
{
	chat_expr  *e = parse_or(ps);

	if (e && accept_word(ps, "if"))
	{
		chat_expr  *c = new_expr(ps, E_COND);

		if (!c || !(c->a = parse_or(ps)))
			return NULL;
		c->b = e;
		if (accept_word(ps, "else") && !(c->c = parse_expr(ps)))
			return NULL;
		return c;
	}
	return e;
}

/* a whole tag's expression */
static chat_expr *
tag_expr(parser *ps, const char *p, const char *end)
{
	chat_expr  *e;

	ps->p = p;
	ps->end = end;
	ps->depth = 0;
	e = parse_expr(ps);
	skip_ws(ps);
	if (e && ps->p < ps->end)
	{
		fail(ps, TFM_EINVAL, "unexpected \"%.20s\"", ps->p);
		return NULL;
	}
	return e;
}

/* ---- statements -------------------------------------------------------------------- */
static chat_node *
new_node(parser *ps, chat_nkind k)
{
	chat_node  *n = chat_alloc(&ps->t->arena, sizeof(chat_node));

	if (!n)
		fail(ps, TFM_ENOMEM, "%s", "out of memory");
	else
	{
		n->k = k;
		n->line = ps->line;
	}
	return n;
}

static int
push_node(parser *ps, chat_body *b, chat_node *n)
{
	if (!n)
		return TFM_ENOMEM;
	if (b->count == b->cap)
	{
		int			cap = b->cap ? 2 * b->cap : 8;
		chat_node **m = chat_alloc(&ps->t->arena, sizeof(chat_node *) * cap);

		if (!m)
			return fail(ps, TFM_ENOMEM, "%s", "out of memory");
		if (b->count)
			memcpy(m, b->n, sizeof(chat_node *) * b->count);
		b->n = m;
		b->cap = cap;
	}
	b->n[b->count++] = n;
	return TFM_OK;
}

/* the statement's keyword (its length) and where its rest starts */
static size_t
keyword(parser *ps, const seg *g)
{
	ps->p = g->p;
	ps->end = g->p + g->len;
	return peek_name(ps);
}

static int parse_body(parser *ps, int *i, chat_body *b, int depth, const char **ended);

/* the keyword that ends a block: "elif", "else", "endif", "endfor" */
static int
is_end(parser *ps, const seg *g, const char *w)
{
	size_t		n = keyword(ps, g);

	return n == strlen(w) && strncmp(ps->p, w, n) == 0;
}

static int
parse_if(parser *ps, int *i, chat_node *n, int depth)
{
	chat_expr  *conds[64];
	chat_body	bodies[64];
	const char *ended = NULL;
	const seg  *g = &ps->segs[*i];
	size_t		kw = keyword(ps, g);

	n->nbranch = 0;
	if (!(conds[0] = tag_expr(ps, ps->p + kw, g->p + g->len)))
		return TFM_EINVAL;
	for (;;)
	{
		int			b = n->nbranch++;

		memset(&bodies[b], 0, sizeof(chat_body));
		(*i)++;
		if (parse_body(ps, i, &bodies[b], depth + 1, &ended) != TFM_OK)
			return TFM_EINVAL;
		if (!ended)
			return fail(ps, TFM_EINVAL, "%s", "{% if %} without {% endif %}");
		if (strcmp(ended, "endif") == 0)
			break;
		if (conds[b] == NULL || n->nbranch >= 64)
			return fail(ps, TFM_EINVAL, "%s", "{% elif %} or {% else %} after {% else %}");
		g = &ps->segs[*i];
		kw = keyword(ps, g);
		if (strcmp(ended, "else") == 0)
			conds[n->nbranch] = NULL;
		else if (!(conds[n->nbranch] = tag_expr(ps, ps->p + kw, g->p + g->len)))
			return TFM_EINVAL;
	}
	n->conds = chat_alloc(&ps->t->arena, sizeof(chat_expr *) * n->nbranch);
	n->bodies = chat_alloc(&ps->t->arena, sizeof(chat_body) * n->nbranch);
	if (!n->conds || !n->bodies)
		return fail(ps, TFM_ENOMEM, "%s", "out of memory");
	memcpy(n->conds, conds, sizeof(chat_expr *) * n->nbranch);
	memcpy(n->bodies, bodies, sizeof(chat_body) * n->nbranch);
	return TFM_OK;
}

static int
parse_for(parser *ps, int *i, chat_node *n, int depth)
{
	const seg  *g = &ps->segs[*i];
	const char *ended = NULL;
	size_t		kw = keyword(ps, g),
				vn;

	ps->p += kw;
	if (!(vn = peek_name(ps)))
		return fail(ps, TFM_EINVAL, "%s", "{% for %} needs a variable");
	n->len = vn;
	n->s = copy_name(ps, vn);
	if (accept(ps, ","))
		return fail(ps, TFM_EINVAL, "%s", "{% for a, b in ... %} is not supported");
	if (!accept_word(ps, "in"))
		return fail(ps, TFM_EINVAL, "%s", "{% for x in ... %} needs \"in\"");
	{
		/* a condition ("for x in xs if c") is not in the subset */
		const char *start = ps->p;

		if (!(n->e = tag_expr(ps, start, g->p + g->len)))
			return TFM_EINVAL;
		if (n->e->k == E_COND)
			return fail(ps, TFM_EINVAL, "%s", "{% for ... if ... %} is not supported");
	}
	(*i)++;
	if (parse_body(ps, i, &n->body, depth + 1, &ended) != TFM_OK)
		return TFM_EINVAL;
	if (!ended || strcmp(ended, "endfor") != 0)
		return fail(ps, TFM_EINVAL, "%s", ended ? "{% else %} in a {% for %} is not supported" :
					"{% for %} without {% endfor %}");
	return TFM_OK;
}

static int
parse_set(parser *ps, const seg *g, chat_node *n)
{
	size_t		kw = keyword(ps, g),
				vn;

	ps->p += kw;
	if (!(vn = peek_name(ps)))
		return fail(ps, TFM_EINVAL, "%s", "{% set %} needs a name");
	n->len = vn;
	n->s = copy_name(ps, vn);
	if (accept(ps, "."))
		return fail(ps, TFM_EINVAL, "%s", "{% set a.b = ... %} (namespaces) is not supported");
	if (!accept(ps, "="))
		return fail(ps, TFM_EINVAL, "%s", "{% set name %}...{% endset %} is not supported");
	n->e = tag_expr(ps, ps->p, g->p + g->len);
	return n->e ? TFM_OK : TFM_EINVAL;
}

/*
 * Statements from segment *i until the end or a block's end keyword (its
 * name in *ended, *i left on it).
 */
static int
parse_body(parser *ps, int *i, chat_body *b, int depth, const char **ended)
{
	static const char *const ends[] = {"elif", "else", "endif", "endfor"};

	*ended = NULL;
	if (depth > TFM_CHAT_MAX_NESTING)
		return fail(ps, TFM_ELIMIT, "%s", "blocks nested too deep");
	for (; *i < ps->nseg; (*i)++)
	{
		seg		   *g = &ps->segs[*i];
		chat_node  *n;
		size_t		kw;

		ps->line = g->line;
		if (g->k == S_COMMENT)
			continue;
		if (g->k == S_TEXT)
		{
			if (g->len == 0)
				continue;
			if (!(n = new_node(ps, N_TEXT)))
				return TFM_ENOMEM;
			n->s = g->p;
			n->len = g->len;
			if (push_node(ps, b, n))
				return TFM_ENOMEM;
			continue;
		}
		if (g->k == S_OUT)
		{
			if (!(n = new_node(ps, N_OUT)) || !(n->e = tag_expr(ps, g->p, g->p + g->len)) ||
				push_node(ps, b, n))
				return TFM_EINVAL;
			continue;
		}
		for (size_t k = 0; k < sizeof(ends) / sizeof(ends[0]); k++)
			if (is_end(ps, g, ends[k]))
			{
				if (depth == 0)
					return fail(ps, TFM_EINVAL, "{%% %s %%} outside a block", ends[k]);
				*ended = ends[k];
				return TFM_OK;
			}
		kw = keyword(ps, g);
		if (kw == 2 && strncmp(ps->p, "if", 2) == 0)
		{
			if (!(n = new_node(ps, N_IF)) || parse_if(ps, i, n, depth) || push_node(ps, b, n))
				return TFM_EINVAL;
		}
		else if (kw == 3 && strncmp(ps->p, "for", 3) == 0)
		{
			if (!(n = new_node(ps, N_FOR)) || parse_for(ps, i, n, depth) || push_node(ps, b, n))
				return TFM_EINVAL;
		}
		else if (kw == 3 && strncmp(ps->p, "set", 3) == 0)
		{
			if (!(n = new_node(ps, N_SET)) || parse_set(ps, g, n) || push_node(ps, b, n))
				return TFM_EINVAL;
		}
		else
		{
			char		name[40];

			snprintf(name, sizeof(name), "%.*s", (int) (kw ? kw : 1), ps->p);
			return fail(ps, TFM_EINVAL, "the statement {%% %s %%} is not supported", name);
		}
	}
	return TFM_OK;
}

int
tfm_chat_template_parse(tfm_chat_template **out, const char *text, size_t len, tfm_status *err)
{
	parser		ps;
	tfm_chat_template *t;
	const char *ended = NULL;
	int			i = 0,
				st;

	*out = NULL;
	if (len > TFM_CHAT_MAX_TEMPLATE_BYTES)
		return tfm_status_set(err, TFM_ELIMIT, "a chat template is %zu bytes long, more than %d",
							  len, TFM_CHAT_MAX_TEMPLATE_BYTES);
	if (memchr(text, '\0', len))
		return tfm_status_set(err, TFM_EINVAL, "a chat template must not contain NUL");
	if (!(t = calloc(1, sizeof(*t))))
		return tfm_status_set(err, TFM_ENOMEM, "out of memory");
	memset(&ps, 0, sizeof(ps));
	ps.t = t;
	ps.err = err;
	ps.src = text;
	ps.line = 1;
	/* Jinja drops one newline at the template's end */
	if (len > 0 && text[len - 1] == '\n')
		len -= (len > 1 && text[len - 2] == '\r') ? 2 : 1;
	{
		/* the text nodes point into the template's own copy */
		char	   *copy = chat_alloc(&t->arena, len + 1);

		if (!copy)
		{
			tfm_chat_template_free(t);
			return tfm_status_set(err, TFM_ENOMEM, "out of memory");
		}
		memcpy(copy, text, len);
		text = copy;
		ps.src = copy;
	}
	st = split_tags(&ps, text, len);
	if (st == TFM_OK)
	{
		whitespace(&ps);
		st = parse_body(&ps, &i, &t->root, 0, &ended);
	}
	if (st == TFM_OK && ps.failed)
		st = TFM_EINVAL;
	if (st == TFM_ENOMEM && !ps.failed)
		tfm_status_set(err, TFM_ENOMEM, "out of memory");
	free(ps.segs);
	if (st != TFM_OK)
	{
		tfm_chat_template_free(t);
		return st;
	}
	*out = t;
	return TFM_OK;
}

void
tfm_chat_template_free(tfm_chat_template *t)
{
	if (!t)
		return;
	chat_arena_free(&t->arena);
	free(t);
}
