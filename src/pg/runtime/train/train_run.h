/*
 * train_run.h — one training run over a query's rows: its state and the
 * epoch loop (train_loop.c), shared by tfm_train (sql/train/train_query.c: the whole run
 * in the statement's transaction) and tfm_fit (sql/train/fit.c: a procedure that
 * commits a checkpoint between chunks, checkpoint.c).  Its arguments are
 * parsed in train_options.c, its plan made in train_plan.c, its progress,
 * rows and saves reported in train_report.c.
 *
 * Everything a checkpoint must hold to continue a run bit for bit lives in
 * TrainRun: the optimizer (moments, step), the schedule position, the
 * shuffling RNG, the epoch and the rows read in it, the lm carry tokens,
 * the epoch's running sums, the best evaluation so far and the plan
 * (dropout, weight decay, evaluations).
 */
#ifndef TFM_TRAIN_RUN_H
#define TFM_TRAIN_RUN_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "tfm/train.h"
#include "runtime/runtime.h"
#include "runtime/train/train_data.h"
#include "storage/models/models.h"

#define TFM_VAL_MAX         50000
#define TFM_VAL_MAX_TOKENS  2000000
/* the step after which a run's plan (dropout, evaluations) stays fixed */
#define TFM_PLAN_FIXED_STEP 50

/* which weights a run leaves in the model */
typedef enum TfmKeep
{
	TFM_KEEP_LAST = 0,			/* the last epoch's */
	TFM_KEEP_BEST = 1			/* the best validated epoch's */
} TfmKeep;

/* where a run's held-out rows come from */
typedef enum TfmValSource
{
	TFM_VAL_GIVEN = 0,			/* val_fraction given (0: none) */
	TFM_VAL_AUTO = 1,			/* the task's default fraction */
	TFM_VAL_TOO_FEW = 2			/* the default, but fewer than TFM_VAL_AUTO_MIN held out, or
								 * more than twice the fraction (repeated rows) */
} TfmValSource;

/* TrainEpoch.note */
#define TFM_NOTE_LEN 256

/* one evaluation (an epoch's end, or mid-epoch), as tfm_train returns it */
typedef struct TrainEpoch
{
	int			epoch;
	int			checkpoint;		/* 0: the epoch's end; n: its n-th mid-epoch row */
	int64		steps;
	double		train_loss,
				val_loss,
				val_acc,
				tokens_per_s,
				seconds;
	int64		val_rows;		/* rows (lm: sequences) held out */
	float		dropout,		/* what the run trains with */
				weight_decay;
	char		note[TFM_NOTE_LEN];	/* what was held out, chosen, kept and why */
} TrainEpoch;

typedef struct TrainRun TrainRun;

/* seconds since a timestamp (the run's clocks) */
static inline double
tfm_run_elapsed_s(TimestampTz since)
{
	return (double) (GetCurrentTimestamp() - since) / 1e6;
}

/*
 * Called between chunks (epoch_end = false; the reader is open and
 * rd.row_number rows of this epoch are consumed) and after each epoch's
 * save (epoch_end = true).
 */
typedef void (*TrainHook) (TrainRun *run, bool epoch_end);

struct TrainRun
{
	TfmModelRow row;
	tfm_model  *m;
	tfm_trainer tr;
	TfmGuard   *m_guard;		/* the model and optimizer are freed with cxt */
	TfmGuard   *tr_guard;		/* (on an ERROR) unless released */
	TfmReader	rd;
	char	   *query;
	const char *fn_name;		/* "tfm_train" or "tfm_fit": the status line */
	MemoryContext cxt;			/* the run's: outlives every chunk (and commit) */
	MemoryContext chunk_cxt;
	MemoryContext val_cxt;

	/* options, resolved (parse: tfm_run_options, train_options.c) */
	int			epochs;
	int			batch;
	int			accumulate;
	int			batch_tokens;	/* > 0: batches by padded tokens, not rows */
	bool		batch_auto;		/* batch_tokens and accumulate are the defaults: a
								 * step cut into passes that fit tfm.work_mem */
	int64		max_steps;
	int64		time_limit_us;	/* 0 = none */
	bool		warmup_auto;	/* warmup not given: it follows total_steps */
	TfmKeep		keep;
	bool		keep_given;		/* keep was an argument, not the task's default */
	int			patience;		/* evaluations without improvement before stopping, 0 = never */
	TfmValSource val_source;
	int64		val_units;		/* rows (lm: sequences) held out */

	/*
	 * dropout and weight decay from the planned passes (tfm_train_regularisation)
	 * unless the model's dropout was explicit / weight_decay was given; the
	 * plan is revised until step TFM_PLAN_FIXED_STEP, then fixed
	 */
	bool		auto_dropout,
				auto_wd;
	double		planned_passes;
	int64		eval_every;		/* mid-epoch evaluations every n steps, 0 = none */

	/* the clock (wall time: only time_limit and reports depend on it) */
	TimestampTz started;		/* the run's start: tfm.history.run_started */
	TimestampTz clock_start;	/* for time_limit and eta: minus the time before a resume */
	double		fit_base_s;		/* elapsed at the first fit (step 5), < 0 before */
	TimestampTz epoch_started;
	double		epoch_secs_before;	/* seconds of this epoch before a resume */
	TimestampTz last_notice;
	TimestampTz last_status;

	/* the schedule's length */
	int64		rows;			/* the query's rows */
	int64		steps_per_epoch_est;
	int64		epoch_total;	/* the steps the epochs need (estimate), 0 = unknown */
	int64		steps_before;	/* tr.step at the last save */

	/* this epoch */
	int			epoch;
	double		loss_sum;
	int64		loss_count;
	int64		tokens;
	int64		epoch_steps;
	int			checkpoints;	/* mid-epoch checkpoints written in it */
	tfm_rng		rng;			/* shuffling and lm window offsets */
	int32	   *carry;			/* lm: the last max_len tokens of the previous chunk */
	int64		ncarry;
	bool		stop;			/* time limit, max_steps or non-finite */
	bool		nonfinite;

	/* validation set (read before the first step: tfm_run_read_val) */
	TfmExample *val;
	int			nval;
	int32	   *val_stream;		/* lm */
	int64		val_stream_len;

	/* the best evaluation so far (keep => 'best') */
	int			best_epoch;		/* 0 = none yet */
	int			best_checkpoint;	/* its row's checkpoint (0: the epoch's end) */
	int64		best_step;
	double		best_acc,
				best_loss;
	float	   *best_params;	/* n_floats, in cxt */
	int			evaluations;	/* so far in the run */
	int			since_best;		/* evaluations since the best */
	int64		last_eval_step;	/* tr.step of the last evaluation */
	double		last_val_loss,
				last_val_acc;
	bool		early_stop;		/* patience ran out */

	/* results of the evaluations this call made */
	TrainEpoch *results;
	int			nresults;
	int			kept_epoch;		/* set by tfm_run_finish */
	int			kept_checkpoint;

	/* resume: the first epoch goes on from the restored state */
	bool		resume_epoch;

	TrainHook	hook;
	void	   *hook_arg;
};

/*
 * Set up a fresh run inside an SPI connection: the reader, the row count,
 * the schedule's estimate, the optimizer, the RNG and the contexts (under
 * run->cxt, which must be set).
 */
void		tfm_run_begin(TrainRun *run, tfm_train_opts *o);
/* the same for a run restored from a checkpoint (fields already filled) */
void		tfm_run_begin_resumed(TrainRun *run, const tfm_train_opts *o);
/* the epochs */
void		tfm_run_loop(TrainRun *run);
/* keep => 'best': put the best epoch's weights back and save them; notices */
void		tfm_run_finish(TrainRun *run, bool report_kept);
/* take the model out of the cache for training (checks the train privilege) */
void		tfm_run_take_model(TrainRun *run, const char *name);
/* after the last save: free the optimizer, hand the model back to the cache */
void		tfm_run_end(TrainRun *run);

/* read the validation set: the held-out rows of the whole query */
void		tfm_run_read_val(TrainRun *run);

#endif							/* TFM_TRAIN_RUN_H */
