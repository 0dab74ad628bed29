/*
 * train_report.c — what a training run reports (see train_report.h):
 * progress as a status line in pg_stat_activity.query and NOTICE lines
 * (tfm.progress), the figures and note of each evaluation's row, the rows
 * returned to the caller, and each save with its tfm.history row.
 */
#include "postgres.h"

#include <math.h>

#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "runtime/train/train_report.h"
#include "runtime/runtime.h"

static void run_note(const TrainRun *run, char *note);

void
tfm_run_progress(TrainRun *run, bool force)
{
	TimestampTz now = GetCurrentTimestamp();
	double		loss = run->loss_count ? run->loss_sum / run->loss_count : NAN;
	double		secs = tfm_run_elapsed_s(run->clock_start);
	int64		total = run->tr.o.total_steps;
	double		eta = run->tr.step > 0 && total > run->tr.step ?
		secs / run->tr.step * (total - run->tr.step) : 0;
	char		status[256];

	if (force || now - run->last_status >= USECS_PER_SEC)
	{
		snprintf(status, sizeof(status),
				 "%s %s: epoch %d/%d step %lld/%lld loss %.4f lr %.2e %.0f tokens/s eta %.0fs",
				 run->fn_name, run->row.name, run->epoch, run->epochs, (long long) run->tr.step,
				 (long long) total, loss, run->tr.last_lr,
				 run->tokens / Max(tfm_run_elapsed_s(run->epoch_started), 1e-9), eta);
		pgstat_report_activity(STATE_RUNNING, status);
		run->last_status = now;
	}
	if (tfm_progress && (force || now - run->last_notice >= 10 * USECS_PER_SEC))
	{
		ereport(NOTICE,
				(errmsg("%s: epoch %d step %lld/%lld loss %.4f lr %.2e %.0f tokens/s eta %.0f s",
						run->row.name, run->epoch, (long long) run->tr.step, (long long) total,
						loss, run->tr.last_lr, run->tokens / Max(tfm_run_elapsed_s(run->epoch_started), 1e-9),
						eta)));
		run->last_notice = now;
	}
}

/*
 * The tfm.history row of an epoch's end (checkpoint 0) or of the
 * checkpoint-th mid-epoch checkpoint or evaluation
 */
void
tfm_run_add_history(TrainRun *run, const TrainEpoch *e, int checkpoint)
{
	TfmHistoryRow h;

	h.model_id = run->row.id;
	h.run_started = run->started;
	h.epoch = e->epoch;
	h.steps = e->steps;
	h.train_loss = e->train_loss;
	h.val_loss = e->val_loss;
	h.val_acc = e->val_acc;
	h.tokens_per_s = e->tokens_per_s;
	h.seconds = e->seconds;
	h.checkpoint = checkpoint;
	h.rows_done = run->rd.row_number;
	h.val_rows = e->val_rows;
	h.dropout = e->dropout;
	h.weight_decay = e->weight_decay;
	h.note = e->note[0] ? e->note : NULL;
	tfm_history_add(&h);
}

/* write the weights (a new version) and their tfm.history row */
void
tfm_run_save(TrainRun *run, const TrainEpoch *e, int checkpoint)
{
	tfm_catalog_save(&run->row, run->m, run->tr.step - run->steps_before);
	run->steps_before = run->tr.step;
	tfm_run_add_history(run, e, checkpoint);
}

/* the epoch so far, for a result row or a checkpoint's history row */
void
tfm_run_figures(TrainRun *run, TrainEpoch *e)
{
	e->epoch = run->epoch;
	e->steps = run->tr.step;
	e->seconds = run->epoch_secs_before + tfm_run_elapsed_s(run->epoch_started);
	e->train_loss = run->loss_count ? run->loss_sum / run->loss_count : NAN;
	e->val_loss = NAN;
	e->val_acc = NAN;
	e->tokens_per_s = run->tokens / Max(e->seconds, 1e-9);
	e->checkpoint = 0;
	e->val_rows = run->val_units;
	e->dropout = run->m->cfg.dropout;
	e->weight_decay = run->tr.o.weight_decay;
	run_note(run, e->note);
}

/*
 * What a row of the run says about itself: where its validation comes from
 * and what the plan chose (the evaluation and the kept row add to it)
 */
static void
run_note(const TrainRun *run, char *note)
{
	switch (run->val_source)
	{
		case TFM_VAL_AUTO:
			snprintf(note, TFM_NOTE_LEN, "held out: %g%% of the %s by hash (default)",
					 run->rd.val_fraction * 100.0,
					 run->row.cfg.task == TFM_TASK_LM ? "sequences" : "rows");
			break;
		case TFM_VAL_TOO_FEW:
			snprintf(note, TFM_NOTE_LEN, "held out: none (too few distinct %s for the default)",
					 run->row.cfg.task == TFM_TASK_LM ? "sequences" : "rows");
			break;
		case TFM_VAL_GIVEN:
			if (run->rd.val_fraction > 0.0f)
				snprintf(note, TFM_NOTE_LEN, "held out: val_fraction %g", run->rd.val_fraction);
			else
				snprintf(note, TFM_NOTE_LEN, "held out: none (val_fraction 0)");
			break;
	}
	if (run->auto_dropout || run->auto_wd)
		snprintf(note + strlen(note), TFM_NOTE_LEN - strlen(note), "; %s for %.3g planned passes",
				 !run->auto_wd ? "dropout" : !run->auto_dropout ? "weight_decay" :
				 "dropout and weight_decay", run->planned_passes);
	if (run->tr.o.label_smoothing > 0.0f)
		snprintf(note + strlen(note), TFM_NOTE_LEN - strlen(note), "; label_smoothing %g",
				 run->tr.o.label_smoothing);
	if (run->batch_auto && run->accumulate > 1)
		snprintf(note + strlen(note), TFM_NOTE_LEN - strlen(note),
				 "; steps of %d tokens in %d passes (tfm.work_mem)",
				 run->batch_tokens * run->accumulate, run->accumulate);
}

/* add to a row's note */
void
tfm_run_note_add(char *note, const char *what)
{
	size_t		n = strlen(note);

	snprintf(note + n, TFM_NOTE_LEN - n, "%s%s", n ? "; " : "", what);
}

/* append a row to the call's results */
void
tfm_run_add_result(TrainRun *run, const TrainEpoch *e)
{
	if (run->results == NULL || run->nresults % 16 == 0)
	{
		Size		sz = sizeof(TrainEpoch) * (run->nresults + 16);

		run->results = run->results ? repalloc_huge(run->results, sz) :
			MemoryContextAllocExtended(run->cxt, sz, MCXT_ALLOC_HUGE);
	}
	run->results[run->nresults++] = *e;
}
