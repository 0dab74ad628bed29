/*
 * chat_lex.c: the small reading steps both halves of the chat-template
 * parser use (chat_parse.c for the tags and statements, chat_expr.c for
 * the expressions inside them): errors with their line, whitespace, names,
 * words and operators at the current place of the expression being read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_parser.h"
#include "tfm/status.h"

int
chat_fail(parser *ps, int code, const char *fmt, const char *what)
{
	return chat_failure(ps->err, &ps->failed, &ps->code, code, ps->line, fmt, what, "");
}

int
chat_oom(parser *ps)
{
	char		msg[128];
	int			code = chat_mem_failure(&ps->t->mem, "parsing", msg, sizeof(msg));

	return chat_fail(ps, code, "%s", msg);
}

int
chat_too_deep(parser *ps)
{
	char		b[16];

	snprintf(b, sizeof(b), "%d", TFM_CHAT_MAX_NESTING);
	return chat_fail(ps, TFM_ELIMIT, "nested deeper than %s levels "
					 "(blocks, brackets, operators, filters and calls count together)", b);
}

int
chat_work(parser *ps, size_t units)
{
	if (!chat_poll_work(&ps->poll, units))
		return TFM_OK;
	if (!ps->failed)
	{
		tfm_status_set(ps->err, TFM_ECANCELED, "parsing the chat template was canceled");
		ps->code = TFM_ECANCELED;
	}
	ps->failed = 1;
	return TFM_ECANCELED;
}

int
chat_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void
chat_skip_ws(parser *ps)
{
	while (ps->p < ps->end && chat_is_space(*ps->p))
		ps->p++;
}

static int
is_name_char(char c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* the next name, without consuming it (its length, 0 if none) */
size_t
chat_peek_name(parser *ps)
{
	size_t		n = 0;

	chat_skip_ws(ps);
	while (ps->p + n < ps->end && is_name_char(ps->p[n], n == 0))
		n++;
	return n;
}

int
chat_accept_word(parser *ps, const char *w)
{
	size_t		n = chat_peek_name(ps);

	if (n == strlen(w) && strncmp(ps->p, w, n) == 0)
	{
		ps->p += n;
		return 1;
	}
	return 0;
}

int
chat_accept(parser *ps, const char *op)
{
	size_t		n = strlen(op);

	chat_skip_ws(ps);
	if ((size_t) (ps->end - ps->p) >= n && strncmp(ps->p, op, n) == 0)
	{
		ps->p += n;
		return 1;
	}
	return 0;
}

char *
chat_copy_name(parser *ps, size_t n)
{
	char	   *s = chat_alloc(&ps->t->arena, n + 1);

	if (s)
		memcpy(s, ps->p, n);
	else
		chat_oom(ps);
	ps->p += n;
	return s;
}
