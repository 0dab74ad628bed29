/*
 * model_cache.c — models loaded once per backend and version.
 *
 * An entry holds a model's catalog row and its core model.  Each call
 * validates the entry once per statement (local transaction id + command
 * id): it re-reads the model's version from tfm.models, which under MVCC
 * shows saves committed by other sessions (read-committed: from the next
 * statement on) and never shows a rolled-back save.  Versions come from a
 * sequence, so equal versions always mean equal weights.  At most
 * TFM_CACHE_MAX models stay loaded; the least recently used goes first
 * (lru.c).  Also the alias tfm_classify(text) uses, checked once per
 * statement.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "tfm/precision.h"
#include "runtime/cache/lru.h"
#include "runtime/runtime.h"
#include "runtime/cache/inference_precision.h"
#include "runtime/cache/shared_weights.h"
#include "runtime/cache/model_cache.h"
#include "storage/models/gguf_kept.h"
#include "storage/models/models.h"

#define TFM_CACHE_MAX 8

typedef struct CacheEntry
{
	TfmModelRow row;			/* strings in the cache's context */
	tfm_model  *model;
	bool		for_gguf;		/* loaded to run at gguf (tfm_shared_load_gguf) */
} CacheEntry;

static TfmLru *cache = NULL;
static MemoryContext cache_cxt = NULL;

static char *
dup_or_null(const char *s)
{
	return s ? MemoryContextStrdup(cache_cxt, s) : NULL;
}

static Oid *
dup_oids(const Oid *o, int n)
{
	Oid		   *d = MemoryContextAlloc(cache_cxt, sizeof(Oid) * Max(n, 1));

	if (n > 0)
		memcpy(d, o, sizeof(Oid) * n);
	return d;
}

static void
copy_acl(TfmAcl *dst, const TfmAcl *src)
{
	*dst = *src;
	dst->use = dup_oids(src->use, src->n_use);
	dst->train = dup_oids(src->train, src->n_train);
}

static void
pfree_if(void *p)
{
	if (p)
		pfree(p);
}

static void
free_acl(TfmAcl *a)
{
	pfree_if(a->use);
	pfree_if(a->train);
	a->use = a->train = NULL;
}

static void
copy_row(TfmModelRow *dst, const TfmModelRow *src)
{
	*dst = *src;
	dst->tokenizer = dup_or_null(src->tokenizer);
	dst->target_tokenizer = dup_or_null(src->target_tokenizer);
	if (src->n_labels > 0)
	{
		dst->labels = MemoryContextAlloc(cache_cxt, sizeof(char *) * src->n_labels);
		for (int i = 0; i < src->n_labels; i++)
			dst->labels[i] = MemoryContextStrdup(cache_cxt, src->labels[i]);
	}
	copy_acl(&dst->acl, &src->acl);
}

static void
free_row(TfmModelRow *r)
{
	pfree_if(r->tokenizer);
	pfree_if(r->target_tokenizer);
	for (int i = 0; i < r->n_labels; i++)
		pfree(r->labels[i]);
	pfree_if(r->labels);
	free_acl(&r->acl);
}

/* the LRU's free callback: the model and the row's strings */
static void
free_entry(void *payload)
{
	CacheEntry *e = payload;

	tfm_model_free(e->model);
	free_row(&e->row);
}

static CacheEntry *
find(const char *name)
{
	return cache ? tfm_lru_find(cache, name) : NULL;
}

static void
evict(CacheEntry *e)
{
	tfm_lru_evict(cache, e);
}

void
tfm_cache_put(const TfmModelRow *row, tfm_model *m)
{
	CacheEntry *e;

	if (cache == NULL)
	{
		cache = tfm_lru_create("tfm model cache", TFM_CACHE_MAX, sizeof(CacheEntry), free_entry);
		cache_cxt = tfm_lru_context(cache);
	}
	e = tfm_lru_insert(cache, row->name);
	copy_row(&e->row, row);
	e->model = m;
	e->for_gguf = m->absent != NULL;
	tfm_lru_stamp(cache, e);
}

/* whether row's model runs at gguf in this session */
static bool
runs_gguf(const TfmModelRow *row)
{
	const char *why;

	return tfm_inference_precision(row, &why) == TFM_PREC_GGUF;
}

/* the alias last resolved, valid for the statement that resolved it */
static char alias_name[TFM_NAME_MAX + 1];
static char alias_model[TFM_NAME_MAX + 1];
static TfmStamp alias_stamp;

static tfm_model *
cache_lookup(const char *name, const TfmModelRow **rowp)
{
	CacheEntry *e;
	TfmModelRow row;
	tfm_model  *m;
	TfmGuard   *guard;

	if (tfm_stamp_is_now(&alias_stamp) && strcmp(name, alias_name) == 0)
		name = alias_model;
	e = find(name);

	if (e && tfm_lru_checked_now(cache, e))
	{
		tfm_lru_use(cache, e);
		*rowp = &e->row;
		return e->model;
	}
	if (!tfm_catalog_lookup(name, &row, true))
	{
		if (e)
			evict(e);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	}
	/* before any work on the model's behalf (loading, writing a shared copy) */
	tfm_check_model_privilege(&row, TFM_PRIV_USE);
	/* name may be an alias: entries are kept under the model's own name */
	if (strcmp(name, row.name) != 0)
	{
		strlcpy(alias_name, name, sizeof(alias_name));
		strlcpy(alias_model, row.name, sizeof(alias_model));
		tfm_stamp_now(&alias_stamp);
		e = find(row.name);
	}
	/*
	 * a copy loaded for gguf, without the float32 values its blocks stand
	 * for, is loaded again whole (shared) for another precision
	 */
	if (e && e->model->absent && !runs_gguf(&row))
	{
		evict(e);
		e = NULL;
	}
	/* and a GGUF model loaded whole, back at gguf, without the values again */
	if (e && !e->for_gguf && e->model->int4_kept && runs_gguf(&row))
	{
		evict(e);
		e = NULL;
	}
	if (e && e->row.id == row.id && e->row.version == row.version)
	{
		/* grants and the precision change without a new version */
		free_acl(&e->row.acl);
		copy_acl(&e->row.acl, &row.acl);
		e->row.precision = row.precision;
		tfm_lru_stamp(cache, e);
		*rowp = &e->row;
		return e->model;
	}
	if (e)
		evict(e);
	/* to run at gguf, a GGUF model's blocks without the float32 values they stand for */
	m = runs_gguf(&row) && tfm_kept_stored(&row) ? tfm_shared_load_gguf(&row) :
		tfm_shared_load(&row);
	guard = tfm_guard_model(m);
	if (!m->int4_kept)
		tfm_attach_kept(m, &row, false);
	tfm_cache_put(&row, m);
	tfm_guard_release(guard);
	e = find(row.name);
	if (e == NULL || e->model != m)
		elog(ERROR, "model \"%s\" is missing from the cache just after loading", row.name);
	e->for_gguf = runs_gguf(&row);
	*rowp = &e->row;
	return m;
}

/* every read of a model for inference goes through here: use is checked */
tfm_model *
tfm_cache_get(const char *name, const TfmModelRow **rowp)
{
	tfm_model  *m = cache_lookup(name, rowp);

	tfm_check_model_privilege(*rowp, TFM_PRIV_USE);
	tfm_apply_precision(m, *rowp);
	return m;
}

tfm_model *
tfm_model_for(const char *name, tfm_task task, bool needs_tokenizer, const TfmModelRow **rowp)
{
	tfm_model  *m;

	tfm_backend_ready();
	m = tfm_cache_get(name, rowp);
	if ((*rowp)->cfg.task != (int) task)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has task \"%s\", not \"%s\"", name, (*rowp)->task,
						tfm_task_name(task))));
	if (needs_tokenizer && (*rowp)->tokenizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has no tokenizer, so it cannot read or write text", name)));
	return m;
}

tfm_model *
tfm_cache_loaded(const char *name, const TfmModelRow **rowp)
{
	CacheEntry *e = find(name);

	if (!e)
		return NULL;
	*rowp = &e->row;
	return e->model;
}

tfm_model *
tfm_cache_take(const char *name, TfmModelRow *row)
{
	CacheEntry *e = find(name);
	tfm_model  *m;

	tfm_check_writable("train", name);
	tfm_catalog_lookup(name, row, false);
	tfm_check_model_privilege(row, TFM_PRIV_TRAIN);
	/* a replicated model is trained on its publisher only */
	tfm_check_local("model", row->id, "train", row->name);
	e = find(row->name);		/* name may be an alias */
	/* a model over the shared read-only weights is not trained in place */
	if (e && e->row.id == row->id && e->row.version == row->version &&
		e->model->release_params == NULL)
	{
		m = e->model;
		e->model = NULL;
		evict(e);
		/* training runs fp32 and changes the weights: drop packed copies */
		tfm_model_set_precision(m, TFM_PREC_FP32);
		tfm_model_drop_rows(m);
		(void) tfm_model_keep_int4(m, NULL, 0);
		return m;
	}
	if (e)
		evict(e);
	return tfm_catalog_load(row);
}

void
tfm_cache_forget(const char *name)
{
	CacheEntry *e = find(name);

	if (e)
		evict(e);
}

/*
 * The alias that calls without a model name use ('default'), checked to
 * exist once per statement.
 */
const char *
tfm_default_alias(void)
{
	static TfmStamp checked;

	if (tfm_stamp_is_now(&checked))
		return TFM_DEFAULT_ALIAS;
	if (!tfm_catalog_has("tfm.aliases", TFM_DEFAULT_ALIAS))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no model is deployed as \"%s\"", TFM_DEFAULT_ALIAS),
				 errhint("Deploy one with tfm_deploy(model) (the database owner's alias), or name the model.")));
	tfm_stamp_now(&checked);
	return TFM_DEFAULT_ALIAS;
}
