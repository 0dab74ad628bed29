/*
 * chat_arena.c: the memory of a chat template and of a rendering.  Every
 * byte comes from the host's allocator (tfm_chat_opts; malloc without one)
 * through chat_mem, which counts what is held against the budget and
 * refuses an allocation past it.  Nodes and values live in arenas: blocks
 * of 4 kB doubling to 64 kB (or one block for a larger request), freed
 * together, or back to a mark (the renderer drops an output tag's or a
 * loop pass's temporary values that way).  And the host's cancel poll,
 * asked every TFM_CHAT_POLL_UNITS units of work, and the first failure's
 * message, which the parser and the renderer keep alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_arena.h"
#include "tfm/status.h"

#define BLOCK_MIN 4096
#define BLOCK_MAX 65536

static void *
malloc_hook(void *arg, size_t n)
{
	(void) arg;
	return malloc(n);
}

static void
free_hook(void *arg, void *p)
{
	(void) arg;
	free(p);
}

void
chat_mem_init(chat_mem *m, const tfm_chat_opts *o)
{
	memset(m, 0, sizeof(*m));
	if (o && o->alloc && o->dealloc)
	{
		m->alloc = o->alloc;
		m->dealloc = o->dealloc;
		m->arg = o->alloc_arg;
	}
	else
	{
		m->alloc = malloc_hook;
		m->dealloc = free_hook;
	}
	m->budget = o ? o->budget : 0;
}

int
chat_failure(tfm_status *err, int *failed, int *first, int code, int line,
			 const char *fmt, const char *a, const char *b)
{
	if (!*failed)
	{
		char		buf[256];

		snprintf(buf, sizeof(buf), fmt, a, b);
		if (line > 0)
			tfm_status_set(err, code, "chat template line %d: %s", line, buf);
		else
			tfm_status_set(err, code, "%s", buf);
		*first = code;
	}
	*failed = 1;
	return code;
}

int
chat_mem_failure(const chat_mem *m, const char *doing, char *msg, size_t cap)
{
	if (!m->over_budget)
	{
		snprintf(msg, cap, "out of memory");
		return TFM_ENOMEM;
	}
	snprintf(msg, cap, "%s needs more memory than the budget of %zu bytes", doing, m->budget);
	return TFM_ELIMIT;
}

void *
chat_mem_alloc(chat_mem *m, size_t n)
{
	void	   *p;

	if (m->budget > 0 && (n > m->budget || m->used > m->budget - n))
	{
		m->over_budget = 1;
		return NULL;
	}
	if (!(p = m->alloc(m->arg, n ? n : 1)))
		return NULL;
	m->used += n;
	if (m->used > m->peak)
		m->peak = m->used;
	return p;
}

void
chat_mem_free(chat_mem *m, void *p, size_t n)
{
	if (!p)
		return;
	m->dealloc(m->arg, p);
	m->used -= n;
}

void *
chat_mem_grow(chat_mem *m, void *p, size_t n, size_t n2)
{
	void	   *q = chat_mem_alloc(m, n2);

	if (!q)
		return NULL;
	if (p)
	{
		memcpy(q, p, n);
		chat_mem_free(m, p, n);
	}
	return q;
}

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

	if (n > ((size_t) -1) / 2)
		return NULL;
	n = (n + 15) & ~(size_t) 15;
	if (!b || b->used + n > b->cap)
	{
		size_t		cap = a->nblocks < 4 ? (size_t) BLOCK_MIN << a->nblocks : BLOCK_MAX;

		if (n > cap)
			cap = n;
		if (!(b = chat_mem_alloc(a->mem, sizeof(chat_block) + cap)))
			return NULL;
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
		a->nblocks++;
	}
	memset(b->data + b->used, 0, n);
	b->used += n;
	return b->data + b->used - n;
}

chat_mark
chat_arena_mark(const chat_arena *a)
{
	chat_mark	m = {a->head, a->head ? a->head->used : 0};

	return m;
}

void
chat_arena_release(chat_arena *a, chat_mark m)
{
	while (a->head && a->head != m.head)
	{
		chat_block *n = a->head->next;

		chat_mem_free(a->mem, a->head, sizeof(chat_block) + a->head->cap);
		a->head = n;
		a->nblocks--;
	}
	if (a->head)
		a->head->used = m.used;
}

void
chat_arena_free(chat_arena *a)
{
	chat_mark	none = {NULL, 0};

	chat_arena_release(a, none);
}

void
chat_poll_init(chat_poll *p, const tfm_chat_opts *o)
{
	memset(p, 0, sizeof(*p));
	p->cancel = o ? o->cancel : NULL;
	p->arg = o ? o->cancel_arg : NULL;
	p->next = TFM_CHAT_POLL_UNITS;
}

int
chat_poll_due(chat_poll *p)
{
	p->next = p->work + TFM_CHAT_POLL_UNITS;
	if (!p->canceled && p->cancel && p->cancel(p->arg))
		p->canceled = 1;
	return p->canceled;
}
