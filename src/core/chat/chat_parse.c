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
 *                {% set name = expr %}, {% set ns.attr = expr %} (ns a
 *                namespace(), set in place), {{ expr }}, {# comments #}
 *   expressions  strings, integers, true / false / none, names, lists
 *                [a, b], x.attr, x[i], x[a:b], calls (keyword arguments
 *                name=value for namespace()), filters x | f(...),
 *                tests x is [not] t, not / and / or, == != < > <= >=,
 *                in / not in, + - * // % ~, a if c else b, slices
 *                with a step a[b:c:d] of lists
 * Any other statement is refused here by name; filters, tests, methods and
 * functions by name when rendering reaches them (chat_builtins.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_parser.h"
#include "tfm/status.h"

static int
add_seg(parser *ps, seg s)
{
	if (ps->nseg == ps->cap)
	{
		int			cap = ps->cap ? 2 * ps->cap : 64;
		seg		   *n = chat_mem_grow(&ps->t->mem, ps->segs, sizeof(seg) * ps->cap,
									  sizeof(seg) * cap);

		if (!n)
			return chat_oom(ps);
		ps->segs = n;
		ps->cap = cap;
	}
	ps->segs[ps->nseg++] = s;
	return TFM_OK;
}

/* the line of p, counted on from the last place asked (places only move forward) */
typedef struct line_count
{
	const char *at;
	int			line;
} line_count;

static int
line_of(line_count *lc, const char *p)
{
	for (; lc->at < p; lc->at++)
		lc->line += *lc->at == '\n';
	return lc->line;
}

/* the template cut into text and tags */
static int
split_tags(parser *ps, const char *s, size_t n)
{
	size_t		pos = 0;
	line_count	lc = {s, 1};

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
			seg			t = {S_TEXT, s + pos, i - pos, 0, 0, 0, line_of(&lc, s + pos)};

			if (add_seg(ps, t))
				return ps->code;
		}
		if (!open)
			break;
		g.line = line_of(&lc, open);
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
				return chat_fail(ps, TFM_EINVAL, "%s is not closed",
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
			return ps->code;
		/* the bytes read, for the host's cancel poll */
		if (chat_work(ps, i + 2 - pos))
			return ps->code;
		pos = i + 2;
	}
	return TFM_OK;
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
			while (prev->len > 0 && chat_is_space(prev->p[prev->len - 1]))
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
			while (next->len > 0 && chat_is_space(next->p[0]))
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

/* ---- statements -------------------------------------------------------------------- */
static chat_node *
new_node(parser *ps, chat_nkind k)
{
	chat_node  *n = chat_alloc(&ps->t->arena, sizeof(chat_node));

	if (!n)
		chat_oom(ps);
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
			return chat_oom(ps);
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
	return chat_peek_name(ps);
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
	if (!(conds[0] = chat_tag_expr(ps, depth, ps->p + kw, g->p + g->len)))
		return TFM_EINVAL;
	for (;;)
	{
		int			b = n->nbranch++;

		memset(&bodies[b], 0, sizeof(chat_body));
		(*i)++;
		if (parse_body(ps, i, &bodies[b], depth + 1, &ended) != TFM_OK)
			return TFM_EINVAL;
		if (!ended)
			return chat_fail(ps, TFM_EINVAL, "%s", "{% if %} without {% endif %}");
		if (strcmp(ended, "endif") == 0)
			break;
		if (conds[b] == NULL)
			return chat_fail(ps, TFM_EINVAL, "%s", "{% elif %} or {% else %} after {% else %}");
		if (n->nbranch >= 64)
			return chat_fail(ps, TFM_ELIMIT, "%s", "an {% if %} has more than 64 branches");
		g = &ps->segs[*i];
		kw = keyword(ps, g);
		if (strcmp(ended, "else") == 0)
			conds[n->nbranch] = NULL;
		else if (!(conds[n->nbranch] = chat_tag_expr(ps, depth, ps->p + kw, g->p + g->len)))
			return TFM_EINVAL;
	}
	n->conds = chat_alloc(&ps->t->arena, sizeof(chat_expr *) * n->nbranch);
	n->bodies = chat_alloc(&ps->t->arena, sizeof(chat_body) * n->nbranch);
	if (!n->conds || !n->bodies)
		return chat_oom(ps);
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
	if (!(vn = chat_peek_name(ps)))
		return chat_fail(ps, TFM_EINVAL, "%s", "{% for %} needs a variable");
	n->len = vn;
	if (!(n->s = chat_copy_name(ps, vn)))
		return ps->code;
	if (chat_accept(ps, ","))
		return chat_fail(ps, TFM_EINVAL, "%s", "{% for a, b in ... %} is not supported");
	if (!chat_accept_word(ps, "in"))
		return chat_fail(ps, TFM_EINVAL, "%s", "{% for x in ... %} needs \"in\"");
	{
		/* a condition ("for x in xs if c") is not in the subset */
		const char *start = ps->p;

		if (!(n->e = chat_tag_expr(ps, depth, start, g->p + g->len)))
			return TFM_EINVAL;
		if (n->e->k == E_COND)
			return chat_fail(ps, TFM_EINVAL, "%s", "{% for ... if ... %} is not supported");
	}
	(*i)++;
	if (parse_body(ps, i, &n->body, depth + 1, &ended) != TFM_OK)
		return TFM_EINVAL;
	if (!ended || strcmp(ended, "endfor") != 0)
		return chat_fail(ps, TFM_EINVAL, "%s", ended ? "{% else %} in a {% for %} is not supported" :
					"{% for %} without {% endfor %}");
	return TFM_OK;
}

static int
parse_set(parser *ps, const seg *g, chat_node *n, int depth)
{
	size_t		kw = keyword(ps, g),
				vn;

	ps->p += kw;
	if (!(vn = chat_peek_name(ps)))
		return chat_fail(ps, TFM_EINVAL, "%s", "{% set %} needs a name");
	n->len = vn;
	if (!(n->s = chat_copy_name(ps, vn)))
		return ps->code;
	if (chat_accept(ps, "."))
	{
		/* {% set ns.attr = ... %}: an attribute of a namespace() */
		if (!(vn = chat_peek_name(ps)))
			return chat_fail(ps, TFM_EINVAL, "%s", "{% set a. %} needs an attribute name");
		n->alen = vn;
		if (!(n->attr = chat_copy_name(ps, vn)))
			return ps->code;
	}
	if (!chat_accept(ps, "="))
		return chat_fail(ps, TFM_EINVAL, "%s", "{% set name %}...{% endset %} is not supported");
	n->e = chat_tag_expr(ps, depth, ps->p, g->p + g->len);
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
		return chat_too_deep(ps);
	for (; *i < ps->nseg; (*i)++)
	{
		seg		   *g = &ps->segs[*i];
		chat_node  *n;
		size_t		kw;

		ps->line = g->line;
		if (chat_work(ps, CHAT_STEP))
			return ps->code;
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
			if (!(n = new_node(ps, N_OUT)) || !(n->e = chat_tag_expr(ps, depth, g->p, g->p + g->len)) ||
				push_node(ps, b, n))
				return TFM_EINVAL;
			continue;
		}
		for (size_t k = 0; k < sizeof(ends) / sizeof(ends[0]); k++)
			if (is_end(ps, g, ends[k]))
			{
				if (depth == 0)
					return chat_fail(ps, TFM_EINVAL, "{%% %s %%} outside a block", ends[k]);
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
			if (!(n = new_node(ps, N_SET)) || parse_set(ps, g, n, depth) || push_node(ps, b, n))
				return TFM_EINVAL;
		}
		else
		{
			char		name[40];

			snprintf(name, sizeof(name), "%.*s", (int) (kw ? kw : 1), ps->p);
			return chat_fail(ps, TFM_EINVAL, "the statement {%% %s %%} is not supported", name);
		}
	}
	return TFM_OK;
}

int
tfm_chat_template_parse(tfm_chat_template **out, const char *text, size_t len,
						tfm_chat_opts *o, tfm_status *err)
{
	parser		ps;
	tfm_chat_template *t;
	chat_mem	mem;
	const char *ended = NULL;
	int			i = 0,
				st;

	*out = NULL;
	if (o)
	{
		o->peak = 0;
		o->over_budget = 0;
	}
	if (len > TFM_CHAT_MAX_TEMPLATE_BYTES)
		return tfm_status_set(err, TFM_ELIMIT, "a chat template is %zu bytes long, more than %d",
							  len, TFM_CHAT_MAX_TEMPLATE_BYTES);
	if (memchr(text, '\0', len))
		return tfm_status_set(err, TFM_EINVAL, "a chat template must not contain NUL");
	chat_mem_init(&mem, o);
	if (!(t = chat_mem_alloc(&mem, sizeof(*t))))
	{
		if (o)
			o->over_budget = mem.over_budget;
		return mem.over_budget ?
			tfm_status_set(err, TFM_ELIMIT, "parsing the chat template needs more memory than the budget of %zu bytes",
						   mem.budget) :
			tfm_status_set(err, TFM_ENOMEM, "out of memory");
	}
	memset(t, 0, sizeof(*t));
	t->mem = mem;
	t->arena.mem = &t->mem;
	memset(&ps, 0, sizeof(ps));
	ps.t = t;
	ps.err = err;
	chat_poll_init(&ps.poll, o);
	ps.src = text;
	ps.line = 1;
	/* Jinja drops one newline at the template's end */
	if (len > 0 && text[len - 1] == '\n')
		len -= (len > 1 && text[len - 2] == '\r') ? 2 : 1;
	{
		/* the text nodes point into the template's own copy */
		char	   *copy = chat_alloc(&t->arena, len + 1);

		if (copy)
		{
			memcpy(copy, text, len);
			text = copy;
			ps.src = copy;
		}
		else
			chat_oom(&ps);
	}
	st = ps.failed ? ps.code : split_tags(&ps, text, len);
	if (st == TFM_OK)
	{
		whitespace(&ps);
		st = parse_body(&ps, &i, &t->root, 0, &ended);
	}
	if (ps.failed)
		st = ps.code;
	chat_mem_free(&t->mem, ps.segs, sizeof(seg) * ps.cap);
	if (o)
	{
		o->peak = t->mem.peak;
		o->over_budget = t->mem.over_budget && st == TFM_ELIMIT;
	}
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
	chat_mem	mem;

	if (!t)
		return;
	chat_arena_free(&t->arena);
	mem = t->mem;
	chat_mem_free(&mem, t, sizeof(*t));
}

size_t
tfm_chat_template_bytes(const tfm_chat_template *t)
{
	return t->mem.used;
}
