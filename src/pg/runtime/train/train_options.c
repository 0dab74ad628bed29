/*
 * train_options.c — a training run's arguments, parsed and checked (see
 * train_options.h): the task's defaults (tfm_train_defaults), then each
 * argument given over them, each with its range; keep, patience, precision
 * and checkpoint_activations also for tfm_fit's resume, which checks them
 * against the checkpoint's.  The defaults the plan revises (dropout, weight
 * decay, warmup) are only marked here: train_plan.c.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "runtime/train/train_options.h"
#include "runtime/runtime.h"

static void
check_positive_int(int v, const char *what, int hi)
{
	if (v < 1 || v > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %d, not %d", what, hi, v)));
}

TfmKeep
tfm_keep_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *s = text_to_cstring(PG_GETARG_TEXT_PP(n));

	if (strcmp(s, "last") == 0)
		return TFM_KEEP_LAST;
	if (strcmp(s, "best") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown keep \"%s\"", s),
				 errhint("Valid values are last and best.")));
	return TFM_KEEP_BEST;
}

int
tfm_patience_arg(FunctionCallInfo fcinfo, int n)
{
	int			p;

	if (n < 0 || PG_NARGS() <= n || PG_ARGISNULL(n))
		return TFM_PATIENCE_DEFAULT;
	p = PG_GETARG_INT32(n);
	if (p < 0 || p > TFM_PATIENCE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("patience must be between 0 (no early stopping) and %d, not %d",
						TFM_PATIENCE_MAX, p)));
	return p;
}

bool
tfm_checkpoint_activations_arg(FunctionCallInfo fcinfo, int n, bool dflt)
{
	if (n < 0 || PG_NARGS() <= n || PG_ARGISNULL(n))
		return dflt;
	return PG_GETARG_BOOL(n);
}

tfm_precision
tfm_train_precision_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *s;

	if (n < 0 || PG_NARGS() <= n || PG_ARGISNULL(n))
		return TFM_PREC_FP32;
	s = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (strcmp(s, "fp32") == 0)
		return TFM_PREC_FP32;
	if (strcmp(s, "bf16") == 0)
		return TFM_PREC_BF16;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown training precision \"%s\"", s),
			 strcmp(s, "int8") == 0 || strcmp(s, "int4") == 0 || strcmp(s, "gguf") == 0 ||
			 strcmp(s, "auto") == 0 ?
			 errdetail("%s is an inference precision (tfm.precision); training has none.", s) : 0,
			 errhint("Valid training precisions are fp32 (the default) and bf16 (mixed precision).")));
	return TFM_PREC_FP32;
}

void
tfm_run_options(FunctionCallInfo fcinfo, TrainRun *run, tfm_train_opts *o, int keep_arg,
				int prec_arg, int patience_arg)
{
	const tfm_config *c = &run->row.cfg;

	tfm_train_defaults(c, o, &run->batch, &run->rd.val_fraction);
	run->epochs = PG_ARGISNULL(A_EPOCHS) ? TFM_EPOCHS_DEFAULT : PG_GETARG_INT32(A_EPOCHS);
	check_positive_int(run->epochs, "epochs", TFM_EPOCHS_MAX);
	if (!PG_ARGISNULL(A_BATCH))
	{
		run->batch = PG_GETARG_INT32(A_BATCH);
		check_positive_int(run->batch, "batch_size", TFM_BATCH_MAX);
	}
	if (!PG_ARGISNULL(A_LR))
	{
		o->lr = PG_GETARG_FLOAT4(A_LR);
		if (!(o->lr > 0.0f && o->lr <= TFM_LR_MAX))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lr must be greater than 0 and at most %d", TFM_LR_MAX)));
	}
	o->warmup = -1;
	if (!PG_ARGISNULL(A_WARMUP))
	{
		o->warmup = PG_GETARG_INT32(A_WARMUP);
		if (o->warmup < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("warmup must not be negative")));
	}
	if (!PG_ARGISNULL(A_SCHEDULE))
	{
		char	   *s = text_to_cstring(PG_GETARG_TEXT_PP(A_SCHEDULE));

		if (strcmp(s, "constant") == 0)
			o->schedule = TFM_SCHED_CONSTANT;
		else if (strcmp(s, "linear") == 0)
			o->schedule = TFM_SCHED_LINEAR;
		else if (strcmp(s, "cosine") == 0)
			o->schedule = TFM_SCHED_COSINE;
		else if (strcmp(s, "inverse_sqrt") == 0)
			o->schedule = TFM_SCHED_INVSQRT;
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown schedule \"%s\"", s),
					 errhint("Valid schedules are constant, linear, cosine and inverse_sqrt.")));
	}
	run->auto_wd = PG_ARGISNULL(A_WD);
	if (!PG_ARGISNULL(A_WD))
	{
		o->weight_decay = PG_GETARG_FLOAT4(A_WD);
		if (!(o->weight_decay >= 0.0f && o->weight_decay <= TFM_WEIGHT_DECAY_MAX))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weight_decay must be between 0 and %d", TFM_WEIGHT_DECAY_MAX)));
	}
	if (!PG_ARGISNULL(A_CLIP))
		o->clip = PG_GETARG_FLOAT4(A_CLIP);
	if (!(o->clip >= 0.0f) || isinf(o->clip))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("clip must be 0 (no clipping) or a positive norm")));
	if (!PG_ARGISNULL(A_SMOOTH))
	{
		o->label_smoothing = PG_GETARG_FLOAT4(A_SMOOTH);
		if (!(o->label_smoothing >= 0.0f && o->label_smoothing < 1.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("label_smoothing must be at least 0 and less than 1")));
	}
	run->val_source = PG_ARGISNULL(A_VAL) ? TFM_VAL_AUTO : TFM_VAL_GIVEN;
	if (!PG_ARGISNULL(A_VAL))
	{
		run->rd.val_fraction = PG_GETARG_FLOAT4(A_VAL);
		if (!(run->rd.val_fraction >= 0.0f && run->rd.val_fraction < 1.0f))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("val_fraction must be at least 0 and less than 1")));
	}
	if (!PG_ARGISNULL(A_SEED))
		o->seed = (uint64) PG_GETARG_INT64(A_SEED);
	if (!PG_ARGISNULL(A_TIME))
	{
		Interval   *iv = PG_GETARG_INTERVAL_P(A_TIME);

		if (iv->month > 12 * 100 || iv->day > 36500 || iv->month < 0 || iv->day < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time_limit must be positive and at most 100 years")));
		run->time_limit_us = iv->time + (int64) iv->day * USECS_PER_DAY +
			(int64) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;
		if (run->time_limit_us <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("time_limit must be positive")));
	}
	run->max_steps = PG_ARGISNULL(A_MAX_STEPS) ? 0 : PG_GETARG_INT64(A_MAX_STEPS);
	if (run->max_steps < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_steps must not be negative")));
	run->accumulate = PG_ARGISNULL(A_ACCUM) ? 1 : PG_GETARG_INT32(A_ACCUM);
	check_positive_int(run->accumulate, "accumulate", TFM_ACCUMULATE_MAX);
	run->batch_tokens = c->task == TFM_TASK_SEQ2SEQ && PG_ARGISNULL(A_BATCH) ? TFM_BATCH_TOKENS_SEQ2SEQ : 0;
	if (PG_NARGS() > A_BATCH_TOKENS && !PG_ARGISNULL(A_BATCH_TOKENS))
	{
		if (c->task == TFM_TASK_LM)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("an lm model's batches are batch_size windows of max_len tokens; batch_tokens does not apply")));
		run->batch_tokens = PG_GETARG_INT32(A_BATCH_TOKENS);
		check_positive_int(run->batch_tokens, "batch_tokens", 16777216);
	}
	/* the default step (accumulate's SQL default is 1: the same step either way) */
	run->batch_auto = run->batch_tokens > 0 && run->accumulate == 1 &&
		!(PG_NARGS() > A_BATCH_TOKENS && !PG_ARGISNULL(A_BATCH_TOKENS));
	run->keep = TFM_KEEP_BEST;
	run->keep_given = keep_arg >= 0 && PG_NARGS() > keep_arg && !PG_ARGISNULL(keep_arg);
	if (run->keep_given)
		run->keep = tfm_keep_arg(fcinfo, keep_arg);
	run->patience = tfm_patience_arg(fcinfo, patience_arg);
	/* a model created without dropout gets the plan's; an imported one keeps its own */
	run->auto_dropout = run->row.dropout_auto;
	run->rd.chunk_rows = tfm_train_chunk_rows;
	o->precision = tfm_train_precision_arg(fcinfo, prec_arg);
}
