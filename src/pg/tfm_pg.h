/*
 * tfm_pg.h — shared declarations of tfm's PostgreSQL layer: settings,
 * catalog access (models and tensors in schema tfm), the per-backend model
 * cache, and ownership of core objects by memory contexts.
 */
#ifndef TFM_PG_H
#define TFM_PG_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/array.h"

#include "tfm/model.h"

/* ---- settings (guc.c) ---- */
extern int	tfm_threads;
extern char *tfm_blis_arch;
extern bool tfm_progress;
/* initialise BLIS on first use and apply tfm.threads; call before any compute */
void		tfm_backend_ready(void);

/* ---- a model's catalog row (catalog.c) ---- */
typedef struct TfmModelRow
{
	int32		id;
	int64		version;
	int64		steps;
	char		name[NAMEDATALEN * 2];
	char		task[16];
	char	   *tokenizer;		/* NULL if none */
	char	   *target_tokenizer;
	int			n_labels;
	char	  **labels;			/* classify */
	tfm_config	cfg;
} TfmModelRow;

/* read a model's row; errors if it does not exist (unless missing_ok) */
bool		tfm_catalog_lookup(const char *name, TfmModelRow *row, bool missing_ok);
/* read its tensors into a new core model, checking every name and shape */
tfm_model  *tfm_catalog_load(const TfmModelRow *row);
/* write every tensor and take a new version; returns it */
int64		tfm_catalog_save(TfmModelRow *row, const tfm_model *m, int64 add_steps);
/* the config as the JSON stored in tfm.models.config */
char	   *tfm_config_json(const tfm_config *cfg);
tfm_task	tfm_task_from_name(const char *task);
const char *tfm_task_name(int task);

/* ---- the per-backend cache (cache.c) ---- */
/*
 * When a cache entry was last checked against the catalog: valid for the
 * rest of that statement (same transaction, command and statement start).
 */
typedef struct TfmStamp
{
	uint32		lxid;
	uint32		cid;
	int64		stmt_start;
} TfmStamp;
void		tfm_stamp_now(TfmStamp *s);
bool		tfm_stamp_is_now(const TfmStamp *s);

/*
 * The model named name, loaded once per backend and version.  The returned
 * model belongs to the cache: use it within the current call only.
 */
tfm_model  *tfm_cache_get(const char *name, const TfmModelRow **row);
/*
 * The model for an inference function: from the cache, checked to have the
 * task (and, if text is read or written, a tokenizer).
 */
tfm_model  *tfm_model_for(const char *name, tfm_task task, bool needs_tokenizer,
						  const TfmModelRow **rowp);
/* take a model out of the cache (for training); the caller owns it */
tfm_model  *tfm_cache_take(const char *name, TfmModelRow *row);
/* hand a model (and its row, copied) to the cache */
void		tfm_cache_put(const TfmModelRow *row, tfm_model *m);
void		tfm_cache_forget(const char *name);
/* the model deployed for a task (read once per statement); errors if none */
const char *tfm_deployed_model(const char *task);

/* ---- core objects owned by a memory context (guard.c) ---- */
/* free m when the current memory context is reset or deleted, unless released */
typedef struct TfmGuard TfmGuard;
TfmGuard   *tfm_guard_model(tfm_model *m);
/* the same for any object with its free function */
TfmGuard   *tfm_guard(void (*free_fn) (void *), void *obj);
void		tfm_guard_release(TfmGuard *g);

/* ---- argument checks ---- */
#define TFM_ARG_NOT_NULL(n, what) \
	do { if (PG_ARGISNULL(n)) ereport(ERROR, \
		(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
		 errmsg("%s must not be NULL", what))); } while (0)

char	   *tfm_text_arg(FunctionCallInfo fcinfo, int n, const char *what);
/* a text[] argument: not NULL, one-dimensional, NULL elements refused unless allowed */
int			tfm_text_array_arg(FunctionCallInfo fcinfo, int n, const char *what,
							   bool allow_nulls, Datum **elems, bool **nulls);
/* a one-dimensional text[] of n values (nulls may be NULL) */
ArrayType  *tfm_text_array(Datum *values, bool *nulls, int n);

#endif							/* TFM_PG_H */
