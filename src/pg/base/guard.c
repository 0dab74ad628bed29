/*
 * guard.c — core objects (malloc'd) owned by a PostgreSQL memory context:
 * when the context is reset or deleted, as on an ERROR, the object is freed
 * unless it was released to a longer-lived owner (the model cache).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "tfm_pg.h"

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
