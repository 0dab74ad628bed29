/*
 * chat_parser.h — the parser of chat templates shared by its two files:
 * the template's tags and statements (chat_parse.c), the expressions
 * inside tags (chat_expr.c) and the reading steps both use (chat_lex.c).
 */
#ifndef TFM_CHAT_PARSER_H
#define TFM_CHAT_PARSER_H

#include "chat_ast.h"

/* a piece of the template: text, or a tag's inside */
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
	chat_poll	poll;
	const char *src;
	seg		   *segs;
	int			nseg,
				cap;
	/* the expression being read */
	const char *p,
			   *end;
	int			line,
				block,			/* the blocks around its tag */
				depth;			/* the recursive rules entered inside it */
	int			failed,
				code;			/* the first failure's */
} parser;

/* ---- reading steps (chat_lex.c) ---- */
/* an error (the first one counts) with the line being read; returns code */
int			chat_fail(parser *ps, int code, const char *fmt, const char *what);
/* an allocation failed: past the budget (TFM_ELIMIT) or out of memory */
int			chat_oom(parser *ps);
/* TFM_ELIMIT: past TFM_CHAT_MAX_NESTING levels at the current line */
int			chat_too_deep(parser *ps);
/* units of work done; TFM_ECANCELED (failed) when the host asks to stop */
int			chat_work(parser *ps, size_t units);
int			chat_is_space(char c);

void		chat_skip_ws(parser *ps);
/* the length of the name at the current place (not consumed), 0 if none */
size_t		chat_peek_name(parser *ps);
int			chat_accept_word(parser *ps, const char *w);
int			chat_accept(parser *ps, const char *op);
/* the next n bytes as a name in the arena (consumed; NULL, failed, without memory) */
char	   *chat_copy_name(parser *ps, size_t n);

/* ---- reading an expression (chat_expr.c) ---- */
/* the whole expression of p[0 .. end) (a tag's inside, block blocks deep), NULL on an error */
chat_expr  *chat_tag_expr(parser *ps, int block, const char *p, const char *end);

#endif							/* TFM_CHAT_PARSER_H */
