/*
 * runtime.h — what runs inside a backend, at the top of its rooms:
 * settings and the start of BLIS (settings.c) and the bounds on memory
 * (limits.c).  The rooms below: jobs/ (jobs and their background
 * workers), train/ (training, checkpoints, evaluation), infer/
 * (classification, generation, translation, chat prompts, the precision
 * inference runs at), cache/ (models, tokenizers and weights kept per
 * backend or shared); new models: new_model.h; rows of a query as token
 * ids: rows.h.
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
extern int	tfm_max_model_bytes;	/* kB */
extern int	tfm_gguf_row_bytes;	/* kB */
extern int	tfm_gguf_slice_bytes;	/* kB */
extern int	tfm_precision_setting;	/* tfm.precision: -1 = auto, else a tfm_precision */
extern bool tfm_share_weights;
extern bool tfm_split_special_tokens;	/* tfm.split_special_tokens */
extern int	tfm_job_workers;	/* tfm.job_workers: 0 = none */
extern int	tfm_job_naptime;	/* tfm.job_naptime, ms */
extern int	tfm_job_batch_timeout;	/* tfm.job_batch_timeout, ms: 0 = none */
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
/*
 * An import of n_params parameters (tfm's own limit, TFM_PARAMS_MAX) whose
 * rows will take float_bytes of float32 values and kept_bytes of a file's
 * blocks, against tfm.max_model_bytes
 */
void		tfm_check_model_bytes(int64 n_params, uint64 float_bytes, uint64 kept_bytes,
								  const char *model);

#endif							/* TFM_PG_RUNTIME_H */
