/*
 * train_plan.c — a training run's plan (see train_plan.h).  How many passes
 * over the training rows the budget allows (epochs, or what max_steps or
 * time_limit leave of them at the measured speed) sets the dropout of a
 * model created without one and the weight decay of a run without one
 * (tfm_train_regularisation), the default warmup and the mid-epoch
 * evaluations, until step TFM_PLAN_FIXED_STEP; after that the plan stays as
 * it is.  With a time_limit the schedule's length follows the speed.  A
 * seq2seq model's default batch is cut into passes that fit tfm.work_mem.
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "runtime/train/train_plan.h"
#include "runtime/runtime.h"

/* the plan's dropout (or, after a resume, the checkpoint's) into the model */
void
tfm_run_apply_dropout(TrainRun *run, float dropout)
{
	tfm_model  *m = run->m;

	/* a training workspace is carved with or without dropout's masks */
	if ((m->cfg.dropout > 0.0f) != (dropout > 0.0f) ||
		(m->cfg.attn_dropout > 0.0f) != (dropout > 0.0f))
		tfm_model_trim(m);
	m->cfg.dropout = dropout;
	m->cfg.attn_dropout = dropout;
}

/*
 * The run's plan from its schedule's length: the passes over the training
 * rows it allows, the dropout and weight decay they call for (where not the
 * user's), and mid-epoch evaluations for a run of few long epochs.
 */
static void
plan_run(TrainRun *run, tfm_train_opts *o)
{
	int64		spe = run->steps_per_epoch_est,
				total = o->total_steps;
	double		passes = run->epochs;
	float		dropout,
				wd;

	if (spe > 0 && total > 0)
		passes = Min((double) run->epochs, (double) total / spe);
	/* a time limit's steps are known from the speed at step 5: till then, one pass */
	if (run->time_limit_us > 0 && run->fit_base_s < 0.0)
		passes = Min(passes, 1.0);
	run->planned_passes = passes;
	tfm_train_regularisation(run->row.cfg.task, passes, &dropout, &wd);
	if (run->auto_dropout)
		tfm_run_apply_dropout(run, dropout);
	if (run->auto_wd)
	{
		o->weight_decay = wd;
		run->tr.opt.weight_decay = wd;
	}
	run->eval_every = passes < TFM_EVAL_EPOCHS && total >= TFM_EVAL_MIN_STEPS ?
		total / TFM_EVAL_EPOCHS : 0;
}

/*
 * The schedule's length is known (or re-estimated): set it, capped by
 * max_steps, and, unless the user gave warmup, the default warmup with it
 * (5 % of the steps; 10 % up to 4000 for inverse_sqrt).
 */
void
tfm_run_set_total_steps(TrainRun *run, tfm_train_opts *o, int64 total)
{
	if (run->max_steps > 0 && (total == 0 || run->max_steps < total))
		total = run->max_steps;
	o->total_steps = total;
	if (run->warmup_auto)
		o->warmup = o->schedule == TFM_SCHED_INVSQRT ? Min(4000, Max(1, total / 10)) : Max(1, total / 20);
	if (run->tr.step <= TFM_PLAN_FIXED_STEP)
		plan_run(run, o);
}

/*
 * Fit the schedule to the time budget: at step 5 from the speed so far
 * (shrinking the estimate only: the first steps pay for reading the first
 * chunk and touching the workspace), then at step 50 and every 250 steps
 * from the speed since step 5, either way, so a run ends annealed at its
 * time limit rather than at a stale estimate.
 */
void
tfm_run_fit_to_time(TrainRun *run)
{
	double		secs,
				per_step;
	int64		fit;

	if (run->time_limit_us == 0 || run->tr.step < 5)
		return;
	secs = tfm_run_elapsed_s(run->clock_start);
	if (run->fit_base_s < 0.0)
	{
		run->fit_base_s = secs;
		per_step = secs / run->tr.step;
	}
	else
		per_step = (secs - run->fit_base_s) / (run->tr.step - 5);
	if (per_step <= 0.0)
		return;
	fit = run->tr.step + (int64) ((run->time_limit_us / 1e6 - secs) / per_step);
	if (run->epoch_total > 0 && fit > run->epoch_total)
		fit = run->epoch_total;		/* the epochs end first */
	fit = Max(fit, run->tr.step + 1);
	if (run->tr.step > 5 || fit < run->tr.o.total_steps || run->tr.o.total_steps == 0)
		tfm_run_set_total_steps(run, &run->tr.o, fit);
}

/*
 * The default batch of a seq2seq model (8,192 padded tokens a step) in
 * passes that fit tfm.work_mem: 2, 4, ... passes of half, a quarter, ...
 * of the tokens, accumulated into the same step.  Its widest pass (rows of
 * max_len tokens, the most attention) is what is sized.  Given batches are
 * left to the step's own check.
 */
void
tfm_run_fit_default_batch(TrainRun *run)
{
	int			T = run->row.cfg.max_len;

	if (!run->batch_auto)
		return;
	for (int k = 1; k <= TFM_ACCUMULATE_MAX; k *= 2)
	{
		int			bt = run->batch_tokens / k;

		if (bt < T)
			break;
		if (tfm_work_mem_fits(run->m, tfm_pass_bytes(run->m, bt / T, T, T, true, false)))
		{
			if (k > 1)
			{
				ereport(NOTICE,
						(errmsg("model \"%s\": each step's %d tokens are trained in %d passes of %d, "
								"which fit tfm.work_mem", run->row.name, run->batch_tokens, k, bt),
						 errhint("Raise tfm.work_mem to train a step in one pass.")));
				run->batch_tokens = bt;
				run->accumulate = k;
			}
			return;
		}
	}
}
