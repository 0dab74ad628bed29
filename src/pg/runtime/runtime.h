/*
 * runtime.h — what runs inside a backend: settings and the start of BLIS
 * (settings.c), the bounds on memory (limits.c), the precision inference
 * runs at (precision.c), weights shared between backends
 * (shared_weights.c), the model cache (cache.c) and new models
 * (new_model.c).  Tokens and tokenizers:
 * rows.h; training: train_run.h.
 */
#ifndef TFM_PG_RUNTIME_H
#define TFM_PG_RUNTIME_H

#include "postgres.h"
#include "fmgr.h"

#include "storage/storage.h"

/* ---- settings (settings.c) ---- */
extern int	tfm_threads;
extern char *tfm_blis_arch;
extern bool tfm_progress;
extern int	tfm_train_chunk_rows;
extern int	tfm_work_mem;		/* kB */
extern int	tfm_max_work_mem;	/* kB: tfm.max_work_mem, the ceiling of tfm.work_mem */
extern double tfm_max_parameters;
extern int	tfm_precision_setting;	/* tfm.precision: -1 = auto, else a tfm_precision */
extern bool tfm_share_weights;
/* define the settings (_PG_init) */
void		tfm_settings_define(void);
/* initialise BLIS on first use and apply tfm.threads; call before any compute */
void		tfm_backend_ready(void);

/*
 * tfm.work_mem (limits.c): a pass's size is checked before it runs.
 * tfm_work_mem_fits also sets the model's ws_limit (NULL: none);
 * tfm_work_mem_check raises "<doing> model "<name>" needs a workspace of
 * <size>" (54000) with a hint to raise tfm.work_mem or lower <lower>.
 */
size_t		tfm_work_mem_bytes(void);
bool		tfm_work_mem_fits(tfm_model *m, size_t bytes);
/* the same for work without a model: "<what> needs a workspace of <size>" */
void		tfm_work_mem_require(size_t bytes, const char *what, const char *lower);
void		tfm_work_mem_check(tfm_model *m, size_t bytes, const char *doing, const char *name,
							   const char *lower);
size_t		tfm_pass_bytes(const tfm_model *m, int B, int T, int Tt, bool training,
						   bool attention);
void		tfm_batch_check(tfm_model *m, const tfm_batch *b, bool training, const char *doing,
							const char *name, const char *lower);
/* the parameters of a config (its tensors' sizes; nothing allocated but their list) */
int64		tfm_config_params(const tfm_config *c);
/*
 * The model-size cap (tfm.max_parameters): an error naming the size and
 * the setting when n_params is over it.
 */
void		tfm_check_max_parameters(int64 n_params, const char *model);

/* ---- inference precision (precision.c) ---- */
/* pack (or unpack) a model for the precision its inference uses now */
void		tfm_apply_precision(tfm_model *m, const TfmModelRow *row);
/* values[0..4] of tfm_info(): precision, why, bf16 kernel, int8 kernel, kernel reason */
void		tfm_precision_info(Datum *values);

/* ---- weights shared between backends (shared_weights.c) ---- */
/* a model for inference, over the one shared copy of its weights */
tfm_model  *tfm_shared_load(const TfmModelRow *row);
/* the GGUF blocks kept for the row's version given to m for int4 (gguf_kept.c; none: nothing) */
void		tfm_attach_kept(tfm_model *m, const TfmModelRow *row);
/* remove the shared copies of a dropped model */
void		tfm_shared_forget(int32 model_id);
/* a mapped model's bf16/int8 copies from (or into) the shared file; false: pack privately */
bool		tfm_shared_precision(tfm_model *m, const TfmModelRow *row, tfm_precision p);

/* ---- the per-backend cache (cache.c) ---- */
/* a new model of config c for model name, guarded, initialised from seed */
tfm_model  *tfm_model_new(const tfm_config *c, const char *name, uint64 seed);
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
/*
 * A new model of config c (new_model.c): nm's row (config_json and
 * parameters filled here) and weights initialised from seed; its parameters.
 */
int64		tfm_model_create_stored(TfmNewModel *nm, const tfm_config *c, uint64 seed);
/* the alias tfm_classify(text) resolves; errors if nothing is deployed as it */
#define TFM_DEFAULT_ALIAS "default"
const char *tfm_default_alias(void);

#endif							/* TFM_PG_RUNTIME_H */
