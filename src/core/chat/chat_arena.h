/*
 * chat_arena.h — the memory, the cancel poll and the first failure of a
 * chat template's parsing and rendering (chat_arena.c): the host's
 * allocator counted against the budget, arenas of blocks freed together
 * (or back to a mark), the poll asked every TFM_CHAT_POLL_UNITS units of
 * work.
 */
#ifndef TFM_CHAT_ARENA_H
#define TFM_CHAT_ARENA_H

#include <stddef.h>

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

#endif							/* TFM_CHAT_ARENA_H */
