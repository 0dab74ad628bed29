/*
 * chat_ast.h — a parsed chat template (chat_parse.c) as the renderer
 * walks it: statements (text, output, if, for, set; chat_render.c) and
 * expressions (chat_eval.c), all in one arena freed with the template.
 */
#ifndef TFM_CHAT_AST_H
#define TFM_CHAT_AST_H

#include <stddef.h>
#include <stdint.h>

#include "tfm/chat_template.h"

/* ---- memory: the host's allocator, counted against the budget ------------------ */
typedef struct chat_mem
{
	void	   *(*alloc) (void *arg, size_t n);
	void		(*dealloc) (void *arg, void *p);
	void	   *arg;
	size_t		budget,			/* 0: none */
				used,			/* bytes held now */
				peak;
	int			over_budget;	/* an allocation was refused for the budget */
} chat_mem;

/* the allocator of o (malloc without one), nothing used yet */
void		chat_mem_init(chat_mem *m, const tfm_chat_opts *o);
/* n bytes (not zeroed); NULL past the budget (m->over_budget set) or out of memory */
void	   *chat_mem_alloc(chat_mem *m, size_t n);
void		chat_mem_free(chat_mem *m, void *p, size_t n);
/* p (n bytes, may be NULL) grown to n2 > n bytes, the old contents copied; NULL: p kept */
void	   *chat_mem_grow(chat_mem *m, void *p, size_t n, size_t n2);

/* ---- the host's cancel poll ----------------------------------------------------- */
typedef struct chat_poll
{
	int			(*cancel) (void *arg);
	void	   *arg;
	size_t		work,			/* units done, and when the next poll is due */
				next;
	int			canceled;		/* the host said stop (then no more polls) */
} chat_poll;

/* a step of the interpreter, in units of work (a byte copied or compared is one) */
#define CHAT_STEP 64

void		chat_poll_init(chat_poll *p, const tfm_chat_opts *o);
/* the poll itself (chat_poll_work calls it when one is due) */
int			chat_poll_due(chat_poll *p);

/* units more work done; 1 when the host asks to stop (asked every TFM_CHAT_POLL_UNITS) */
static inline int
chat_poll_work(chat_poll *p, size_t units)
{
	p->work += units;
	return p->work >= p->next ? chat_poll_due(p) : p->canceled;
}

/* ---- the first failure of a parsing or a rendering ------------------------------ */
/*
 * fmt (with a and b) into err, after "chat template line N: " when line > 0,
 * unless *failed says a failure came first (err and *first keep that one);
 * then *failed is set; returns code
 */
int			chat_failure(tfm_status *err, int *failed, int *first, int code, int line,
						 const char *fmt, const char *a, const char *b);
/*
 * an allocation from m failed: past its budget (TFM_ELIMIT, msg "<doing>
 * needs more memory than the budget of N bytes") or out of memory
 * (TFM_ENOMEM, msg "out of memory"); returns the code
 */
int			chat_mem_failure(const chat_mem *m, const char *doing, char *msg, size_t cap);

/* ---- an arena: blocks freed together (or back to a mark) ---------------------- */
typedef struct chat_arena
{
	chat_mem   *mem;
	struct chat_block *head;
	int			nblocks;
} chat_arena;

typedef struct chat_mark
{
	struct chat_block *head;
	size_t		used;
} chat_mark;

void	   *chat_alloc(chat_arena *a, size_t n);	/* zeroed; NULL past the budget or out of memory */
void		chat_arena_free(chat_arena *a);
chat_mark	chat_arena_mark(const chat_arena *a);
/* everything allocated since m is gone */
void		chat_arena_release(chat_arena *a, chat_mark m);

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
