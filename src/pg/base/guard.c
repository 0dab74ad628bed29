/*
 * guard.c — core objects (malloc'd) owned by a PostgreSQL memory context:
 * when the context is reset or deleted, as on an ERROR, the object is freed
 * unless it was released to a longer-lived owner (the model cache).  Also
 * the holder of a tokenizer or a counter being built (TfmTokOwner).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "base/base.h"

struct TfmGuard
{
	MemoryContextCallback cb;
	void		(*free_fn) (void *);
	void	   *obj;
};

static void
guard_fire(void *arg)
{
	TfmGuard   *g = arg;

	if (g->obj)
		g->free_fn(g->obj);
	g->obj = NULL;
}

TfmGuard *
tfm_guard(void (*free_fn) (void *), void *obj)
{
	TfmGuard   *g = palloc0(sizeof(TfmGuard));

	g->free_fn = free_fn;
	g->obj = obj;
	g->cb.func = guard_fire;
	g->cb.arg = g;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &g->cb);
	return g;
}

static void
free_model(void *m)
{
	tfm_model_free(m);
}

TfmGuard *
tfm_guard_model(tfm_model *m)
{
	return tfm_guard(free_model, m);
}

void
tfm_guard_release(TfmGuard *g)
{
	g->obj = NULL;
}

static void
tok_owner_fire(void *arg)
{
	TfmTokOwner *o = arg;

	if (o->tok)
		tfm_tok_free(o->tok);
	if (o->counter)
		tfm_tok_counter_free(o->counter);
	o->tok = NULL;
	o->counter = NULL;
}

TfmTokOwner *
tfm_tok_owner(MemoryContext cxt)
{
	TfmTokOwner *o = MemoryContextAllocZero(cxt, sizeof(TfmTokOwner));

	o->cb.func = tok_owner_fire;
	o->cb.arg = o;
	MemoryContextRegisterResetCallback(cxt, &o->cb);
	return o;
}
