/*
 * train_plan.h — a training run's plan (train_plan.c): the schedule's
 * length, the passes over the rows it allows and the dropout, weight decay,
 * warmup and mid-epoch evaluations they call for; the default batch in
 * passes that fit tfm.work_mem.
 */
#ifndef TFM_TRAIN_PLAN_H
#define TFM_TRAIN_PLAN_H

#include "postgres.h"

#include "tfm/train.h"
#include "runtime/train/train_run.h"

/* the dropout of the run's plan into the model (after a resume's restore) */
void		tfm_run_apply_dropout(TrainRun *run, float dropout);
/*
 * The schedule's length is known (or re-estimated): set it, capped by
 * max_steps, with the default warmup (unless given) and, until step
 * TFM_PLAN_FIXED_STEP, the plan
 */
void		tfm_run_set_total_steps(TrainRun *run, tfm_train_opts *o, int64 total);
/* with a time_limit: the schedule's length from the speed so far (steps 5, 50, every 250) */
void		tfm_run_fit_to_time(TrainRun *run);
/* the default seq2seq batch cut into passes that fit tfm.work_mem (NOTICE when cut) */
void		tfm_run_fit_default_batch(TrainRun *run);

#endif							/* TFM_TRAIN_PLAN_H */
