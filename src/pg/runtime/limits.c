/*
 * limits.c — the bounds on memory that settings set: tfm.work_mem, on the
 * memory a call's batch shape chooses (activations, attention weights,
 * decoders' caches, beams), and tfm.max_parameters, on a model's size.
 *
 * Every pass is sized before it runs (tfm_model_workspace_bytes,
 * tfm_decoder_bytes, tfm_beam_bytes in the core: upper bounds of what the
 * core then allocates) and refused with SQLSTATE 54000 if the size is over
 * the setting; callers that batch by themselves (tfm_classify over arrays,
 * validation, tfm_translate and tfm_generate over arrays) split a batch
 * that does not fit instead.  Parameters, gradients and the optimizer's
 * moments are not counted: they grow with the model, not with the call.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "tfm/blas.h"
#include "tfm/precision.h"
#include "runtime/runtime.h"

size_t
tfm_work_mem_bytes(void)
{
	return (size_t) Min(tfm_work_mem, tfm_max_work_mem) * 1024;
}

/* "512 kB", "12.3 MB", "12.3 GB" */
static char *
pretty(size_t bytes)
{
	if (bytes < (size_t) 1024 * 1024)
		return psprintf("%zu kB", (bytes + 1023) / 1024);
	if (bytes < (size_t) 1024 * 1024 * 1024)
		return psprintf("%.1f MB", (double) bytes / (1024.0 * 1024.0));
	if (bytes < (size_t) 1024 * 1024 * 1024 * 1024)
		return psprintf("%.1f GB", (double) bytes / (1024.0 * 1024.0 * 1024.0));
	return psprintf("%.1f TB", (double) bytes / (1024.0 * 1024.0 * 1024.0 * 1024.0));
}

bool
tfm_work_mem_fits(tfm_model *m, size_t bytes)
{
	if (m)
		m->ws_limit = tfm_work_mem_bytes();
	return bytes <= tfm_work_mem_bytes();
}

void
tfm_work_mem_check(tfm_model *m, size_t bytes, const char *doing, const char *name,
				   const char *lower)
{
	if (tfm_work_mem_fits(m, bytes))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s model \"%s\" needs a workspace of %s", doing, name, pretty(bytes)),
			 errhint("Raise tfm.work_mem (now %s), or lower %s.",
					 GetConfigOptionByName("tfm.work_mem", NULL, false), lower)));
}

void
tfm_work_mem_require(size_t bytes, const char *what, const char *lower)
{
	if (bytes <= tfm_work_mem_bytes())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s needs a workspace of %s", what, pretty(bytes)),
			 errhint("Raise tfm.work_mem (now %s), or %s.",
					 GetConfigOptionByName("tfm.work_mem", NULL, false), lower)));
}

static int
ws_flags(const tfm_model *m, bool training, bool attention)
{
	bool		lowp = training ? tfm_model_train_precision(m) != TFM_PREC_FP32 :
		tfm_model_precision(m) != TFM_PREC_FP32;

	return (training ? TFM_WS_TRAINING : 0) | (attention ? TFM_WS_ATTENTION : 0) |
		(lowp ? TFM_WS_LOWP : 0) |
		(training && m->checkpoint_activations ? TFM_WS_CHECKPOINT : 0) |
		(!training && tfm_model_precision(m) == TFM_PREC_INT4 ? TFM_WS_INT4 : 0);
}

size_t
tfm_pass_bytes(const tfm_model *m, int B, int T, int Tt, bool training, bool attention)
{
	/* the batch's own ids, targets and pad masks, besides the core's workspace */
	return tfm_model_workspace_bytes(&m->cfg, B, T, Tt, ws_flags(m, training, attention),
									 tfm_get_threads()) +
		(size_t) B * (T + 2 * (size_t) Tt + 2) * sizeof(int32) * 2;
}

void
tfm_batch_check(tfm_model *m, const tfm_batch *b, bool training, const char *doing,
				const char *name, const char *lower)
{
	tfm_work_mem_check(m, tfm_pass_bytes(m, b->B, b->T, b->Tt, training, b->keep_attention),
					   doing, name, lower);
}

int64
tfm_config_params(const tfm_config *c)
{
	tfm_param_info *info = NULL;
	size_t		n_floats;
	int			k = tfm_config_tensors(c, &info, &n_floats);
	int64		n = 0;

	if (!info)
		tfm_raise_code(TFM_ENOMEM, "out of memory");
	for (int i = 0; i < k; i++)
		n += (int64) info[i].size;
	free(info);
	return n;
}

void
tfm_check_model_bytes(int64 n_params, uint64 float_bytes, uint64 kept_bytes, const char *model)
{
	uint64		limit = (uint64) tfm_max_model_bytes * 1024;

	if ((uint64) n_params > TFM_PARAMS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" would have " INT64_FORMAT " parameters, more than tfm's limit of %zu",
						model, n_params, TFM_PARAMS_MAX)));
	if (float_bytes + kept_bytes > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" would take %s, more than tfm.max_model_bytes (%s)", model,
						pretty(float_bytes + kept_bytes), pretty(limit)),
				 kept_bytes == 0 ?
				 errdetail("Its " INT64_FORMAT " parameters are stored as float32 values (%s).",
						   n_params, pretty(float_bytes)) :
				 errdetail("Its " INT64_FORMAT " parameters are stored as its file's blocks (%s) and, "
						   "where the file has none tfm runs, float32 values (%s).",
						   n_params, pretty(kept_bytes), pretty(float_bytes)),
				 errhint("A superuser can raise tfm.max_model_bytes.")));
}

void
tfm_check_max_parameters(int64 n_params, const char *model)
{
	if ((double) n_params > tfm_max_parameters)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" would have " INT64_FORMAT " parameters, more than tfm.max_parameters (%.0f)",
						model, n_params, tfm_max_parameters),
				 errhint("A superuser can raise tfm.max_parameters (at most %.0f).",
						 (double) TFM_PARAMS_MAX)));
}
