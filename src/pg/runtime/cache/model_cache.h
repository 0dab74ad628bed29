/*
 * model_cache.h — models loaded once per backend and version
 * (model_cache.c), and the alias tfm_classify(text) resolves.
 */
#ifndef TFM_PG_MODEL_CACHE_H
#define TFM_PG_MODEL_CACHE_H

#include "postgres.h"

#include "storage/models/models.h"

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
/* the model this session has loaded under name (no check, no load), or NULL */
tfm_model  *tfm_cache_loaded(const char *name, const TfmModelRow **rowp);
/* take a model out of the cache (for training); the caller owns it */
tfm_model  *tfm_cache_take(const char *name, TfmModelRow *row);
/* hand a model (and its row, copied) to the cache */
void		tfm_cache_put(const TfmModelRow *row, tfm_model *m);
void		tfm_cache_forget(const char *name);
/* the alias tfm_classify(text) resolves; errors if nothing is deployed as it */
#define TFM_DEFAULT_ALIAS "default"
const char *tfm_default_alias(void);

#endif							/* TFM_PG_MODEL_CACHE_H */
