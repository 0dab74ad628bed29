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
	tfm_model  *model;
};

static void
guard_fire(void *arg)
{
	TfmGuard   *g = arg;

	if (g->model)
		tfm_model_free(g->model);
	g->model = NULL;
}

TfmGuard *
tfm_guard_model(tfm_model *m)
{
	TfmGuard   *g = palloc0(sizeof(TfmGuard));

	g->model = m;
	g->cb.func = guard_fire;
	g->cb.arg = g;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &g->cb);
	return g;
}

void
tfm_guard_release(TfmGuard *g)
{
	g->model = NULL;
}
