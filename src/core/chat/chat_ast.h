/*
 * chat_ast.h — a parsed chat template (chat_parse.c) as the renderer
 * walks it: statements (text, output, if, for, set; chat_render.c) and
 * expressions (chat_eval.c), all in one arena (chat_arena.h) freed with
 * the template.
 */
#ifndef TFM_CHAT_AST_H
#define TFM_CHAT_AST_H

#include <stddef.h>
#include <stdint.h>

#include "chat_arena.h"

/* ---- expressions ------------------------------------------------------------- */
typedef enum
{
	E_STR, E_INT, E_BOOL, E_NONE, E_NAME, E_LIST,
	E_ATTR,						/* a.name */
	E_INDEX,					/* a[b] */
	E_SLICE,					/* a[b:c], b and c may be NULL */
	E_CALL,						/* a(args): a is a name or an attribute (a method) */
	E_FILTER,					/* a | name(args) */
	E_TEST,						/* a is [not] name */
	E_NOT, E_NEG, E_AND, E_OR,
	E_BIN,						/* a op b */
	E_COND,						/* b if a else c */
	E_KWARG						/* name=a, an argument of namespace() */
} chat_ekind;

enum
{
	OP_ADD = 1, OP_SUB, OP_MUL, OP_FLOORDIV, OP_MOD, OP_CONCAT,
	OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE, OP_IN, OP_NOTIN
};

typedef struct chat_expr
{
	chat_ekind	k;
	int			op;				/* E_BIN; E_TEST: 1 when negated */
	const char *s;				/* E_STR text, E_NAME / E_ATTR / E_FILTER / E_TEST name */
	size_t		len;
	int64_t		i;				/* E_INT, E_BOOL */
	struct chat_expr *a,
			   *b,
			   *c;
	struct chat_expr **args;	/* E_CALL, E_FILTER, E_TEST, E_LIST */
	int			nargs;
	int			line;
	int			height;			/* levels of this expression: 1 + its deepest operand's */
} chat_expr;

/* ---- statements -------------------------------------------------------------- */
typedef enum
{
	N_TEXT, N_OUT, N_IF, N_FOR, N_SET
} chat_nkind;

typedef struct chat_body
{
	struct chat_node **n;
	int			count;
	int			cap;
} chat_body;

typedef struct chat_node
{
	chat_nkind	k;
	const char *s;				/* N_TEXT text; N_FOR loop variable; N_SET target */
	size_t		len;
	const char *attr;			/* N_SET of ns.attr: attr (NULL: a name) */
	size_t		alen;
	chat_expr  *e;				/* N_OUT, N_SET value, N_FOR iterable */
	int			nbranch;		/* N_IF: conds[i] (NULL for else) and bodies[i] */
	chat_expr **conds;
	chat_body  *bodies;
	chat_body	body;			/* N_FOR */
	int			line;
} chat_node;

struct tfm_chat_template
{
	chat_mem	mem;			/* the allocator it was parsed with, and its bytes */
	chat_arena	arena;
	chat_body	root;
};

#endif /* TFM_CHAT_AST_H */
