/*
 * train_options.h — a training run's arguments: their positions, shared by
 * tfm_train and tfm_fit, and their parsing and checks (train_options.c).
 */
#ifndef TFM_TRAIN_OPTIONS_H
#define TFM_TRAIN_OPTIONS_H

#include "postgres.h"

#include "fmgr.h"

#include "tfm/train.h"
#include "runtime/train/train_run.h"

/* arguments shared by tfm_train and tfm_fit, in this order */
enum
{
	A_MODEL, A_QUERY, A_EPOCHS, A_BATCH, A_LR, A_WARMUP, A_SCHEDULE, A_WD, A_CLIP,
	A_SMOOTH, A_VAL, A_SEED, A_TIME, A_MAX_STEPS, A_ACCUM, A_BATCH_TOKENS,
	A_TRAIN_NARGS
};

/*
 * Parse and check the options (run->row must be read); o receives the
 * optimizer's and the precision (argument prec_arg); keep, precision and
 * patience are the arguments so numbered (-1: none).
 */
void		tfm_run_options(FunctionCallInfo fcinfo, TrainRun *run, tfm_train_opts *o,
							int keep_arg, int prec_arg, int patience_arg);

/* keep => 'last' | 'best' (argument n, not NULL) */
TfmKeep		tfm_keep_arg(FunctionCallInfo fcinfo, int n);
/* patience => evaluations without improvement, 0 = never stop early (argument n; absent or NULL: the default) */
int			tfm_patience_arg(FunctionCallInfo fcinfo, int n);
/* checkpoint_activations => true | false (argument n; absent or NULL: dflt) */
bool		tfm_checkpoint_activations_arg(FunctionCallInfo fcinfo, int n, bool dflt);
/* train_precision => 'fp32' | 'bf16' (argument n; absent or NULL: fp32) */
tfm_precision tfm_train_precision_arg(FunctionCallInfo fcinfo, int n);

#endif							/* TFM_TRAIN_OPTIONS_H */
